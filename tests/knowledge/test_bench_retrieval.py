"""The retrieval benchmarks: the synthetic speed bench end to end at a tiny size, and the BEIR loader and
metrics on a hand-made dataset whose nDCG is worked out by hand."""

import json
import math

import pytest
from django.db import connection

from benchmarks.knowledge.beir import dataset_load, ndcg_at, recall_at
from benchmarks.knowledge.retrieval import speed_report_write
from benchmarks.knowledge.retrieval_speed import SELECTIVITIES, Corpus, speed_run
from groundwork.models import Tenant
from knowledge.models import Chunk, EmbeddingSpace

KEYS = {"p50_ms", "p95_ms", "recall@10", "underfilled", "baseline_p50_ms", "baseline_p95_ms"}


# The COPY runs on its own connection, so the rows must be committed: a transactional test.
@pytest.mark.django_db(transaction=True)
def test_speed_bench_tiny(tmp_path):
    result = speed_run(size=2000, queries=5, seed=3)
    figures = result["2000"]
    assert list(figures) == list(SELECTIVITIES)
    for label, row in figures.items():
        assert KEYS <= set(row), label
        assert row["queries"] == 5
        assert row["recall@10"] >= 0.9, (label, row)
        assert row["underfilled"] == 0.0
        assert 0 < row["p50_ms"] <= row["p95_ms"]
    # The whole predicate passes the designed share of all rows (tiny sizes round to whole documents).
    shares = {label: row["pass_share"] for label, row in figures.items()}
    assert shares["100%"] == pytest.approx(0.998, abs=0.003)
    assert shares["10%"] == pytest.approx(0.10, abs=0.01)
    assert shares["2%"] == pytest.approx(0.02, abs=0.005)
    assert 0 < shares["0.2%"] < 0.01
    # Scratch data is gone, the HNSW index is back, and no synthetic space was left active.
    assert not Tenant.objects.filter(slug__startswith="rbench-").exists()
    assert not Chunk.objects.exists()
    assert not EmbeddingSpace.objects.filter(model_id__startswith="rbench-").exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'knowledge_chunk_embedding_hnsw'")
        assert cursor.fetchone()
    merged, plots = speed_report_write(tmp_path, result)
    assert json.loads((tmp_path / "retrieval_speed.json").read_text())["speed"]["2000"] == figures
    assert plots == ["retrieval_latency_2000.png"] and (tmp_path / plots[0]).stat().st_size > 0


@pytest.mark.django_db
def test_synthetic_corpus_is_seeded():
    a, b = Corpus(2000, seed=5), Corpus(2000, seed=5)
    assert a.queries(3) == b.queries(3)
    first = next(a.chunk_batches())
    assert first[:3] == next(b.chunk_batches())[:3]
    assert len(first[2].split()) == 60 and abs(float((first[3] ** 2).sum()) - 1.0) < 1e-5


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_beir_loader_and_metrics(tmp_path):
    _write(tmp_path / "corpus.jsonl", [{"_id": d, "title": d.upper(), "text": f"text {d}"}
                                       for d in ("d1", "d2", "d3", "d4")])
    _write(tmp_path / "queries.jsonl", [{"_id": "q1", "text": "first"}, {"_id": "q2", "text": "second"},
                                        {"_id": "q3", "text": "never judged"}])
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t1\nq2\td4\t1\nq2\td2\t0\n")
    ds = dataset_load(tmp_path, "test")
    assert set(ds.corpus) == {"d1", "d2", "d3", "d4"}
    assert ds.queries == {"q1": "first", "q2": "second"}  # unjudged queries are dropped
    assert ds.qrels == {"q1": {"d1": 2, "d3": 1}, "q2": {"d4": 1}}  # score 0 is not relevant
    # q1 ranked d3, d2, d1: DCG = 1/log2(2) + 0 + 3/log2(4) = 2.5; ideal d1, d3: 3 + 1/log2(3).
    assert ndcg_at(["d3", "d2", "d1"], ds.qrels["q1"], 10) == pytest.approx(2.5 / (3 + 1 / math.log2(3)))
    assert ndcg_at(["d1", "d3"], ds.qrels["q1"], 10) == pytest.approx(1.0)
    assert ndcg_at(["d2", "d4"], ds.qrels["q2"], 1) == 0.0
    assert ndcg_at(["d2", "d4"], ds.qrels["q2"], 10) == pytest.approx(1 / math.log2(3))
    assert recall_at(["d3", "d2"], ds.qrels["q1"], 100) == 0.5
    assert recall_at(["d3", "d2", "d1"], ds.qrels["q1"], 2) == 0.5


def test_scale_figures_flatten_with_goals_and_plans():
    from benchmarks import bench_section
    from benchmarks.knowledge.retrieval_speed import flat_figures

    row = {"p50_ms": 9.5, "p95_ms": 31.0, "recall@10": 0.99, "underfilled": 0.02, "queries": 50,
           "passing_rows": 20000, "routes": {"exact": 50}, "lexical_recall@10": 1.0,
           "lexical_plans": {"pairs": 30, "or": 20}}
    flat, goals, ceilings, notes = flat_figures(1_000_000, {"2%": row})
    assert flat == {"speed_1000000_2%_p50_ms": 9.5, "speed_1000000_2%_p95_ms": 31.0,
                    "speed_1000000_2%_recall@10": 0.99, "speed_1000000_2%_underfilled_queries": 1,
                    "speed_1000000_2%_lexical_recall@10": 1.0}
    assert goals == {"speed_1000000_2%_recall@10": 0.98}
    assert ceilings == {"speed_1000000_2%_p95_ms": 25.0, "speed_1000000_2%_underfilled_queries": 0}
    assert notes == ["1,000,000 chunks, 2% readable (20,000 rows): vector plans exact 50; lexical plans or 20, "
                     "pairs 30; 50 queries"]
    section = bench_section("retrieval_scale", {**flat, "goals": goals, "ceilings": ceilings, "notes": notes})
    assert "| speed_1000000_2%_p95_ms | 31.000 | ≤ 25 **missed** |" in section
    assert "| speed_1000000_2%_recall@10 | 0.990 | ≥ 0.98 met |" in section
    assert "| speed_1000000_2%_underfilled_queries | 1 | ≤ 0 **missed** |" in section
