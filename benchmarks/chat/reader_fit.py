"""The reader judged offline on SQuAD 2.0 dev, and its calibration and refusal threshold fitted.

`collect(data, split)` asks each question of one half of SQuAD 2.0 dev through the real retrieval and gate
(chat.decision.part_search, evidence always widened) and keeps what the judge reads: the evidence, the gate's
decision, the gold answers. `judge_rows` then replays the judge step on those rows with any judge, much faster
than the whole answer bench (no retrieval, no database), and `figures` scores the outcome the way
benchmarks/chat/squad.py does: unanswerable questions refused, answerable ones answered with the gold span in the lead
sentence and in the composed answer. `fit` maps the reader's logit to a calibrated probability (Platt scaling on
the even articles' best windows) and picks the one refusal threshold with the best balanced accuracy there; the
odd articles stay held out. Never trained on: the reader's training data is SQuAD train only (training/reader).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction

from benchmarks.chat.squad import SQUAD_FILE, _questions, squad_articles, squad_normal, squad_tenant
from chat.answerability import answerability_decide, judged
from chat.answerability.verdict import Verdict
from chat.context import assemble_context
from chat.decision import part_search
from chat.evidence import Evidence
from chat.extractive import compose_extractive_answer
from chat.gate import GateDecision
from chat.retrieval import identifiers_unknown, question_vectors
from knowledge.structure import Unit

Judge = Callable[[str, list[Evidence]], Verdict]


def collect(data: Path, split: str, *, limit: int | None = None) -> list[dict]:
    """One row per question of the `split` half (see the module docstring)."""
    articles = squad_articles(data / SQUAD_FILE)
    _tenant, authority, _created = squad_tenant(articles, reuse=True)
    rows = []
    for question in _questions(articles, split, limit):
        text = question["text"]
        row = {"id": question["id"], "question": text, "impossible": question["impossible"],
               "answers": question["answers"], "judged": judged(text)}
        with transaction.atomic():
            if identifiers_unknown(authority, text):
                rows.append(row | {"gate": {"answer": False, "reason": "unknown_identifier"}, "evidence": []})
                continue
            vectors = question_vectors(authority, text)
            gated = part_search(authority, text, embedded=vectors.get(text), k=settings.ANSWER_TOP_K,
                                widen_always=True)
        row["gate"] = asdict(gated.decision)
        row["weights"] = gated.weights
        row["evidence"] = [asdict(item) for item in gated.evidence]
        rows.append(row)
    return rows


def _hit(text: str, answers: list[str]) -> bool:
    normal = f" {squad_normal(text)} "
    return any(g and f" {g} " in normal for g in (squad_normal(a) for a in answers))


def _evidence(item: dict) -> Evidence:
    """Evidence from a collected row: `asdict` (and the rows' JSON) turned its structure's units into dicts."""
    units = tuple(Unit(**u) if isinstance(u, dict) else Unit(*u) for u in item.get("structure") or ())
    return Evidence(**{**item, "structure": units})


def read_all(rows: list[dict], judge: Judge, *, compose: bool = True) -> list[dict]:
    """Each row read once by `judge`: its verdict, and whether the verdict's sentence and the answer composed
    with it as the lead hold a gold answer (what a refusal threshold does not change)."""
    out = []
    for row in rows:
        evidence = [_evidence(item) for item in row["evidence"]]
        if not evidence or "confidence" not in row["gate"]:
            out.append({"verdict": None, "lead_hit": False, "answer_hit": False})
            continue
        verdict = judge(row["question"], evidence)
        answer_hit = False
        if compose:
            context = assemble_context(row["question"], evidence, token_budget=settings.ANSWER_CONTEXT_TOKENS)
            # Composed as it would be if answered (what the threshold decides is whether it is).
            lead = replace(verdict, answerable=True)
            answer_hit = _hit(compose_extractive_answer(row["question"], context.labelled, lead=lead).text,
                              row["answers"])
        out.append({"verdict": verdict, "lead_hit": bool(verdict.sentence) and _hit(verdict.sentence, row["answers"]),
                    "answer_hit": answer_hit})
    return out


def outcomes(rows: list[dict], reads: list[dict], threshold: float | None = None,
             rescue: float | None = None) -> list[dict]:
    """The rows' outcomes through the decide step, with the verdicts' own answerability or, given a
    `threshold` (and a `rescue` bar), answerable (and confident) when the verdict's probability reaches it."""
    out = []
    for row, read in zip(rows, reads, strict=True):
        verdict = read["verdict"]
        answered = False
        if verdict is not None:
            if threshold is not None and verdict.probability is not None:
                verdict = replace(verdict, answerable=verdict.probability >= threshold,
                                  confident=verdict.probability >= (rescue if rescue is not None else 2.0))
            decision = answerability_decide(row["question"], GateDecision(**row["gate"]), verdict,
                                            top_chunk_id=row["evidence"][0]["chunk_id"])
            answered = decision.answer
        out.append({**_slim(row), "answered": answered, "lead_hit": answered and read["lead_hit"],
                    "answer_hit": answered and read["answer_hit"],
                    "probability": verdict.probability if verdict else None,
                    "sentence": verdict.sentence if verdict else "", "span": verdict.span if verdict else ""})
    return out


def _slim(row: dict) -> dict:
    return {k: row[k] for k in ("id", "question", "impossible", "answers", "judged")}


def figures(outcomes: list[dict]) -> dict:
    noans = [o for o in outcomes if o["impossible"]]
    hasans = [o for o in outcomes if not o["impossible"]]
    refused = sum(not o["answered"] for o in noans) / max(len(noans), 1)
    hit = sum(o["answer_hit"] for o in hasans) / max(len(hasans), 1)
    return {"questions": len(outcomes), "noans_refused": round(refused, 4),
            "hasans_answered": round(sum(o["answered"] for o in hasans) / max(len(hasans), 1), 4),
            "hasans_lead_hit": round(sum(o["lead_hit"] for o in hasans) / max(len(hasans), 1), 4),
            "hasans_span_hit": round(hit, 4), "balanced": round((refused + hit) / 2, 4)}


def platt(logits: np.ndarray, labels: np.ndarray, iterations: int = 100) -> tuple[float, float]:
    """(scale, shift) with sigmoid(scale * logit + shift) the calibrated probability: Newton's method on the
    log-likelihood, each step halved until the likelihood rises (a full step can overshoot and diverge)."""
    x = np.stack([logits, np.ones_like(logits)], axis=1)

    def likelihood(beta: np.ndarray) -> float:
        z = x @ beta
        return float(np.sum(labels * z - np.logaddexp(0.0, z)))

    beta = np.array([1.0, 0.0])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-np.clip(x @ beta, -30, 30)))
        gradient = x.T @ (labels - p)
        hessian = x.T @ (x * (p * (1 - p))[:, None]) + 1e-6 * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        current, scale = likelihood(beta), 1.0
        while likelihood(beta + scale * step) < current and scale > 1e-6:
            scale /= 2
        beta = beta + scale * step
        if np.abs(scale * step).max() < 1e-9:
            break
    return float(beta[0]), float(beta[1])


def write_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
