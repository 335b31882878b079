"""The offline extractor reads only what a writer asserts: one test per rejection rule (quoted example, heading and
bare title, blockquote, code, marked example), the noun-phrase and type checks, and offsets kept for the audit."""

import pytest

from findings.audit import GroundedProjection
from findings.extractors.patterns import PatternsExtractor
from findings.extractors.unasserted import BLOCKED, masked, unasserted_spans


def _triples(text, specs, title=""):
    extraction = PatternsExtractor().extract(chunk_text=text, ontology=specs, context={"title": title})
    return [(f.subject, f.predicate, f.object) for f in extraction.facts]


def _reasons(text, title=""):
    return {reason for _start, _end, reason in unasserted_spans(text, title=title)}


FACT = "Tom Becker reports to Ada Okafor."
KEPT = [("Tom Becker", "reports_to", "Ada Okafor")]


@pytest.mark.parametrize("text", [
    "Write 'On 2025-09-01 Marcus Lee took over as Head of Support' rather than 'Marcus is now running things'.",
    'Avoid "Marcus is now running things" in a page.',
    "Prefer “Priya Nair is the owner of Billing” to vague wording.",
    "He said ‘Acme Corp acquired Globex Inc’ at lunch.",
])
def test_a_quoted_example_proposes_nothing(specs, text):
    assert _triples(text, specs) == []
    assert "quote" in _reasons(text)


def test_an_apostrophe_opens_no_quote_and_a_short_quoted_name_stays_a_name(specs):
    assert _triples("Tom Becker's deputy is away. " + FACT, specs) == KEPT
    assert _triples('The Payments Team uses "Stripe".', specs) == [("Payments Team", "uses", "Stripe")]


@pytest.mark.parametrize("heading", [
    "# Priya Nair is the owner of Billing",
    "### Priya Nair is the owner of Billing",
    "Priya Nair is the owner of Billing\n==================================",
    "Priya Nair Is The Owner Of Billing",  # a bare, Title-Cased title line
])
def test_a_heading_or_bare_title_proposes_nothing(specs, heading):
    assert _triples(f"{heading}\n{FACT}", specs) == KEPT
    assert "heading" in _reasons(f"{heading}\n{FACT}")


def test_the_documents_own_title_is_not_a_statement(specs):
    text = f"Priya Nair is the owner of Billing\n{FACT}"
    assert _triples(text, specs, title="Priya Nair is the owner of Billing") == KEPT
    assert len(_triples(text, specs)) == 2  # without the title it reads as a bullet-like statement


def test_a_bullet_without_a_full_stop_is_still_a_statement(specs):
    assert _triples("- Priya owns Billing", specs) == [("Priya", "owns", "Billing")]


def test_a_blockquote_proposes_nothing(specs):
    text = f"> Priya Nair is the owner of Billing.\n>\n> Acme Corp acquired Globex Inc.\n{FACT}"
    assert _triples(text, specs) == KEPT
    assert _reasons(text) == {"blockquote"}


@pytest.mark.parametrize("text", [
    f"```\nPriya Nair is the owner of Billing.\n```\n{FACT}",
    f"~~~text\nAcme Corp acquired Globex Inc.\n~~~\n{FACT}",
    f"Run `Priya Nair is the owner of Billing` to test the parser. {FACT}",
])
def test_code_proposes_nothing(specs, text):
    assert _triples(text, specs) == KEPT
    assert _reasons(text) & {"code", "code_block"}


def test_an_unclosed_fence_runs_to_the_end_of_the_chunk(specs):
    assert _triples(f"{FACT}\n```\nPriya Nair is the owner of Billing.", specs) == KEPT


def test_a_one_token_code_span_is_still_a_product_name(specs):
    assert _triples("The Payments Team uses `pgbouncer` in production.", specs) == [
        ("Payments Team", "uses", "pgbouncer")]


@pytest.mark.parametrize("text", [
    "Write each decision with an owner, for example: Priya Nair is the owner of Billing.",
    "Name an owner, e.g. Priya Nair is the owner of Billing.",
    "For instance, Acme Corp acquired Globex Inc.",
    "Examples:\n- Priya Nair is the owner of Billing\n- Acme Corp acquired Globex Inc\n",
])
def test_a_marked_example_proposes_nothing(specs, text):
    assert _triples(f"{text}\n{FACT}", specs) == KEPT
    assert "example" in _reasons(text)


def test_an_example_item_shaped_like_a_title_is_an_example():
    # The field-line reader reads bare-title lines ("Assignee: Priya Nair"), so an example list must say "example".
    text = "Examples:\n- Assignee: Priya Nair\n\n- Status: Closed\nAssignee: Tom Becker"
    spans = unasserted_spans(text)
    assert [(text[s:e], reason) for s, e, reason in spans] == [
        ("- Assignee: Priya Nair", "example"), ("- Status: Closed", "example"), ("Assignee: Tom Becker", "heading")]


def test_an_example_in_parentheses_ends_with_them(specs):
    text = "Acme Corp acquired Globex Inc (for example, Tom Becker reports to Ada Okafor) in 2024."
    assert _triples(text, specs) == [("Acme Corp", "acquired", "Globex Inc")]


def test_a_hard_wrapped_quote_is_one_quote_but_a_blank_line_ends_it(specs):
    wrapped = 'The answer reads: "The FY2026\nR&D budget is $2.1M since 2025-10-10."'
    assert _triples(wrapped, specs) == []
    assert _triples('A stray " mark.\n\nThe FY2026 R&D budget is $2.1M. Next "one.', specs) == [
        ("FY2026 R&D", "budget", "$2.1M")]


def test_masking_keeps_offsets_and_line_breaks():
    text = "# Title here\nBody 'one two three' end.\n"
    view = masked(text, unasserted_spans(text))
    assert len(view) == len(text) and view.count("\n") == 2
    assert view.startswith(BLOCKED * len("# Title here") + "\n")
    assert "'one two three'" not in view and view.endswith(" end.\n")


@pytest.mark.parametrize(("text", "expected"), [
    ("Ben Moreau maintains the Northgate pilot board.", ("Ben Moreau", "owns", "Northgate pilot board")),
    ("Rafael Costa owns the Perch roadmap.", ("Rafael Costa", "owns", "Perch roadmap")),
    ("Rafael Costa is the Perch product manager.", ("Rafael Costa", "role", "Perch product manager")),
    ("The Perch team also uses GitLab CI.", ("Perch team", "uses", "GitLab CI")),
    ("The firmware team uses GitLab CI for every build.", ("firmware team", "uses", "GitLab CI")),
    ("Li Wei is a member of the safety committee.", ("Li Wei", "member_of", "safety committee")),
    ("Priya Nair became Head of Support today.", ("Priya Nair", "role", "Head of Support")),
    ("Rafael Costa owns the Perch release notes.", ("Rafael Costa", "owns", "Perch release notes")),
    ("Mobile Team relies on Firebase Crashlytics builds nightly.", ("Mobile Team", "uses", "Firebase Crashlytics")),
])
def test_a_name_takes_its_whole_noun_phrase(specs, text, expected):
    assert _triples(text, specs) == [expected]


@pytest.mark.parametrize(("text", "expected"), [
    ("The Payments Team uses Stripe, Adyen and the Ledger Service.",
     [("Payments Team", "uses", "Stripe"), ("Payments Team", "uses", "Adyen"),
      ("Payments Team", "uses", "Ledger Service")]),
    ("The design team uses Figma and Linear.", [("design team", "uses", "Figma"), ("design team", "uses", "Linear")]),
    ("Priya is a member of Data and Analytics.", [("Priya", "member_of", "Data and Analytics")]),  # a team's name
    ("Priya Nair owns Billing and Tom Becker owns Search.",
     [("Priya Nair", "owns", "Billing"), ("Tom Becker", "owns", "Search")]),
    ("The Payments Team owns the Checkout Service and the Refunds API.",
     [("Payments Team", "owns", "Checkout Service")]),
    ("The mobile team shipped the Atlas iOS app on 2026-04-14.", [("mobile team", "shipped", "Atlas iOS app")]),
])
def test_coordinated_names(specs, text, expected):
    """A list of objects of a set relation is one fact each; a state relation keeps its first object; an "and"
    between two clauses splits the name it joined."""
    assert _triples(text, specs) == expected


@pytest.mark.parametrize("text", [
    "Jake Moss is now Head of Sales EMEA.",  # a status is a value, not a multi-word name
    "The FY2026 budget was approved by the board on 2025-03-10.",  # passive: the budget did not approve
    "Perch 3.2 was released on 2025-05-20.",
    "Yours is approved already.",  # a capitalised function word names nothing, an adverb is no value
    "Grace Kim's team reimburses approved expenses with the next payroll run.",
    "@sam reports to `pgbouncer`.",  # a code span is a product, not a manager
    "`pgbouncer` reports to Priya Nair.",
    "The new team uses Kafka.",  # a group noun needs a modifier that says which group
    "Priya Nair reports to Priya Nair.",
])
def test_type_and_voice_checks_reject(specs, text):
    assert _triples(text, specs) == []


def test_every_proposal_from_a_mixed_page_survives_the_audit(specs):
    text = ("# Support update\n"
            "Write 'Marcus is now running things' nowhere.\n"
            "> Acme Corp acquired Globex Inc.\n"
            "On 2025-03-01 Priya Nair took over as Head of Support. Ben Moreau maintains the Northgate pilot board.\n"
            "```\nTom Becker reports to Ada Okafor.\n```\n")
    extraction = PatternsExtractor().extract(chunk_text=text, ontology=specs, context={})
    projection = GroundedProjection.from_extraction(extraction, text, specs)
    assert projection.quality.proposed == projection.quality.accepted == 2
    assert {(f.subject, f.object) for f in projection.accepted} == {
        ("Priya Nair", "Head of Support"), ("Ben Moreau", "Northgate pilot board")}
