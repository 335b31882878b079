"""Sentence spans with offsets, for the extractive answerer and the groundedness check.

Rule-based on purpose: a full stop, question or exclamation mark followed by space and a capital, digit
or opening quote ends a sentence, unless it closes a common abbreviation or an initial; blank lines and
list items always do. Spans are (start, end) into the original text, trimmed of surrounding space.
"""

from __future__ import annotations

import re

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc inc ltd co corp dept fig no nos approx est jan feb mar apr jun jul aug "
    "sep sept oct nov dec e.g i.e cf al".split()
)
_END = re.compile(r"[.!?]+[\"')\]]*(?=\s+[\"'(\[]?[A-Z0-9])")
_HARD_BREAK = re.compile(r"\n[ \t]*\n|\n(?=[ \t]*(?:[-*+•]|\d+[.)])\s)")


def _abbreviation_before(text: str, dot: int) -> bool:
    word = re.search(r"([A-Za-z.]+)\Z", text[:dot])
    if word is None:
        return False
    token = word.group(1).lower().strip(".")
    return token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha())


_LIST_MARKER = re.compile(r"(?:[-*+•]|\d+[.)]|#{1,6})[ \t]+")


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    marker = _LIST_MARKER.match(text, start, end)
    if marker:
        start = marker.end()
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def sentence_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    block_start = 0
    blocks = [m.start() for m in _HARD_BREAK.finditer(text)] + [len(text)]
    for block_end in blocks:
        start = block_start
        for match in _END.finditer(text, block_start, block_end):
            if text[match.start()] == "." and _abbreviation_before(text, match.start()):
                continue
            span = _trimmed(text, start, match.end())
            if span:
                spans.append(span)
            start = match.end()
        span = _trimmed(text, start, block_end)
        if span:
            spans.append(span)
        block_start = block_end
    return spans
