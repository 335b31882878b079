"""`manage.py bench_squad [--split odd|even|all] [--limit N] [--reuse] [--fit OUT.json]`: the SQuAD 2.0 figures
alone (benchmarks/chat/squad.py), without the rest of the answers bench; `--fit` instead fits the learned
answerability judge on `--split` (even; odd is refused) and writes its coefficients
(benchmarks/chat/answerability_fit.py); `--rows` keeps the retrieved evidence so a refit skips retrieval.
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmarks import eval_dir
from benchmarks.chat.answerability_fit import collect
from benchmarks.chat.answerability_fit import fit as fit_judge
from benchmarks.chat.squad import SPLITS, squad_bench


class Command(BaseCommand):
    help = "SQuAD 2.0 answerability figures on one half of dev (odd = held out), or fit the learned judge."

    def add_arguments(self, parser):
        parser.add_argument("--split", default="odd", choices=SPLITS)
        parser.add_argument("--limit", type=int, default=None)
        parser.add_argument("--reuse", action="store_true", help="keep the SQuAD tenant between runs")
        parser.add_argument("--fit", type=Path, default=None, help="fit the learned judge, write JSON here")
        parser.add_argument("--answers-out", type=Path, default=None)
        parser.add_argument("--rows", type=Path, default=None,
                            help="with --fit: the questions' evidence as JSON lines, read if present, else written")

    def handle(self, *args, split, limit, reuse, fit: Path | None, answers_out, rows: Path | None, **options):
        data = eval_dir()
        if fit is not None:
            if split == "odd":
                raise CommandError("the odd articles are the held-out half: fit on --split even")
            if rows is not None and rows.is_file():
                found = [json.loads(line) for line in rows.read_text(encoding="utf-8").splitlines()]
            else:
                found = collect(data, split, limit=limit)
                if rows is not None:
                    rows.write_text("".join(json.dumps(r) + "\n" for r in found), encoding="utf-8")
            self.stdout.write(json.dumps(fit_judge(found, fit), indent=1))
            return
        result = squad_bench(data=data, split=split, limit=limit, reuse=reuse, answers_out=answers_out)
        self.stdout.write(json.dumps(result, indent=1))
