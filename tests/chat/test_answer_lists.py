"""A list under a heading answers a question about what the heading names: its items count the heading's words
as their own, and the extractive answer quotes the whole list, in its own order — but only for a question asking
for several things or a procedure, and only when the heading names what was asked."""

import pytest

from chat.answerability import answerability_judge
from chat.answerability.lists import asks_for_several, list_block, list_item_at, outline_heading, sections_of
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
    # the heading an item sits under: the last one above it in the chunk, else the record's outline's last
    (members,) = [s for s in sections_of(text, SAFETY.units) if any(
        SAFETY.units[i].start == text.index("Omar Haddad") for i in s.body)]
    assert members.heading == "Members"
    assert outline_heading("Northgate Pilot Extension › Success criteria") == "Success criteria"


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
    # the list reads as one: an item per line, bulleted as in the record
    assert body["answer"].startswith(
        "- 125 picks per robot-hour across both shifts. [S1]\n- Fleet availability of 97 % or better. [S1]\n"
        "- A decision on a commercial contract by 2026-02-28. [S1]"), body["answer"]
    # another tenant's member asks the same: nothing of acme's list
    other = ask_json(world.client(world.outsider, world.globex), "What are the success criteria for the Northgate "
                     "extension?").json()
    assert other["outcome"] != "answered" and "125 picks" not in other["answer"]


# --- the section a question asks for (chat.answerability.lists.answer_section) ------------------------------------
LAPTOP = evidence(
    "# How to request a new laptop\n\n## Who is eligible\n\n"
    "- New hires get a laptop automatically; their manager files the request during pre-boarding.\n"
    "- Existing staff can request a replacement when their laptop is older than 3 years.\n\n## Steps\n\n"
    "1. Open a ticket in Kestrel Tickets in the **IT** queue with the type *Hardware request*.\n"
    "2. Your manager approves the ticket.\n3. IT orders the device.\n\n## Lost or stolen laptops\n\n"
    "Report a lost or stolen laptop immediately in #it-help.",
    title="How to request a new laptop", heading_path="How to request a new laptop › How to request a new laptop")
ESCALATION = evidence(
    "# Support Escalation Process\n\nOwner: Head of Support.\n\n## Severity levels\n\n"
    "| Severity | Definition | First response |\n|---|---|---|\n| S1 | Fleet stopped or safety risk | 15 minutes |\n"
    "| S2 | More than 20 % of robots unavailable | 1 hour |\n\n## Escalation path\n\n"
    "1. Tier 1 support engineer triages in Kestrel Tickets.\n2. Tier 2: the on-call engineer.\n"
    "3. Tier 3: the team lead.\n\nThe support team uses Kestrel Tickets for all customer tickets.",
    title="Support Escalation Process", heading_path="Support Escalation Process › Support Escalation Process")
MANUAL = evidence(
    "## 1. Normal (autonomous) charging\n\n1. Perch sends a K2 to its dock when the charge drops below 25 %.\n"
    "2. Charging runs at a maximum of 20 A.\n\n## 2. Manual charging\n\n"
    "Use manual charging only when a robot cannot reach a dock.\n\n"
    "1. Put the robot in **maintenance mode** from the Perch console.\n2. Connect the KC-20 portable charger.\n"
    "3. Disconnect at 90 % and log the manual charge.",
    title="K2 Battery Charging Procedure", heading_path="K2 Battery Charging Procedure › K2 Battery Charging Procedure")
FIRMWARE = evidence(
    "# Firmware Build and CI\n\nThe firmware team uses GitLab CI for every K2 firmware build.\n\n"
    "## Building locally\n\n```\ngit clone git@gitlab.example:k2/firmware.git\nmake release\n```\n\n"
    "## Pipelines\n\n- Every merge request runs unit tests.\n- Release builds are signed.",
    title="Firmware Build and CI", heading_path="Firmware Build and CI › Firmware Build and CI")
PTO = evidence(
    "# Paid Time Off Policy\n\nEvery employee gets 25 days of paid time off per year.\n\n## Booking time off\n\n"
    "Book leave in the HR system at least two weeks ahead. Tell your team in your team channel. Engineers on an "
    "on-call rota must arrange a swap before booking.\n\n## Sick leave\n\nSick leave is separate from PTO.",
    title="Paid Time Off Policy", heading_path="Paid Time Off Policy › Paid Time Off Policy")
PILOT_PLAN = evidence(
    "# Northgate Logistics Pilot Plan\n\nThe pilot starts on 2025-05-05.\n\n## Goals\n\n"
    "- Reach 120 picks per robot-hour by week 6.\n- Pick accuracy of 99.8 % or better.",
    title="Northgate Logistics Pilot Plan",
    heading_path="Northgate Logistics Pilot Plan › Northgate Logistics Pilot Plan")
PROGRAMME = evidence(
    "# Battery Safety Programme\n\nSofia Alvarez owns the battery safety programme. The programme reviews every "
    "pack incident and sets the charging limits.",
    title="Battery Safety Programme", heading_path="Battery Safety Programme › Battery Safety Programme")


def _answer(question: str, *items) -> list[str]:
    verdict = answerability_judge(question, list(items))
    return [s.sentence for s in compose_extractive_answer(question, labelled(*items), lead=verdict).sentences]


@pytest.mark.parametrize(("question", "steps", "plural"), [
    ("How do I request a new laptop?", True, False),
    ("A K2 can't reach its dock - how do I charge it by hand?", True, False),
    ("What are the steps to report an incident?", True, False),
    ("What products does Kestrel make?", False, True),
    ("Which chat channels should I join?", False, True),
    ("What does the K2 weigh?", False, False),
    ("What process does payroll follow?", False, False),
    ("Who owns the battery safety programme?", False, False),
])
def test_what_a_question_asks_for(question, steps, plural):
    from chat.answerability.lists import _asks_plural, asks_for_steps

    assert asks_for_steps(question) is steps
    assert _asks_plural(question) is plural


def test_a_procedure_is_answered_by_the_records_steps_not_the_bullet_the_judge_read():
    assert _answer("How do I request a new laptop?", LAPTOP)[:3] == [
        "Open a ticket in Kestrel Tickets in the **IT** queue with the type *Hardware request*.",
        "Your manager approves the ticket.", "IT orders the device."]


def test_the_steps_of_the_section_the_answer_is_in_come_without_its_introduction():
    assert _answer("A K2 can't reach its dock - how do I charge it by hand?", MANUAL) == [
        "Put the robot in **maintenance mode** from the Perch console.", "Connect the KC-20 portable charger.",
        "Disconnect at 90 % and log the manual charge."]


def test_a_section_the_question_names_answers_whatever_the_question_form():
    # one noun asked for, but the record keeps it as numbered steps under that very heading
    assert _answer("What's the escalation path for a customer problem?", ESCALATION) == [
        "Tier 1 support engineer triages in Kestrel Tickets.", "Tier 2: the on-call engineer.",
        "Tier 3: the team lead."]
    # a table's rows, without its header row and rule line
    assert _answer("What are the support severity levels?", ESCALATION) == [
        "| S1 | Fleet stopped or safety risk | 15 minutes |", "| S2 | More than 20 % of robots unavailable | 1 hour |"]
    # prose under the heading named, in its own order, for a procedure
    assert _answer("How do I book time off?", PTO) == [
        "Book leave in the HR system at least two weeks ahead.", "Tell your team in your team channel.",
        "Engineers on an on-call rota must arrange a swap before booking."]


def test_a_command_block_is_the_procedure_where_the_record_has_no_numbered_steps():
    answer = _answer("How do I build the firmware on my own machine?", FIRMWARE)
    assert answer[0].startswith("```\ngit clone") and "make release" in answer[0], answer


def test_another_records_section_of_that_name_does_not_answer_for_this_record():
    from chat.answerability.lists import answer_section

    # "Goals" is named, but in a record about another subject than the one the answer sentence is in
    question = "What are the goals of the battery safety programme?"
    lead = PROGRAMME.text.index("The programme reviews")
    assert answer_section(question, [PROGRAMME, PILOT_PLAN], lead_chunk_id=PROGRAMME.chunk_id, lead_start=lead,
                          factoid=False) is None
    # the same section, where the answer sentence's record is about the pilot as well
    block = answer_section("What were the goals for the Northgate pilot?", [PROGRAMME, PILOT_PLAN],
                           lead_chunk_id=PROGRAMME.chunk_id, lead_start=lead, factoid=False)
    assert block is not None and block.chunk_id == PILOT_PLAN.chunk_id
    # its own subject: the goals are the answer
    assert _answer("What were the goals for the Northgate pilot?", PILOT_PLAN) == [
        "Reach 120 picks per robot-hour by week 6.", "Pick accuracy of 99.8 % or better."]


def test_a_typed_value_is_answered_by_its_sentence_not_the_section_named():
    answer = _answer("What is the first response time for S1 severity levels?", ESCALATION)
    assert answer and answer[0] != "| S2 | More than 20 % of robots unavailable | 1 hour |"
    assert _answer("What is the maximum charging current of the K2?", CHARGING)[0] == \
        "Charging runs at a maximum of 20 A."


def test_the_answer_reads_as_the_records_list_steps_or_command_block():
    from chat.extractive import ExtractedSentence, answer_text
    from chat.rendering import render_answer_html

    def sentence(text: str, label: str = "S1", marker: str = "", with_lead: bool = True) -> ExtractedSentence:
        return ExtractedSentence(sentence=text, label=label, start=0, end=len(text), doc_start=0, doc_end=len(text),
                                 score=1.0, with_lead=with_lead, marker=marker)

    text = answer_text([sentence("Open a ticket.", marker="1."), sentence("Pick a model.", marker="2."),
                        sentence("Linux engineers can ask for a ThinkPad."), sentence("IT orders it.", marker="3."),
                        sentence("Another record says so.", label="S2", with_lead=False)])
    assert text == ("1. Open a ticket. [S1]\n2. Pick a model. [S1] Linux engineers can ask for a ThinkPad. [S1]\n"
                    "3. IT orders it. [S1]\n\nAnother record says so. [S2]")
    html = render_answer_html(text, {"S1": FIRMWARE, "S2": LAPTOP})
    assert html.count("<li>") == 3 and "<ol>" in html
    code = answer_text([sentence("```\ngit clone x\nmake release\n```")])
    html = render_answer_html(code, {"S1": FIRMWARE})
    assert "<pre><code>git clone x\nmake release\n</code></pre>" in html and 'data-label="S1"' in html, html
    # plain sentences stay one paragraph
    assert answer_text([sentence("One.", with_lead=False), sentence("Two.", label="S2", with_lead=False)]) == \
        "One. [S1] Two. [S2]"
