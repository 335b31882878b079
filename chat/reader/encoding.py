"""The reader's input and output, shared by training and run time: (question, window) pairs as word-piece ids,
and the best answer span read back from start/end scores as character offsets into the window."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .windows import QUESTION_MAX_TOKENS, WINDOW_MAX_TOKENS

MAX_ANSWER_TOKENS = 30
# [CLS] question [SEP] window [SEP]; a window over budget (a run without spaces) is truncated to fit.
MAX_SEQUENCE = QUESTION_MAX_TOKENS + WINDOW_MAX_TOKENS + 3


@dataclass
class EncodedPairs:
    input_ids: np.ndarray  # (n, L) int64, padded with 0
    attention_mask: np.ndarray
    token_type_ids: np.ndarray
    # Per pair and token: the (start, end) characters of the window the token covers; (-1, -1) outside it.
    offsets: np.ndarray  # (n, L, 2) int64

    def inputs(self) -> dict[str, np.ndarray]:
        return {"input_ids": self.input_ids, "attention_mask": self.attention_mask,
                "token_type_ids": self.token_type_ids}


def question_cut(tokenizer, question: str) -> str:
    """The question, cut after `QUESTION_MAX_TOKENS` word pieces (a pasted paragraph is read by its start)."""
    encoding = tokenizer.encode(question, add_special_tokens=False)
    if len(encoding.ids) <= QUESTION_MAX_TOKENS:
        return question
    return question[:encoding.offsets[QUESTION_MAX_TOKENS - 1][1]]


def encode_pairs(tokenizer, question: str | Sequence[str], windows: Sequence[str]) -> EncodedPairs:
    """Encode (question, window) pairs; `question` is one question for every window or one per window.
    `tokenizer` is a `tokenizers.Tokenizer` without padding or truncation configured."""
    questions = [question] * len(windows) if isinstance(question, str) else list(question)
    cut = {q: question_cut(tokenizer, q) for q in set(questions)}
    encodings = tokenizer.encode_batch([(cut[q], w) for q, w in zip(questions, windows, strict=True)])
    length = min(MAX_SEQUENCE, max((len(e.ids) for e in encodings), default=1))
    n = len(encodings)
    ids = np.zeros((n, length), dtype=np.int64)
    mask = np.zeros((n, length), dtype=np.int64)
    types = np.zeros((n, length), dtype=np.int64)
    offsets = np.full((n, length, 2), -1, dtype=np.int64)
    for row, encoding in enumerate(encodings):
        seq_ids = encoding.sequence_ids
        size = len(encoding.ids)
        if size > length:  # keep the final [SEP]
            keep = list(range(length - 1)) + [size - 1]
        else:
            keep = list(range(size))
        for col, index in enumerate(keep):
            ids[row, col] = encoding.ids[index]
            mask[row, col] = 1
            types[row, col] = encoding.type_ids[index]
            if seq_ids[index] == 1:
                offsets[row, col] = encoding.offsets[index]
    return EncodedPairs(ids, mask, types, offsets)


def best_span(start_logits: np.ndarray, end_logits: np.ndarray, offsets: np.ndarray,
              max_tokens: int = MAX_ANSWER_TOKENS) -> tuple[int, int, float]:
    """The (start, end) characters of the highest-scoring span in one window, and its score (start + end
    logit). Spans run over window tokens only, end not before start, at most `max_tokens` long."""
    valid = offsets[:, 0] >= 0
    if not valid.any():
        return -1, -1, float("-inf")
    starts = np.where(valid, start_logits, -np.inf)
    ends = np.where(valid, end_logits, -np.inf)
    length = len(starts)
    scores = starts[:, None] + ends[None, :]
    band = np.triu(np.ones((length, length), dtype=bool)) & ~np.triu(np.ones((length, length), dtype=bool),
                                                                    k=max_tokens)
    scores = np.where(band, scores, -np.inf)
    flat = int(np.argmax(scores))
    s, e = divmod(flat, length)
    return int(offsets[s, 0]), int(offsets[e, 1]), float(scores[s, e])


def span_tokens(offsets: np.ndarray, char_start: int, char_end: int) -> tuple[int, int] | None:
    """The first and last window tokens covering characters [char_start, char_end) (training targets)."""
    inside = np.where(offsets[:, 0] >= 0)[0]
    start = end = None
    for index in inside:
        s, e = offsets[index]
        if start is None and e > char_start:
            start = int(index)
        if s < char_end:
            end = int(index)
    if start is None or end is None or end < start:
        return None
    return start, end
