"""`manage.py bench_retrieval_scale [--size N] [--queries N] [--out DIR]`: the retrieval speed bench at 1M chunks
with the corpus kept (`make bench-scale`, which runs it in its own embedded database under var/bench-scale; see
benchmarks.knowledge.retrieval_scale)."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmarks.knowledge.retrieval_scale import SCALE_SIZE, run


class Command(BaseCommand):
    help = "Retrieval speed at 1M chunks (kept between runs) into DIR/retrieval_scale.json."

    def add_arguments(self, parser):
        parser.add_argument("--size", type=int, default=SCALE_SIZE, help="chunks (default 1000000)")
        parser.add_argument("--queries", type=int, default=200, help="queries per readable share")
        parser.add_argument("--out", default="var/bench")

    def handle(self, *args, size, queries, out, **options):
        if size < 1000 or queries < 1:
            raise CommandError("--size must be at least 1000 and --queries at least 1")
        result = run(Path(out), size=size, queries=queries, stdout=self.stdout)
        self.stdout.write(json.dumps({k: v for k, v in result.items() if k.startswith("speed_")}, indent=2))
        self.stdout.write("\n".join(result["notes"]))
        self.stdout.write(f"wrote {Path(out) / 'retrieval_scale.json'}")
