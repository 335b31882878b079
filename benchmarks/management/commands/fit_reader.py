"""`manage.py fit_reader [--rows DIR] [--write]`: the reader judged offline on SQuAD 2.0 dev
(benchmarks/chat/reader_fit.py): calibration and refusal threshold fitted on the even articles, figures on the
odd ones (held out). `--write` stores the calibration and threshold in chat/reader/data/reader.json."""

import json
from pathlib import Path

import numpy as np
from django.core.management.base import BaseCommand

from benchmarks import eval_dir
from benchmarks.chat.reader_fit import collect, figures, outcomes, platt, read_all, read_rows, write_rows
from chat.answerability.reader_judge import reader_judge
from chat.answerability.verdict import rules_judge
from chat.reader.model import META_PATH, ReaderModel, reader_meta


class Command(BaseCommand):
    help = "Fit the reader's calibration and refusal threshold on SQuAD 2.0 dev (even), report on odd."

    def add_arguments(self, parser):
        parser.add_argument("--rows", type=Path, default=Path("var/bench/reader-rows"),
                            help="folder of the collected rows (read if present, else written)")
        parser.add_argument("--limit", type=int, default=None)
        parser.add_argument("--write", action="store_true", help="store the fit in chat/reader/data/reader.json")
        parser.add_argument("--no-compose", action="store_true")

    def handle(self, *args, rows: Path, limit, write, no_compose, **options):
        data = eval_dir()
        collected = {}
        for split in ("even", "odd"):
            path = rows / f"{split}.jsonl"
            if path.is_file():
                collected[split] = read_rows(path)
            else:
                collected[split] = collect(data, split, limit=limit)
                write_rows(path, collected[split])
            self.stdout.write(f"{split}: {len(collected[split])} questions")
        model = ReaderModel(meta=reader_meta())
        identity = model.meta.__class__(version=model.meta.version, sha256=model.meta.sha256, threshold=0.5)
        model.meta = identity  # raw logits: probability = sigmoid(logit) while fitting

        def judge(question, evidence):
            return reader_judge(question, evidence, model=model)

        reads = {split: read_all(collected[split], judge, compose=not no_compose) for split in collected}
        # Platt scaling on the even half: the best window's logit against "the evidence answers it" (answerable
        # with the gold answer in the evidence read, or unanswerable).
        logits, labels = [], []
        for row, read in zip(collected["even"], reads["even"], strict=True):
            verdict = read["verdict"]
            if verdict is None or verdict.probability is None:
                continue
            p = min(max(verdict.probability, 1e-6), 1 - 1e-6)
            logits.append(float(np.log(p / (1 - p))))
            labels.append(0.0 if row["impossible"] else 1.0)
        scale, shift = platt(np.array(logits), np.array(labels))
        calibrated = identity.__class__(version=identity.version, sha256=identity.sha256, threshold=0.5,
                                        scale=scale, shift=shift)
        for split in reads:
            for read in reads[split]:
                verdict = read["verdict"]
                if verdict is not None and verdict.probability is not None:
                    p = min(max(verdict.probability, 1e-6), 1 - 1e-6)
                    read["verdict"] = verdict.__class__(**{**verdict.__dict__,
                                                           "probability": calibrated.probability(np.log(p / (1 - p)))})
        # The refusal threshold and the rescue bar (answer where the gate found the evidence too weakly similar)
        # with the best balanced accuracy on the even half.
        best = (0.5, 2.0, -1.0)
        for threshold in np.linspace(0.02, 0.98, 49):
            for rescue in [*np.linspace(max(0.5, threshold), 0.98, 13), 2.0]:
                result = figures(outcomes(collected["even"], reads["even"], float(threshold), float(rescue)))
                if result["balanced"] > best[2]:
                    best = (float(threshold), float(rescue), result["balanced"])
        threshold, rescue = round(best[0], 3), round(best[1], 3)
        report = {"calibration": {"scale": round(scale, 4), "shift": round(shift, 4)}, "threshold": threshold,
                  "rescue": rescue,
                  "even": figures(outcomes(collected["even"], reads["even"], threshold, rescue)),
                  "odd": figures(outcomes(collected["odd"], reads["odd"], threshold, rescue))}
        report["with_rules"] = _with_rules(collected, reads, no_compose)
        self.stdout.write(json.dumps(report, indent=1))
        out_dir = rows
        write_rows(out_dir / "odd-outcomes.jsonl", outcomes(collected["odd"], reads["odd"], threshold, rescue))
        if write:
            payload = json.loads(META_PATH.read_text(encoding="utf-8"))
            payload["calibration"] = report["calibration"]
            payload["threshold"] = threshold
            payload["rescue"] = rescue
            payload["fitted"] = {"on": "SQuAD 2.0 dev, even-indexed articles", "even": report["even"],
                                 "odd_held_out": report["odd"]}
            META_PATH.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
            self.stdout.write(f"wrote {META_PATH}")


def _with_rules(collected: dict, reads: dict, no_compose: bool) -> dict:
    """The rules alone, and two ways of using the reader beside them, each with its bar fitted on the even half
    and figures on the odd one:
    - veto: the rules decide and compose; the reader's calibrated probability below the bar refuses;
    - hybrid: the reader decides answerable; the rules' lead sentence composes when they found one, else the
      reader's."""
    rules = {split: read_all(collected[split], lambda q, e: rules_judge(q, e), compose=not no_compose)
             for split in collected}
    ruled = {split: outcomes(collected[split], rules[split]) for split in collected}

    def veto(split: str, bar: float) -> list[dict]:
        out = []
        for ruling, read in zip(ruled[split], reads[split], strict=True):
            verdict = read["verdict"]
            keep = verdict is not None and verdict.probability is not None and verdict.probability >= bar
            out.append({**ruling, "answered": ruling["answered"] and keep,
                        "answer_hit": ruling["answer_hit"] and keep, "lead_hit": ruling["lead_hit"] and keep})
        return out

    def hybrid(split: str, bar: float) -> list[dict]:
        out = []
        reader_out = outcomes(collected[split], reads[split], bar)
        for rule_read, by_reader in zip(rules[split], reader_out, strict=True):
            rules_led = rule_read["verdict"] is not None and rule_read["verdict"].answerable
            hit = rule_read["answer_hit"] if rules_led else by_reader["answer_hit"] or False
            out.append({**by_reader, "answer_hit": by_reader["answered"] and bool(hit)})
        return out

    report = {"rules": {split: figures(ruled[split]) for split in ruled}}
    for name, combine in (("veto", veto), ("hybrid", hybrid)):
        bar = max(np.linspace(0.02, 0.98, 49), key=lambda b: figures(combine("even", float(b)))["balanced"])
        report[name] = {"bar": round(float(bar), 3), "even": figures(combine("even", float(bar))),
                        "odd": figures(combine("odd", float(bar)))}
    return report
