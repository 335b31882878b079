import json
import uuid
from datetime import date

import pytest

from findings.consolidation import (
    BATCH_VERDICT_SCHEMA,
    MAX_BATCH_VERDICTS,
    AmbiguousCandidate,
    CatalogEntry,
    ConsolidationInvalid,
    Match,
    Verdict,
    VerdictKind,
    build_verdict_prompt,
    decide,
    fact_identity,
    state_slot_key,
)
from findings.consolidation import resolve_batch_verdicts as resolve

ADD, NOOP, UPDATE, AMBIGUOUS, REFUTE = (VerdictKind.ADD, VerdictKind.NOOP, VerdictKind.UPDATE,
                                        VerdictKind.AMBIGUOUS, VerdictKind.REFUTE)

# --- identity ---------------------------------------------------------------------------------------------


def test_fact_identity_is_stable_and_ignores_statement_formatting():
    a = fact_identity("priya nair", "owns", "billing", "Priya Nair owns `Billing`.")
    b = fact_identity("priya nair", "owns", "billing", "priya nair  owns billing")
    assert a == b
    assert a.version == 5
    assert a == uuid.UUID(str(a))


@pytest.mark.parametrize("changed", [
    ("tom becker", "owns", "billing", "Priya Nair owns Billing"),
    ("priya nair", "uses", "billing", "Priya Nair owns Billing"),
    ("priya nair", "owns", "payments", "Priya Nair owns Billing"),
    ("priya nair", "owns", "billing", "Priya Nair co-owns Billing"),
])
def test_fact_identity_changes_with_every_part(changed):
    assert fact_identity(*changed) != fact_identity("priya nair", "owns", "billing", "Priya Nair owns Billing")


def test_state_slot_key_ignores_the_object_but_not_window_or_perspective():
    base = state_slot_key("priya nair", "role", date(2025, 3, 1), None, None)
    assert base == state_slot_key("priya nair", "role", date(2025, 3, 1), None, "")
    assert base != state_slot_key("priya nair", "role", date(2025, 3, 2), None, None)
    assert base != state_slot_key("priya nair", "role", date(2025, 3, 1), date(2025, 9, 1), None)
    assert base != state_slot_key("priya nair", "role", date(2025, 3, 1), None, "tom becker")
    assert base != state_slot_key("priya nair", "owns", date(2025, 3, 1), None, None)


# --- rule verdicts -----------------------------------------------------------------------------------------


def test_no_matches_is_add():
    for policy in ("state", "set", "event"):
        assert decide(policy, "x", []) == Verdict(ADD)


def test_state_single_same_object_is_noop():
    assert decide("state", "head of support", [Match(7, "head of support", 0.2)]) == Verdict(NOOP, 7)


@pytest.mark.parametrize("matches", [
    [Match(7, "head of sales", 0.99)],
    [Match(7, "head of support", 0.80), Match(8, "head of sales", 0.95)],
    [Match(8, "head of sales", 0.95), Match(7, "head of support", 0.95)],
])
def test_any_other_state_case_updates_the_nearest(matches):
    nearest = max(matches, key=lambda m: m.similarity)
    assert decide("state", "head of support", matches) == Verdict(UPDATE, nearest.claim_id)


@pytest.mark.parametrize("policy", ["set", "event"])
@pytest.mark.parametrize(("similarity", "same_object", "expected"), [
    (0.7499, True, Verdict(ADD)),
    (0.7499, False, Verdict(ADD)),
    (0.75, True, Verdict(AMBIGUOUS)),
    (0.75, False, Verdict(AMBIGUOUS)),
    (0.8999, True, Verdict(AMBIGUOUS)),
    (0.8999, False, Verdict(AMBIGUOUS)),
    (0.9, True, Verdict(NOOP, 1)),
    (0.9, False, Verdict(AMBIGUOUS)),
    (1.0, True, Verdict(NOOP, 1)),
])
def test_set_and_event_thresholds(policy, similarity, same_object, expected):
    match = Match(1, "kafka" if same_object else "rabbitmq", similarity)
    if policy == "set" and same_object:  # a set holds a value or not: the same object is the same fact
        expected = Verdict(NOOP, 1)
    assert decide(policy, "kafka", [match]) == expected


@pytest.mark.parametrize("policy", ["set", "event"])
def test_different_identifiers_are_never_paired_as_duplicates(policy):
    """The review queue paired KR-1104 with KR-1058 at 0.95: two tickets are two facts."""
    assert decide(policy, "kr-1104", [Match(1, "kr-1058", 0.95)]) == Verdict(ADD)
    assert decide(policy, "kr-1104", [Match(1, "kr-1058", 0.99), Match(2, "kr-1104", 0.95)]) == Verdict(NOOP, 2)
    assert decide(policy, "postgresql", [Match(1, "postgres", 0.95)]) == Verdict(AMBIGUOUS)  # alias drift: asked


def test_a_set_value_said_in_other_words_is_the_same_claim():
    """"The warehouse team uses Grafana" in three records worded three ways is one open claim."""
    matches = [Match(1, "snowflake", 0.5), Match(2, "grafana", 0.2), Match(3, "grafana", 0.3)]
    assert decide("set", "grafana", matches) == Verdict(NOOP, 3)
    assert decide("event", "grafana", matches) == Verdict(ADD)  # two events with one object may be two events


def test_a_same_object_match_above_the_threshold_wins_over_a_nearer_different_one():
    matches = [Match(1, "rabbitmq", 0.97), Match(2, "kafka", 0.92)]
    assert decide("set", "kafka", matches) == Verdict(NOOP, 2)


def test_thresholds_come_from_settings(settings):
    settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 0.95
    settings.CONSOLIDATION_BORDERLINE_FLOOR = 0.5
    assert decide("event", "kafka", [Match(1, "kafka", 0.92)]) == Verdict(AMBIGUOUS)
    assert decide("event", "kafka", [Match(1, "kafka", 0.6)]) == Verdict(AMBIGUOUS)
    assert decide("event", "kafka", [Match(1, "kafka", 0.49)]) == Verdict(ADD)
    settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 0.7
    assert decide("event", "kafka", [Match(1, "kafka", 0.7)]) == Verdict(NOOP, 1)


def test_unknown_policy_is_an_error():
    with pytest.raises(ValueError, match="sometimes"):
        decide("sometimes", "x", [])


def test_settings_defaults():
    from django.conf import settings

    assert settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD == 0.9
    assert settings.CONSOLIDATION_BORDERLINE_FLOOR == 0.75


# --- batched model verdicts --------------------------------------------------------------------------------

CLAIM_A, CLAIM_B, CLAIM_C = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
CANDIDATES = [
    AmbiguousCandidate("Payments uses Kafka for events", (CatalogEntry(CLAIM_A, "Payments uses RabbitMQ", 0.82),)),
    AmbiguousCandidate("Atlas depends on Ledger", (CatalogEntry(CLAIM_B, "Atlas depends on Ledger v1", 0.88),
                                                   CatalogEntry(CLAIM_C, "Atlas depends on Auth", 0.77))),
    AmbiguousCandidate("Acme launched Beacon", ()),
]


def test_valid_answer_is_applied_in_candidate_order():
    answer = {"verdicts": [
        {"index": 2, "verdict": "NOOP", "target": str(CLAIM_B)},
        {"index": 1, "verdict": "UPDATE", "target": str(CLAIM_A)},
        {"index": 3, "verdict": "ADD", "target": None},
    ]}
    assert resolve(CANDIDATES, answer) == [Verdict(UPDATE, CLAIM_A), Verdict(NOOP, CLAIM_B), Verdict(ADD)]


def test_targets_outside_the_candidates_own_catalog_become_add():
    answer = {"verdicts": [
        {"index": 1, "verdict": "UPDATE", "target": str(CLAIM_B)},  # B belongs to candidate 2
        {"index": 2, "verdict": "REFUTE", "target": "not-a-claim"},
        {"index": 3, "verdict": "REFUTE"},
    ]}
    assert resolve(CANDIDATES, answer) == [Verdict(ADD)] * 3


def test_refute_inside_the_catalog_is_kept():
    answer = {"verdicts": [{"index": 2, "verdict": "REFUTE", "target": str(CLAIM_C)}]}
    assert resolve(CANDIDATES, answer) == [Verdict(ADD), Verdict(REFUTE, CLAIM_C), Verdict(ADD)]


def test_noop_with_a_foreign_target_keeps_no_target():
    answer = {"verdicts": [{"index": 1, "verdict": "NOOP", "target": str(CLAIM_C)}]}
    assert resolve(CANDIDATES, answer)[0] == Verdict(NOOP, None)


def test_unknown_indexes_bad_items_and_repeats_are_ignored():
    answer = json.dumps({"verdicts": [
        {"index": 0, "verdict": "UPDATE", "target": str(CLAIM_A)},
        {"index": 9, "verdict": "UPDATE", "target": str(CLAIM_A)},
        {"index": "1", "verdict": "UPDATE", "target": str(CLAIM_A)},
        {"index": True, "verdict": "UPDATE", "target": str(CLAIM_A)},
        {"index": 1, "verdict": "AMBIGUOUS"},
        "garbage",
        {"index": 2, "verdict": "UPDATE", "target": str(CLAIM_B)},
        {"index": 2, "verdict": "REFUTE", "target": str(CLAIM_C)},
    ]})
    assert resolve(CANDIDATES, answer) == [Verdict(ADD), Verdict(UPDATE, CLAIM_B), Verdict(ADD)]


@pytest.mark.parametrize("answer", [
    "not json", [], {"verdict": []}, {"verdicts": {"index": 1}},
    {"verdicts": [{"index": 1, "verdict": "ADD"}] * (MAX_BATCH_VERDICTS + 1)},
])
def test_structurally_invalid_answers_raise(answer):
    with pytest.raises(ConsolidationInvalid):
        resolve(CANDIDATES, answer)


def test_batches_are_capped():
    too_many = [CANDIDATES[2]] * (MAX_BATCH_VERDICTS + 1)
    with pytest.raises(ConsolidationInvalid):
        build_verdict_prompt(too_many)
    with pytest.raises(ConsolidationInvalid):
        resolve(too_many, {"verdicts": []})


def test_prompt_numbers_candidates_and_lists_only_their_own_catalog():
    system, user = build_verdict_prompt(CANDIDATES)
    assert system["role"] == "system" and user["role"] == "user"
    assert json.dumps(BATCH_VERDICT_SCHEMA, separators=(",", ":")) in system["content"]
    lines = user["content"].splitlines()
    assert lines[0] == "New fact 1: Payments uses Kafka for events"
    assert lines[1] == f"  - recorded [{CLAIM_A}] (similarity 0.82): Payments uses RabbitMQ"
    assert lines[2] == "New fact 2: Atlas depends on Ledger"
    assert lines[5:] == ["New fact 3: Acme launched Beacon", "  (no recorded facts)"]


def test_startup_check_rejects_an_inverted_band(settings):
    from findings.checks import consolidation_thresholds

    assert consolidation_thresholds() == []
    settings.CONSOLIDATION_BORDERLINE_FLOOR = 0.95
    (error,) = consolidation_thresholds()
    assert error.id == "findings.E001"
