"""A claim's history is computed from the claims the caller can read: a successor hidden by its evidence ACL
neither closes the claim nor shows up as its superseded_by, in the API, the selectors or the entity page."""

from __future__ import annotations

import pytest
from django.test import Client

from findings import selectors
from findings.models import Claim
from findings.writer import claims_write
from tests.findings.conftest import at, fact

pytestmark = pytest.mark.django_db


@pytest.fixture
def promotion(world, docs):
    """Priya's public role is closed in the record by a restricted (HR-only) promotion."""
    _, c1 = docs.doc("a", "On 2025-01-15 Priya Nair became Head of Support.")
    _, c2 = docs.doc("b", "On 2025-06-01 Priya Nair became CTO.", visibility="restricted", acl=("group:hr",))
    claims_write(tenant_id=world.acme.pk, label="1",
                 facts=[fact(c1, c1.text, "Priya Nair", "role", "Head of Support", "2025-01-15")])
    claims_write(tenant_id=world.acme.pk, label="2",
                 facts=[fact(c2, c2.text, "Priya Nair", "role", "CTO", "2025-06-01")])
    old, new = Claim.objects.get(object_value="Head of Support"), Claim.objects.get(object_value="CTO")
    assert (old.status, old.superseded_by_id) == ("closed", new.pk)  # the record itself is unchanged
    return old, new


def _row(body: dict) -> tuple:
    return body["valid_to"], body["recorded_to"], body["status"], body["superseded_by"]


def test_api_list_and_detail_follow_the_callers_readable_claims(world, promotion):
    old, new = promotion
    member, admin = world.client(world.member), world.client(world.admin)
    # the member cannot read the promotion: the old role is current, open-ended, without a successor
    [item] = member.get("/api/v1/findings").json()["results"]
    assert item["id"] == old.pk and _row(item) == (None, None, "open", None)
    detail = member.get(f"/api/v1/findings/{old.pk}").json()
    assert _row(detail) == (None, None, "open", None) and detail["superseded_by_claim"] is None
    # the admin reads both: the old role is closed on 2025-06-01 and superseded by the promotion
    assert [i["id"] for i in admin.get("/api/v1/findings").json()["results"]] == [new.pk]
    detail = admin.get(f"/api/v1/findings/{old.pk}").json()
    assert detail["valid_to"].startswith("2025-06-01") and detail["recorded_to"] is not None
    assert (detail["status"], detail["superseded_by"], detail["superseded_by_claim"]["id"]) == (
        "closed", new.pk, new.pk)


def test_as_of_and_valid_at_use_the_seen_history(world, promotion):
    old, new = promotion
    member = world.client(world.member)
    for params in ({"valid_at": "2025-09-01"}, {"known_at": "2999-01-01"},
                   {"known_at": "2999-01-01", "valid_at": "2026-01-01"}):
        assert [i["id"] for i in member.get("/api/v1/findings", params).json()["results"]] == [old.pk], params
    admin = world.client(world.admin)
    assert [i["id"] for i in admin.get("/api/v1/findings", {"valid_at": "2025-09-01"}).json()["results"]] == [new.pk]
    # as known now, Priya's old role held until the promotion replaced it: valid inside its period, not after
    assert [i["id"] for i in admin.get("/api/v1/findings", {"valid_at": "2025-03-01", "known_at": "2999-01-01"})
            .json()["results"]] == [old.pk]
    assert [i["id"] for i in admin.get("/api/v1/findings", {"valid_at": "2025-03-01"}).json()["results"]] == [old.pk]


def test_entity_api_and_page(world, promotion):
    old, new = promotion
    member = world.client(world.member)
    entity = member.get(f"/api/v1/entities/{old.subject_id}")
    assert entity.status_code == 200, entity.content
    [claim] = entity.json()["claims"]
    assert claim["id"] == old.pk and _row(claim) == (None, None, "open", None)
    client = Client()
    client.force_login(world.member)
    page = client.get(f"/t/acme/findings/entities/{old.subject_id}/")
    assert page.status_code == 200
    assert b'<td data-label="Status">current' in page.content and b"replaced" not in page.content
    assert b"2025-06-01" not in page.content
    admin_claims = world.client(world.admin).get(f"/api/v1/entities/{old.subject_id}").json()["claims"]
    assert {c["id"]: c["status"] for c in admin_claims} == {old.pk: "closed", new.pk: "open"}


def test_selectors(world, promotion):
    old, new = promotion
    member, admin = world.authority(world.member), world.authority(world.admin)
    [seen] = selectors.claims_list(member)
    assert (seen.pk, seen.valid.upper, seen.recorded.upper, seen.status, seen.superseded_by_id) == (
        old.pk, None, None, "open", None)
    detail = selectors.claim_get(member, old.pk)
    assert (detail.claim.status, detail.claim.superseded_by_id, detail.superseded_by) == ("open", None, None)
    assert [e.name for e in selectors.entities_list(member)] == ["Head of Support", "Priya Nair"]
    assert [e.name for e in selectors.entities_list(admin)] == ["CTO", "Priya Nair"]
    detail = selectors.claim_get(admin, old.pk)
    assert (detail.claim.valid.upper, detail.claim.status, detail.superseded_by.pk) == (at("2025-06-01"), "closed",
                                                                                        new.pk)
    assert [c.pk for c in selectors.claims_list(admin)] == [new.pk]
