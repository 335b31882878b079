"""`product.json`: what users hit in a day's work, measured on the demo tenant (`make bench`, area "product").

Each part is a module of this package with `measure(out_dir: Path, quick: bool) -> tuple[dict, list[str]]`:
named figures and notes (a figure that could not be taken is left out, and a note says why; a skipped check is
never reported as 0). A part whose module does not exist is skipped with a note.

- findings: `valid_at_correct` (goal 1.0), `open_duplicate_claims` (goal 0).
- sharing: `grant_survives_sync` (goal 1), `search_ndcg@10` of the Documents page (reported).
- ux: `tabs_to_question` (goal <= 3), `axe_serious_or_critical` (goal 0).
"""

from __future__ import annotations

import importlib
from pathlib import Path

PARTS = ("findings", "sharing", "ux")
GOALS_MIN = {"valid_at_correct": 1.0, "grant_survives_sync": 1}
GOALS_MAX = {"open_duplicate_claims": 0, "tabs_to_question": 3, "axe_serious_or_critical": 0}


def run(out_dir: Path, quick: bool = False) -> dict:
    figures: dict = {}
    notes: list[str] = []
    for part in PARTS:
        dotted = f"{__name__}.{part}"
        try:
            module = importlib.import_module(dotted)
        except ModuleNotFoundError as exc:
            if exc.name != dotted:
                raise
            notes.append(f"{part}: skipped (no {dotted} module)")
            continue
        part_figures, part_notes = module.measure(Path(out_dir), quick)
        figures.update(part_figures)
        notes.extend(f"{part}: {note}" for note in part_notes)
    return {**figures, "notes": notes, "goals": {**GOALS_MIN}, "ceilings": {**GOALS_MAX}}
