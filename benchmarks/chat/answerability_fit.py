"""Fit the learned answerability judge (chat.answerability.learned) on one half of SQuAD 2.0 dev.

`manage.py fit_answerability --split even` (the only split the shipped coefficients were fitted on) asks each
question of that half through the real retrieval and gate (chat.decision, with the rules judging), reads the
rules' candidate sentence and the regression's features, and fits an L2-regularised logistic regression:
unanswerable questions are the negatives, answerable ones whose gold answer is in the top evidence the
positives (an answerable question whose evidence lacks the answer cannot be answered right either way, so it
teaches nothing). Only questions the gate would answer are used, since the judge can only refuse those.
Fitted on the questions whose evidence has a sentence that passes the hard rules (the judge refuses the
others whatever the regression says). The threshold maximises balanced accuracy on the same half; the odd
half stays held out for `benchmarks/chat/squad.py`. Writes the JSON and prints its sha256 for
chat.answerability.learned.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
from django.db import transaction
from django.test.utils import override_settings

from benchmarks.chat.squad import SQUAD_FILE, _questions, squad_articles, squad_normal, squad_tenant
from chat.answerability import is_question
from chat.answerability.analysis import JUDGED_MAX_WORDS
from chat.answerability.learned import FEATURES, file_digest, judge_features
from chat.answerability.verdict import TOP_K, rules_reading
from chat.decision import decide_question
from chat.evidence import Evidence
from chat.retrieval import term_weights

# L2 penalty on the standardised weights: the features overlap (three coverage measures), and a light
# penalty keeps their weights from trading off wildly on 1,200 questions.
L2 = 1.0


def _gate_answered(decision) -> bool:
    """Whether the gate (before the judge) answered: the judge either refused it or let it stand."""
    if decision is None:
        return False
    if decision.reason.startswith("not_answerable"):
        return True
    return decision.answer and decision.reason != "typed_answer"


def _row(authority, question: dict) -> dict | None:
    """One question as the judge sees it: its evidence, term weights and labels (features are computed by
    `fit`, so a change of features needs no new pass through retrieval)."""
    text = question["text"]
    if not is_question(text) or len(text.split()) > JUDGED_MAX_WORDS:
        return None
    with transaction.atomic():
        decision = decide_question(authority, text)
    part = decision.parts[0]
    if not part.evidence or not _gate_answered(part.decision):
        return None
    top = " ".join(squad_normal(item.text) for item in part.evidence[:TOP_K])
    gold_in = any(g and f" {g} " in f" {top} " for g in (squad_normal(a) for a in question["answers"]))
    return {"id": question["id"], "question": text, "impossible": question["impossible"],
            "gold_in_evidence": gold_in, "weights": term_weights(authority, text),
            "evidence": [asdict(item) for item in part.evidence]}


def collect(data: Path, split: str, *, limit: int | None = None) -> list[dict]:
    """The rows of the `split` half's questions the gate answers (rules judging)."""
    articles = squad_articles(data / SQUAD_FILE)
    tenant, authority, _created = squad_tenant(articles, reuse=True)
    rows = []
    with override_settings(ANSWERABILITY_JUDGE="rules"):
        for question in _questions(articles, split, limit):
            row = _row(authority, question)
            if row is not None:
                rows.append(row)
    return rows


def features_of(row: dict) -> tuple[bool, list[float]]:
    """Whether the hard rules leave a candidate sentence (else the judge refuses whatever the regression says),
    and the regression's features."""
    evidence = [Evidence(**item) for item in row["evidence"]]
    candidate, readings = rules_reading(row["question"], evidence, term_weights=row["weights"], min_support=0.0)
    return candidate.answerable, judge_features(row["question"], evidence, candidate, readings,
                                                term_weights=row["weights"])


def fit_logistic(x: np.ndarray, y: np.ndarray, *, l2: float = L2, iterations: int = 50) -> tuple[np.ndarray, float]:
    """Newton's method on the penalised log-likelihood (the bias unpenalised); x standardised."""
    n, d = x.shape
    design = np.hstack([np.ones((n, 1)), x])
    beta = np.zeros(d + 1)
    penalty = np.eye(d + 1) * l2
    penalty[0, 0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ beta, -30, 30)))
        gradient = design.T @ (y - p) - penalty @ beta
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.abs(step).max() < 1e-8:
            break
    return beta[1:], float(beta[0])


def best_threshold(p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The probability bar with the highest balanced accuracy (answer the positives, refuse the negatives)."""
    best = (0.5, -1.0)
    for bar in np.linspace(0.05, 0.95, 181):
        answered = p >= bar
        balanced = (answered[y == 1].mean() + (~answered[y == 0]).mean()) / 2
        if balanced > best[1]:
            best = (float(bar), float(balanced))
    return best


def fit(rows: list[dict], out: Path) -> dict:
    """Fit on `rows` (from `collect`), write the coefficients JSON to `out`; returns a summary."""
    usable = [r for r in rows if r["impossible"] or r["gold_in_evidence"]]
    read = [features_of(r) for r in usable]
    open_ = np.array([candidate for candidate, _ in read])
    x = np.array([values for _, values in read], dtype=float)
    y = np.array([0.0 if r["impossible"] else 1.0 for r in usable])
    # Fitted where it decides (a candidate sentence passed the hard rules); the threshold is chosen over all
    # rows, those without a candidate counting as refused, so it is the bar that serves the whole pipeline.
    mean, scale = x[open_].mean(axis=0), x[open_].std(axis=0)
    scale[scale == 0] = 1.0
    weights, bias = fit_logistic((x[open_] - mean) / scale, y[open_])
    p = np.where(open_, 1.0 / (1.0 + np.exp(-(((x - mean) / scale) @ weights + bias))), 0.0)
    threshold, balanced = best_threshold(p, y)
    payload = {"features": list(FEATURES), "mean": mean.round(6).tolist(), "scale": scale.round(6).tolist(),
               "weights": weights.round(6).tolist(), "bias": round(bias, 6), "threshold": round(threshold, 4),
               "fitted_on": "SQuAD 2.0 dev, even-indexed articles, questions the gate answers with a rules candidate",
               "rows": len(usable), "positives": int(y.sum())}
    out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return {"rows": len(usable), "positives": int(y.sum()), "threshold": threshold,
            "train_balanced_accuracy": round(balanced, 4), "sha256": file_digest(out),
            "weights": dict(zip(FEATURES, weights.round(3).tolist(), strict=True))}
