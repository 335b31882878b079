"""`make bench` security area: every probe module in this package, merged into `var/bench/security.json`.

Each module `benchmarks/chat/security/<item>.py` exposes `measure(out_dir, quick) -> dict` of named figures
(leaks, 5xx counts, oracle gaps: for each the goal is a ceiling, usually 0). The package lives in chat, the
top layer, because probes drive the whole stack — answers, hints, the cache — the way a caller would.
A probe that raises is recorded as failed (and fails the area) without hiding the other probes' figures.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from pathlib import Path

# The goals: each figure must stay at or below its ceiling.
CEILINGS = {
    "canary_leaks": 0,
    "hint_oracle_gap_points": 5,
    "post_revoke_reads": 0,
    "cache_wrong_hits": 0,
    "load_5xx": 0,
    "hostile_5xx": 0,
    "schema_violations": 0,
    "rls_leaks": 0,
    "lost_tasks": 0,
    "duplicated_tasks": 0,
    "stats_rank_changes": 0,
    "guessed_name_hint_gap_points": 5,
    "ssrf_reached": 0,
    "ssrf_port_oracle": 0,
    "existence_oracles": 0,
    "regex_superlinear": 0,
    "parser_cpu_s_per_mb_max": 2,
    "worker_timeouts": 0,
}


def probe_modules() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))


def run(out_dir: Path, quick: bool = False) -> dict:
    result: dict = {"ceilings": {}, "notes": []}
    failed = []
    for name in probe_modules():
        module = importlib.import_module(f"{__name__}.{name}")
        started = time.perf_counter()
        try:
            figures = module.measure(out_dir, quick)
        except Exception as exc:  # noqa: BLE001 — one probe failing must not hide the others' figures
            failed.append(name)
            result["notes"].append(f"probe {name} failed: {type(exc).__name__}: {exc}")
            continue
        result.update(figures)
        result["notes"].append(f"probe {name}: {time.perf_counter() - started:.1f} s")
    missing = [key for key in CEILINGS if key not in result]
    if missing:
        result["notes"].append("not measured: " + ", ".join(missing))
    result["ceilings"] = {key: limit for key, limit in CEILINGS.items() if key in result}
    if failed:
        raise RuntimeError(f"security probes failed: {', '.join(failed)} ({result['notes']})")
    return result
