"""The reader's windows and encoding (chat.reader.windows, chat.reader.encoding): plain functions, shared by
training and run time, so what the model reads at run time is cut exactly as what it was trained on."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import Tokenizer

from chat.reader.encoding import MAX_SEQUENCE, best_span, encode_pairs, question_cut, span_tokens
from chat.reader.model import TOKENIZER_PATH
from chat.reader.windows import (
    QUESTION_MAX_TOKENS,
    WINDOW_MAX_TOKENS,
    covering_windows,
    reading_units,
    windows_at_every_unit,
)
from knowledge.sentences import sentence_spans


@pytest.fixture(scope="module")
def tokenizer():
    t = Tokenizer.from_file(str(TOKENIZER_PATH))
    t.no_truncation()
    t.no_padding()
    return t


def _count(tokenizer):
    return lambda texts: [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]


TEXT = ("The K2 runs about 9 hours of typical picking. It charges in 2 hours at a dock. "
        "Log every charge in the charging log. The dock draws at most 20 A. "
        "A full shift needs one mid-shift charge. Spare packs are kept in the cage.")


def test_covering_windows_cover_every_sentence_and_respect_the_budget(tokenizer):
    count = _count(tokenizer)
    units = reading_units(TEXT, sentence_spans(TEXT), count, budget=30)
    windows = covering_windows(units, count([TEXT[s:e] for s, e in units]), budget=30)
    covered = {u for w in windows for u in w.units}
    assert covered == set(units)
    for window in windows:
        assert sum(count([TEXT[s:e] for s, e in window.units])) <= 30
        assert window.start == window.units[0][0] and window.end == window.units[-1][1]
    # Consecutive windows overlap by one sentence, so a sentence leaning on the one before is read with it.
    for before, after in zip(windows, windows[1:], strict=False):
        assert after.units[0] == before.units[-1] or len(before.units) == 1


def test_a_sentence_over_budget_is_split_at_spaces(tokenizer):
    count = _count(tokenizer)
    long = " ".join(f"word{i}" for i in range(300)) + "."
    units = reading_units(long, sentence_spans(long), count, budget=WINDOW_MAX_TOKENS)
    assert len(units) > 1
    assert " ".join(long[s:e] for s, e in units) == long
    assert all(n <= WINDOW_MAX_TOKENS + 5 for n in count([long[s:e] for s, e in units]))


def test_every_start_gives_one_window_per_unit(tokenizer):
    count = _count(tokenizer)
    units = reading_units(TEXT, sentence_spans(TEXT), count)
    assert [w.units[0] for w in windows_at_every_unit(units, count([TEXT[s:e] for s, e in units]))] == units


def test_encoding_maps_window_tokens_back_to_characters(tokenizer):
    window = "Construction began in 1931 and the bridge was finished in 1937."
    pairs = encode_pairs(tokenizer, "When was the bridge finished?", [window, "Short."])
    assert pairs.input_ids.shape == pairs.offsets.shape[:2]
    assert pairs.input_ids.shape[1] <= MAX_SEQUENCE
    start = window.index("1937")
    tokens = span_tokens(pairs.offsets[0], start, start + 4)
    assert tokens is not None
    first, last = tokens
    assert window[pairs.offsets[0, first, 0]:pairs.offsets[0, last, 1]] == "1937"
    # Question tokens and special tokens map to no window characters.
    assert (pairs.offsets[0, : int((pairs.token_type_ids[0] == 0).sum())] == -1).all()
    # The shorter pair is padded, its padding masked.
    assert pairs.attention_mask[1].sum() < pairs.attention_mask[0].sum()


def test_a_long_question_is_cut_to_its_budget(tokenizer):
    question = "what " * 100 + "is it?"
    cut = question_cut(tokenizer, question)
    assert len(tokenizer.encode(cut, add_special_tokens=False).ids) == QUESTION_MAX_TOKENS


def test_best_span_stays_in_the_window_and_in_order():
    offsets = np.array([[-1, -1], [-1, -1], [0, 4], [5, 9], [10, 14], [-1, -1]])
    start = np.array([9.0, 0.0, 1.0, 5.0, 0.0, 9.0])
    end = np.array([9.0, 0.0, 0.0, 1.0, 4.0, 9.0])
    assert best_span(start, end, offsets) == (5, 14, 9.0)


@given(st.lists(st.floats(-5, 5), min_size=6, max_size=6), st.lists(st.floats(-5, 5), min_size=6, max_size=6))
def test_best_span_never_ends_before_it_starts(starts, ends):
    offsets = np.array([[-1, -1], [0, 2], [3, 5], [6, 8], [9, 11], [-1, -1]])
    s, e, _ = best_span(np.array(starts), np.array(ends), offsets)
    assert 0 <= s < e <= 11
