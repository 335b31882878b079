from __future__ import annotations

from chat.citations import all_citations, citations_for, find_labels, strip_invalid_labels
from tests.chat.factories import evidence


def test_find_labels_reads_single_grouped_and_adjacent_forms_in_first_use_order():
    text = "A [S2]. B [S1, S3]. C [S3][S4]. D [S2; S5]. Not labels: [s1] [S] [X1] S7."
    assert find_labels(text) == ["S2", "S1", "S3", "S4", "S5"]


def test_strip_removes_unknown_labels_and_the_space_before_them():
    clean, removed = strip_invalid_labels("Costs rose [S9]. Sales fell [S1].", {"S1"})
    assert clean == "Costs rose. Sales fell [S1]."
    assert removed == ["S9"]


def test_strip_keeps_valid_members_of_a_group():
    clean, removed = strip_invalid_labels("Both [S1, S9, S2] agree.", {"S1", "S2"})
    assert clean == "Both [S1, S2] agree."
    assert removed == ["S9"]


def test_strip_handles_adjacent_groups():
    assert strip_invalid_labels("X [S9][S1].", {"S1"}) == ("X [S1].", ["S9"])
    assert strip_invalid_labels("X [S1][S9].", {"S1"}) == ("X [S1].", ["S9"])
    assert strip_invalid_labels("X [S8] [S9].", {"S1"}) == ("X.", ["S8", "S9"])


def test_strip_leaves_valid_text_untouched():
    text = "Plain [S1] text with [brackets] and [S1,S2] as written."
    assert strip_invalid_labels(text, {"S1", "S2"}) == (text, [])


def test_citations_for_returns_record_level_citations_with_the_fragment():
    first = evidence("Headcount is frozen in Operations.", start=40, end=74, title="FY26 budget")
    second = evidence("The pilot is funded.")
    cites = citations_for("Frozen [S2][S1]. Funded [S1]. Ghost [S7].", {"S1": first, "S2": second})
    assert [c.label for c in cites] == ["S2", "S1"]
    assert cites[1].record_url == first.record_url
    assert cites[1].title == "FY26 budget"
    assert (cites[1].fragment, cites[1].start, cites[1].end) == ("Headcount is frozen in Operations.", 40, 74)
    assert cites[1].chunk_id == first.chunk_id and cites[1].document_id == first.document_id


def test_all_citations_for_the_sources_event_are_json_ready():
    first, second = evidence("One."), evidence("Two.")
    payload = [c.as_dict() for c in all_citations({"S1": first, "S2": second})]
    assert [p["label"] for p in payload] == ["S1", "S2"]
    assert payload[0] == {
        "label": "S1",
        "record_url": first.record_url,
        "title": first.title,
        "document_id": first.document_id,
        "chunk_id": first.chunk_id,
        "source_kind": "confluence",
        "source_name": "Handbook",
        "fragment": "One.",
        "start": first.start,
        "end": first.end,
    }
