"""A list under a heading answers a question about what the heading names: its items count the heading's words
as their own, and the extractive answer quotes the whole list, in its own order — but only for a question asking
for several things or a procedure, and only when the heading names what was asked."""

import pytest

from chat.answerability import answerability_judge
from chat.answerability.lists import asks_for_several, heading_over, list_block, list_item_at
from chat.extractive import compose_extractive_answer
from tests.chat.factories import evidence, labelled

EXTENSION = evidence(
    "# Northgate Pilot Extension\n\nStatus: **extended**.\n\n## Success criteria for the extension\n\n"
    "- 125 picks per robot-hour across both shifts.\n- Fleet availability of 97 % or better.\n"
    "- A decision on a commercial contract by 2026-02-28.\n\n"
    "Northgate might roll out K2 to their Columbus site in 2026, but that has not been agreed.",
    title="Northgate Pilot Extension")
SAFETY = evidence(
    "# Safety Committee\n\n## Members\n\n- Sofia Alvarez (chair)\n- Tom Becker\n- Omar Haddad\n\n"
    "## Reporting an incident\n\n1. Make the area safe: press the emergency stop.\n"
    "2. Post in #safety with the robot serial number, site and time.\n"
    "3. Open a ticket in Kestrel Tickets with component *Safety*.\n\n"
    "All post-mortems are written within 5 business days.",
    title="Safety Committee", heading_path="Safety Committee › Safety Committee")
CHARGING = evidence(
    "## 1. Normal (autonomous) charging\n\n1. Perch sends a K2 to its dock when the charge drops below 25 %.\n"
    "2. The robot aligns using the dock fiducial and lowers its charging contacts.\n"
    "3. Charging runs at a maximum of 20 A. The BMS stops charging at 90 %.",
    title="K2 Battery Charging Procedure", heading_path="K2 Battery Charging Procedure › K2 Battery Charging Procedure")
VALUES = evidence(
    "## Our values\n\n- Safety first - a robot that is not safe does not ship.\n"
    "- Write it down - if it is not in the wiki, it did not happen.\n- Own the outcome - one named owner.",
    title="About Kestrel Robotics")


def _texts(text: str, spans) -> list[str]:
    return [text[s:e] for s, e in spans]


def test_a_list_is_its_items_up_to_the_next_heading_or_paragraph():
    text = SAFETY.text
    assert list_item_at(text, text.index("Tom Becker")) and not list_item_at(text, text.index("All post"))
    assert _texts(text, list_block(text, text.index("Tom Becker"))) == [
        "Sofia Alvarez (chair)", "Tom Becker", "Omar Haddad"]  # a short item is no heading
    assert _texts(text, list_block(text, text.index("Post in"))) == [
        "Make the area safe: press the emergency stop.",  # a numbered item's "1." ends no sentence
        "Post in #safety with the robot serial number, site and time.",
        "Open a ticket in Kestrel Tickets with component *Safety*."]
    assert list_block(text, text.index("All post")) == []
    # a sentence going on in an item belongs to it
    assert _texts(CHARGING.text, list_block(CHARGING.text, CHARGING.text.index("Charging runs")))[-2:] == [
        "Charging runs at a maximum of 20 A.", "The BMS stops charging at 90 %."]
    assert heading_over(text, text.index("Omar Haddad")) == "Members"
    assert heading_over("- Fleet availability of 97 %.", 2, "Northgate Pilot Extension › Success criteria") == \
        "Success criteria"


@pytest.mark.parametrize(("question", "several"), [
    ("What are the success criteria for the Northgate extension?", True),
    ("Who are the members of the safety committee?", True),
    ("How do I report a safety incident?", True),
    ("List the members of the safety committee.", True),
    ("What is the maximum charging current of the K2?", False),
    ("When did the Northgate pilot go live?", False),
])
def test_a_question_asks_for_several_things_or_a_procedure(question, several):
    assert asks_for_several(question) is several


def test_the_items_under_the_heading_asked_about_answer_together_in_order():
    question = "What are the success criteria for the Northgate extension?"
    verdict = answerability_judge(question, [EXTENSION])
    # the items hold their heading's words: one of them answers, not the paragraph naming Northgate
    assert verdict.answerable and verdict.sentence.startswith(("125", "Fleet", "A decision")), verdict
    answer = compose_extractive_answer(question, labelled(EXTENSION), lead=verdict)
    assert [s.sentence for s in answer.sentences][:3] == [
        "125 picks per robot-hour across both shifts.", "Fleet availability of 97 % or better.",
        "A decision on a commercial contract by 2026-02-28."]
    assert all(s.with_lead for s in answer.sentences[:3])


def test_a_procedure_is_quoted_first_step_to_last_whichever_step_answers():
    question = "How do I report a safety incident?"
    verdict = answerability_judge(question, [SAFETY])
    assert verdict.answerable, verdict
    answer = compose_extractive_answer(question, labelled(SAFETY), lead=verdict)
    assert [s.sentence for s in answer.sentences][:3] == [
        "Make the area safe: press the emergency stop.",
        "Post in #safety with the robot serial number, site and time.",
        "Open a ticket in Kestrel Tickets with component *Safety*."]
    members = compose_extractive_answer("Who are the members of the safety committee?", labelled(SAFETY))
    assert [s.sentence for s in members.sentences][:3] == ["Sofia Alvarez (chair)", "Tom Becker", "Omar Haddad"]


def test_a_procedure_under_a_heading_naming_the_verb_asked_about():
    # "How does the K2 charge?" — the heading says "charging"
    answer = compose_extractive_answer("How does the K2 charge?", labelled(CHARGING))
    assert [s.sentence for s in answer.sentences][:3] == [
        "Perch sends a K2 to its dock when the charge drops below 25 %.",
        "The robot aligns using the dock fiducial and lowers its charging contacts.",
        "Charging runs at a maximum of 20 A."], answer.sentences


def test_one_value_or_another_heading_keeps_the_item_alone():
    # one value asked for: its item answers, not the steps around it
    answer = compose_extractive_answer("What is the maximum charging current of the K2?", labelled(CHARGING))
    assert answer.sentences[0].sentence == "Charging runs at a maximum of 20 A.", answer.sentences
    assert not any(s.with_lead for s in answer.sentences)
    # a list under a heading that names nothing asked: the rest of it would be about something else
    answer = compose_extractive_answer("What are the rules before a robot can ship?", labelled(VALUES))
    assert [s.sentence for s in answer.sentences] == ["Safety first - a robot that is not safe does not ship."]


@pytest.mark.django_db
def test_the_answer_quotes_the_whole_list_through_the_api(world, no_cache):
    # The provider's floor drops sentences scoring well under the best one; the list's items stay with it.
    from knowledge.models import Source
    from tests.chat.conftest import ask_json
    from tests.knowledge.conftest import ingest

    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Acme wiki")
    ingest(world, wiki, external_id="extension", title="Northgate Pilot Extension", format="markdown",
           body=EXTENSION.text)
    body = ask_json(world.client(world.member), "What are the success criteria for the Northgate extension?").json()
    assert body["outcome"] == "answered", body["answer"]
    assert body["answer"].startswith(
        "125 picks per robot-hour across both shifts. [S1] Fleet availability of 97 % or better. [S1] "
        "A decision on a commercial contract by 2026-02-28. [S1]"), body["answer"]
    # another tenant's member asks the same: nothing of acme's list
    other = ask_json(world.client(world.outsider, world.globex), "What are the success criteria for the Northgate "
                     "extension?").json()
    assert other["outcome"] != "answered" and "125 picks" not in other["answer"]
