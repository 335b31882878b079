import pytest
from django.db import IntegrityError, transaction

from findings.models import RelationType
from findings.selectors import ontology_specs

EXPECTED_POLICIES = {
    "role": "state", "owns": "state", "status": "state", "budget": "state", "reports_to": "state",
    "located_in": "state", "uses": "set", "member_of": "set", "works_on": "set", "depends_on": "set",
    "partners_with": "set", "launched": "event", "shipped": "event", "hired": "event", "left": "event",
    "decided": "event", "acquired": "event", "related_to": "generic",
    "fleet_size": "state",  # migration 0006 (current facts: "how many robots are in the Northgate pilot?")
}


@pytest.mark.django_db
def test_migration_seeds_the_starter_ontology():
    rows = dict(RelationType.objects.values_list("name", "policy"))
    assert rows == EXPECTED_POLICIES


@pytest.mark.django_db
def test_every_specific_relation_has_lowercase_phrasings_and_the_generic_one_has_none():
    for relation in RelationType.objects.all():
        if relation.name == "related_to":
            assert relation.phrasings == []
            continue
        assert relation.phrasings, relation.name
        assert all(p == p.strip().lower() and p for p in relation.phrasings), relation.name
    assert "took over as" in RelationType.objects.get(name="role").phrasings


@pytest.mark.django_db
@pytest.mark.parametrize("fields", [
    {"name": "approves", "policy": "sometimes"},
    {"name": "approves", "policy": "generic"},
    {"name": "Approves", "policy": "event"},
    {"name": "approves_", "policy": "event"},
    {"name": "approves", "policy": "event", "phrasings": {"approved": True}},
])
def test_constraints_reject_bad_rows(fields):
    with pytest.raises(IntegrityError), transaction.atomic():
        RelationType.objects.create(**fields)


@pytest.mark.django_db
def test_related_to_cannot_become_specific():
    with pytest.raises(IntegrityError), transaction.atomic():
        RelationType.objects.filter(name="related_to").update(policy="set")


@pytest.mark.django_db
def test_a_good_new_relation_is_accepted_and_shows_up_in_specs():
    RelationType.objects.create(name="approved_by", policy="event", phrasings=["Was Approved By ", "signed off"])
    spec = {s.name: s for s in ontology_specs()}["approved_by"]
    assert spec.policy == "event"
    assert spec.phrasings == ("was approved by", "signed off")


@pytest.mark.django_db
def test_ontology_specs_put_longer_phrasings_first():
    owns = {s.name: s for s in ontology_specs()}["owns"]
    assert owns.phrasings[:3] == ("is responsible for", "took ownership of", "is the owner of")
    assert [len(p) for p in owns.phrasings] == sorted((len(p) for p in owns.phrasings), reverse=True)
    assert {s.name for s in ontology_specs()} == set(EXPECTED_POLICIES)


@pytest.mark.django_db
def test_admin_lists_searches_and_filters(admin_client):
    page = admin_client.get("/admin/findings/relationtype/", {"policy__exact": "event"})
    assert page.status_code == 200
    body = page.content.decode()
    assert "launched" in body and "reports_to" not in body
    found = admin_client.get("/admin/findings/relationtype/", {"q": "reports"})
    assert "reports_to" in found.content.decode()


@pytest.mark.django_db
def test_admin_edits_phrasings(admin_client):
    relation = RelationType.objects.get(name="uses")
    response = admin_client.post(f"/admin/findings/relationtype/{relation.pk}/change/", {
        "name": "uses", "policy": "set", "description": relation.description,
        "phrasings": "Uses\nis built with\n\nruns on top of", "subject_kinds": "person\nteam", "object_kinds": "",
    })
    assert response.status_code == 302, response.content.decode()[:2000]
    relation.refresh_from_db()
    assert relation.phrasings == ["uses", "is built with", "runs on top of"]
    assert relation.subject_kinds == ["person", "team"]
    assert relation.object_kinds == []
