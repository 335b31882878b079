"""`axe_serious_or_critical` for the intake bench: the accessibility test of the suite, run as it is.

tests/chat/test_accessibility.py walks every page a person uses with axe-core in headless Chromium at two
widths and, given GW_A11Y_REPORT=<path>, writes its counts there. We run that one test in a pytest
subprocess (so the figure and the suite's assertion can never disagree about which pages count) and read the
report. A subprocess, not an import: the bench lives in knowledge, the pages belong to every layer.

The child gets its own database name, so its test database (`test_<name>`) never collides with one a test
run on the same server is using. Without Chromium the figure is left out and a note says why: a skipped
check is not "0 violations".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

A11Y_TEST = "tests/chat/test_accessibility.py"
CHILD_DATABASE = "groundwork_bench_a11y"
TIMEOUT_S = 600


def browser_missing() -> str | None:
    """Why the check cannot run here, or None when it can (the same requirements as tests/browser.py)."""
    if not (shutil.which("chromium") or shutil.which("chromium-browser")) or not shutil.which("chromedriver"):
        return "Debian chromium + chromium-driver are not installed"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


def child_database_url(url: str, name: str = CHILD_DATABASE) -> str:
    """The same server and credentials as `url`, another database name (`name`: one per bench that runs a page
    test, so two benches' children never share a test database)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def axe_report_read(report: dict) -> dict:
    """The figures from the test's report: total serious + critical violations over every page, pages checked,
    and the pages that had any (detail, for the note)."""
    return {
        "axe_serious_or_critical": int(report["axe_serious_or_critical"]),
        "axe_pages_checked": int(report["pages_checked"]),
        "axe_failing_pages": sorted(report.get("violations", {})),
    }


def browser_test_report(test: str, *, report_var: str, report_path: Path, database: str = CHILD_DATABASE,
                        timeout_s: int = TIMEOUT_S, pytest_args: tuple[str, ...] = ()) -> tuple[dict | None, str]:
    """Run the browser test `test` (a path or node id) in a pytest subprocess that writes its JSON report to
    `report_path` (named to it by the environment variable `report_var`) on its own test database (`database`, on
    the same server). (report, "") when it wrote one; (None, why) when it did not. Other benches that take a
    figure from a browser test use this too (benchmarks/chat/product/ux.py)."""
    report_path = report_path.resolve()
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.unlink(missing_ok=True)
    env = {**os.environ, report_var: str(report_path),
           "DATABASE_URL": child_database_url(settings.DATABASE_URL, database)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *pytest_args, "-m", "browser", test]
    try:
        run = subprocess.run(command, cwd=settings.BASE_DIR, env=env, capture_output=True, text=True,
                             timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return None, f"{test} ran over {timeout_s} s"
    if not report_path.exists():
        tail = " ".join((run.stdout + run.stderr).strip().splitlines()[-3:])
        return None, f"{test} wrote no report (exit {run.returncode}): {tail}"
    return json.loads(report_path.read_text()), ""


def axe_measure(out_dir: Path) -> tuple[dict, str]:
    """(figures, note). Figures are empty when the check could not run; the note says why."""
    missing = browser_missing()
    if missing:
        return {}, f"axe_serious_or_critical skipped: {missing}"
    report_path = (Path(out_dir) / "intake-axe.json").resolve()
    report, why = browser_test_report(A11Y_TEST, report_var="GW_A11Y_REPORT", report_path=report_path)
    if report is None:
        return {}, f"axe_serious_or_critical skipped: {why}"
    figures = axe_report_read(report)
    note = (f"axe-core: {figures['axe_serious_or_critical']} serious or critical violations over "
            f"{figures['axe_pages_checked']} page checks (aim 0); details in {report_path.name}")
    if figures["axe_failing_pages"]:
        note += "; failing: " + ", ".join(figures["axe_failing_pages"])
    return figures, note
