"""`answerability_judge`, the one interface: the judge ANSWERABILITY_JUDGE names, with its version id.

- `rules` (the default): the wording rules (chat.answerability.verdict).
- `reader`: the trained reader (chat.reader, chat.answerability.reader_judge), opt-in until it measures better
  than the rules. Should its model be absent or fail to load or run, the rules judge that answer, and their
  version is what the answer records.
- `learned`: a logistic regression over the rules' readings (chat.answerability.learned; the rules when its
  coefficients are absent).

Every verdict carries the version of the judge that made it (`Verdict.judge`); the answer stores it on its message
and the answer cache keys on `judge_version()`, so an answer made by one judge is never served for another.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace

from django.conf import settings

from chat.answerability.learned import learned_judge
from chat.answerability.verdict import TOP_K, Verdict, rules_judge
from chat.evidence import Evidence

logger = logging.getLogger(__name__)

# Dated ids of the rule sets: a change to the rules that moves answers is a new id.
RULES_VERSION = "rules:2026-12-06"
LEARNED_VERSION = "learned:2026-11"


def judge_version() -> str:
    """The version id of the judge in force (what a new answer will record, unless the reader fails)."""
    if settings.ANSWERABILITY_JUDGE == "reader":
        from chat.reader.model import ReaderUnavailable, reader_get

        try:
            return reader_get().version
        except ReaderUnavailable:
            return RULES_VERSION
    return LEARNED_VERSION if settings.ANSWERABILITY_JUDGE == "learned" else RULES_VERSION


def answerability_judge(question: str, evidence: Sequence[Evidence], *,
                        term_weights: Mapping[str, float] | None = None, top_k: int = TOP_K,
                        min_support: float | None = None) -> Verdict:
    """Whether the best-ranked `evidence` holds an answer to `question`, and where.

    An explicit `min_support` asks for the rules' bar, so it selects the rules."""
    if min_support is None and settings.ANSWERABILITY_JUDGE == "reader":
        from chat.answerability.reader_judge import reader_judge
        from chat.reader.model import ReaderUnavailable

        try:
            return reader_judge(question, evidence)
        except ReaderUnavailable as exc:
            logger.error("reader unavailable, the rules judge this answer: %s", exc)
    if min_support is None and settings.ANSWERABILITY_JUDGE == "learned":
        verdict = learned_judge(question, evidence, term_weights=term_weights, top_k=top_k)
        if verdict is not None:
            return replace(verdict, judge=LEARNED_VERSION)
    verdict = rules_judge(question, evidence, term_weights=term_weights, top_k=top_k, min_support=min_support)
    return replace(verdict, judge=RULES_VERSION)
