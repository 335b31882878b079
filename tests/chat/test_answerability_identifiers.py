"""What the question names must be in the evidence next to the answer: its numbers, its names, an acronym (held by
the words it abbreviates) and a month (held by a date in it); chat.answerability.identifiers_absent."""

import pytest

from chat.answerability import answerability_judge, identifiers_absent
from chat.terms import acronyms
from tests.chat.factories import evidence
from tests.chat.test_answerability import NORMANS


@pytest.fixture(autouse=True)
def _rules_judge(settings):
    """The rules' reasons are read here (as in test_answerability.py)."""
    settings.ANSWERABILITY_JUDGE = "rules"


def test_the_questions_acronym_is_held_by_the_words_it_abbreviates():
    # The policy never writes "PTO" where it gives the entitlement; the sick-leave line does, and gives sick days.
    policy = evidence("# Paid Time Off Policy\n\nEvery full-time employee gets 25 days of paid time off per calendar "
                      "year plus 10 company holidays.", title="Paid Time Off Policy")
    sick = evidence("## Sick leave\n\nSick leave is separate from PTO: up to 10 paid sick days per year.",
                    title="Paid Time Off Policy")
    question = "How many PTO days do employees get per year?"
    assert acronyms(question) == ["pto"]
    verdict = answerability_judge(question, [policy, sick])
    assert verdict.answerable and verdict.span == "25", verdict
    assert identifiers_absent(question, "Every employee gets 25 days of paid time off.") == []


def test_a_month_the_question_names_is_held_by_an_iso_date_in_that_month():
    collision = evidence("On 2025-08-19 at 14:37 local time, K2 robot serial K2-0117 drove into the end of rack 19B at "
                         "Northgate. The bumper triggered and the robot stopped within 12 cm.",
                         title="Post-mortem: K2 rack collision at Northgate")
    assert identifiers_absent("What happened in the rack collision at Northgate in August?", collision.text) == []
    # Another month, a date written day-or-month first, or a code that only looks like a date do not hold it.
    assert identifiers_absent("What happened at Northgate in July?", collision.text) == ["july"]
    assert identifiers_absent("What broke in August?", "Rack 19B broke on 08/09/2025.") == ["august"]
    assert identifiers_absent("What broke in August?", "Ticket KR-2025-08 was closed.") == ["august"]
    verdict = answerability_judge("What happened in the rack collision at Northgate in August?", [collision])
    assert not any(reason.startswith("missing:") for reason in verdict.reasons), verdict


def test_verdict_refuses_a_missing_name_or_number():
    assert identifiers_absent("Who gave their name to Normandy in the 1000's?", NORMANS.text) == ["1000"]
    assert identifiers_absent("Who ruled Normandy after King Louis?", NORMANS.text) == ["louis"]
    verdict = answerability_judge("Who gave their name to Normandy in the 1000's?", [NORMANS])
    assert not verdict.answerable and "missing:1000" in verdict.reasons


def test_names_must_stand_next_to_the_answer():
    text = evidence("Alan Stevenson designed the Skerryvore lighthouse. The keepers rowed out in turns. "
                    "The station kept three boats. The tower was first lighted in 1844.")
    verdict = answerability_judge("When did Alan Stevenson first light the tower?", [text])
    assert not verdict.answerable and "missing:alan,stevenson" in verdict.reasons
    assert answerability_judge("When was the tower first lighted?", [text]).answerable
