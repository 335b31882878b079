"""The graph bench at a tiny scale: the keys bench_all reads, the gain it exists to show, scratch tenants gone."""

from __future__ import annotations

import pytest

from findings.bench import graph as bench
from groundwork.models import Tenant


def test_questions_need_two_hops_and_name_their_records():
    org = bench.org_generate(people=40)
    questions = bench.questions_generate(org, count=300)
    assert len(questions) == 300 and {q.kind for q in questions} == {"A", "B", "C"}
    assert all(len(q.gold) == 2 and q.gold[0] != q.gold[1] for q in questions)
    assert bench.org_generate(people=40) == org  # deterministic


@pytest.mark.django_db(transaction=True)
def test_bench_runs_small_and_cleans_up(world, relations, tmp_path, settings):
    from knowledge.embedders import embedder_reset

    settings.EMBEDDER = "none"
    embedder_reset()  # an earlier test's cached embedder would otherwise keep running
    result = bench.run(tmp_path, quick=True, people=40, scale_entities=300, scale_chunks=600, questions=60)
    for key in ("recall@5_off", "recall@5_on", "recall_gain", "channel_p95_ms_at_scale", "scale_entities",
                "scale_chunks"):
        assert key in result
    assert result["recall@5_on"] >= result["recall@5_off"] + 0.15, result["recall_by_kind"]
    assert not Tenant.objects.filter(slug__startswith="gbench-").exists()
