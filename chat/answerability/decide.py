"""The gate's decision revised by the verdict (chat.decision calls this after chat.gate.gate_decide)."""

from __future__ import annotations

from dataclasses import replace

from chat.answerability.answer_types import FACTOID_TYPES, expected_answer_type, is_question
from chat.answerability.verdict import Verdict
from chat.gate import GapKind, GateDecision

# Up to this many words a question counts as short.
SHORT_QUESTION_WORDS = 12
# Support the answer sentence needs to answer a short factoid question under the similarity bar: the rest
# of the question around the answer slot, almost all there.
FACTOID_MIN_SUPPORT = 0.8


# Longer than this, a question describes an information need at length (Cranfield and CISI queries, a pasted
# paragraph) rather than asking for one thing: there is no single answer slot to check, so the judge abstains.
JUDGED_MAX_WORDS = 20


def judged(question: str) -> bool:
    """Whether the verdict decides this question: a question (not a statement or keyword query) short enough to
    ask for one thing. For the rest the gate's topical decision stands, with its phrase rule (chat.gate)."""
    return is_question(question) and len(question.split()) <= JUDGED_MAX_WORDS


def slot_checked(question: str) -> bool:
    """Whether the verdict checks an answer slot for this question: a judged question (`judged`) asking for a
    typed value (who, when, how many, where, ...). For a question asking for a description ("What future is
    there for automatic medical diagnosis?") the judge needs only a sentence near the question's words, as
    such questions paraphrase their records (chat.answerability.verdict.OPEN_MIN_SUPPORT); the gate's phrase
    rule then still applies to evidence only just close in meaning (chat.gate). Measured: of CISI's questions
    asked of SciFact's tenant, 5 -> 3 of 76 answered, of Cranfield's 6 -> 4 of 225 (6 -> 2 with the phrases
    looked for in the fused top only, chat.gate._phrase_evidence), with no in-corpus question of the three
    collections lost; on SQuAD 2.0 (judged offline, gate-answered questions) 18 and 9 more unanswerable
    questions refused (odd and even articles) for 6 and 4 fewer answers holding the gold span."""
    return judged(question) and expected_answer_type(question) in FACTOID_TYPES


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
    if (not decision.answer and decision.reason == "low_similarity" and verdict.answerable
            and verdict.answer_type in FACTOID_TYPES and verdict.chunk_id == top_chunk_id
            and verdict.support >= FACTOID_MIN_SUPPORT and len(question.split()) <= SHORT_QUESTION_WORDS):
        return replace(decision, answer=True, reason="typed_answer", gap_kind=None)
    return decision
