"""The whole pipeline on sample-like documents: ingest → listener → extraction task → grounding → writer."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from findings.models import Claim, ClaimEvidence, ProjectionQuality
from knowledge.models import Source
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db


def _at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


def test_role_handover_closes_the_first_claim_in_valid_time(world, django_capture_on_commit_callbacks):
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Wiki")
    with django_capture_on_commit_callbacks(execute=True):
        first = ingest(world, wiki, external_id="a", title="Support",
                       body="On 2025-01-15 Priya Nair became Head of Support.")
    with django_capture_on_commit_callbacks(execute=True):
        ingest(world, wiki, external_id="b", title="Support news",
               body="On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair.")
    claims = list(Claim.objects.filter(tenant=world.acme).select_related("subject").order_by("id"))
    assert [(c.subject.name, c.object_value) for c in claims] == [
        ("Priya Nair", "Head of Support"), ("Marcus Lee", "Head of Support")]
    priya, marcus = claims
    assert (priya.valid.lower, priya.valid.upper) == (_at("2025-01-15"), _at("2025-09-01"))
    assert priya.status == "closed" and priya.recorded.upper > priya.recorded.lower
    assert priya.superseded_by_id == marcus.pk
    assert (marcus.valid.lower, marcus.valid.upper, marcus.status) == (_at("2025-09-01"), None, "open")
    evidence = ClaimEvidence.objects.get(claim=priya)
    assert evidence.document_id == first.pk
    assert first.text[evidence.quote_start:evidence.quote_end] == evidence.quote
    assert ProjectionQuality.objects.filter(chunk__document=first, accepted=1, proposed=1).count() == 1


def test_a_first_name_the_record_gives_in_full_is_that_person_not_another(world, django_capture_on_commit_callbacks):
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Wiki")
    with django_capture_on_commit_callbacks(execute=True):
        ingest(world, wiki, external_id="a", title="Support",
               body="On 2025-01-15 Priya Nair became Head of Support.\n\nPriya reports to Ada Okafor.")
        ingest(world, wiki, external_id="b", title="Chat", body="Priya reports to Ada Okafor.")
    claims = Claim.objects.filter(tenant=world.acme).select_related("subject", "predicate")
    subjects = sorted((c.subject.name, c.predicate.name, c.evidence.get().document.external_id) for c in claims)
    # the record that names her in full resolves its "Priya"; the one that never does keeps the bare name
    assert subjects == [("Priya", "reports_to", "b"), ("Priya Nair", "reports_to", "a"), ("Priya Nair", "role", "a")]


def test_a_changed_document_closes_claims_that_lost_their_evidence_and_extracts_the_new_text(
        world, django_capture_on_commit_callbacks):
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Wiki")
    with django_capture_on_commit_callbacks(execute=True):
        ingest(world, wiki, external_id="a", title="Owners", body="Priya Nair is the owner of the Billing Service.")
    (old,) = Claim.objects.all()
    with django_capture_on_commit_callbacks(execute=True):
        ingest(world, wiki, external_id="a", title="Owners", body="Tom Becker is the owner of the Payroll System.")
    old.refresh_from_db()
    assert old.status == "closed" and not old.evidence.exists()
    (new,) = Claim.objects.filter(status="open")
    assert (new.subject.name, new.object_value) == ("Tom Becker", "Payroll System")


def test_no_extractor_means_no_claims(world, settings, django_capture_on_commit_callbacks):
    settings.FINDINGS_EXTRACTOR = "none"
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Wiki")
    with django_capture_on_commit_callbacks(execute=True):
        ingest(world, wiki, external_id="a", title="Owners", body="Priya Nair is the owner of the Billing Service.")
    assert not Claim.objects.exists() and not ProjectionQuality.objects.exists()


def test_a_metadata_only_change_does_not_extract_again(world, django_capture_on_commit_callbacks):
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Wiki")
    body = "Priya Nair is the owner of the Billing Service."
    with django_capture_on_commit_callbacks(execute=True):
        ingest(world, wiki, external_id="a", title="Owners", body=body)
    with django_capture_on_commit_callbacks(execute=True):
        ingest(world, wiki, external_id="a", title="Owners", body=body, record_url="https://wiki.test/owners")
    assert ProjectionQuality.objects.count() == 1
    assert Claim.objects.filter(status="open").count() == 1
