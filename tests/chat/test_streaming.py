from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chat.citations import GROUP_RE, strip_invalid_labels
from chat.streaming import LabelHoldBack, ends_with_partial_label, sse_comment, sse_event

VALID = frozenset({"S1", "S2", "S12"})


def run(deltas: list[str], valid=VALID) -> list[str]:
    buffer = LabelHoldBack(valid)
    pieces = [buffer.feed(d) for d in deltas]
    pieces.append(buffer.flush())
    return pieces


def test_partial_label_is_held_until_complete():
    buffer = LabelHoldBack(VALID)
    assert buffer.feed("Costs rose") == "Costs rose"
    assert buffer.feed(" [") == ""
    assert buffer.feed("S") == ""
    assert buffer.feed("1") == ""
    assert buffer.feed("2") == ""
    assert buffer.feed("]") == ""  # complete, but a following [S2] would join its cluster
    assert buffer.feed(". Next") == " [S12]. Next"
    assert buffer.flush() == ""


def test_bracket_that_is_not_a_label_is_released_once_disproved():
    buffer = LabelHoldBack(VALID)
    assert buffer.feed("see [") == "see"
    assert buffer.feed("note]") == " [note]"


def test_invalid_label_is_dropped_at_emission():
    pieces = run(["Sales fell [S", "9]", ". Costs rose [S2", "]."])
    assert "".join(pieces) == "Sales fell. Costs rose [S2]."
    assert all("S9" not in piece for piece in pieces)


def test_removed_labels_are_recorded():
    buffer = LabelHoldBack(VALID)
    buffer.feed("A [S7] b [S1] c [S8, S2].")
    buffer.flush()
    assert buffer.removed == ["S7", "S8"]


def test_no_piece_ends_with_a_partial_label_when_fed_char_by_char():
    text = "Revenue [S1] grew [S12, S2] while [S9] costs [S1][S2] fell [S"
    pieces = run(list(text))
    assert not any(ends_with_partial_label(piece) for piece in pieces[:-1])
    assert "".join(pieces) == "Revenue [S1] grew [S12, S2] while costs [S1][S2] fell [S"


def test_unfinished_label_at_end_of_stream_is_flushed_verbatim():
    assert "".join(run(["Trailing [S1"])) == "Trailing [S1"


# Text built mostly from label-ish pieces so the interesting boundaries come up often.
label_text = st.lists(
    st.sampled_from(["[", "]", "S", "1", "2", "9", "12", ",", ";", " ", "\t", "\n", "x", "Costs. ", "[S1]", "[S9]",
                     "[S1, S2]", "[S2][S9]", "[S", "ü", "[[", "]]"]),
    max_size=40,
).map("".join)  # fmt: skip


@st.composite
def split_text(draw):
    text = draw(st.one_of(label_text, st.text(max_size=60)))
    cuts = sorted(draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@settings(max_examples=600, deadline=None)
@given(split_text(), st.sampled_from([VALID, frozenset(), frozenset({"S9"})]))
def test_streamed_output_equals_stripping_the_whole_text(case, valid):
    text, deltas = case
    buffer = LabelHoldBack(valid)
    pieces = [buffer.feed(delta) for delta in deltas]
    pieces.append(buffer.flush())
    output = "".join(pieces)
    assert output == strip_invalid_labels(text, valid)[0]
    # No piece ends part-way into a label: every label of the output arrives whole in one piece.
    cuts = set(itertools.accumulate(len(piece) for piece in pieces))
    for label in GROUP_RE.finditer(output):
        assert not any(label.start() < cut < label.end() for cut in cuts), (label.group(0), pieces)
    # And a piece that ends like an open label ("... [S1") is always followed by text that disproves it.
    for cut in sorted(cuts - {len(output)}):
        if ends_with_partial_label(output[:cut]):
            rest = output[cut:]
            assert not GROUP_RE.match(output, output.rfind("[", 0, cut)), (output, pieces)
            assert rest, pieces


def test_sse_event_frames_json_data():
    frame = sse_event("token", {"text": "a\nb\r\nc", "n": 1})
    assert frame.endswith(b"\n\n")
    lines = frame.decode().split("\n")
    assert lines[0] == "event: token"
    data = "\n".join(line[len("data: ") :] for line in lines if line.startswith("data: "))
    assert json.loads(data) == {"text": "a\nb\r\nc", "n": 1}
    # Every line of the frame is a field; a raw newline in the payload would have split a field.
    assert all(line == "" or line.split(":", 1)[0] in {"event", "data"} for line in lines)


def test_sse_event_keeps_unicode_line_separators_inside_one_data_line():
    frame = sse_event("token", {"text": "x\u2028y\u0085z"}).decode()
    assert frame.count("\ndata: ") == 1
    assert json.loads(frame.split("data: ", 1)[1].strip()) == {"text": "x\u2028y\u0085z"}


def test_sse_event_with_id_and_rejects_line_breaks_in_names():
    assert sse_event("sources", {}, event_id="7") == b"event: sources\nid: 7\ndata: {}\n\n"
    with pytest.raises(ValueError):
        sse_event("token\ndata: {}", {})


def test_sse_comment():
    assert sse_comment() == b": keep-alive\n\n"
