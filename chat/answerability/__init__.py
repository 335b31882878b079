"""Answerability: does the evidence *contain an answer* to this question, not merely talk about its topic?

The refusal gate (chat.gate) measures topic: a record about the Normans is close to every question about the
Normans, including the ones it cannot answer ("When did the Normans lose their identity?" asked of a
paragraph that says when they gained it). This package decides per question, offline and model-free:

1. the expected answer type, from the question's wording (who → a person or organisation, when / what year →
   a date, how many / how much → a number or amount, where → a place, which / what X → a phrase about X);
2. for each candidate sentence of the top evidence: a span of that type that is not a word of the question
   (the answer slot filled), the question's other content words in the sentence or the one next to it,
   negation on one side only, and the question's names, codes and numbers occurring in the record at all;
3. the best sentence and a verdict: answerable or not, the sentence and answer span, the type, and reasons.
   Asked when something happened or how many it reached, a sentence stating the event is chosen before one
   stating a plan or goal ("went live on 2025-05-12", not "| 2025-05-05 | Planned go-live |"); asked how many
   of a noun, a sentence giving a number of it ("all 4 Northgate docks", not "Dock 3 … 71 °C"); asked "what is
   the N of X", a "Key: value" line keyed by N ("Runtime: about 9 hours").

`answerability_judge` is the one interface (chat.answerability.judge): the rules' own bars by default, or
with ANSWERABILITY_JUDGE=learned a logistic regression fitted over these readings in place of the support bar
(chat.answerability.learned; the rules again when its coefficients are absent).
The rules are deliberately simple and calibrated on the even-indexed articles of SQuAD 2.0
dev (benchmarks/chat/squad.py reports on the odd ones); constants below say what each one was tuned for.
spaCy-style entity models are not available offline, so names are capitalised-word runs and dates, numbers
and amounts are regular expressions (dateparser reads whole strings as dates too eagerly — "in the 10th and
11th" becomes 11 October — to be a detector here).
"""


from chat.answerability.answer_types import (
    FACTOID_TYPES,
    AnswerType,
    asked_noun,
    asks_amount,
    asks_something,
    counted_noun,
    counted_of,
    counts,
    counts_of,
    expected_answer_type,
    is_question,
    labels,
    typed_spans,
)
from chat.answerability.conflicts import (
    antonym_conflict,
    asks_what_happened,
    heading_at,
    identifiers_absent,
    is_heading,
    restates_question,
    states_intention,
    swapped_entity,
)
from chat.answerability.decide import answerability_decide, judged, slot_checked
from chat.answerability.judge import answerability_judge
from chat.answerability.verdict import SentenceReading, Verdict, read_sentences, rules_judge

__all__ = [
    "FACTOID_TYPES",
    "AnswerType",
    "SentenceReading",
    "Verdict",
    "answerability_decide",
    "asks_amount",
    "asks_something",
    "asks_what_happened",
    "counted_noun",
    "counted_of",
    "counts",
    "counts_of",
    "judged",
    "answerability_judge",
    "asked_noun",
    "antonym_conflict",
    "expected_answer_type",
    "identifiers_absent",
    "heading_at",
    "is_heading",
    "is_question",
    "labels",
    "read_sentences",
    "restates_question",
    "rules_judge",
    "slot_checked",
    "states_intention",
    "swapped_entity",
    "typed_spans",
]
