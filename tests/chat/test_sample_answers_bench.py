"""The sample-answers bench (benchmarks/chat/sample_answers.py): how it scores an answer, and a small run over a
scratch copy of the demo tenant that reports the figures, writes every answer and takes its scratch rows away."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from benchmarks.chat.sample_answers import (
    KINDS,
    answer_lead,
    gold_in,
    question_scored,
    quick_questions,
    sample_answer_figures,
    sample_questions,
)
from groundwork.models import Tenant
from tests.knowledge.conftest import no_embedder  # noqa: F401  (resets the cached embedder after the test too)


def test_lead_is_the_text_before_the_first_label_cluster():
    assert answer_lead("20 requests per second per site. [S1][S2] Perch returns HTTP 429 [S3].") == \
        "20 requests per second per site."
    assert answer_lead("No label at all.") == "No label at all."


def test_golds_match_whole_words_with_case_punctuation_and_spaces_folded():
    assert gold_in("Runtime: About 9  hours of typical picking [S2]", "about 9 hours of typical picking")
    assert gold_in("press the emergency-stop, then post in #safety", ["Post in #safety"])
    assert not gold_in("1,200 A maximum", "200 A") and not gold_in("accuracy 99.86 %", "99.8 %")
    assert gold_in("cut to $2.1M.", "$2.1M") and gold_in("Dock 3 (KR-1042)", "KR-1042")
    assert not gold_in("the R&D budget is $2.4M", ["$2.1M", "2.1"])


def test_an_answer_is_scored_by_its_lead_its_items_and_its_outcome():
    number = {"kind": "number", "expect": "answer", "answers": ["about 9 hours", "9 hours"]}
    assert question_scored(number, answer="Charge at 20 A [S1]. Runtime: about 9 hours [S2]", outcome="answered") \
        == {"refused": False, "in_lead": False, "anywhere": True, "items_found": None}
    steps = {"kind": "procedure", "expect": "answer", "answers": ["Open a ticket", "Your manager approves"]}
    scored = question_scored(steps, answer="Open a ticket in the IT queue [S1]. Then wait.", outcome="answered")
    assert scored == {"refused": False, "in_lead": True, "anywhere": False, "items_found": 1}
    refusal = question_scored(number, answer="I could not find this about 9 hours.", outcome="not_found")
    assert refusal["refused"] and not refusal["in_lead"] and not refusal["anywhere"]
    restricted = {"kind": "restricted", "expect": "not_found", "answers": ["HEATHERLIGHT"]}
    assert question_scored(restricted, answer="Project Heatherlight [S1]", outcome="answered") == \
        {"refused": False, "leaked": True}
    assert question_scored(restricted, answer="I could not find this.", outcome="not_found") == \
        {"refused": True, "leaked": False}


def test_quick_takes_a_few_of_every_kind_and_what_they_follow():
    questions = sample_questions()
    quick = quick_questions(questions)
    ids = {q["id"] for q in quick}
    assert {q["kind"] for q in quick} == set(KINDS)
    assert all(q["after"] in ids for q in quick if q.get("after"))
    assert len(quick) < len(questions)


@pytest.mark.django_db
def test_a_small_run_reports_every_figure_writes_every_answer_and_cleans_up(tmp_path, no_embedder):  # noqa: F811
    asked = ["num-wms-rate-limit", "res-pilot-fee", "un-k3-runtime", "fu-rate-limit-over"]
    figures, notes = sample_answer_figures(out_dir=tmp_path, ids=asked[1:])  # the follow-up brings its question
    for key in ("sample_questions", "sample_answer_in_lead", "sample_answer_anywhere", "sample_false_refusals",
                "sample_unanswerable_refused", "sample_restricted_leaks", "sample_by_kind"):
        assert key in figures, key
    assert figures["sample_questions"] == 4
    assert set(figures["sample_by_kind"]) == {"number", "restricted", "unanswerable", "followup"}
    assert figures["sample_restricted_leaks"] == 0
    rows = [json.loads(line) for line in (tmp_path / "sample_answers.jsonl").read_text().splitlines()]
    by_id = {r["id"]: r for r in rows}
    assert set(by_id) == set(asked)
    # The rate-limit question: asked by the member, answered with the gold in its first statement.
    assert by_id["num-wms-rate-limit"]["in_lead"], by_id["num-wms-rate-limit"]["answer"]
    assert figures["sample_by_kind"]["number"]["answer_in_lead"] == 1.0
    # The member may not read the commercial terms: refused, and the fee is nowhere in the answer.
    assert by_id["res-pilot-fee"]["refused"] and "$18,000" not in by_id["res-pilot-fee"]["answer"]
    order = [r["id"] for r in rows]
    assert order.index("fu-rate-limit-over") == order.index("num-wms-rate-limit") + 1
    assert "4 questions" in notes[0]
    assert not Tenant.objects.filter(slug__startswith="bench-sample-").exists()
    assert not get_user_model().objects.filter(username__startswith="bench-sample-").exists()
