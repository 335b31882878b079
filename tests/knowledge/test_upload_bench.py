"""The intake bench runs at a tiny size and writes its named figures."""

import json

from django.core.management import call_command

from knowledge.models import Source


def test_intake_bench_runs_and_writes_its_figures(world, tmp_path, settings):
    settings.EMBEDDER = "none"
    call_command("bench_all", "--only", "intake", "--quick", "--out", str(tmp_path))
    result = json.loads((tmp_path / "intake.json").read_text())
    for figure in ("pdf_pages_per_s", "docx_per_s", "upload_to_searchable_p95_s"):
        assert result[figure] > 0, figure
    assert result["upload_repeats"] == 2
    assert "## intake" in (tmp_path / "report.md").read_text()
    assert not Source.objects.filter(name="Intake bench").exists()  # the scratch tenant is gone
