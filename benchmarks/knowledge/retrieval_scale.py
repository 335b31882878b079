"""`make bench-scale`: the retrieval speed bench (benchmarks.knowledge.retrieval_speed) at 1M chunks, with the
corpus kept between runs, and its figures as an area of their own (`retrieval_scale.json`).

The 1M corpus takes tens of minutes to load and index on two cores, so it is built once and kept. It lives in
an embedded database of its own (`make bench-scale` sets GROUNDWORK_VAR_DIR=var/bench-scale), because the
synthetic corpus of one size removes that of any other before it loads — the readable shares are shares of all
rows — and `make bench` measures at 100k in the main database.

Per readable share (0.2, 2, 10 and 100 %): p50 and p95 of `hybrid_search(k=10)`, the vector channel's recall@10
against a full-precision exact scan of every readable row, the lexical channel's recall@10 against BM25 over
every readable match, the queries that came back with fewer than 10 vector rows although at least 10 were
readable (`underfilled_queries`), and how many queries took each plan (vector: exact or hnsw; lexical: the
pairs pass or the ORed candidates)."""

from __future__ import annotations

from pathlib import Path

from benchmarks import bench_result_write

from .retrieval import speed_report_write
from .retrieval_speed import flat_figures, speed_run

SCALE_SIZE = 1_000_000


def run(out_dir: Path, quick: bool = False, *, size: int = SCALE_SIZE, queries: int | None = None,
        stdout=None) -> dict:
    """Measure at `size` (the corpus kept for the next run), write `retrieval_scale.json`, merge the sizes into
    `retrieval_speed.json` (its table and plots: retrieval.md shows every size measured) and return the result."""
    out_dir = Path(out_dir)
    say = (lambda msg: stdout.write(msg)) if stdout else (lambda _msg: None)
    speed = speed_run(size=size, queries=queries or (50 if quick else 200), keep=True, progress=say)
    _merged, plots = speed_report_write(out_dir, speed)
    flat, goals, ceilings, notes = flat_figures(size, speed[str(size)])
    result = {**flat, "goals": goals, "ceilings": ceilings, "speed": speed[str(size)],
              "setup": speed["setup"][str(size)], "plots": plots,
              "notes": notes + [f"details: {out_dir / 'retrieval_speed.md'}"]}
    bench_result_write(out_dir, "retrieval_scale", result)
    return result
