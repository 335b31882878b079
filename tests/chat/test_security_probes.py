"""The security bench's probes as regression tests: each `measure(quick=True)` runs against the test database
and every figure it reports is at its goal (issue #11), with the controls that show the probe reached data."""

from __future__ import annotations

import pytest
from django.http import HttpResponse

from benchmarks.chat.security import (
    CEILINGS,
    cache_contrast,
    canary,
    guessed_names,
    hint_oracle,
    hostile,
    probe_modules,
    stats_drift,
    unknown_ids,
)

pytestmark = pytest.mark.django_db


def _at_goal(figures: dict, names: tuple[str, ...]) -> None:
    for name in names:
        assert name in figures, name
        ceiling = CEILINGS.get(name, 0)
        # the hint gaps have a ceiling of 5 "points or more fails": strictly below it
        strict = name in ("hint_oracle_gap_points", "guessed_name_hint_gap_points")
        assert figures[name] < ceiling if strict else figures[name] <= ceiling, (
            name, figures[name], figures)


def test_the_aggregator_finds_every_probe():
    assert {"canary", "hint_oracle", "cache_contrast", "hostile", "unknown_ids", "stats_drift",
            "guessed_names"} <= set(probe_modules())
    assert "_world" not in probe_modules()


def test_canary_probe(db, tmp_path):
    figures = canary.measure(tmp_path, True)
    _at_goal(figures, ("canary_leaks",))
    assert figures["canary_leak_examples"] == []
    assert figures["canary_requests"] > 500
    # each identity saw the canaries it may see: the probe reached the records, the leaks count means something
    assert set(figures["canary_allowed_by_identity"]) == {"member", "admin", "b_member"}
    assert figures["canary_access_requests"] == 1  # the admin's access-request views had a hidden record to name


def test_canary_tally_counts_a_forbidden_canary_and_not_an_allowed_one():
    tally = canary.Tally()
    canaries = {"a_restricted": "CANARY-AR-1", "a_workspace": "CANARY-AW-1"}
    tally.check(HttpResponse("<p>canary-ar-1</p>"), who="member", label="GET /x", forbidden={"a_restricted"},
                canaries=canaries)
    tally.check(HttpResponse("CANARY-AW-1"), who="member", label="GET /y", forbidden={"a_restricted"},
                canaries=canaries)
    assert (tally.requests, tally.leaks, tally.allowed_hits) == (2, 1, {"member": 1})
    assert tally.examples == ["member GET /x 200: a_restricted"]


def test_hint_oracle_probe(db, tmp_path):
    figures = hint_oracle.measure(tmp_path, True)
    _at_goal(figures, ("hint_oracle_gap_points",))
    assert figures["hint_oracle_guesses"] == 100
    assert figures["hint_oracle_topic_hint"] == 1  # a real question about the hidden topic still gets a hint


def test_cache_contrast_probe(db, tmp_path):
    figures = cache_contrast.measure(tmp_path, True)
    _at_goal(figures, ("cache_wrong_hits",))
    assert figures["cache_contrast_lookups"] >= 40
    assert figures["cache_paraphrase_hits"] == figures["cache_paraphrase_pairs"] > 0


def test_hostile_probe(db, tmp_path):
    figures = hostile.measure(tmp_path, True)
    _at_goal(figures, ("hostile_5xx",))
    assert figures["hostile_5xx_examples"] == []
    assert figures["hostile_requests"] > 300 and figures["hostile_endpoints"] >= 20
    assert "hostile_note" not in figures  # the attack strings are in the repository


def test_unknown_identifiers_probe(db, tmp_path):
    figures = unknown_ids.measure(tmp_path, True)
    assert figures["unknown_identifier_answers"] == 0, figures["unknown_ids_answered_examples"]
    assert figures["unknown_ids_questions"] >= 8
    assert figures["unknown_ids_known_answered"] == figures["unknown_ids_known_questions"]


def test_stats_drift_probe(db, tmp_path):
    figures = stats_drift.measure(tmp_path, True)
    _at_goal(figures, ("stats_rank_changes",))
    assert figures["stats_rank_changed_examples"] == {}
    assert figures["stats_rank_checks"] == 32 and figures["stats_rank_imported"] == 40
    # the same records readable by everyone do move the member's weights: the probe would see a leak
    assert figures["stats_weight_control_moved"] == 1


def test_guessed_names_probe(db, tmp_path):
    figures = guessed_names.measure(tmp_path, True)
    _at_goal(figures, ("guessed_name_hint_gap_points",))
    assert figures["guessed_name_max_kind_gap_points"] == 0.0
    assert figures["guessed_name_guesses"] == 80
    assert figures["guessed_name_topic_hint"] == 1  # a question about the deals, in shared words, still hints
