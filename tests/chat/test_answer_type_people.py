"""Asked who, a kind of people ("All permanent employees") answers where a sentence names no one."""

import pytest

from chat.answerability import AnswerType, answerability_judge, typed_spans
from tests.chat.factories import evidence


@pytest.fixture(autouse=True)
def _rules_judge(settings):
    """These tests read the rules' verdict; the learned judge is tested in test_answerability_learned.py."""
    settings.ANSWERABILITY_JUDGE = "rules"


@pytest.mark.parametrize(("question", "sentence", "spans"), [
    ("Who is eligible for parental leave?", "All permanent employees are eligible from their first day.",
     ["All permanent employees"]),
    ("Who is not covered?", "Contractors are not covered.", ["Contractors"]),
    # a sentence naming someone answers by the name
    ("Who approves leave?", "Hannah Schmidt approves requests from employees.", ["Hannah Schmidt"]),
    ("Who is eligible for parental leave?", "The policy applies from the first day.", []),
    ("Which employees are eligible?", "Employees are eligible from the first day.", []),  # the question's own word
])
def test_who_may_be_a_kind_of_people_where_the_sentence_names_no_one(question, sentence, spans):
    found = [sentence[s:e] for s, e in typed_spans(sentence, AnswerType.PERSON, question)]
    assert found == spans


def test_asked_who_is_eligible_the_sentence_naming_the_kind_of_people_answers():
    # (two chunks below the record's title heading, "Parental Leave Policy", the outline above each)
    entitlement = evidence("- **Primary caregivers** receive 16 weeks of fully paid parental leave.",
                           title="Parental Leave Policy",
                           heading_path="Parental Leave Policy › Parental Leave Policy › Entitlement")
    eligibility = evidence("All permanent employees are eligible from their first day. Contractors are not covered.",
                           title="Parental Leave Policy",
                           heading_path="Parental Leave Policy › Parental Leave Policy › Eligibility")
    # (the sample corpus's weights: "eligible" is in fewer of its records than "parental" or "leave")
    weights = {"eligible": 4.72, "parental": 3.21, "leave": 2.7}
    verdict = answerability_judge("Who is eligible for parental leave?", [entitlement, eligibility],
                                  term_weights=weights)
    assert verdict.answerable and verdict.sentence == "All permanent employees are eligible from their first day."
