"""The gate's decision revised by the verdict (chat.decision calls this after chat.gate.gate_decide)."""

from __future__ import annotations

from dataclasses import replace

from chat.answerability.analysis import question_analyse
from chat.answerability.answer_types import FACTOID_TYPES
from chat.answerability.verdict import Verdict
from chat.gate import GapKind, GateDecision

# Up to this many words a question counts as short.
SHORT_QUESTION_WORDS = 12
# Support the answer sentence needs to answer a short factoid question under the similarity bar: the rest
# of the question around the answer slot, almost all there.
FACTOID_MIN_SUPPORT = 0.8


def judged(question: str) -> bool:
    """Whether the verdict decides this question (`QuestionAnalysis.judged`)."""
    return question_analyse(question).judged


def slot_checked(question: str) -> bool:
    """Whether the verdict checks an answer slot for this question (`QuestionAnalysis.slot_checked`). For a
    question asking for a description ("What future is there for automatic medical diagnosis?") the gate's phrase
    rule then still applies to evidence only just close in meaning (chat.gate): fewer out-of-corpus questions
    answered, no in-corpus one lost (the answers bench's three collections)."""
    return question_analyse(question).slot_checked


def answerability_decide(question: str, decision: GateDecision, verdict: Verdict, *,
                         top_chunk_id: int | None) -> GateDecision:
    """The gate's decision revised by the verdict: a topical answer the evidence holds no answer for becomes a
    refusal (the records do not have it); a short factoid question refused only for low similarity is answered
    when the top-ranked chunk holds its typed answer with the rest of the question around it. Statements and
    keyword queries have no answer slot, nor has a long description of a need: the gate's topical decision
    stands for them."""
    if not judged(question):
        return decision
    if decision.answer and not verdict.answerable:
        return replace(decision, answer=False, reason="not_answerable:" + ";".join(verdict.reasons),
                       gap_kind=GapKind.KNOWLEDGE_MISSING)
    if (not decision.answer and decision.reason == "low_similarity" and verdict.probability is not None):
        # The reader read the evidence: sure enough, it answers where the similarity bar was not met.
        if verdict.answerable and verdict.confident:
            return replace(decision, answer=True, reason="read_answer", gap_kind=None)
        return decision
    if (not decision.answer and decision.reason == "low_similarity" and verdict.answerable
            and verdict.answer_type in FACTOID_TYPES and verdict.chunk_id == top_chunk_id
            and verdict.support >= FACTOID_MIN_SUPPORT and len(question.split()) <= SHORT_QUESTION_WORDS):
        return replace(decision, answer=True, reason="typed_answer", gap_kind=None)
    return decision
