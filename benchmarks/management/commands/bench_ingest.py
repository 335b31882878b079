"""`manage.py bench_ingest [--out DIR] [--quick] [--full]`: the ingest benchmark alone (see
benchmarks.knowledge.ingest); `manage.py bench_all` runs it with the other areas."""

from pathlib import Path

from django.core.management.base import BaseCommand

from benchmarks import bench_result_write
from benchmarks.knowledge.ingest import run


class Command(BaseCommand):
    help = "Benchmark ingestion and embedding throughput on SciFact; writes ingest.json and plots."

    def add_arguments(self, parser):
        parser.add_argument("--out", default="var/bench")
        parser.add_argument("--quick", action="store_true", help="1,000 documents, 200 chunks embedded")
        parser.add_argument("--full", action="store_true", help="embed every chunk, not a 1,000-chunk subset")

    def handle(self, *args, out, quick, full, **options):
        out_dir = Path(out)
        result = run(out_dir, quick=quick, full=full)
        path = bench_result_write(out_dir, "ingest", result)
        self.stdout.write(f"wrote {path}")
