"""Preferences among the sentences that qualify as an answer: an event before a plan, a count of the noun asked
before other numbers (and of what the question counts it of), a "Key: value" line keyed by the noun asked (or the
value of a heading naming it) before prose that mentions it."""

import pytest

from chat.answerability import (
    answerability_judge,
    asked_noun,
    asks_what_happened,
    counted_noun,
    counted_of,
    counts,
    counts_of,
    labels,
    states_intention,
)
from chat.extractive import compose_extractive_answer
from tests.chat.factories import evidence, labelled


@pytest.fixture(autouse=True)
def _rules_judge(settings):
    """The rules' verdicts are read here; the learned judge is tested in test_answerability_learned.py."""
    settings.ANSWERABILITY_JUDGE = "rules"


@pytest.mark.parametrize(("text", "intends"), [
    ("| 2025-05-05 | Planned go-live |", True),
    ("The pilot will use 12 K2 robots.", True),
    ("Goals", True),
    ("The Northgate pilot went live on 2025-05-12, one week later than planned.", False),  # compared with the plan
    ("Average picks per robot-hour: 131 in week 11 (target 120).", False),  # the target is an aside
    ("12 K2 robots are in the Northgate pilot.", False),
])
def test_a_plan_or_goal_is_told_from_an_event(text, intends):
    assert states_intention(text) is intends


@pytest.mark.parametrize(("question", "happened"), [
    ("When did the Northgate pilot go live?", True),
    ("How many picks per robot-hour did Northgate reach?", True),
    ("When was the planned go-live?", False),  # asks about the plan itself
    ("When does the pilot go live?", False),
    ("What is the target for picks per robot-hour?", False),
])
def test_a_question_in_the_past_asks_what_happened(question, happened):
    assert asks_what_happened(question) is happened


PILOT_PLAN = ("## Timeline\n\n| Date | Milestone |\n|---|---|\n| 2025-04-07 | Docks installed |\n"
              "| 2025-05-05 | Planned go-live for the Northgate pilot |\n\n## Goals\n\n"
              "- Reach 120 picks per robot-hour at Northgate by the end of week 6.\n")
PILOT_STATUS = ("The Northgate pilot went live on 2025-05-12, one week later than planned.\n\n"
                "## Results so far\n\n- Average picks per robot-hour: 131 in week 11 (target 120).\n")


@pytest.mark.parametrize(("question", "answer"), [
    ("When did the Northgate pilot go live?", "2025-05-12"),
    ("How many picks per robot-hour did Northgate reach?", "131"),
])
def test_asked_what_happened_the_event_answers_before_the_plan(question, answer):
    # The plan ranks first and holds the question's words as well as the status does (its goal line more of them):
    # the event answers, and the extractive answer leads with it.
    plan = evidence(PILOT_PLAN, title="Northgate Pilot Plan")
    status = evidence(PILOT_STATUS, title="Northgate Pilot Status")
    verdict = answerability_judge(question, [plan, status])
    assert verdict.answerable and verdict.chunk_id == status.chunk_id and answer in verdict.sentence, verdict
    composed = compose_extractive_answer(question, labelled(plan, status), lead=verdict)
    assert answer in composed.sentences[0].sentence, composed.sentences
    # With only the plan, the plan still answers: a plan is no refusal.
    alone = answerability_judge(question, [plan])
    assert alone.answerable and alone.chunk_id == plan.chunk_id, alone


@pytest.mark.parametrize(("question", "noun"), [
    ("How many charging docks are at Northgate?", "docks"),
    ("How many picks per robot-hour did Northgate reach?", "picks"),
    ("How many weight rooms are in the Malkin Athletic Center", "rooms"),
    ("How much does the K2 weigh?", None),
])
def test_a_how_many_question_names_the_noun_it_counts(question, noun):
    assert counted_noun(question) == noun


@pytest.mark.parametrize(("sentence", "noun", "counted"), [
    ("Replaced contacts on all 4 Northgate docks with revision C.", "docks", True),
    ("| 2025-04-07 | Docks installed, 4 charging docks |", "docks", True),
    ("Average picks per robot-hour: 131 in week 11 (target 120).", "picks", True),  # a label's value
    ("Dock 3 at Northgate reported contact temperatures of 71 °C.", "docks", False),  # names a dock, counts degrees
    ("Three docks were installed.", "docks", True),
    ("Picks per robot-hour: rising every week since 2025.", "picks", False),  # keyed by it, but no count
])
def test_a_sentence_counts_the_noun_only_with_its_number(sentence, noun, counted):
    assert counts(sentence, noun) is counted


@pytest.mark.parametrize(("question", "of"), [
    ("How many weeks of parental leave do employees get?", {"parental", "leave"}),
    ("How many square miles of land does the city cover?", {"land"}),
    ("How many weeks of leave?", set()),  # no verb closes what it is of
    ("How many of the students are enrolled?", set()),
    ("How many charging docks are at Northgate?", set()),
])
def test_a_how_many_question_names_what_its_noun_counts(question, of):
    assert counted_of(question) == of


@pytest.mark.parametrize(("sentence", "counted"), [
    ("**Primary caregivers** receive 16 weeks of fully paid parental leave.", True),
    ("Parental leave: 16 weeks, fully paid.", True),  # keyed by what is counted
    ("For up to 4 weeks after leave they can work 60 % of their hours at full pay.", False),  # weeks of no leave
    ("Parental leave is paid for 16 days.", False),  # counts another noun
])
def test_a_sentence_counts_the_noun_of_what_is_asked(sentence, counted):
    assert counts_of(sentence, "weeks", frozenset({"parental", "leave"})) is counted


def test_asked_how_many_weeks_of_leave_the_weeks_of_that_leave_answer():
    # The phased return ranks first and holds every word of the question ("parental" from its heading), with
    # "4 weeks" a count of weeks: but weeks after leave, not of it.
    phased = evidence("Employees can take a phased return: for up to 4 weeks after leave they can work 60 % of "
                      "their hours at full pay.", title="Parental Leave Policy",
                      heading_path="Parental Leave Policy › Returning to work")
    entitlement = evidence("- **Primary caregivers** receive 16 weeks of fully paid parental leave.",
                           title="Parental Leave Policy", heading_path="Parental Leave Policy › Entitlement")
    verdict = answerability_judge("How many weeks of parental leave do employees get?", [phased, entitlement])
    assert verdict.answerable and verdict.chunk_id == entitlement.chunk_id and verdict.span == "16", verdict


def test_asked_how_many_the_sentence_counting_that_noun_answers():
    # The incident ranks first and holds every word of the question, with "3" and "71" as numbers; the number of
    # docks is in the next record.
    incident = evidence("Dock 3 at Northgate reported contact temperatures of 71 °C during charging.",
                        title="KR-1042: Charging dock overheating at Northgate")
    repair = evidence("Omar Haddad replaced the contacts on all 4 charging docks at Northgate.",
                      title="KR-1042 comments")
    question = "How many charging docks are at Northgate?"
    verdict = answerability_judge(question, [incident, repair])
    assert verdict.answerable and verdict.chunk_id == repair.chunk_id and verdict.span == "4", verdict
    composed = compose_extractive_answer(question, labelled(incident, repair), lead=verdict)
    assert composed.sentences[0].sentence.startswith("Omar Haddad replaced"), composed.sentences
    # Nothing counts docks: the incident still answers (a preference, not a refusal).
    alone = answerability_judge(question, [incident])
    assert alone.answerable and alone.chunk_id == incident.chunk_id, alone


@pytest.mark.parametrize(("question", "noun"), [
    ("What is the runtime of the K2?", "runtime"),
    ("What is the K2's runtime?", "runtime"),
    ("What is the top speed of the K2?", "speed"),
    ("What was the status of KR-1042?", "status"),
    ("Who owns the Perch roadmap?", None),
])
def test_a_what_question_names_the_noun_it_asks_for(question, noun):
    assert asked_noun(question) == noun


@pytest.mark.parametrize(("sentence", "keyed"), [
    ("Runtime: about 9 hours of typical picking", True),
    ("Battery runtime: 9 h", True),
    ("On some K2 units the lidar drifts after 6+ hours of runtime.", False),
    ("Note: runtime varies with load.", False),  # keyed by "note"
])
def test_a_key_value_line_is_keyed_by_its_label(sentence, keyed):
    assert labels(sentence, "runtime") is keyed


def test_asked_what_the_n_of_x_is_the_line_keyed_by_n_answers():
    # The release notes rank first and hold "K2" and "runtime" in one sentence; the spec sheet states it.
    notes = evidence("On some K2 units the lidar calibration drifts after 6+ hours of runtime.",
                     title="K2 Firmware 2.5 release notes")
    specs = evidence("## Power\n\n- Runtime: about 9 hours of typical picking\n- Charging: 20 A maximum\n",
                     title="Kestrel K2 Technical Specifications",
                     heading_path="Kestrel K2 Technical Specifications › Kestrel K2 Technical Specifications › Power")
    question = "What is the runtime of the K2?"
    verdict = answerability_judge(question, [notes, specs])
    assert verdict.answerable and verdict.sentence == "Runtime: about 9 hours of typical picking", verdict
    composed = compose_extractive_answer(question, labelled(notes, specs), lead=verdict)
    assert composed.sentences[0].sentence == verdict.sentence, composed.sentences


def test_asked_for_what_a_heading_names_its_first_statement_or_its_list_answers():
    """A heading keys the block under it as a label keys its line: the value is its first statement, or its list."""
    guide = evidence("## Rate limits\n\nPerch allows 20 requests per second per site. Perch returns HTTP 429 with "
                     "a Retry-After header when the limit is hit.\n", title="Perch WMS API Integration Guide")
    question = "What are the rate limits of the WMS API?"
    verdict = answerability_judge(question, [guide])
    assert verdict.answerable and verdict.sentence == "Perch allows 20 requests per second per site.", verdict
    # The later sentence holds more of the question's words ("limit"); without the heading it would lead.
    unheaded = evidence(guide.text.replace("## Rate limits\n\n", ""), title=guide.title)
    assert answerability_judge(question, [unheaded]).sentence.startswith("Perch returns HTTP 429"), unheaded


def test_the_list_under_a_heading_naming_what_is_asked_answers_and_another_versions_sentence_does_not_refuse_it():
    notes = evidence("# Perch 3.2 Release Notes\n\nPerch 3.2 shipped on 2025-05-20.\n\n## Fixes\n\n"
                     "- Fixed map sync failing after upgrade from 3.0 (KR-1001).\n"
                     "- Reduced task assignment latency from 1.8 s to 0.6 s at the 95th percentile.\n\n"
                     "## Known issues\n\n- The route planner could ignore no-go zones (KR-1104). Fixed in Perch "
                     "3.2.1, released on 2025-06-03.\n", title="Perch 3.2 Release Notes")
    question = "What fixes are in Perch 3.2?"
    verdict = answerability_judge(question, [notes])
    assert verdict.answerable, verdict
    assert verdict.sentence == "Fixed map sync failing after upgrade from 3.0 (KR-1001).", verdict
    composed = compose_extractive_answer(question, labelled(notes), lead=verdict)
    assert [s.sentence for s in composed.sentences][:2] == [  # the whole list leads, in its order
        "Fixed map sync failing after upgrade from 3.0 (KR-1001).",
        "Reduced task assignment latency from 1.8 s to 0.6 s at the 95th percentile."], composed.sentences


def test_only_a_question_opening_with_what_it_asks_for_is_keyed_by_a_heading():
    style = evidence("## Facts\n\n- Write the date and the name of whoever acted.\n", title="Style guide")
    prose = evidence("Critics said the energy policies were quick fixes that ignored the facts of supply.",
                     title="Energy policy")
    verdict = answerability_judge("Critics said the policies were quick fixes ignoring which facts?", [prose, style])
    assert verdict.sentence.startswith("Critics said"), verdict
