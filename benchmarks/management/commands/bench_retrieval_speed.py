"""`manage.py bench_retrieval_speed [--size 100000|1000000] [--queries N] [--out DIR] [--keep]`: hybrid
search latency, vector recall@10 and under-fill at four access-filter selectivities on a seeded synthetic
corpus, against a straightforward baseline query (see benchmarks.knowledge.retrieval_speed)."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmarks.knowledge.retrieval import speed_report_write
from benchmarks.knowledge.retrieval_speed import speed_run


class Command(BaseCommand):
    help = "Retrieval speed under access filters on a synthetic corpus (100k by default, 1M with --size)."

    def add_arguments(self, parser):
        parser.add_argument("--size", type=int, default=100_000, help="chunks (100000 or 1000000)")
        parser.add_argument("--queries", type=int, default=200, help="queries per selectivity")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--out", default="var/bench", help="writes retrieval_speed.json, .md and PNGs here")
        parser.add_argument("--keep", action="store_true",
                            help="keep the synthetic corpus; a rerun with the same size and seed reuses it")

    def handle(self, *args, size, queries, seed, out, keep, **options):
        if size < 1000 or queries < 1:
            raise CommandError("--size must be at least 1000 and --queries at least 1")
        result = speed_run(size=size, queries=queries, keep=keep, seed=seed,
                           progress=lambda msg: self.stdout.write(msg))
        merged, plots = speed_report_write(Path(out), result)
        self.stdout.write(json.dumps(result, indent=2))
        self.stdout.write(f"wrote {Path(out) / 'retrieval_speed.json'}, {Path(out) / 'retrieval_speed.md'}, "
                          + ", ".join(plots))
