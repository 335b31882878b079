"""Extraction rule sets are versioned: each piece of evidence stores the dated id of the extractor that found it,
the API reads it back, and evidence found after the id changes shows the new one beside the old."""

from __future__ import annotations

import pytest

from findings.extractors.patterns import PATTERNS_VERSION, PatternsExtractor
from findings.models import Claim, ClaimEvidence
from findings.services import chunk_extract

pytestmark = pytest.mark.django_db


def _evidence_versions(client, claim_id: int) -> list[str]:
    response = client.get(f"/api/v1/findings/{claim_id}")
    assert response.status_code == 200, response.content
    return [item["extractor"] for item in response.json()["evidence"]]


def test_evidence_reads_back_the_extractor_version_and_a_new_version_is_visible(world, docs, monkeypatch):
    _, first = docs.doc("a", "Tom Becker is the owner of the Billing Service.")
    assert PATTERNS_VERSION == "extract-patterns:2026-12"
    assert chunk_extract(chunk_id=first.pk, extractor=PatternsExtractor()).accepted >= 1
    claim = Claim.objects.get(subject__name="Tom Becker")
    assert list(ClaimEvidence.objects.filter(claim=claim).values_list("extractor", flat=True)) == [PATTERNS_VERSION]
    admin = world.client(world.admin)
    assert _evidence_versions(admin, claim.pk) == [PATTERNS_VERSION]

    # The rules change and get a new id: the same fact found in another record carries it, the old evidence
    # keeps the id it was found under.
    monkeypatch.setattr(PatternsExtractor, "version", "extract-patterns:2027-01")
    _, second = docs.doc("b", "Tom Becker is the owner of the Billing Service.")
    chunk_extract(chunk_id=second.pk, extractor=PatternsExtractor())
    assert Claim.objects.filter(subject__name="Tom Becker").count() == 1  # a repeat adds evidence, not a claim
    assert _evidence_versions(admin, claim.pk) == [PATTERNS_VERSION, "extract-patterns:2027-01"]
    # Who may read the claim is unchanged: the other tenant's user sees nothing of it.
    assert world.client(world.outsider, world.globex).get(f"/api/v1/findings/{claim.pk}").status_code == 404
