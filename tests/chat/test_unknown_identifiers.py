"""A question naming a ticket, code or name that no readable record contains is not answered from other
records: not found, without a word of a record the caller cannot read; whoever can read it gets the answer."""

import pytest

from chat.models import GapEvent
from tests.chat.conftest import ask_json, ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def tickets(world, corpus, settings):
    settings.ANSWER_CACHE_ENABLED = False
    ingest(world, corpus.acme_wiki, external_id="t1042", title="Support tickets",
           body="Ticket KR-1042 is resolved: the VPN certificate was renewed on Monday.")
    ingest(world, corpus.acme_wiki, external_id="t1043", title="More support tickets",
           body="Ticket KR-1043 is still open: the printer driver keeps crashing.")
    ingest(world, corpus.acme_wiki, external_id="t7777", title="HR tickets",
           body="Ticket KR-7777 is escalated: SECRET-PAYROLL-CANARY salary review for the robotics team.",
           visibility="restricted", acl=("group:hr",))
    return corpus


def test_an_existing_ticket_is_answered(world, tickets):
    final = ask_json(world.client(world.member), "What is the status of ticket KR-1042?").json()
    assert final["outcome"] == "answered"
    assert "resolved" in final["answer"] and "KR-1043" not in final["answer"]


def test_a_ticket_no_record_mentions_is_not_found(world, tickets):
    final = ask_json(world.client(world.member), "What is the status of ticket KR-9999?").json()
    assert (final["outcome"], final["citations"]) == ("not_found", [])
    assert "KR-1042" not in final["answer"] and "KR-1043" not in final["answer"]
    [gap] = GapEvent.objects.filter(tenant=world.acme)
    assert gap.kind == "knowledge_missing"


def test_a_ticket_only_in_an_unreadable_record_is_not_found_without_a_leak(world, tickets):
    response = ask_json(world.client(world.member), "What is the status of ticket KR-7777?")
    final = response.json()
    assert (final["outcome"], final["citations"]) == ("not_found", [])
    for secret in (b"SECRET-PAYROLL-CANARY", b"escalated", b"HR tickets", b"KR-1042", b"KR-1043"):
        assert secret not in response.content
    # the admin (group hr) reads it: answered from that record
    admin = ask_json(world.client(world.admin), "What is the status of ticket KR-7777?").json()
    assert admin["outcome"] == "answered" and "escalated" in admin["answer"]


def test_an_unknown_name_is_not_found(world, tickets):
    assert ask_json(world.client(world.member),
                    "When did Marcus Lee renew the VPN certificate?").json()["outcome"] == "not_found"


def test_question_identifiers():
    from chat.gate import question_identifiers

    assert question_identifiers("What is the status of ticket KR-9999?") == ["KR-9999"]
    assert question_identifiers("When did Priya Nair approve INV-2024-0042 in March, on the 1st at 10am?") == [
        "INV-2024-0042", "Priya", "Nair"]
    assert question_identifiers("How long do laptop replacements take?") == []
    # an abbreviation the question defines for itself is not a name the records must hold
    assert question_identifiers("Does intake of folic acid (FA) and vitamin B6 (VB6) lower homocysteine?") == ["B6"]
    # doses are quantities; a code joined to words is looked for by its letters-and-digits core
    assert question_identifiers("Does 400mg or 40mg/day of it help?") == []
    assert question_identifiers("Is the M2-like phenotype seen in Sf1-expressing neurons?") == ["M2", "Sf1"]
    assert question_identifiers("Is MUC1-C near KR-9999, INV-2024-0042 or HIV-1?") == [
        "MUC1", "KR-9999", "INV-2024-0042", "HIV-1"]
    # a pasted record title in Title Case is not a list of names; a question's names are
    assert question_identifiers("An Automatic Method for Extracting Significant Phrases in Scienfific Documents "
                                "A new method is described") == []
    assert question_identifiers("Who is Marcus Lee Smith of the Northgate Pilot Board?") == [
        "Marcus", "Lee", "Smith", "Northgate", "Pilot", "Board"]


def test_a_description_is_refused_for_unknown_names_only_when_it_names_nothing_the_records_hold(world, tickets):
    from chat.gate import is_description
    from chat.retrieval import identifiers_unknown

    # A pasted abstract names many things in passing: one the records lack does not make it about that one.
    description = ("Ticket handling at a robotics company: how the support desk triages, escalates and resolves "
                   "tickets such as KR-1042 about expired certificates, printer drivers and laptops, compared with the "
                   "CONIT translating interface and its evaluation by end users in libraries and offices.")
    assert is_description(description)
    member = world.authority(world.member)
    assert identifiers_unknown(member, description) == []
    nothing_held = description.replace("KR-1042", "KR-9999")
    assert identifiers_unknown(member, nothing_held) == ["KR-9999", "CONIT"]
    # Only readable records count: the restricted KR-7777 is, to the member, not held.
    assert identifiers_unknown(member, description.replace("KR-1042", "KR-7777")) == ["KR-7777", "CONIT"]
    assert identifiers_unknown(world.authority(world.admin), description.replace("KR-1042", "KR-7777")) == []
    # A question is about what it names: one unknown name refuses it.
    assert identifiers_unknown(member, "Was KR-1042 fixed with CONIT?") == ["CONIT"]
