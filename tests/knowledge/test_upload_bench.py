"""The intake bench runs at a tiny size and writes its named figures."""

import json

import pytest
from django.core.management import call_command

from benchmarks.knowledge import accessibility
from knowledge.models import Source
from tests.browser import requires_browser


def test_intake_bench_runs_and_writes_its_figures(world, tmp_path, settings):
    settings.EMBEDDER = "none"
    call_command("bench_all", "--only", "intake", "--quick", "--out", str(tmp_path))
    result = json.loads((tmp_path / "intake.json").read_text())
    for figure in ("pdf_pages_per_s", "docx_per_s", "upload_to_searchable_p95_s"):
        assert result[figure] > 0, figure
    assert result["upload_repeats"] == 2
    # --quick does not walk the pages: the figure is left out and the note says so (a skipped check is not 0)
    assert "axe_serious_or_critical" not in result
    assert "axe_serious_or_critical skipped: --quick (the page walk takes half a minute)" in result["notes"]
    assert result["ceilings"]["axe_serious_or_critical"] == 0
    assert "## intake" in (tmp_path / "report.md").read_text()
    assert not Source.objects.filter(name="Intake bench").exists()  # the scratch tenant is gone


def test_axe_figure_is_left_out_with_a_reason_without_chromium(tmp_path, monkeypatch):
    monkeypatch.setattr(accessibility.shutil, "which", lambda name: None)
    figures, note = accessibility.axe_measure(tmp_path)
    assert figures == {}
    assert note == "axe_serious_or_critical skipped: Debian chromium + chromium-driver are not installed"


def test_the_child_run_gets_its_own_database_on_the_same_server():
    url = "postgresql://gw:s%40cret@/groundwork?host=/tmp/pg%20socket&sslmode=disable"
    assert accessibility.child_database_url(url) == (
        "postgresql://gw:s%40cret@/groundwork_bench_a11y?host=/tmp/pg%20socket&sslmode=disable")


def test_axe_report_is_read_into_figures():
    report = {"axe_serious_or_critical": 3, "pages_checked": 42,
              "violations": {"member /t/acme/chat/ @400px": [{}, {}], "anonymous /accounts/login/ @1280px": [{}]}}
    assert accessibility.axe_report_read(report) == {
        "axe_serious_or_critical": 3, "axe_pages_checked": 42,
        "axe_failing_pages": ["anonymous /accounts/login/ @1280px", "member /t/acme/chat/ @400px"]}


@pytest.mark.browser
@requires_browser
def test_axe_measure_runs_the_accessibility_test_and_reads_its_report(tmp_path):
    figures, note = accessibility.axe_measure(tmp_path)
    assert set(figures) == {"axe_serious_or_critical", "axe_pages_checked", "axe_failing_pages"}, note
    report = json.loads((tmp_path / "intake-axe.json").read_text())
    assert figures["axe_pages_checked"] == report["pages_checked"] > 20
    assert figures["axe_serious_or_critical"] == report["axe_serious_or_critical"]
    assert note.startswith(f"axe-core: {figures['axe_serious_or_critical']} serious or critical violations over ")
