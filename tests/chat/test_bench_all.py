"""`manage.py bench_all`: runs the areas that have a bench, skips the rest, writes JSON, report and plots."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from groundwork.models import Tenant

pytestmark = pytest.mark.django_db


def test_bench_all_runs_ingest_on_a_small_corpus(tmp_path, settings):
    from knowledge.embedders import embedder_reset

    corpus = tmp_path / "eval" / "scifact" / "corpus.jsonl"
    corpus.parent.mkdir(parents=True)
    corpus.write_text("".join(
        json.dumps({"_id": str(i), "title": f"Abstract {i}", "text": f"Protein {i} binds the receptor. " * 30})
        + "\n" for i in range(12)
    ))
    settings.GROUNDWORK_EVAL_DIR = tmp_path / "eval"
    settings.EMBEDDER = "none"  # the embedding half is measured by `make bench`, not in the suite
    embedder_reset()
    out = StringIO()
    try:
        call_command("bench_all", "--out", str(tmp_path / "bench"), "--only", "ingest", "--quick", stdout=out)
    finally:
        embedder_reset()

    result = json.loads((tmp_path / "bench" / "ingest.json").read_text())
    assert result["docs"] == 12 and result["chunks"] >= 12 and result["chunks_per_s"] > 0
    assert result["notes"] == ["EMBEDDER=none: embedding not measured"]
    assert (tmp_path / "bench" / "ingest_throughput.png").read_bytes().startswith(b"\x89PNG")
    report = (tmp_path / "bench" / "report.md").read_text()
    assert report.startswith("## ingest — ") and "| chunks_per_s |" in report
    assert not Tenant.objects.filter(slug__startswith="bench-").exists()  # the scratch tenant is gone


def test_bench_module_skips_missing_areas_but_not_broken_ones(tmp_path, monkeypatch):
    from benchmarks.management.commands.bench_all import bench_module

    assert bench_module("benchmarks.knowledge.ingest") is not None
    assert bench_module("benchmarks.findings.that_does_not_exist") is None
    assert bench_module("no_such_app.bench") is None
    (tmp_path / "broken_bench.py").write_text("import a_dependency_that_is_not_installed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="a_dependency_that_is_not_installed"):
        bench_module("broken_bench")
