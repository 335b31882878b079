import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from findings.audit import (
    REJECTION_REASONS,
    GroundedProjection,
    enclosing_sentence,
    entity_key,
    fold,
    fold_with_offsets,
    full_name_in,
    hedges_in,
    quote_interval,
    stripped_hedges,
)
from findings.proposals import Extraction, ExtractionInvalid, ProposedEntity, ProposedFact, extraction_from_json

# --- quote alignment ---------------------------------------------------------------------------------------


def test_exact_quote_is_found_as_is():
    text = "Intro. Priya Nair owns `billing-api`. Outro."
    assert quote_interval(text, "Priya Nair owns `billing-api`.") == (7, 37)


def test_folded_quote_maps_back_to_source_characters():
    text = "Intro.  Priya\n  NAIR owns `billing-api`.\nOutro."
    start, end = quote_interval(text, "priya nair owns billing-api")
    assert text[start:end] == "Priya\n  NAIR owns `billing-api"


def test_casefold_expansion_keeps_offsets_for_every_folded_character():
    folded, offsets = fold_with_offsets("Straße 5")
    assert folded == "strasse 5"
    assert offsets == [0, 1, 2, 3, 4, 4, 5, 6, 7]
    text = "Die STRASSE und die Straße."
    assert quote_interval(text, "die strasse und die strasse") == (0, 26)


def test_a_quote_never_claims_half_of_an_expanded_character():
    assert quote_interval("Maß", "mas") is None
    assert quote_interval("Maß und mas", "mas") == (8, 11)


@pytest.mark.parametrize("quote", [None, "", "   ", "\n\t", "``", " ` "])
def test_blank_quotes_do_not_align(quote):
    assert quote_interval("anything at all", quote) is None


def test_missing_text_does_not_align():
    assert quote_interval("Priya owns billing.", "Tom owns billing") is None


_ALPHABET = st.sampled_from(list("abcXYZ019 .,-`\t\nßÄäöİ") + ["\u00a0", "ﬁ"])


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=_ALPHABET, max_size=60), data=st.data())
def test_any_substring_aligns_to_an_equivalent_span(text, data):
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, len(text)))
    _assert_aligns(text, text[i:j])


def _assert_aligns(text: str, quote: str) -> None:
    """`quote` aligns to a span of `text` that folds to the same string; a quote that folds to nothing, to none."""
    span = quote_interval(text, quote)
    if not fold(quote):
        assert span is None
        return
    assert span is not None
    start, end = span
    assert 0 <= start < end <= len(text)
    assert fold(text[start:end]) == fold(quote)


_PLAIN = st.sampled_from(list("abcdefXYZ019.,- ßÄäÖö`\n"))


def _disguise(quote: str, data) -> str:
    """The same quote as a model might return it: extra whitespace, backticks and case changes."""
    out = []
    for char in quote:
        if char.isspace():
            out.append(data.draw(st.sampled_from([" ", "  ", "\n", " \t "])))
        elif char.isalpha():
            out.append(data.draw(st.sampled_from([char, char.upper(), char.lower()])))
        else:
            out.append(char)
        if data.draw(st.integers(0, 9)) == 0:
            out.append("`")
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=_PLAIN, max_size=60), data=st.data())
def test_disguised_substring_still_aligns(text, data):
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, len(text)))
    _assert_aligns(text, _disguise(text[i:j], data))


# --- names and hedges ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("left", "right"), [
    ("The Support Team", "support   team"),
    ("O'Brien", "OBrien"),
    ("Acme, Inc.", "acme inc"),
    ("`billing-api`", "Billing API"),
    ("Straße", "STRASSE"),
    ("an Example", "example"),
])
def test_entity_key_equates_spellings(left, right):
    assert entity_key(left) == entity_key(right)


def test_entity_key_keeps_inner_articles():
    assert entity_key("Plan A") == "plan a"
    assert entity_key("Plan A") != entity_key("Plan")


@pytest.mark.parametrize(("text", "name", "full"), [
    ("On 2025-01-15 Priya Nair became Head of Support.\n\nPriya reports to Ada Okafor.", "Priya", "Priya Nair"),
    ("Thanks to Tom Becker's team. Tom reviews firmware.", "Tom", "Tom Becker"),  # possessive dropped
    ("Tom Becker and Tom Ortiz review firmware. Tom approves.", "Tom", None),  # two Toms: the name says too little
    ("Priya reports to Ada Okafor.", "Priya", None),  # no full name in the record
    ("Priya Nair joined.", "Priya Nair", None),  # already more than one word
    ("# Welcome Priya\nNair is a city.", "Priya", None),  # not across lines
    ("Ada Okafor is COO. The Ada project ships.", "ada", None),  # lowercase is no name
])
def test_a_first_name_is_the_one_full_name_the_record_gives_it(text, name, full):
    assert full_name_in(text, name) == full


@pytest.mark.parametrize(("sentence", "families"), [
    ("Priya may take over support.", {"possibility"}),
    ("Atlas launched on 3 May 2025.", set()),
    ("Atlas launched in May.", set()),
    ("The team reportedly uses Kafka.", {"hearsay"}),
    ("Tom is no longer the owner of Billing.", {"negation"}),
    ("Tom isn't the owner of Billing.", {"negation"}),
    ("Acme plans to acquire Globex.", {"intention"}),
    ("Acme is likely to acquire Globex, allegedly.", {"likelihood", "hearsay"}),
    ("Priya Nair took over as Head of Support.", set()),
])
def test_hedges_in(sentence, families):
    assert hedges_in(sentence) == families


def test_a_hedge_of_the_same_family_or_a_family_qualifier_preserves_certainty():
    source = "Priya may take over support."
    assert stripped_hedges(source=source, statement="Priya might take over support", qualifiers=()) == set()
    assert stripped_hedges(source=source, statement="Priya takes over support", qualifiers=("possibility",)) == set()
    assert stripped_hedges(source=source, statement="Priya takes over support", qualifiers=("possibly",)) == set()
    assert stripped_hedges(source=source, statement="Priya takes over support", qualifiers=("rumoured",)) == {
        "possibility"
    }


def test_enclosing_sentence_spans_the_whole_sentence_only():
    text = "Tom may leave. It is rumoured that Priya will lead Support. Atlas v2.5 shipped."
    start, end = quote_interval(text, "Priya will lead Support.")
    assert enclosing_sentence(text, start, end) == "It is rumoured that Priya will lead Support."
    start, end = quote_interval(text, "Atlas v2.5 shipped")
    assert enclosing_sentence(text, start, end) == "Atlas v2.5 shipped."


# --- the audit -----------------------------------------------------------------------------------------------

CHUNK = (
    "On 2025-03-01 Priya Nair took over as Head of Support from Tom Becker. "
    "It is rumoured that Acme will acquire Globex. "
    "The `billing-api` is owned by the Payments Team."
)
ENTITIES = (
    ProposedEntity("Priya Nair", "person", ("Priya", "@priya")),
    ProposedEntity("Head of Support", "role"),
    ProposedEntity("Tom Becker", "person"),
    ProposedEntity("Acme", "organisation"),
    ProposedEntity("Globex", "organisation"),
)
ROLE_QUOTE = "Priya Nair took over as Head of Support"


def _fact(**changes) -> ProposedFact:
    base = dict(subject="Priya Nair", predicate="role", object="Head of Support",
                statement="Priya Nair took over as Head of Support", quote=ROLE_QUOTE, valid_from="2025-03-01")
    base.update(changes)
    return ProposedFact(**base)


def _audit(*facts, entities=ENTITIES, specs):
    return GroundedProjection.from_extraction(Extraction(entities=entities, facts=facts), CHUNK, specs)


def _reason(fact, specs, entities=ENTITIES) -> str | None:
    projection = _audit(fact, entities=entities, specs=specs)
    return projection.rejected[0].reason if projection.rejected else None


def test_a_grounded_fact_is_accepted_and_rewritten(specs):
    projection = _audit(_fact(subject="@priya", object="head of support", predicate="Role"), specs=specs)
    assert projection.rejected == ()
    (fact,) = projection.accepted
    assert (fact.subject, fact.predicate, fact.object) == ("Priya Nair", "role", "Head of Support")
    assert CHUNK[fact.quote_start:fact.quote_end] == ROLE_QUOTE
    assert [e.name for e in projection.entities] == ["Priya Nair", "Head of Support"]
    assert projection.quality.as_dict() == {
        "proposed": 1, "accepted": 1, "accepted_ratio": 1.0, "rejected": dict.fromkeys(REJECTION_REASONS, 0),
    }


def test_a_folded_quote_records_the_real_source_span(specs):
    (fact,) = _audit(_fact(quote="priya   nair TOOK over as head of support"), specs=specs).accepted
    assert CHUNK[fact.quote_start:fact.quote_end] == ROLE_QUOTE


@pytest.mark.parametrize(("changes", "reason"), [
    ({"quote": None}, "missing_quote"),
    ({"quote": "  \n "}, "missing_quote"),
    ({"quote": "Priya Nair became CEO"}, "unsupported_quote"),
    ({"quote": "Acme will acquire Globex", "subject": "Acme", "object": "Globex", "predicate": "acquired",
      "statement": "Acme will acquire Globex"}, "stripped_qualifier"),
    ({"subject": "Priya N."}, "unresolved_endpoint"),
    ({"object": "Head of Sales"}, "unresolved_endpoint"),
    ({"object": "@priya"}, "self_relation"),
    ({"predicate": "related_to"}, "generic_relation"),
    ({"predicate": "mentors"}, "unknown_predicate"),
])
def test_each_rejection_reason(specs, changes, reason):
    assert _reason(_fact(**changes), specs) == reason


def test_literal_objects_need_no_entity(specs):
    for value in ("on hold", "$2.5M", "Q3 2025"):
        fact = _fact(predicate="status", object=value)
        assert _reason(fact, specs) is None, value


def test_a_hedge_kept_in_the_qualifiers_is_accepted(specs):
    fact = _fact(quote="Acme will acquire Globex", subject="Acme", object="Globex", predicate="acquired",
                 statement="Acme will acquire Globex", qualifiers=("rumoured",))
    assert _reason(fact, specs) is None


@pytest.mark.parametrize(("changes", "reason"), [
    # Each case breaks two rules; the earlier reason in REJECTION_REASONS wins.
    ({"quote": " ", "predicate": "related_to"}, "missing_quote"),
    ({"quote": "not in the chunk", "subject": "Nobody"}, "unsupported_quote"),
    ({"quote": "Acme will acquire Globex", "subject": "Nobody", "statement": "Acme acquires Globex"},
     "stripped_qualifier"),
    ({"subject": "Nobody", "object": "Nobody"}, "unresolved_endpoint"),
    ({"object": "Priya", "predicate": "related_to"}, "self_relation"),
    ({"predicate": "related_to", "object": "Tom Becker"}, "generic_relation"),
])
def test_the_first_applicable_reason_wins(specs, changes, reason):
    assert _reason(_fact(**changes), specs) == reason


def test_quality_counts_and_kept_entities(specs):
    projection = _audit(
        _fact(),
        _fact(quote=None),
        _fact(quote=None, predicate="owns"),
        _fact(predicate="related_to", object="Tom Becker"),
        _fact(subject="Tom Becker", predicate="reports_to", object="Priya",
              quote="Head of Support from Tom Becker", statement="Tom Becker reports to Priya"),
        specs=specs,
    )
    assert projection.quality.proposed == 5
    assert projection.quality.accepted == 2
    assert projection.quality.accepted_ratio == 0.4
    assert projection.quality.as_dict()["rejected"]["missing_quote"] == 2
    assert projection.quality.as_dict()["rejected"]["generic_relation"] == 1
    assert [e.name for e in projection.entities] == ["Priya Nair", "Head of Support", "Tom Becker"]
    assert [r.reason for r in projection.rejected] == ["missing_quote", "missing_quote", "generic_relation"]


# --- the model's JSON --------------------------------------------------------------------------------------


def test_extraction_from_json_builds_frozen_proposals():
    extraction = extraction_from_json({
        "entities": [{"name": "Priya Nair", "kind": "person", "aliases": ["Priya"]}],
        "facts": [{"subject": "Priya Nair", "predicate": "role", "object": "Head of Support",
                   "statement": "Priya Nair is Head of Support", "quote": "Priya Nair took over",
                   "valid_from": "2025-03-01", "qualifiers": []}],
    })
    assert extraction.entities == (ProposedEntity("Priya Nair", "person", ("Priya",)),)
    assert extraction.facts[0].valid_from == "2025-03-01"
    assert extraction.facts[0].perspective is None


@pytest.mark.parametrize(("data", "path"), [
    ([], "$"),
    ({"entities": []}, "facts"),
    ({"entities": [], "facts": [], "notes": "x"}, "$"),
    ({"entities": [{"name": "", "kind": "person"}], "facts": []}, "entities[0].name"),
    ({"entities": [{"name": "A", "kind": "person", "aliases": "A"}], "facts": []}, "entities[0].aliases"),
    ({"entities": [], "facts": [{"subject": "A", "predicate": "p", "object": "B", "statement": "s"}]},
     "facts[0].quote"),
    ({"entities": [], "facts": [{"subject": "A", "predicate": 3, "object": "B", "statement": "s", "quote": None}]},
     "facts[0].predicate"),
    ({"entities": [], "facts": [{"subject": "A", "predicate": "p", "object": "B", "statement": "s", "quote": None,
                                 "confidence": 0.9}]}, "facts[0]"),
    ({"entities": [], "facts": [{}] * 65}, "facts"),
])
def test_extraction_from_json_names_the_bad_field(data, path):
    with pytest.raises(ExtractionInvalid) as caught:
        extraction_from_json(data)
    assert caught.value.path == path


def test_a_null_quote_is_valid_json_and_rejected_by_the_audit(specs):
    extraction = extraction_from_json({"entities": [], "facts": [
        {"subject": "A", "predicate": "owns", "object": "B", "statement": "A owns B", "quote": None}]})
    projection = GroundedProjection.from_extraction(extraction, "A owns B.", specs)
    assert [r.reason for r in projection.rejected] == ["missing_quote"]


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=40), data=st.data())
def test_any_unicode_substring_aligns(text, data):
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, len(text)))
    span = quote_interval(text, text[i:j])
    if fold(text[i:j]):
        assert span is not None
        assert fold(text[span[0]:span[1]]) == fold(text[i:j])
