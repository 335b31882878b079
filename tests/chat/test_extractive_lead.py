"""The extractive answer leads with the sentence holding the answer, not the one restating the question;
headings are not sentences and a statement copied twice is shown once."""

import pytest

from chat.answerability import answerability_judge
from chat.extractive import compose_extractive_answer
from tests.chat.factories import evidence, labelled

QUESTION = "When was the vendor onboarding checklist revised?"
CHECKLIST = evidence(
    "Vendor Onboarding Checklist\n\n"
    "The vendor onboarding checklist was revised. "
    "The vendor onboarding checklist is kept by procurement and lists every supplier check. "
    "It was last revised in March 2024 after the audit. "
    "Suppliers complete it before their first invoice."
)
COPY = evidence("It was last revised in March 2024 after the audit. Procurement keeps the vendor onboarding "
                "checklist on the wiki.")


def test_answer_leads_with_the_sentence_holding_the_date():
    answer = compose_extractive_answer(QUESTION, labelled(CHECKLIST))
    sentences = [s.sentence for s in answer.sentences]
    assert sentences[0] == "It was last revised in March 2024 after the audit."
    assert answer.text.startswith("It was last revised in March 2024 after the audit. [S1]")


def test_restatement_and_heading_are_never_sentences():
    sentences = [s.sentence for s in compose_extractive_answer(QUESTION, labelled(CHECKLIST)).sentences]
    assert "The vendor onboarding checklist was revised." not in sentences
    assert not any(s.startswith("Vendor Onboarding Checklist") for s in sentences)
    # A statement (no answer slot) keeps the restating sentence: it is the evidence for the claim.
    claim = compose_extractive_answer("The vendor onboarding checklist was revised.", labelled(CHECKLIST))
    assert "The vendor onboarding checklist was revised." in [s.sentence for s in claim.sentences]


def test_near_duplicates_from_two_records_are_shown_once():
    answer = compose_extractive_answer(QUESTION, labelled(CHECKLIST, COPY))
    revised = [s for s in answer.sentences if s.sentence.startswith("It was last revised")]
    assert len(revised) == 1 and revised[0].label == "S1"


def test_the_verdicts_sentence_leads():
    items = labelled(COPY, CHECKLIST)
    verdict = answerability_judge(QUESTION, [COPY, CHECKLIST])
    # "It was ..." after the sentence naming the checklist is about the checklist: the second record's copy wins
    assert verdict.answerable and verdict.chunk_id == CHECKLIST.chunk_id and "March 2024" in verdict.sentence
    answer = compose_extractive_answer(QUESTION, items, lead=verdict)
    assert (answer.sentences[0].label, answer.sentences[0].start) == ("S2", verdict.start)
    # the rest keep source order after the lead
    rest = [(s.label, s.start) for s in answer.sentences[1:]]
    assert rest == sorted(rest)


def test_a_second_source_is_cited_for_a_statement_only_when_it_matches_as_well():
    """A statement (a claim to check) is answered from the record that matches it best; another record's sentence
    joins only if it matches at least as well. A question keeps the common floor: another record may hold the
    answer its lead's record lacks."""
    from chat.extractive import ExtractedSentence
    from chat.providers.extractive import RELATIVE_SENTENCE_FLOOR, _close_enough

    def sentence(label: str, score: float) -> ExtractedSentence:
        return ExtractedSentence(sentence="s", label=label, start=0, end=1, doc_start=0, doc_end=1, score=score)

    lead, best = sentence("S1", 0.8), 0.8
    near = 0.8 * (1 + RELATIVE_SENTENCE_FLOOR) / 2  # under the best, above the common floor
    assert _close_enough(sentence("S1", near), lead, best, asked=False)  # the lead's own record
    assert not _close_enough(sentence("S2", near), lead, best, asked=False)  # another record, a statement
    assert _close_enough(sentence("S2", best), lead, best, asked=False)
    assert _close_enough(sentence("S2", near), lead, best, asked=True)  # another record, a question
    assert not _close_enough(sentence("S2", 0.5), lead, best, asked=True)


BUDGET = evidence(
    "# FY2026 Budget Summary\n\n"
    "The FY2026 budget was approved by the board on 2025-03-10.\n\n"
    "## Headline numbers\n\n"
    "- The FY2026 R&D budget is $2.4M.\n"
    "- Sales and marketing: $1.1M.\n"
    "- General and administrative: $0.9M.\n\n"
    "Budget owners receive a monthly variance report from Grace Kim."
)
REVISION = evidence("On 2025-10-10 the FY2026 R&D budget was revised to $2.1M, down from the $2.4M approved in March.")


@pytest.mark.parametrize("question, weights", [
    ("What is the marketing budget?", None),
    ("What is the marketing budget?", {"budget": 2.5, "market": 2.5}),
    # sampled corpus statistics a few hundredths apart are a tie too (the demo's, pooled over every tenant)
    ("What is the marketing budget?", {"budget": 3.42, "market": 3.28}),
    # pooled over tenants holding other collections, the two words' weights drift far apart: the lines still hold
    # the same words of the question, placed the other way round
    ("What is the marketing budget?", {"budget": 6.42, "market": 5.79}),
    ("What is the marketing budget?", {"budget": 8.0, "market": 3.0}),
    # every word of the line is the question's: its amount alone fills the slot
    ("What is the sales and marketing budget?", None),
    ("What is the sales and marketing budget?", {"budget": 3.42, "market": 3.28, "sale": 3.3}),
])
def test_the_lead_is_the_sentence_about_what_was_asked_not_its_sibling(question, weights):
    """Sibling lines each hold one of "marketing" and "budget" and lend the other to their neighbour: a tie,
    however the corpus weighs the two words (or when it has no statistics yet). "budget" is in most of the
    evidence's sentences, "marketing" in one: the sentence holding it itself is the one about the marketing budget."""
    verdict = answerability_judge(question, [BUDGET, REVISION], term_weights=weights)
    assert verdict.answerable and verdict.sentence == "Sales and marketing: $1.1M.", verdict
    answer = compose_extractive_answer(question, labelled(BUDGET, REVISION), lead=verdict)
    assert answer.text.startswith("Sales and marketing: $1.1M. [S1]"), answer.text
