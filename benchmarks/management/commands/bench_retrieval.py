"""`manage.py bench_retrieval --dataset DIR --split test [--out FILE]`: retrieval quality on any
BEIR-layout folder, ingested into a scratch tenant through the normal path."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmarks.knowledge.retrieval import quality_run


class Command(BaseCommand):
    help = "nDCG@10 and recall@100 for lexical, vector and fused retrieval on a BEIR-layout dataset."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--split", default="test")
        parser.add_argument("--out")
        parser.add_argument("--keep", action="store_true", help="keep the scratch tenant (prints its slug)")
        parser.add_argument("--tenant", help="evaluate an already-ingested scratch tenant")
        parser.add_argument("--lexical-strategy", choices=["websearch", "or", "bm25"])

    def handle(self, *args, dataset, split, out, keep, tenant, lexical_strategy, **options):
        path = Path(dataset)
        if not (path / "corpus.jsonl").exists() or not (path / "qrels" / f"{split}.tsv").exists():
            raise CommandError(f"{path} is not a BEIR-layout folder with split {split!r}")
        figures = quality_run(path, split, keep=keep, lexical_strategy=lexical_strategy, stdout=self.stdout,
                              tenant_slug=tenant)
        text = json.dumps(figures, indent=2)
        self.stdout.write(text)
        if out:
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            Path(out).write_text(text + "\n")
