"""The product bench's ux part at quick size: the Tab count is measured in a real browser, axe is left out with
a note (never reported as 0)."""

from __future__ import annotations

import json

import pytest

from benchmarks.chat.product import ux
from tests.browser import requires_browser


@pytest.mark.browser
@requires_browser
def test_ux_part_measures_tabs_to_question(tmp_path):
    figures, notes = ux.measure(tmp_path, quick=True)
    assert figures == {"tabs_to_question": 0}, notes
    assert notes[0].startswith("tabs_to_question: 0 Tab press(es) from /t/acme/chat/ after signing in")
    assert "axe_serious_or_critical skipped: --quick (the page walk at two widths takes minutes)" in notes
    assert json.loads((tmp_path / "product-tabs.json").read_text())["tabs_to_question"] == 0


def test_without_chromium_the_figures_are_left_out_with_the_reason(tmp_path, monkeypatch):
    from benchmarks.knowledge import accessibility

    monkeypatch.setattr(accessibility.shutil, "which", lambda name: None)
    figures, notes = ux.measure(tmp_path, quick=False)
    assert figures == {}
    assert notes == ["tabs_to_question skipped: Debian chromium + chromium-driver are not installed",
                     "axe_serious_or_critical skipped: Debian chromium + chromium-driver are not installed"]

