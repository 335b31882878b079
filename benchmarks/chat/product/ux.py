"""The product bench's keyboard and accessibility figures.

- `tabs_to_question` (goal <= 3): Tab presses, in headless Chromium, from the page a member lands on after signing
  in through the form until the question box has focus. Measured by tests/chat/test_keyboard_browser.py, run as it
  is in a pytest subprocess (like the axe check: the figure and the suite's assertion can never disagree about
  what was measured), which writes its count to GW_TABS_REPORT.
- `axe_serious_or_critical` (goal 0): serious + critical axe-core violations over every page at 400 and 1280 px,
  from the suite's accessibility test (benchmarks/knowledge/accessibility.py runs it; not repeated here). --quick
  leaves it out (the page walk takes minutes) and a note says so.

Without Chromium a figure is left out and the note says why: a skipped check is never reported as 0.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.knowledge.accessibility import axe_measure, browser_missing, browser_test_report

KEYBOARD_TEST = "tests/chat/test_keyboard_browser.py::test_after_sign_in_the_question_box_has_focus"
CHILD_DATABASE = "groundwork_bench_ux"  # not the axe check's: the two children never share a test database
TIMEOUT_S = 300


def tabs_measure(out_dir: Path) -> tuple[dict, str]:
    """({"tabs_to_question": n}, note), or ({}, why) when it could not be measured."""
    missing = browser_missing()
    if missing:
        return {}, f"tabs_to_question skipped: {missing}"
    report, why = browser_test_report(KEYBOARD_TEST, report_var="GW_TABS_REPORT",
                                      report_path=Path(out_dir) / "product-tabs.json", database=CHILD_DATABASE,
                                      timeout_s=TIMEOUT_S, pytest_args=("-p", "no:xdist"))
    if report is None:
        return {}, f"tabs_to_question skipped: {why}"
    tabs = int(report["tabs_to_question"])
    return {"tabs_to_question": tabs}, (f"tabs_to_question: {tabs} Tab press(es) from {report['page']} after "
                                        f"signing in at {report['width']} px until the question box has focus")


def measure(out_dir: Path, quick: bool) -> tuple[dict, list[str]]:
    figures, notes = {}, []
    tabs, note = tabs_measure(out_dir)
    figures.update(tabs)
    notes.append(note)
    if quick:
        notes.append("axe_serious_or_critical skipped: --quick (the page walk at two widths takes minutes)")
    else:
        axe, note = axe_measure(out_dir)
        figures.update(axe)
        notes.append(note)
    return figures, notes
