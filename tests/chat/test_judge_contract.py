"""The judge's contract: cases every answerability judge must pass, whatever it is made of (the trained reader
by default). Each case is evidence, a question, whether the evidence answers it and, when it does, words the
answer sentence must hold. They are what the product promises a user: quote the sentence that answers, refuse
the edit of a sentence that would have answered (an antonym, a swapped name, a changed number, a "not" put in),
and never call an on-topic record that says something else an answer."""

import pytest

from chat.answerability import answerability_judge
from tests.chat.factories import evidence

NORMANS = ("The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region in "
           "France. They were descended from Norse raiders who, under their leader Rollo, agreed to swear fealty to "
           "King Charles III of West Francia. The distinct identity of the Normans emerged in the first half of the "
           "10th century.")
SPECS = ("# Kestrel K2 Technical Specifications\n\n## Power\n\n- Battery: 48 V lithium iron phosphate pack.\n"
         "- Runtime: about 9 hours of typical picking.\n- Charging: 2 hours to full at a K2 dock.\n\n## Mechanical\n\n"
         "- Height: 1.45 m\n- Weight: 168 kg including battery.\n- Top speed: 2.0 m/s.")
CHARGING = ("# K2 Battery Charging Procedure\n\nLog every abnormal charging event in the charging log. Robots dock "
            "on their own when the pack falls to 20 %.\n\n## Manual charging\n\n1. Park the robot at a free dock.\n"
            "2. Press the charge button on the dock.\n3. Wait for the green light before you walk away.")
API = ("# Perch WMS API Integration Guide\n\nThis guide explains how a WMS pushes waves to Perch.\n\n## Rate limits\n\n"
       "20 requests per second per site. Bursts above that get HTTP 429 with a Retry-After header.")
CHECKLIST = "Vendor onboarding. The vendor onboarding checklist has seven steps and takes two days."
REFUNDS = "The finance team approves refunds for annual plans within 30 days."

ANSWERED = [
    (NORMANS, "Who was the leader of the Norse raiders?", "Rollo"),
    (NORMANS, "When did the distinct identity of the Normans emerge?", "first half of the 10th century"),
    (NORMANS, "Who did Rollo swear fealty to?", "King Charles III"),
    (NORMANS, "In what country is Normandy located?", "France"),
    (SPECS, "What's the runtime of a K2 on one charge?", "about 9 hours"),
    (SPECS, "How heavy is the K2?", "168 kg"),
    (SPECS, "How fast can a K2 drive?", "2.0 m/s"),
    (API, "What are the rate limits of the WMS API?", "20 requests per second per site"),
    (CHECKLIST, "How many steps does the vendor onboarding checklist have?", "seven steps"),
    (REFUNDS, "Which team approves refunds?", "finance team"),
    ("Monitors, docks and keyboards up to $400 can be expensed without a ticket.",
     "How much can I expense for a monitor?", "$400"),
    ("Perch 3.2 shipped on 2025-05-20, after a week of tests. Fixed in Perch 3.2.1, released on 2025-06-03.",
     "When was Perch 3.2 released?", "2025-05-20"),
]

REFUSED = [
    # on topic, and silent on what was asked
    (CHECKLIST, "When did the vendor onboarding checklist change?"),
    (SPECS, "What colour is the K2?"),
    (API, "Who wrote the WMS API guide?"),
    # an edit of the sentence that would answer: a swapped name, a changed number, an antonym, a "not"
    (NORMANS, "Who did King Charles III swear fealty to?"),
    (NORMANS, "When did the distinct identity of the Normans disappear?"),
    (NORMANS, "Who gave their name to Normandy in the 14th century?"),
    (REFUNDS, "Which team does not approve refunds?"),
    (SPECS, "What is the runtime of a K3 on one charge?"),
]


# The cases the wording rules (the default judge) get wrong today: the reader's target (docs/answering.md). Strict,
# so a rule change or a judge that passes one of them fails here until the case is taken off this list.
RULES_MISSES = {
    "In what country is Normandy located?",
    "What's the runtime of a K2 on one charge?",
    "How heavy is the K2?",
    "How fast can a K2 drive?",
    "What are the rate limits of the WMS API?",
    "Which team approves refunds?",
    "What colour is the K2?",
    "Who wrote the WMS API guide?",
    "When did the distinct identity of the Normans disappear?",
}


@pytest.fixture(autouse=True)
def _rules_misses(request, settings):
    """Marks a case the rules judge is known to miss as an expected (strict) failure under that judge."""
    question = getattr(request.node, "callspec", None) and request.node.callspec.params.get("question")
    if settings.ANSWERABILITY_JUDGE == "rules" and (question in RULES_MISSES or request.node.name
                                                    == "test_the_answer_comes_from_the_record_that_holds_it"):
        request.applymarker(pytest.mark.xfail(strict=True, reason="the rules judge misses this case"))


@pytest.mark.parametrize(("text", "question", "answer"), ANSWERED)
def test_the_answer_sentence_holds_the_answer(text, question, answer):
    verdict = answerability_judge(question, [evidence(text)])
    assert verdict.answerable, verdict
    assert answer in verdict.sentence, verdict


@pytest.mark.parametrize(("text", "question"), REFUSED)
def test_on_topic_evidence_that_does_not_answer_is_refused(text, question):
    verdict = answerability_judge(question, [evidence(text)])
    assert not verdict.answerable, verdict


def test_the_answer_comes_from_the_record_that_holds_it():
    question = "What are the rate limits of the WMS API?"
    verdict = answerability_judge(question, [evidence(CHARGING), evidence(API), evidence(SPECS)])
    assert verdict.answerable and "20 requests per second" in verdict.sentence, verdict


def test_no_evidence_is_no_answer():
    assert not answerability_judge("Who was the Norse leader?", []).answerable
