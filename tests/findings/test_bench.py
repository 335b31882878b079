"""The findings bench on a tiny corpus: the keys bench_all reads, no anomalies, and the scratch tenant gone."""

from __future__ import annotations

import json

import pytest

from benchmarks.findings import claims as bench
from findings.models import Claim, Entity
from groundwork.models import Tenant

TINY = {
    "sources": [{"key": "wiki", "kind": "wiki", "name": "Tiny wiki"}],
    "documents": [
        {"source": "wiki", "external_id": "a", "title": "Support",
         "text": "On 2025-01-15 Priya Nair became Head of Support. Priya Nair is the owner of the Billing Service."},
        {"source": "wiki", "external_id": "b", "title": "Support news",
         "text": "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair."},
        {"source": "wiki", "external_id": "c", "title": "Stack", "text": "The Payments Team uses Stripe."},
    ],
}


@pytest.mark.django_db(transaction=True)
def test_bench_reports_throughput_and_anomalies_and_cleans_up(world, relations, tmp_path, monkeypatch):
    corpus = tmp_path / "tiny.json"
    corpus.write_text(json.dumps(TINY))
    monkeypatch.setattr(bench, "CORPUS", corpus)
    result = bench.run(tmp_path / "out", quick=True)
    for key in ("facts_per_s_1", "facts_per_s_8", "lateral_top5_ms", "anomalies", "rejected_share"):
        assert key in result
    assert result["facts_serial"] >= 3 and result["facts_per_s_1"] > 0 and result["facts_per_s_8"] > 0
    assert result["lateral_dense_claims_added"] > 0 and result["lateral_top5_ms_dense"] > 0
    assert result["anomalies"] == {"duplicates": 0, "overlapping_validity": 0, "lost_writes": 0, "writer_errors": 0}
    assert result["anomalies_total"] == 0 and result["rejected_share_missing_quote"] == 0.0
    assert json.loads((tmp_path / "out" / "findings.json").read_text())["facts_serial"] == result["facts_serial"]
    assert not Tenant.objects.filter(slug__startswith="bench-findings").exists()
    assert not Claim.objects.exists() and not Entity.objects.exists()
