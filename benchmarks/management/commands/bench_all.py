"""`manage.py bench_all --out DIR [--only AREA] [--quick] [--docs PAGE]`: every area's benchmark (`make bench`).

It lives in benchmarks, outside the apps, which it may all import. Areas whose
bench module does not exist yet are skipped, so an app adds a bench by adding its module with a
`run(out_dir, quick=False) -> dict`. Each result goes to `<DIR>/<area>.json` and a section of
`<DIR>/report.md`; plots are the areas' own.
"""

import importlib
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmarks import bench_result_write, benchmarks_page_write

AREAS = {
    "ingest": "benchmarks.knowledge.ingest",
    "intake": "benchmarks.knowledge.intake",
    "retrieval": "benchmarks.knowledge.retrieval",
    "findings": "benchmarks.findings.claims",
    "extraction": "benchmarks.findings.extraction",
    "graph": "benchmarks.findings.graph",
    "chat": "benchmarks.chat.answers",
    "security": "benchmarks.chat.security",
    "mcp": "benchmarks.chat.mcp",
    "product": "benchmarks.chat.product",
    "connectors": "benchmarks.connectors.sync",
    "replicas": "benchmarks.groundwork.replicas",
}


def bench_module(dotted: str):
    """The area's bench module, or None when that app has none yet (a missing module, not a broken one:
    an ImportError inside an existing module still fails loudly)."""
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError as exc:
        if exc.name and (dotted == exc.name or dotted.startswith(exc.name + ".")):
            return None
        raise


class Command(BaseCommand):
    help = "Run every area's benchmark; results in DIR/<area>.json, DIR/report.md and PNG plots."

    def add_arguments(self, parser):
        parser.add_argument("--out", default="var/bench")
        parser.add_argument("--only", choices=sorted(AREAS), action="append",
                            help="run only this area (repeatable)")
        parser.add_argument("--quick", action="store_true", help="smaller inputs, for a smoke run")
        parser.add_argument("--docs", default=None,
                            help="also regenerate this page from every area's latest JSON (make bench: "
                                 "docs/benchmarks.md)")

    def handle(self, *args, out, only, quick, docs, **options):
        out_dir = Path(out)
        ran, failed = [], []
        for area, dotted in AREAS.items():
            if only and area not in only:
                continue
            module = bench_module(dotted)
            if module is None:
                self.stdout.write(f"{area}: skipped ({dotted} does not exist yet)")
                continue
            self.stdout.write(f"{area}: running {dotted}.run")
            started = time.perf_counter()
            try:
                result = module.run(out_dir, quick=quick)
            except Exception as exc:  # one area failing must not hide the others' numbers
                failed.append(area)
                self.stderr.write(f"error: {area}: {type(exc).__name__}: {exc}")
                continue
            result.setdefault("bench_seconds", round(time.perf_counter() - started, 1))
            path = bench_result_write(out_dir, area, result)
            ran.append(area)
            self.stdout.write(f"{area}: wrote {path}")
        self.stdout.write(f"report: {out_dir / 'report.md'}")
        if docs:
            self.stdout.write(f"page: {benchmarks_page_write(out_dir, Path(docs))}")
        if failed:
            raise CommandError(f"benchmarks failed: {', '.join(failed)}")
        if not ran:
            raise CommandError("no benchmark ran")
