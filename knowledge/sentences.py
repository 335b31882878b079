"""Sentence spans with offsets: the one sentence splitter of the platform — chunking (knowledge.chunking), fact
extraction and its audit (findings), the extractive answerer and the groundedness check (chat).

Rule-based on purpose: a full stop, question or exclamation mark followed by space and a capital, digit
or opening quote ends a sentence, unless it closes a common abbreviation or an initial ("Dr.", "J."), so "v2.5"
and "3.5 million" stay whole; blank lines, list items, table rows and lines opening with a bracket always do (with
`line_breaks`, every line break).
Spans are (start, end) into the original text, trimmed of surrounding space and, unless asked to keep them,
of a leading list marker.
"""

from __future__ import annotations

import re

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc inc ltd co corp dept fig no nos approx est jan feb mar apr jun jul aug "
    "sep sept oct nov dec e.g i.e cf al".split()
)
# The mark a list item opens with: a bullet, or a number with a full stop or a bracket ("3.", "2)").
LIST_ITEM_MARK = r"(?:[-*+•]|\d+[.)])"
_END = re.compile(r"(?<![.!?])[.!?]++[\"')\]]*+(?=\s+[\"'(\[]?[A-Z0-9])")
# A blank line, and a line break before a list item, before or after a table row ("| 2025-05-05 | Planned go-live |"),
# or before a line opening with a bracket (a chat log's "[2025-07-03 09:12] Omar: ...", a reference "[2] Smith"):
# each such line is an entry of its own, whatever the line before ends with ("... revision C." reads as an initial).
_HARD_BREAK = re.compile(rf"\n[ \t]*\n|\n(?=[ \t]*(?:{LIST_ITEM_MARK}\s|\||\[))|(?<=\|)[ \t]*\n")
_LINE_BREAK = re.compile(r"\n")


# How far before a full stop its word is looked for: longer than any abbreviation. Unbounded, a run of dots or
# letters is re-read before every stop in it: quadratic (290 KB of lines took 16 s to chunk).
_WORD_WINDOW = 64


def _abbreviation_before(text: str, dot: int) -> bool:
    # Read backwards from the dot, not with a regex over `text[:dot]`: that rescans the text before every full
    # stop, quadratic in a long paragraph.
    start, floor = dot, max(0, dot - _WORD_WINDOW)
    while start > floor and text[start - 1] in _WORD_BEFORE_DOT:
        start -= 1
    if start == dot:
        return False
    token = text[start:dot].lower().strip(".")
    if len(token) == 1 and _after_number(text, start):
        return False  # a unit after a number ("charging runs at 20 A."), not an initial
    return token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha())


_WORD_BEFORE_DOT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.")


def _after_number(text: str, at: int) -> bool:
    """A digit ends `text[:at]`, or a digit and one space."""
    if at > 1 and text[at - 1].isspace():
        at -= 1
    return at > 0 and text[at - 1].isdecimal()


_NUMBERED_ITEM = re.compile(r"[ \t]*\d{1,2}[.)]")
_LIST_MARKER = re.compile(r"(?:[-*+•>]|\d+[.)]|#{1,6})[ \t]+")  # bullets, numbers, quote and heading marks


def _trimmed(text: str, start: int, end: int, markers: bool) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    marker = _LIST_MARKER.match(text, start, end) if markers else None
    if marker:
        start = marker.end()
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def _numbered_item(text: str, since: int, match: re.Match) -> bool:
    """`match` closes a number that opens its line ("1." of a numbered item). Only the text from `since` (the end
    of the previous sentence, which ends in a mark no item's number holds) is searched for the line start, so a
    long line is not read again for every full stop in it."""
    newline = text.rfind("\n", since, match.start())
    if newline < 0 and since > 0:
        return False
    return _NUMBERED_ITEM.fullmatch(text, newline + 1, match.end()) is not None


def sentence_spans(text: str, *, line_breaks: bool = False, keep_list_markers: bool = False) -> list[tuple[int, int]]:
    """`(start, end)` of each sentence of `text`, in order. `line_breaks`: every line break ends a sentence
    (extraction, where a heading or a bullet without a full stop is a statement of its own).
    `keep_list_markers`: a sentence keeps its leading "- " or "1)" (chunks must cover every character)."""
    markers = not keep_list_markers
    spans: list[tuple[int, int]] = []
    block_start = 0
    breaks = _LINE_BREAK if line_breaks else _HARD_BREAK
    # Every break is at a line break: a text without one (most sentences and chunks) is one block, unscanned.
    blocks = ([m.start() for m in breaks.finditer(text)] if "\n" in text else []) + [len(text)]
    for block_end in blocks:
        start = block_start
        for match in _END.finditer(text, block_start, block_end):
            if text[match.start()] == "." and _abbreviation_before(text, match.start()):
                continue
            if _numbered_item(text, start if start > block_start else 0, match):
                continue  # the "1." of a numbered item ends no sentence
            span = _trimmed(text, start, match.end(), markers)
            if span:
                spans.append(span)
            start = match.end()
        span = _trimmed(text, start, block_end, markers)
        if span:
            spans.append(span)
        block_start = block_end
    return spans
