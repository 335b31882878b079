"""Current facts first (issue 12 item 3): a state question is led by the finding valid now, or at the date the
question names, with what it replaced and when — each value cited from evidence the caller can read."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from django.db.backends.postgresql.psycopg_any import DateTimeTZRange

from benchmarks.chat.current_facts import QUESTIONS, current_fact_first, lead_sentence, state_questions
from chat.current_facts import FACTS_INSTRUCTION, current_facts
from chat.state_questions import asked_anchor, asked_predicates, asked_time, led_unit_roles
from findings.models import Claim
from findings.writer import claims_write
from knowledge.services import document_acl_set
from tests.chat.conftest import ask_json
from tests.fake_openai import ScriptedCall
from tests.findings.conftest import docs, fact, relations  # noqa: F401

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
OLD = "The FY2026 R&D budget is $2.4M."
NEW = "On 2025-10-10 the FY2026 R&D budget was revised to $2.1M, down from the $2.4M approved in March."


def _budget(world, docs, **new_doc):  # noqa: F811
    _, c_old = docs.doc("budget", f"# FY2026 Budget Summary\n\n{OLD} Sales and marketing: $1.1M.")
    _, c_new = docs.doc("revision", f"# FY2026 Budget Revision\n\n{NEW}", **new_doc)
    claims_write(tenant_id=world.acme.pk, label="1", facts=[
        fact(c_old, OLD, "FY2026 R&D", "budget", "$2.4M", "2025-03-11", subject_kind="project", object_kind=None)])
    claims_write(tenant_id=world.acme.pk, label="2", facts=[
        fact(c_new, NEW, "FY2026 R&D", "budget", "$2.1M", "2025-10-10", subject_kind="project", object_kind=None)])
    return c_old, c_new


def _labels(facts) -> dict[int, str]:
    return {e.chunk_id: f"S{i}" for i, e in enumerate(facts.evidence, start=1)}


def test_now_leads_with_the_current_value_and_cites_what_it_replaced(world, docs,  # noqa: F811
                                                                     django_assert_num_queries):
    c_old, c_new = _budget(world, docs)
    member = world.authority(world.member)
    # entities named, their claims, the claims' neighbours in time, one readable evidence chunk per claim
    with django_assert_num_queries(4):
        facts = current_facts(member, "What is the FY2026 R&D budget?", now=NOW)
    assert [e.chunk_id for e in facts.evidence] == [c_new.pk, c_old.pk]
    assert facts.lead(_labels(facts)) == (
        "The FY2026 R&D budget is $2.1M since 2025-10-10 [S1]; previously $2.4M (from 2025-03-11 to 2025-10-10) [S2].")


def test_as_of_a_named_date_leads_with_the_value_valid_then(world, docs):  # noqa: F811
    c_old, c_new = _budget(world, docs)
    member = world.authority(world.member)
    facts = current_facts(member, "What was the FY2026 R&D budget in April 2025?", now=NOW)
    assert facts.asked.named == "April 2025"
    assert facts.lead(_labels(facts)) == (
        "As of April 2025, the FY2026 R&D budget was $2.4M (from 2025-03-11 to 2025-10-10) [S1]. "
        "Later replaced by $2.1M (since 2025-10-10) [S2].")
    facts = current_facts(member, "What was the FY2026 R&D budget on 15 October 2025?", now=NOW)
    assert facts.lead(_labels(facts)).startswith("As of 15 October 2025, the FY2026 R&D budget was $2.1M")
    # before the first value: nothing to lead with, the answer is composed as before
    assert current_facts(member, "What was the FY2026 R&D budget in January 2025?", now=NOW) is None



def test_a_longer_name_without_that_state_gives_way_to_the_name_inside_it(world, docs):  # noqa: F811
    """"the FY2026 R&D plan" names an entity too (it has a status), but no budget: the budget is that of
    "FY2026 R&D", the name inside it — as "the Northgate pilot" holds "Northgate" and its fleet size."""
    _budget(world, docs)
    _, chunk = docs.doc("plan", "# FY2026 R&D plan\n\nThe FY2026 R&D plan is approved.")
    claims_write(tenant_id=world.acme.pk, label="3", facts=[
        fact(chunk, "The FY2026 R&D plan is approved.", "FY2026 R&D plan", "status", "approved", "2025-03-01",
             subject_kind="project", object_kind=None)])
    member = world.authority(world.member)
    facts = current_facts(member, "What was the budget of the FY2026 R&D plan in April 2025?", now=NOW)
    assert facts is not None and "$2.4M" in facts.lead(_labels(facts))
    # the longer name still wins where it holds the state asked about
    status = current_facts(member, "What is the status of the FY2026 R&D plan?", now=NOW)
    assert status is not None and "approved" in status.lead(_labels(status))

def test_an_unreadable_superseding_claim_is_ignored(world, docs):  # noqa: F811
    _budget(world, docs, visibility="restricted", acl=("group:hr",))
    question = "What is the FY2026 R&D budget?"
    member = current_facts(world.authority(world.member), question, now=NOW)
    lead = member.lead(_labels(member))
    # the member cannot read the revision: the old value is current, open-ended, and nothing names the new one
    assert lead == "The FY2026 R&D budget is $2.4M since 2025-03-11 [S1]."
    assert "2.1" not in lead and "2025-10-10" not in lead
    admin = current_facts(world.authority(world.admin), question, now=NOW)  # admin is in group:hr
    assert admin.lead(_labels(admin)).startswith("The FY2026 R&D budget is $2.1M since 2025-10-10 [S1]")


def test_a_refuted_claim_never_held(world, docs):  # noqa: F811
    _budget(world, docs)
    old = Claim.objects.get(object_value="$2.4M")
    # A REFUTE closes the recorded range, names the successor and marks the claim refuted, but leaves the valid
    # range as it was.
    Claim.objects.filter(pk=old.pk).update(valid=DateTimeTZRange(old.valid.lower, None, "[)"), refuted=True)
    member = world.authority(world.member)
    facts = current_facts(member, "What is the FY2026 R&D budget?", now=NOW)
    assert facts.lead(_labels(facts)) == "The FY2026 R&D budget is $2.1M since 2025-10-10 [S1]."
    assert current_facts(member, "What was the FY2026 R&D budget in April 2025?", now=NOW) is None


def test_sources_that_disagree_without_a_supersession_are_reported_as_disagreeing(world, docs):  # noqa: F811
    a = "Finance says the Perch budget is $0.7M."
    b = "Product says the Perch budget is $0.55M."
    _, c_a = docs.doc("finance", a)
    _, c_b = docs.doc("product", b)
    # Two perspectives on one slot: neither closes the other (the exclusion constraint is per perspective).
    facts_a = fact(c_a, a, "Perch", "budget", "$0.7M", "2025-07-01", subject_kind="project", object_kind=None)
    facts_b = fact(c_b, b, "Perch", "budget", "$0.55M", "2025-08-01", subject_kind="project", object_kind=None)
    claims_write(tenant_id=world.acme.pk, label="a", facts=[facts_a.__class__(**{**facts_a.__dict__,
                                                                                 "perspective": "finance"})])
    claims_write(tenant_id=world.acme.pk, label="b", facts=[facts_b.__class__(**{**facts_b.__dict__,
                                                                                 "perspective": "product"})])
    facts = current_facts(world.authority(world.member), "What is the Perch budget?", now=NOW)
    lead = facts.lead(_labels(facts))
    assert lead.startswith("The records disagree on Perch (budget) currently: $0.7M (since 2025-07-01) [S1]; "
                           "$0.55M (since 2025-08-01) [S2].")
    assert "previously" not in lead


def test_role_named_predecessor_by_holder_and_by_role(world, docs):  # noqa: F811
    s1 = "On 2025-01-15 Priya Nair became Head of Support."
    s2 = "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair."
    _, c1 = docs.doc("a", s1)
    _, c2 = docs.doc("b", s2)
    claims_write(tenant_id=world.acme.pk, label="1", facts=[fact(c1, s1, "Priya Nair", "role", "Head of Support",
                                                                 "2025-01-15")])
    claims_write(tenant_id=world.acme.pk, label="2", facts=[fact(c2, s2, "Marcus Lee", "role", "Head of Support",
                                                                 "2025-09-01")])
    member = world.authority(world.member)
    facts = current_facts(member, "Who is the Head of Support?", now=NOW)
    assert facts.lead(_labels(facts)) == (
        "Marcus Lee is Head of Support since 2025-09-01 [S1]; previously Priya Nair (from 2025-01-15 to 2025-09-01) "
        "[S2].")
    facts = current_facts(member, "Who was Head of Support in March 2025?", now=NOW)
    assert lead_sentence(facts.lead(_labels(facts))).startswith("As of March 2025, Priya Nair was Head of Support")


def test_only_state_questions_touch_the_database(world, django_assert_num_queries):
    member = world.authority(world.member)
    with django_assert_num_queries(0):
        assert current_facts(member, "How long do laptop replacements take?") is None
    assert asked_predicates("What is the PTO policy?") == []
    assert asked_predicates("Who is Ben Moreau's manager?") == ["reports_to"]  # "who is" is weak
    assert asked_predicates("Who is Marcus Lee?") == ["role"]
    assert asked_predicates("How many robots are in the Northgate pilot?") == ["fleet_size"]
    assert asked_predicates("How many K2 robots does Northgate have?") == ["fleet_size"]
    assert asked_predicates("What is the Northgate fleet size?") == ["fleet_size"]
    # "fleet" or "robots" without a count asks for something else about them.
    assert asked_predicates("What firmware version runs on the Northgate fleet?") == []
    assert asked_predicates("Which robots shipped from Reno?") == []
    # a formal question parts the verb from its "to"; both words must be there
    assert asked_predicates("To whom does Sofia Alvarez report?") == ["reports_to"]
    assert asked_predicates("To whom does the Perch roadmap belong?") == ["owns"]
    assert asked_predicates("Who are Ada Okafor's direct reports?") == ["reports_to"]
    assert asked_predicates("To whom was the incident escalated?") == []
    assert asked_predicates("What does the incident report say?") == []


@pytest.mark.parametrize(("question", "at"), [
    ("Who was Head of Support in March 2025?", datetime(2025, 3, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    ("What was the budget as of 2025-06-30?", datetime(2025, 6, 30, 23, 59, 59, 999999, tzinfo=UTC)),
    ("How many robots were there on October 21, 2025?", datetime(2025, 10, 21, 23, 59, 59, 999999, tzinfo=UTC)),
    ("Who was it in 2024?", datetime(2024, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    ("What is the FY2026 R&D budget?", NOW),  # FY2026 is no date
    ("What is the K2 budget in 2030?", NOW),  # a future period is capped at now
    ("What was the budget in Q3 2025?", datetime(2025, 9, 30, 23, 59, 59, 999999, tzinfo=UTC)),
    ("What was the budget in Q4 of 2025?", datetime(2025, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    ("What was the budget in H1 2025?", datetime(2025, 6, 30, 23, 59, 59, 999999, tzinfo=UTC)),
    ("What is the Q3 FY2026 budget?", NOW),  # a fiscal quarter: its calendar is not known
    # the words before a date move the instant within its period
    ("Who was it before October 2025?", datetime(2025, 9, 30, 23, 59, 59, 999999, tzinfo=UTC)),
    ("Who was it prior to 2025-09-01?", datetime(2025, 8, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    ("Who was it at the start of September 2025?", datetime(2025, 9, 1, tzinfo=UTC)),
    ("Who was it in early 2025?", datetime(2025, 1, 1, tzinfo=UTC)),
    ("Who was it at the beginning of Q2 2025?", datetime(2025, 4, 1, tzinfo=UTC)),
    ("Who was it in mid-2025?", datetime(2025, 7, 2, 12, tzinfo=UTC)),
    ("Who was it in mid March 2025?", datetime(2025, 3, 16, 12, tzinfo=UTC)),
    ("Who was it in late 2025?", datetime(2025, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    # "before" an event the date dates: the value just before that period began (the event's instant is unknown)
    ("Who was it before the reorganisation in October 2025?", datetime(2025, 9, 30, 23, 59, 59, 999999, tzinfo=UTC)),
    ("What was the budget prior to the cut on 2025-10-10?", datetime(2025, 10, 9, 23, 59, 59, 999999, tzinfo=UTC)),
    ("Who was it before Marcus Lee took over in September 2025?", datetime(2025, 8, 31, 23, 59, 59, 999999,
                                                                            tzinfo=UTC)),
    # ... but not across a clause, nor from further away than a short phrase
    ("Who was it before that, in October 2025?", datetime(2025, 10, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    ("Was it before the long and winding strategic reorganisation in 2025?", datetime(2025, 12, 31, 23, 59, 59,
                                                                                       999999, tzinfo=UTC)),
])
def test_asked_time(question, at):
    assert asked_time(question, now=NOW).at == at


def test_an_answer_says_before_when_the_question_asks_before(world, docs, no_cache):  # noqa: F811
    _budget(world, docs)
    facts = current_facts(world.authority(world.member), "What was the FY2026 R&D budget before October 2025?",
                          now=NOW)
    lead = facts.lines[0].template
    assert lead.startswith("Before October 2025, the FY2026 R&D budget was $2.4M"), lead


def _support_heads(world, docs):  # noqa: F811
    """Priya Nair Head of Support from 2025-01-15, Marcus Lee from 2025-09-01; Priya Director from 2025-09-02."""
    _, c1 = docs.doc("a", "On 2025-01-15 Priya Nair became Head of Support.")
    claims_write(tenant_id=world.acme.pk, label="1",
                 facts=[fact(c1, c1.text, "Priya Nair", "role", "Head of Support", "2025-01-15")])
    handover = "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair."
    _, c2 = docs.doc("b", f"{handover} Priya Nair became Director.")
    claims_write(tenant_id=world.acme.pk, label="2", facts=[
        fact(c2, handover, "Marcus Lee", "role", "Head of Support", "2025-09-01"),
        fact(c2, "Priya Nair became Director.", "Priya Nair", "role", "Director", "2025-09-02")])


def test_what_replaced_a_past_value_is_the_next_value_of_the_slot_the_question_asks_about(world, docs):  # noqa: F811
    _support_heads(world, docs)
    hos = Claim.objects.get(subject__name="Priya Nair", object_value="Head of Support")
    assert hos.superseded_by.subject.name == "Marcus Lee"  # the handover ended it first
    member = world.authority(world.member)
    lines = [line.template for line in current_facts(member, "What was Priya Nair's role in June 2025?",
                                                     now=NOW).lines]
    assert lines[0].startswith("As of June 2025, Priya Nair was Head of Support") and "Director" in lines[1], lines
    lines = [line.template for line in current_facts(member, "Who was Head of Support in June 2025?",
                                                     now=NOW).lines]
    assert lines[0].startswith("As of June 2025, Priya Nair was Head of Support") and "Marcus Lee" in lines[1], lines


def test_a_holder_asked_about_took_over_from_the_previous_holder(world, docs):  # noqa: F811
    """Marcus Lee's claim superseded Priya Nair's: that is what the *role* replaced, not Marcus's former role, so an
    answer about him says whom he took over from."""
    _support_heads(world, docs)
    member = world.authority(world.member)
    [marcus] = [line.template for line in current_facts(member, "What is Marcus Lee's role?", now=NOW).lines]
    took_over = r"Marcus Lee is Head of Support since 2025-09-01 \{c\d+\}; taking over from Priya Nair \("
    assert re.match(took_over, marcus), marcus
    role = current_facts(member, "Who is Head of Support?", now=NOW).lines[0].template
    assert role.startswith("Marcus Lee is Head of Support") and "previously Priya Nair (" in role, role
    priya = current_facts(member, "What is Priya Nair's role?", now=NOW).lines[0].template
    assert "Director" in priya and "previously Head of Support (" in priya, priya


def test_answer_leads_with_the_current_fact_and_its_labels_are_sources(world, docs, no_cache):  # noqa: F811
    c_old, c_new = _budget(world, docs)
    final = ask_json(world.client(world.member), "What is the FY2026 R&D budget?").json()
    assert final["outcome"] == "answered", final
    assert current_fact_first(final["answer"], current="$2.1M", replaced="$2.4M"), final["answer"]
    cited = {c["label"]: c["chunk_id"] for c in final["citations"]}
    assert re.match(r"The FY2026 R&D budget is \$2\.1M since 2025-10-10 \[S1\]; previously \$2\.4M .* \[S2\]\.",
                    final["answer"])
    assert (cited["S1"], cited["S2"]) == (c_new.pk, c_old.pk)
    assert {s["label"] for s in final["sources"]} >= set(cited)


def test_answer_for_a_caller_who_cannot_read_the_revision(world, docs, no_cache):  # noqa: F811
    _budget(world, docs)
    document = docs.source.documents.get(external_id="revision")
    document_acl_set(authority=world.service(), document=document, visibility="restricted", acl=["group:hr"])
    final = ask_json(world.client(world.member), "What is the FY2026 R&D budget?").json()
    assert final["answer"].startswith("The FY2026 R&D budget is $2.4M since 2025-03-11 [S1].")
    assert "$2.1M" not in final["answer"]
    assert document.pk not in {c["document_id"] for c in final["citations"] + final["sources"]}



def test_model_is_given_the_ordered_facts_with_their_labels(world, docs, llm):  # noqa: F811
    c_old, c_new = _budget(world, docs)
    llm.script_chat([ScriptedCall("search_knowledge", {"query": "R&D budget"})],
                    "It is $2.1M since 2025-10-10 [S1], revised from $2.4M [S2].")
    final = ask_json(world.client(world.member), "What is the FY2026 R&D budget?").json()
    assert final["outcome"] == "answered"
    assert [(c["label"], c["chunk_id"]) for c in final["citations"]] == [("S1", c_new.pk), ("S2", c_old.pk)]
    _, second = [r.body for r in llm.requests_to("/chat/completions")]
    context = second["messages"][-1]["content"]
    boundary = re.search(r"boundary id (\w+)", context).group(1)
    assert f"<<<FINDINGS boundary={boundary}>>>\nThe FY2026 R&D budget is $2.1M since 2025-10-10 [S1]; " \
           "previously $2.4M (from 2025-03-11 to 2025-10-10) [S2].\n" in context
    assert FACTS_INSTRUCTION in context
    assert "<<<SOURCE S1 boundary=" in context and NEW in context.split("<<<SOURCE S2")[0]


def test_bench_figure_fails_the_superseded_lead_and_the_question_set_is_complete():
    old_style = f"{OLD} [S1] {NEW} [S2]"
    assert not current_fact_first(old_style, current="$2.1M", replaced="$2.4M")
    assert not current_fact_first("The pilot has 20 robots [S1].", current="20 robots", replaced="12")
    assert current_fact_first("Northgate has 20 robots since 2025-10-20 [S1]; previously 12 K2 robots [S2].",
                              current="20 robots", replaced="12")
    questions = state_questions()
    assert len(questions) >= 30 and len({q["question"] for q in questions}) == len(questions)
    assert sum(1 for q in questions if q["as_of"]) >= 10
    for q in questions:  # `as_of` is the day asked_time reads from the question
        asked = asked_time(q["question"], now=NOW)
        assert (asked.at.date().isoformat() if asked.named else None) == q["as_of"], q["question"]
    assert all(q["current"] for q in questions)
    assert json.loads(QUESTIONS.read_text())["about"]


@pytest.mark.parametrize(("question", "role"), [
    ("Who led Support in August 2025?", "head of support"),
    ("Who runs Customer Success?", "head of customer success"),
    ("Who leads the Support team now?", "head of support"),
    ("Who is heading K2 Firmware?", "head of k2 firmware"),
    ("who ran data and analytics before 2025-09-01?", "head of data and analytics"),
])
def test_a_question_about_who_leads_a_unit_reads_the_units_lead_roles(question, role):
    assert role in led_unit_roles(question)
    assert asked_predicates(question) == ["role"]


@pytest.mark.parametrize("question", ["Who is Marcus Lee?", "Who leads 2025 planning?", "What does Support do?"])
def test_other_questions_name_no_unit(question):
    assert led_unit_roles(question) == []


def test_who_led_a_unit_is_answered_by_its_lead_role_then_and_now(world, docs):  # noqa: F811
    _, c1 = docs.doc("a", "On 2025-01-15 Priya Nair became Head of Support.")
    claims_write(tenant_id=world.acme.pk, label="1",
                 facts=[fact(c1, c1.text, "Priya Nair", "role", "Head of Support", "2025-01-15")])
    _, c2 = docs.doc("b", "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair.")
    claims_write(tenant_id=world.acme.pk, label="2",
                 facts=[fact(c2, c2.text, "Marcus Lee", "role", "Head of Support", "2025-09-01")])
    member = world.authority(world.member)
    then = current_facts(member, "Who led Support in August 2025?", now=NOW)
    assert then.lines[0].template.startswith("As of August 2025, Priya Nair was Head of Support"), then.lines
    now = current_facts(member, "Who leads the Support team?", now=NOW)
    assert now.lines[0].template.startswith("Marcus Lee is Head of Support since 2025-09-01"), now.lines
    # another tenant's caller has no such role to read: the question is left to retrieval
    assert current_facts(world.authority(world.outsider, world.globex), "Who leads the Support team?", now=NOW) is None


def test_a_name_asked_without_its_period_qualifier_is_found(world, docs, django_assert_max_num_queries):  # noqa: F811
    _budget(world, docs)
    member = world.authority(world.member)
    for question in ("What is the R&D budget?", "What is the R&D budget for FY2026?"):
        facts = current_facts(member, question, now=NOW)
        assert facts is not None, question
        assert facts.lines[0].template.startswith("The FY2026 R&D budget is $2.1M since 2025-10-10"), question
    # the bare name stands where the qualifier would, not after another word: "the security review" is not
    # "Q3 2025 Review"
    _, c = docs.doc("review", "On 2025-07-01 the Q3 2025 Review moved to stage approved.")
    claims_write(tenant_id=world.acme.pk, label="3", facts=[
        fact(c, c.text, "Q3 2025 Review", "status", "approved", "2025-07-01", subject_kind="project",
             object_kind=None)])
    assert current_facts(member, "What is the status of the review?", now=NOW) is not None
    assert current_facts(member, "What is the status of the security review?", now=NOW) is None
    # a question naming no entity costs the lookup of the names and of the unqualified names, then stops
    with django_assert_max_num_queries(2):
        assert current_facts(member, "What is the marketing budget?", now=NOW) is None


@pytest.mark.parametrize(("question", "value", "after", "rest"), [
    ("Who headed Support before Marcus Lee?", "Marcus Lee", False, "Who headed Support?"),
    ("What was the R&D budget before $2.1M?", "$2.1M", False, "What was the R&D budget?"),
    ("What was the budget prior to $2,400,000?", "$2,400,000", False, "What was the budget?"),
    ("Who headed Support after Priya Nair, then?", "Priya Nair", True, "Who headed Support, then?"),
])
def test_a_value_named_where_a_date_would_stand(question, value, after, rest):
    anchor = asked_anchor(question)
    assert (anchor.value, anchor.after, anchor.rest) == (value, after, rest)


@pytest.mark.parametrize("question", ["Who was Head of Support before October 2025?", "Who is Head of Support?",
                                      "Who was it before the reorganisation in October 2025?"])
def test_a_date_or_nothing_after_before_names_no_value(question):
    assert asked_anchor(question) is None


@pytest.mark.parametrize("question", ["Who headed Support before Marcus Lee?",
                                      "Who was Head of Support before Marcus Lee?",
                                      "Who was the Head of Support before Marcus?"])
def test_before_a_named_holder_leads_with_the_one_before_them(world, docs, question):  # noqa: F811
    _support_heads(world, docs)
    facts = current_facts(world.authority(world.member), question, now=NOW)
    assert facts.question == question
    assert facts.lead(_labels(facts)) == (
        "Before Marcus Lee, Priya Nair was Head of Support (from 2025-01-15 to 2025-09-01) [S1]. "
        "Later replaced by Marcus Lee (since 2025-09-01) [S2].")


def test_after_a_named_value_leads_with_the_one_after_it(world, docs):  # noqa: F811
    _support_heads(world, docs)
    member = world.authority(world.member)
    facts = current_facts(member, "Who headed Support after Priya Nair?", now=NOW)
    assert lead_sentence(facts.lead(_labels(facts))) == (
        "After Priya Nair, Marcus Lee was Head of Support (since 2025-09-01) [S1]")
    # in the holder's own history, with a gap: her next role began a day after the handover ended the last one
    facts = current_facts(member, "What was Priya Nair's role before Director?", now=NOW)
    assert lead_sentence(facts.lead(_labels(facts))) == (
        "Before Director, Priya Nair was Head of Support (from 2025-01-15 to 2025-09-01) [S1]")
    facts = current_facts(member, "What was Priya Nair's role after Head of Support?", now=NOW)
    assert lead_sentence(facts.lead(_labels(facts))).startswith("After Head of Support, Priya Nair was Director")


def test_before_a_named_amount_leads_with_the_amount_it_replaced(world, docs):  # noqa: F811
    _budget(world, docs)
    facts = current_facts(world.authority(world.member), "What was the R&D budget before $2.1M?", now=NOW)
    assert facts.lead(_labels(facts)) == (
        "Before $2.1M, the FY2026 R&D budget was $2.4M (from 2025-03-11 to 2025-10-10) [S1]. "
        "Later replaced by $2.1M (since 2025-10-10) [S2].")


def test_a_named_value_no_record_holds_reads_the_question_as_written(world, docs):  # noqa: F811
    _support_heads(world, docs)
    facts = current_facts(world.authority(world.member), "Who was Head of Support before Tom Becker?", now=NOW)
    assert lead_sentence(facts.lead(_labels(facts))) == "Marcus Lee is Head of Support since 2025-09-01 [S1]"


@pytest.mark.parametrize("question, lead", [
    # the first holder the records name: nobody before her, and what they do hold
    ("Who was Head of Support before Priya Nair?",
     "The records name none before Priya Nair: Priya Nair was Head of Support (from 2025-01-15 to 2025-09-01) [S1]. "
     "Later replaced by Marcus Lee (since 2025-09-01) [S2]."),
    # the holder now: nobody after him yet
    ("Who is Head of Support after Marcus Lee?",
     "The records name none after Marcus Lee: Marcus Lee is Head of Support since 2025-09-01 [S1]; previously "
     "Priya Nair (from 2025-01-15 to 2025-09-01) [S2]."),
])
def test_a_named_value_with_nothing_on_the_asked_side_says_so(world, docs, question, lead):  # noqa: F811
    _support_heads(world, docs)
    facts = current_facts(world.authority(world.member), question, now=NOW)
    assert facts.asked.edge and facts.lead(_labels(facts)) == lead
