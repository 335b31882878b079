import pytest

from findings.audit import GroundedProjection
from findings.extractors.base import Extractor
from findings.extractors.patterns import PatternsExtractor, sentences
from findings.selectors import ontology_specs


def _triples(text, specs):
    extraction = PatternsExtractor().extract(chunk_text=text, ontology=specs, context={})
    return [(f.subject, f.predicate, f.object, f.valid_from) for f in extraction.facts], extraction


def test_it_is_an_extractor():
    extractor: Extractor = PatternsExtractor()
    assert extractor.name == "patterns"


def test_sentences_keep_offsets_and_drop_list_markers():
    text = "Atlas v2.5 shipped.  Then Beacon launched!\n- Priya owns Billing\n\n1) Tom left Acme."
    assert [text[s:e] for s, e in sentences(text)] == [
        "Atlas v2.5 shipped.", "Then Beacon launched!", "Priya owns Billing", "Tom left Acme.",
    ]


def test_role_change_with_a_date(specs):
    text = "On 2025-03-01 Priya Nair took over as Head of Support from Tom Becker."
    triples, extraction = _triples(text, specs)
    assert triples == [("Priya Nair", "role", "Head of Support", "2025-03-01")]
    (fact,) = extraction.facts
    assert fact.quote == text
    assert fact.statement == text
    assert {(e.name, e.kind) for e in extraction.entities} == {("Priya Nair", "person"), ("Head of Support", "role")}


@pytest.mark.parametrize(("text", "expected"), [
    ("Tom Becker reports to Priya Nair.", ("Tom Becker", "reports_to", "Priya Nair", None)),
    ("Priya Nair is the owner of the Billing Service.", ("Priya Nair", "owns", "Billing Service", None)),
    ("Project Atlas is currently on hold.", ("Project Atlas", "status", "on hold", None)),
    ("Atlas has a budget of $2.5M for 2025.", ("Atlas", "budget", "$2.5M", None)),
    ("The Payments Team uses `pgbouncer` in production.", ("Payments Team", "uses", "pgbouncer", None)),
    ("@sam is a member of the Platform Guild.", ("@sam", "member_of", "Platform Guild", None)),
    ("Acme Corp acquired Globex Inc on 14 July 2024.", ("Acme Corp", "acquired", "Globex Inc", "2024-07-14")),
    ("Beacon Labs launched Beacon Search in May 2025.", ("Beacon Labs", "launched", "Beacon Search", "2025-05-01")),
    ("The Berlin Office is headquartered in Berlin.", ("Berlin Office", "located_in", "Berlin", None)),
    ("Priya Nair officially became CTO on March 3, 2025.", ("Priya Nair", "role", "CTO", "2025-03-03")),
])
def test_realistic_sentences(specs, text, expected):
    triples, _ = _triples(text, specs)
    assert triples == [expected]


@pytest.mark.parametrize("text", [
    "Priya Nair may take over as Head of Support.",
    "Tom Becker is not the owner of Billing.",
    "Tom Becker isn't the owner of Billing.",
    "Acme reportedly acquired Globex.",
    "Acme plans to acquire Globex.",
    "Beacon is expected to launch Atlas.",
    "We use Kafka.",
    "the team uses kafka.",
])
def test_hedged_or_nameless_sentences_propose_nothing(specs, text):
    triples, extraction = _triples(text, specs)
    assert triples == []
    assert extraction.entities == ()


def test_a_name_in_another_clause_is_not_the_subject(specs):
    triples, _ = _triples("Tom Becker said the Payments Team uses Kafka.", specs)
    assert triples == [("Payments Team", "uses", "Kafka", None)]


def test_a_conjunction_breaks_the_subject(specs):
    triples, _ = _triples("The Payments Team uses `pgbouncer` and relies on Stripe.", specs)
    assert triples == [("Payments Team", "uses", "pgbouncer", None)]


def test_every_proposal_survives_the_audit(specs):
    text = (
        "# Support update\n"
        "On 2025-03-01 Priya Nair took over as Head of Support from Tom Becker. Tom Becker reports to Priya Nair.\n"
        "- Project Atlas is currently on hold.\n"
        "- The Payments Team uses `pgbouncer`.\n"
        "Rumour: Acme may acquire Globex. Acme Corp acquired Initech on 3 May 2025."
    )
    extraction = PatternsExtractor().extract(chunk_text=text, ontology=specs, context={})
    projection = GroundedProjection.from_extraction(extraction, text, specs)
    assert projection.quality.proposed == 5
    assert projection.quality.accepted == 5
    for fact in projection.accepted:
        assert text[fact.quote_start:fact.quote_end] == fact.quote
    assert ("Acme Corp", "acquired", "Initech") in {(f.subject, f.predicate, f.object) for f in projection.accepted}


def test_the_generic_relation_is_never_proposed(specs):
    from findings.ontology import RelationSpec

    with_generic = [*specs, RelationSpec("related_to", "generic", ("is related to",))]
    triples, _ = _triples("Atlas is related to Beacon.", with_generic)
    assert triples == []


@pytest.mark.django_db
def test_works_with_the_ontology_from_the_database():
    text = "Tom Becker left Acme Corp on 2024-12-31."
    extraction = PatternsExtractor().extract(chunk_text=text, ontology=ontology_specs(), context={})
    assert [(f.subject, f.predicate, f.object, f.valid_from) for f in extraction.facts] == [
        ("Tom Becker", "left", "Acme Corp", "2024-12-31")
    ]


def test_value_first_templates_and_budget_revisions_from_the_migrated_ontology(relations):
    """Migration 0006: fleet_size reads "{n} robots are in <Name>"; robots and docks never share a value; a
    budget stated as a revision is a budget claim with its date."""
    import importlib

    from django.apps import apps as django_apps

    # A transactional test elsewhere may have flushed the migrations' rows (see the `relations` fixture).
    importlib.import_module("findings.migrations.0006_fleet_size_and_revisions").add(django_apps, None)
    specs = ontology_specs()
    text = ("12 K2 robots are in the Northgate pilot. Since 2025-10-20 there are 20 robots in the Northgate pilot. "
            "Northgate fleet is now 20 robots. 6 charging docks are in the Northgate pilot. "
            "On 2025-10-10 the FY2026 R&D budget was revised to $2.1M, down from the $2.4M approved in March.")
    triples, extraction = _triples(text, specs)
    assert triples == [
        ("Northgate", "fleet_size", "12 K2 robots", None),
        ("Northgate", "fleet_size", "20 robots", "2025-10-20"),
        ("Northgate", "fleet_size", "20 robots", None),
        ("FY2026 R&D", "budget", "$2.1M", "2025-10-10"),
    ]
    grounded = GroundedProjection.from_extraction(extraction, chunk_text=text, ontology=specs)
    assert [f.object for f in grounded.accepted] == ["12 K2 robots", "20 robots", "20 robots", "$2.1M"]


def test_a_named_team_is_typed_a_team_not_a_person(specs):
    """The demo's "the Perch team also uses GitLab CI": the relation's first subject kind is a person, but the name's
    head noun says it is a team."""
    text = "The firmware team uses GitLab CI; the Perch team also uses GitLab CI plus a staging cluster."
    _, extraction = _triples(text, specs)
    kinds = {e.name: e.kind for e in extraction.entities}
    assert kinds["Perch team"] == "team" and kinds["firmware team"] == "team"
    _, extraction = _triples("Priya Nair uses GitLab CI.", specs)
    assert {e.name: e.kind for e in extraction.entities}["Priya Nair"] == "person"
