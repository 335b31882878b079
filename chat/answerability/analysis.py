"""The question, analysed once: what it asks for and how the judge, the gate and the composer treat it.

Every step of an answer reads the same `QuestionAnalysis` (made by `question_analyse`, cached per text), so the
gate's phrase rule, the judge and the composer cannot disagree about whether a text is a question, what kind of
answer it wants, or whether a list answers it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from chat.answerability.answer_types import FACTOID_TYPES, AnswerType, expected_answer_type, is_question
from chat.answerability.lists import asks_for_several
from chat.terms import key_terms

# Longer than this, a question describes an information need at length (Cranfield and CISI queries, a pasted
# paragraph) rather than asking for one thing: there is no single answer to read, so the judge abstains and the
# gate's topical decision stands.
JUDGED_MAX_WORDS = 20


@dataclass(frozen=True)
class QuestionAnalysis:
    text: str
    is_question: bool  # a question, not a statement or a keyword query: only a question has an answer to find
    answer_type: AnswerType  # what its wording asks for (THING when it does not say)
    judged: bool  # a question short enough to ask for one thing: the judge decides whether the records answer it
    # A judged question asking for a typed value (who, when, how many, where ...): its answer slot can be checked.
    # For a description the gate's phrase rule still applies to evidence only just close in meaning (chat.gate).
    slot_checked: bool
    asks_several: bool  # several things or a procedure: a list answers it whole, in order
    terms: tuple[str, ...]  # stemmed content words, in order (chat.terms.key_terms)


@lru_cache(maxsize=2048)
def question_analyse(text: str) -> QuestionAnalysis:
    asked = is_question(text)
    answer_type = expected_answer_type(text)
    judged = asked and len(text.split()) <= JUDGED_MAX_WORDS
    return QuestionAnalysis(text=text, is_question=asked, answer_type=answer_type, judged=judged,
                            slot_checked=judged and answer_type in FACTOID_TYPES,
                            asks_several=asked and asks_for_several(text), terms=tuple(key_terms(text)))
