"""Admin: review queue and projection quality with a per-reason breakdown."""

from __future__ import annotations

import pytest

from findings.models import Claim, ProjectionQuality, ReviewItem
from findings.writer import claims_write
from tests.findings.conftest import fact

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(world, client, django_user_model):
    """A superuser client (pytest-django's admin_client would clash with the world's `admin` user)."""
    root = django_user_model.objects.create_superuser("root", "root@example.test", "pw-for-tests-only")
    client.force_login(root)
    return client


def test_projection_quality_lists_per_reason_columns_and_filters(staff, docs):
    _, chunk = docs.doc("a", "Priya Nair is the owner of the Billing Service.")
    ProjectionQuality.objects.create(chunk=chunk, tenant_id=chunk.tenant_id, extractor="openai", proposed=4,
                                     accepted=1, reasons={"missing_quote": 2, "stripped_qualifier": 1})
    ProjectionQuality.objects.create(chunk=chunk, tenant_id=chunk.tenant_id, extractor="patterns", proposed=1,
                                     accepted=1, reasons={})
    page = staff.get("/admin/findings/projectionquality/").content.decode()
    assert 'field-rejected_missing_quote">2<' in page and 'field-rejected_stripped_qualifier">1<' in page
    assert 'field-accepted_ratio">25%<' in page
    filtered = staff.get("/admin/findings/projectionquality/", {"rejected_for": "missing_quote"})
    assert filtered.context["cl"].result_count == 1


def _queue(world, docs, settings) -> ReviewItem:
    settings.CONSOLIDATION_BORDERLINE_FLOOR, settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 0.0, 1.0
    for key, tool in (("a", "Stripe"), ("b", "Adyen")):
        _, chunk = docs.doc(key, f"The Payments Team uses {tool}.")
        claims_write(tenant_id=world.acme.pk, label=key, facts=[
            fact(chunk, chunk.text, "Payments Team", "uses", tool, "2025-01-01", object_kind="vendor")])
    return ReviewItem.objects.get()


def test_review_queue_lists_with_dates_and_approve_keeps_the_claim(staff, world, docs, settings):
    item = _queue(world, docs, settings)
    assert item.claim.needs_review and item.state == "pending"
    page = staff.get("/admin/findings/reviewitem/").content.decode()
    assert "2025-01-01 → now" in page and "Review queue" in page
    response = staff.post("/admin/findings/reviewitem/", {"action": "approve", "_selected_action": [item.pk]},
                          follow=True)
    assert "Approved 1 claim." in response.content.decode()
    item.refresh_from_db()
    claim = Claim.objects.get(pk=item.claim_id)
    assert item.state == "done"
    assert (claim.status, claim.needs_review, claim.recorded.upper) == ("open", False, None)
    claims_page = staff.get(f"/admin/findings/claim/{item.claim_id}/change/")
    assert claims_page.status_code == 200 and "2025-01-01 → now" in claims_page.content.decode()


def test_review_reject_retracts_the_claim_keeping_its_valid_range(staff, world, docs, settings):
    item = _queue(world, docs, settings)
    valid_before = item.claim.valid
    staff.post("/admin/findings/reviewitem/", {"action": "reject", "_selected_action": [item.pk]})
    item.refresh_from_db()
    claim = Claim.objects.get(pk=item.claim_id)
    assert item.state == "done"
    assert (claim.status, claim.needs_review) == ("closed", False)
    assert claim.recorded.upper is not None and claim.recorded.upper >= claim.recorded.lower
    assert claim.valid == valid_before
    # The claim it resembled is untouched.
    other = Claim.objects.get(pk=item.similar_claim_id)
    assert other.status == "open"
    # Settling twice changes nothing and says so.
    response = staff.post("/admin/findings/reviewitem/", {"action": "reject", "_selected_action": [item.pk]},
                          follow=True)
    page = response.content.decode()
    assert "Nothing to settle: the selected items were already approved or rejected." in page  # a warning
    assert "Rejected and retracted 0 claims" not in page


def test_review_services_refuse_another_tenant_and_non_admins(world, docs, settings):
    from django.core.exceptions import PermissionDenied

    from findings.services import ReviewItemNotFound, review_item_approve, review_item_reject

    item = _queue(world, docs, settings)
    with pytest.raises(ReviewItemNotFound):
        review_item_reject(authority=world.authority(world.outsider, world.globex), review_item_id=item.pk)
    with pytest.raises(PermissionDenied):
        review_item_approve(authority=world.authority(world.analyst), review_item_id=item.pk)
    item.refresh_from_db()
    assert item.state == "pending"
    review_item_approve(authority=world.authority(world.admin), review_item_id=item.pk)
    item.refresh_from_db()
    assert item.state == "done"


# --- entity resolution from the admin: merge, the merge log and its undo, aliases ------------------------------


@pytest.fixture
def acme_admin(world):
    from django.test import Client

    client = Client()
    client.force_login(world.admin)  # acme's tenant admin, not a superuser
    return client


def _entities(tenant, *names):
    from findings.audit import entity_key
    from findings.models import Entity

    return [Entity.objects.create(tenant=tenant, name=n, key=entity_key(n), kind="person") for n in names]


def test_tenant_admin_merges_and_unmerges_acme_entities_and_the_log_shows_who(world, acme_admin):
    from findings.models import EntityAlias, EntityMerge

    priya, full = _entities(world.acme, "Priya", "Priya Nair")
    response = acme_admin.post("/admin/findings/entity/", {"action": "merge_into", "_selected_action": [priya.pk],
                                                           "into": "Priya Nair"}, follow=True)
    assert response.status_code == 200 and "Merged 1 entity into Priya Nair." in response.content.decode()
    priya.refresh_from_db()
    assert priya.merged_into_id == full.pk
    log = EntityMerge.objects.get(merged=priya)
    assert log.actor == f"user:{world.admin.pk}" and log.into_id == full.pk
    assert EntityAlias.objects.filter(entity=full, merge=log).exists()
    page = acme_admin.get("/admin/findings/entitymerge/").content.decode()
    assert world.admin.username in page and "Priya Nair" in page
    assert acme_admin.get(f"/admin/findings/entitymerge/{log.pk}/change/").status_code == 200  # read-only view

    response = acme_admin.post("/admin/findings/entitymerge/", {"action": "undo_merge", "_selected_action": [log.pk]},
                               follow=True)
    assert "Undid 1 merge." in response.content.decode()
    priya.refresh_from_db()
    log.refresh_from_db()
    assert priya.merged_into_id is None and log.undone_at is not None and log.undone_by == f"user:{world.admin.pk}"
    assert not EntityAlias.objects.filter(merge=log).exists()
    # Undoing again is refused with a message, not an error page.
    again = acme_admin.post("/admin/findings/entitymerge/", {"action": "undo_merge", "_selected_action": [log.pk]},
                            follow=True)
    assert again.status_code == 200 and "Undo refused" in again.content.decode()


def test_merge_refusals_are_messages_never_errors(world, acme_admin):
    a, b, c = _entities(world.acme, "Ada Lee", "Ada L.", "Tom Berg")
    acme_admin.post("/admin/findings/entity/", {"action": "merge_into", "_selected_action": [b.pk], "into": a.pk})
    # Merging into an entity that is itself merged is refused by the service: shown as an error message.
    response = acme_admin.post("/admin/findings/entity/", {"action": "merge_into", "_selected_action": [c.pk],
                                                           "into": b.pk}, follow=True)
    assert response.status_code == 200 and "Merge refused for Tom Berg" in response.content.decode()
    missing = acme_admin.post("/admin/findings/entity/", {"action": "merge_into", "_selected_action": [c.pk],
                                                          "into": "nobody at all"}, follow=True)
    assert missing.status_code == 200 and "Merge refused" in missing.content.decode()
    alone = acme_admin.post("/admin/findings/entity/", {"action": "merge_into", "_selected_action": [c.pk],
                                                        "into": c.pk}, follow=True).content.decode()
    assert "Nothing to merge: select the entities to merge into the one named in “into”, not only that one." in alone
    c.refresh_from_db()
    assert c.merged_into_id is None


def test_tenant_admin_merges_a_first_name_into_the_full_name_met_in_the_same_record(world, acme_admin, docs):
    from findings.models import Entity, EntityMerge

    # Claims written as extracted, without the extraction-time resolution: two people where the record has one.
    _, chunk = docs.doc("a", "Priya Nair owns Billing. Priya reports to Ada Okafor. Tom owns Payroll.")
    claims_write(tenant_id=world.acme.pk, label="1", facts=[
        fact(chunk, "Priya Nair owns Billing.", "Priya Nair", "owns", "Billing", "2025-01-01", object_kind="system"),
        fact(chunk, "Priya reports to Ada Okafor.", "Priya", "reports_to", "Ada Okafor", "2025-01-01",
             object_kind="person"),
        fact(chunk, "Tom owns Payroll.", "Tom", "owns", "Payroll", "2025-01-01", object_kind="system")])
    priya, full, tom = (Entity.objects.get(tenant=world.acme, name=n) for n in ("Priya", "Priya Nair", "Tom"))
    # Tom has no full name in the record: nothing to merge, said as a message.
    response = acme_admin.post("/admin/findings/entity/", {"action": "merge_first_names",
                                                           "_selected_action": [tom.pk]}, follow=True)
    assert response.status_code == 200 and "Nothing to merge" in response.content.decode()
    response = acme_admin.post("/admin/findings/entity/", {"action": "merge_first_names",
                                                           "_selected_action": [priya.pk, tom.pk]}, follow=True)
    assert "Merged Priya into Priya Nair" in response.content.decode()
    priya.refresh_from_db()
    tom.refresh_from_db()
    assert priya.merged_into_id == full.pk and tom.merged_into_id is None
    log = EntityMerge.objects.get()
    assert log.actor == f"user:{world.admin.pk}" and log.reason == "auto: same record"


def test_merging_first_names_reads_only_records_the_admin_can_read(world, acme_admin, docs):
    from findings.models import Entity
    from groundwork.services import group_member_add, principal_ensure

    # The only record naming both is restricted to engineering, which acme's admin is not in.
    _, chunk = docs.doc("eng", "Priya Nair owns Billing. Priya reports to Ada Okafor.", visibility="restricted",
                        acl=("group:engineering",))
    claims_write(tenant_id=world.acme.pk, label="1", facts=[
        fact(chunk, "Priya Nair owns Billing.", "Priya Nair", "owns", "Billing", "2025-01-01", object_kind="system"),
        fact(chunk, "Priya reports to Ada Okafor.", "Priya", "reports_to", "Ada Okafor", "2025-01-01",
             object_kind="person")])
    priya = Entity.objects.get(tenant=world.acme, name="Priya")
    merge = {"action": "merge_first_names", "_selected_action": [priya.pk]}
    response = acme_admin.post("/admin/findings/entity/", merge, follow=True)
    assert "Nothing to merge" in response.content.decode()
    priya.refresh_from_db()
    assert priya.merged_into_id is None
    # Once the admin reads the record, the same action merges.
    group_member_add(group=world.groups["engineering"],
                     member=principal_ensure(tenant=world.acme, kind="user", raw=str(world.admin.pk)))
    acme_admin.post("/admin/findings/entity/", merge)
    priya.refresh_from_db()
    assert priya.merged_into_id == Entity.objects.get(tenant=world.acme, name="Priya Nair").pk


def test_tenant_admin_cannot_see_or_merge_globex_entities(world, acme_admin):
    from findings.models import EntityMerge

    (acme,) = _entities(world.acme, "Lena Berg")
    (globex,) = _entities(world.globex, "Omar Haddad")
    listing = acme_admin.get("/admin/findings/entity/")
    assert globex.pk not in {e.pk for e in listing.context["cl"].result_list}
    assert acme_admin.get(f"/admin/findings/entity/{globex.pk}/change/").status_code in (302, 404)
    # Into a globex entity (by id or by name): not found among acme's, refused.
    for into in (globex.pk, "Omar Haddad"):
        response = acme_admin.post("/admin/findings/entity/", {"action": "merge_into", "_selected_action": [acme.pk],
                                                               "into": into}, follow=True)
        assert response.status_code == 200 and "Merge refused" in response.content.decode()
    # A globex entity selected: the scoped changelist drops it.
    acme_admin.post("/admin/findings/entity/", {"action": "merge_into", "_selected_action": [globex.pk],
                                                "into": acme.pk})
    assert not EntityMerge.objects.exists()
    globex.refresh_from_db()
    assert globex.merged_into_id is None


def test_alias_added_through_the_admin_uses_the_service(world, acme_admin):
    from findings.models import EntityAlias

    (acme,) = _entities(world.acme, "Priya Nair")
    (globex,) = _entities(world.globex, "Omar Haddad")
    form = acme_admin.get("/admin/findings/entityalias/add/")
    assert form.status_code == 200 and "Omar Haddad" not in form.content.decode()
    response = acme_admin.post("/admin/findings/entityalias/add/", {"entity": acme.pk, "alias": "  PN  "})
    assert response.status_code == 302
    alias = EntityAlias.objects.get(entity=acme)
    assert (alias.alias, alias.key, alias.origin, alias.tenant_id) == ("PN", "pn", "manual", world.acme.pk)
    blank = acme_admin.post("/admin/findings/entityalias/add/", {"entity": acme.pk, "alias": "  !! "})
    assert blank.status_code == 200 and "an alias needs a name" in blank.content.decode()
    other = acme_admin.post("/admin/findings/entityalias/add/", {"entity": globex.pk, "alias": "OH"})
    assert other.status_code == 200 and not EntityAlias.objects.filter(entity=globex).exists()
