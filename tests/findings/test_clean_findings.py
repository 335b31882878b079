"""Findings that read clean, on the demo's own records (the Kestrel sample corpus, extracted offline): one statement
is one open claim, a team is typed a team, and an office in a member list ("(chair)") is a value, not an entity."""

from __future__ import annotations

import pytest

from findings.models import Claim, Entity
from tests.findings.conftest import at
from tests.findings.test_valid_at import demo  # noqa: F401

pytestmark = pytest.mark.django_db


def test_the_demos_findings_read_clean(demo):  # noqa: F811
    grafana = Claim.objects.filter(tenant=demo.acme, subject__name="warehouse team", object_value="Grafana")
    [claim] = grafana.filter(status="open")
    assert len({e.document_id for e in claim.evidence.all()}) == 3  # three records say it
    assert claim.valid.lower.date() == at("2025-07-08").date()  # since the earliest of them
    [li_wei] = Claim.objects.filter(tenant=demo.acme, subject__name="Li Wei", predicate__name="member_of",
                                    status="open")
    assert li_wei.evidence.count() == 2
    assert Entity.objects.get(tenant=demo.acme, name="Perch team").kind == "team"
    assert not Entity.objects.filter(tenant=demo.acme, key="chair").exists()
    office = Claim.objects.get(tenant=demo.acme, subject__name="Sofia Alvarez", predicate__name="role")
    assert (office.object_value, office.object_entity_id) == ("chair", None)
    # and the entities the Findings page offers hold no office
    page = demo.client(demo.member).get("/api/v1/entities", {"limit": 200}).json()["results"]
    assert "chair" not in {e["name"] for e in page} and "Perch team" in {e["name"] for e in page}
