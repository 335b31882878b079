"""The benchmarks (`make bench`): one package per area, beside the apps and outside the wheel.

`benchmarks.<app>` measures that app (`benchmarks.knowledge.retrieval`, `benchmarks.chat.security`, ...); each
area's module returns a flat dict of named figures, and this module writes them down: `<area>.json`, a section of
`report.md`, bar plots. The benchmarks import the apps; the apps never import them (import-linter's
`product-not-benchmarks` contract, tests/test_bench_separation.py). `manage.py bench_all` runs every area.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings


def eval_dir() -> Path:
    """The public evaluation data (`../shared/eval` next to the project); the setting GROUNDWORK_EVAL_DIR overrides."""
    override = settings.GROUNDWORK_EVAL_DIR
    return Path(override) if override else Path(settings.BASE_DIR).parent / "shared" / "eval"


def bench_result_write(out_dir: Path, area: str, result: Mapping) -> Path:
    """Write `<out_dir>/<area>.json` and append the area's section to `<out_dir>/report.md`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{area}.json"
    path.write_text(json.dumps(result, indent=2, sort_keys=True, default=str) + "\n")
    with (out_dir / "report.md").open("a") as report:
        report.write(bench_section(area, result))
    return path


def bench_section(area: str, result: Mapping) -> str:
    """A Markdown section: every number, each goal met or missed, and the area's plots."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    goals: Mapping = result.get("goals", {})  # at least
    ceilings: Mapping = result.get("ceilings", {})  # at most (leaks, 5xx: the goal is 0)
    lines = [f"## {area} — {stamp}", "", "| metric | value | goal |", "|---|---|---|"]
    for key, value in result.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        goal = ""
        if key in goals:
            met = value >= goals[key]
            goal = f"≥ {goals[key]:g} {'met' if met else '**missed**'}"
        elif key in ceilings:
            met = value <= ceilings[key]
            goal = f"≤ {ceilings[key]:g} {'met' if met else '**missed**'}"
        lines.append(f"| {key} | {value:,.3f} | {goal} |" if isinstance(value, float) else
                     f"| {key} | {value:,} | {goal} |")
    for note in result.get("notes", []):
        lines.append(f"\n- {note}")
    for plot in result.get("plots", []):
        lines.append(f"\n![{area}]({plot})")
    return "\n".join(lines) + "\n\n"


def bar_plot(path: Path, *, title: str, labels: Sequence[str], values: Sequence[float], ylabel: str,
             goals: Sequence[float | None] | None = None) -> Path:
    """A bar chart as PNG (Agg backend: no display needed); goals, when given, are dashed marks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    bars = ax.bar(labels, values, color="#4c72b0")
    ax.bar_label(bars, fmt="%.1f")
    for bar, goal in zip(bars, goals or [None] * len(values), strict=True):
        if goal is not None:
            ax.hlines(goal, bar.get_x(), bar.get_x() + bar.get_width(), colors="#c44e52", linestyles="dashed")
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
