"""End to end through the real answer pipeline: a tiny SQuAD 2.0-shaped file (tests/data/squad_tiny) ingested
as a tenant's records, answerable questions answered with the gold span, on-topic unanswerable ones refused."""

import json
from pathlib import Path

import pytest

from benchmarks.chat.squad import span_hit, squad_bench, squad_figures, squad_normal

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parent.parent / "data" / "squad_tiny"


def test_squad_normalisation_and_span_hit():
    assert squad_normal("The  Alan-Stevenson, engineer!") == "alanstevenson engineer"
    assert span_hit("It was designed by Alan Stevenson in 1844. [S1]", ["alan stevenson"])
    assert span_hit("Three keepers lived there. [S1][S2]", ["three"])
    assert not span_hit("Thirty-three keepers. [S1]", ["three"])  # whole words only
    assert not span_hit("Not found.", [])


def test_squad_questions_through_the_pipeline(world, tmp_path, settings):
    settings.ANSWER_CACHE_ENABLED = False
    out = tmp_path / "answers.jsonl"
    result = squad_bench(data=DATA, split="all", answers_out=out)
    rows = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    answered = {i for i, row in rows.items() if row["outcome"] == "answered"}
    hits = {i for i, row in rows.items() if row["hit"]}
    # every answerable question answered with its gold span...
    assert hits == {"t1", "t2", "t3", "t4", "t7", "t9", "t10"}
    # ...and the on-topic unanswerable ones refused: swapped roles (t5), a year the records do not have (t6),
    # the opposite of what they say (t8), a negation they lack (t11), no date for a "when" (t12)
    assert answered == hits
    assert {rows[i]["outcome"] for i in ("t5", "t6", "t8", "t11", "t12")} == {"not_found"}
    assert result["squad2_noans_refused"] == 1.0 and result["squad2_hasans_span_hit"] == 1.0
    assert result["squad2_balanced_accuracy"] == 1.0
    assert result["squad2_asked"] == 12 and result["squad2_noans_asked"] == 5
    assert result["squad2_judge"] == "rules"
    # the answer leads with the sentence that holds the answer
    assert rows["t2"]["answer"].startswith("It was designed by the engineer Alan Stevenson and first lit in 1844.")


def test_squad_split_and_missing_file(world, tmp_path, settings):
    settings.ANSWER_CACHE_ENABLED = False
    odd = squad_bench(data=DATA, split="odd")
    assert odd["squad2_asked"] == 4 and odd["squad2_noans_asked"] == 2  # the second article only
    figures, notes = squad_figures(tmp_path, quick=True)
    assert figures == {} and "not found" in notes[0]
    with pytest.raises(ValueError):
        squad_bench(data=DATA, split="third")
