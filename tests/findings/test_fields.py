"""Facts stated by layout (findings.extractors.fields, through the patterns extractor): field lines, tables with
field columns and member lists — what they propose, what the audit keeps, and everything they must not read
(quoted examples, code, unknown fields, free-text values, hedges, kinds the ontology does not allow)."""

from __future__ import annotations

import pytest

from findings.audit import GroundedProjection
from findings.extractors.fields import person_name, record_of
from findings.extractors.patterns import PatternsExtractor
from tests.findings.conftest import migrated_specs

TICKET = """Ticket OPS-12 · Status: Closed · Priority: High
Reporter: Omar Haddad
Assignee: Priya Nair
Component: Billing
Created: 2025-02-27

Login fails after the upgrade.

Comments:
[2025-02-27] Priya Nair: Confirmed. Reproduced on staging."""


def _extract(text, title="", external_id="", specs=None):
    return PatternsExtractor().extract(chunk_text=text, ontology=specs or migrated_specs(),
                                       context={"title": title, "external_id": external_id})


def _facts(text, title="", external_id="", specs=None):
    return sorted((f.subject, f.predicate, f.object, f.valid_from)
                  for f in _extract(text, title, external_id, specs).facts)


def test_a_tickets_field_lines_state_its_assignee_and_status_and_the_audit_keeps_them():
    extraction = _extract(TICKET, title="OPS-12: Login fails")
    assert sorted((f.subject, f.predicate, f.object) for f in extraction.facts) == [
        ("OPS-12", "status", "closed"), ("Priya Nair", "works_on", "OPS-12")]
    assert {(e.name, e.kind) for e in extraction.entities} == {("OPS-12", "ticket"), ("Priya Nair", "person")}
    projection = GroundedProjection.from_extraction(extraction, TICKET, migrated_specs())
    assert projection.quality.accepted == 2 and not projection.rejected
    works_on = next(f for f in projection.accepted if f.predicate == "works_on")
    assert TICKET[works_on.quote_start:works_on.quote_end] == "Assignee: Priya Nair"
    assert works_on.statement == "OPS-12 — Assignee: Priya Nair"


def test_the_record_key_comes_from_the_title_or_else_the_external_id():
    assert record_of({"title": "[OPS-7] Crash on start"}).name == "OPS-7"
    assert record_of({"title": "Crash on start", "external_id": "OPS-7"}).kind == "ticket"
    assert record_of({"title": "Atlas Roadmap 2026 (draft)", "external_id": "wiki/atlas"}).name == "Atlas Roadmap 2026"
    assert record_of({"title": "Atlas Status"}).name == "Atlas"
    assert record_of({"title": ""}) is None
    assert _facts("Assignee: Priya Nair", title="Crash on start", external_id="OPS-7") == [
        ("Priya Nair", "works_on", "OPS-7", None)]


def test_a_ticket_is_an_endpoint_only_where_the_ontology_says_so(specs):
    # The starter ontology (before migration 0008) lists no "ticket" kind for works_on or status.
    assert _facts(TICKET, title="OPS-12: Login fails", specs=specs) == []


def test_owner_lines_on_a_page_and_a_dated_status():
    page = "Status: **live** (updated 2025-07-31).\n\n**Owner:** Tom Becker\n\nFinance only. Maintained by Grace Kim."
    assert _facts(page, title="Atlas Status") == [
        ("Atlas", "status", "live", "2025-07-31"), ("Grace Kim", "owns", "Atlas", None),
        ("Tom Becker", "owns", "Atlas", None)]
    assert _facts("Owner: Hannah Schmidt, People Operations. Effective 2025-04-01.", title="Parental Leave Policy") == [
        ("Hannah Schmidt", "owns", "Parental Leave Policy", None)]


@pytest.mark.parametrize("text", [
    "```\nAssignee: Priya Nair\nStatus: Closed\n```",                 # a code block
    "> Assignee: Priya Nair",                                          # a blockquote
    "Write fields plainly, for example: Assignee: Priya Nair.",       # an example
    'Avoid "Assignee: Priya Nair" in the title.',                     # a quoted example
    "Examples:\n- Assignee: Priya Nair\n- Status: Closed",             # an example list
    "## Assignee: Priya Nair",                                         # a heading
])
def test_a_field_line_the_writer_does_not_assert_proposes_nothing(text):
    assert _facts(text, title="OPS-12: Login fails") == []


@pytest.mark.parametrize("text", [
    "Assignee: unassigned",
    "Assignee: the whole support rota",
    "Assignee: Priya",                                                 # one word: not person-like
    "Owner: Head of Support (Marcus Lee since 2025-09-01)",            # a role, not a person
    "Reports to: Finance Team",                                        # a team has no line manager
    "Status: waiting for the vendor to send a fix",                    # free text, not a status
    "Status: 42",
])
def test_a_free_text_value_proposes_nothing(text):
    assert _facts(text, title="OPS-12: Login fails") == []


@pytest.mark.parametrize("text", [
    "Reporter: Omar Haddad",
    "Component: Billing Service",
    "Pilot lead: Omar Haddad",
    "[2025-02-27] Priya Nair: Confirmed.",
    "Priya Nair: Status: Closed is what I saw",
])
def test_an_unknown_field_proposes_nothing(text):
    assert _facts(text, title="OPS-12: Login fails") == []


def test_a_hedged_field_line_proposes_nothing_but_its_neighbour_does():
    text = "Status: draft, not committed. Owner: Rafael Costa."
    assert _facts(text, title="Perch Roadmap 2026 (draft)") == [("Rafael Costa", "owns", "Perch Roadmap 2026", None)]


def test_a_team_may_be_an_assignee():
    extraction = _extract("Assignee: People Operations", title="OPS-9: Visa letter")
    assert [(f.subject, f.object) for f in extraction.facts] == [("People Operations", "OPS-9")]
    assert ("People Operations", "team") in {(e.name, e.kind) for e in extraction.entities}


ORG_TABLE = """| Area | Lead | Reports to |
|---|---|---|
| Support | Marcus Lee (Head of Support since 2025-09-01) | Ada Okafor |
| People Operations | Hannah Schmidt | Ada Okafor |
| Finance | Finance Team | Ada Okafor |"""


def test_a_table_with_a_reports_to_column_and_titles_in_the_person_column():
    # The title in the person cell is not read as a role (see the module docstring): reporting lines only.
    assert _facts(ORG_TABLE, title="Org Chart") == [
        ("Hannah Schmidt", "reports_to", "Ada Okafor", None), ("Marcus Lee", "reports_to", "Ada Okafor", None)]
    projection = GroundedProjection.from_extraction(_extract(ORG_TABLE, "Org Chart"), ORG_TABLE, migrated_specs())
    assert projection.quality.accepted == 2


def test_a_table_relates_row_labels_that_name_things_not_descriptions():
    table = """| Service | Owner | Status |
|---|---|---|
| Billing Service | Priya Nair | Live |
| Raise OPS-1 to High | Chloe Tan | Done |
| Force a cache refresh on deploy | Rafael Costa | Done |"""
    assert _facts(table, title="Services") == [
        ("Billing Service", "status", "live", None), ("Priya Nair", "owns", "Billing Service", None)]


def test_a_parenthesis_that_is_no_title_and_a_table_without_fields_propose_nothing():
    table = "| Topic | Person |\n|---|---|\n| Leave | Hannah Schmidt (People Operations) |"
    assert _facts(table, title="Who to ask") == []
    assert _facts("| Area | Amount |\n|---|---|\n| Perch | $0.7M |", title="Budget") == []
    assert _facts("```\n" + ORG_TABLE + "\n```", title="Org Chart") == []


MEMBERS = """## Members

- Raj Iyer (chair)
- Sun Li - Sun Li joined on 2025-11-03.
- Platform Team
- Hannah Schmidt (workplace safety)"""


def test_a_member_list_on_a_group_page():
    assert _facts(MEMBERS, title="Architecture Council") == [
        ("Hannah Schmidt", "member_of", "Architecture Council", None),
        ("Raj Iyer", "member_of", "Architecture Council", None), ("Raj Iyer", "role", "chair", None),
        ("Sun Li", "member_of", "Architecture Council", "2025-11-03")]
    kinds = {e.name: e.kind for e in _extract(MEMBERS, title="Architecture Council").entities}
    assert "chair" not in kinds and kinds["Raj Iyer"] == "person"  # the office is a value, no entity
    assert _facts("Members:\n- Raj Iyer\n- Sun Li", title="Architecture Council") == [
        ("Raj Iyer", "member_of", "Architecture Council", None), ("Sun Li", "member_of", "Architecture Council", None)]


def test_a_list_that_is_no_member_list_proposes_nothing():
    assert _facts(MEMBERS, title="Quarterly planning notes") == []  # not a group's page
    assert _facts(MEMBERS.replace("## Members", "## Speakers"), title="Architecture Council") == []
    assert _facts("## Members\n\nWe meet on Tuesdays.\n\n- Raj Iyer", title="Architecture Council") == []


@pytest.mark.parametrize(("text", "expected"), [
    ("Priya Nair", "Priya Nair"), ("Ludwig van Beethoven", "Ludwig van Beethoven"), ("Li Wei", "Li Wei"),
    ("Seán O'Brien", "Seán O'Brien"), ("Mary Smith-Jones", "Mary Smith-Jones"), ("Angus McDonald", "Angus McDonald"),
    ("Priya", None), ("Head of Support", None), ("The Team", None), ("K2 Firmware", None), ("IT Desk", None),
    ("Priya Nair Is Great Today", None),
])
def test_person_name(text, expected):
    assert person_name(text) == expected
