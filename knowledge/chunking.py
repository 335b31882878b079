"""Heading-aware chunking with a token budget and overlap, and exact offsets.

Every chunk is a span of the stored document text: `text[start:end]` is the chunk, byte for byte.
Sections run from one heading to the next; inside a section we pack paragraphs (then sentences, then
word windows for oversized sentences) up to the budget, and start the next chunk with the last units
of the previous one, up to `overlap` tokens, so a fact that straddles a boundary survives in one chunk.

Tokens are estimated as word and punctuation runs: close to the embedder's word pieces for English and
far cheaper than running the real tokenizer during ingestion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .parsing import Heading
from .sentences import sentence_spans

_TOKEN = re.compile(r"\w+|[^\w\s]")
_PARAGRAPH = re.compile(r"\n[ \t]*\n+")


# Between the entries of a chunk's heading path: the document title, then the headings above the chunk.
PATH_SEPARATOR = " › "


def heading_outline(heading_path: str) -> str:
    """The record's own headings in a chunk's heading path: the path without the document title the chunker
    puts first (every document has one; a title edited since ingestion is still the first entry). Empty for a
    record without headings."""
    return PATH_SEPARATOR.join(heading_path.split(PATH_SEPARATOR)[1:])


def shared_heading_path(paths: list[str]) -> str:
    """The headings every one of `paths` sits under ("T › Specs › Mechanical" and "T › Specs › Power" share
    "T › Specs"): a passage joined across sections has only their common outline above all of its lines."""
    common: list[str] = []
    for level in zip(*(path.split(PATH_SEPARATOR) for path in paths), strict=False):
        if any(part != level[0] for part in level):
            break
        common.append(level[0])
    return PATH_SEPARATOR.join(common)


@dataclass(frozen=True)
class ChunkSpan:
    start: int
    end: int
    heading_path: str
    token_count: int


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def _spans(text: str, start: int, end: int, splitter: re.Pattern) -> list[tuple[int, int]]:
    out, pos = [], start
    for m in splitter.finditer(text, start, end):
        if m.start() > pos:
            out.append((pos, m.start()))
        pos = m.end()
    if pos < end:
        out.append((pos, end))
    return out


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _units(text: str, start: int, end: int, budget: int) -> list[tuple[int, int, int]]:
    """(start, end, tokens) units no larger than the budget: paragraphs, else sentences, else windows."""
    units = []
    for p_start, p_end in _spans(text, start, end, _PARAGRAPH):
        p_start, p_end = _trim(text, p_start, p_end)
        if p_start >= p_end:
            continue
        tokens = count_tokens(text[p_start:p_end])
        if tokens <= budget:
            units.append((p_start, p_end, tokens))
            continue
        paragraph = text[p_start:p_end]
        for s_start, s_end in ((p_start + s, p_start + e)
                               for s, e in sentence_spans(paragraph, keep_list_markers=True)):
            s_tokens = count_tokens(text[s_start:s_end])
            if s_tokens <= budget:
                units.append((s_start, s_end, s_tokens))
                continue
            matches = list(_TOKEN.finditer(text, s_start, s_end))
            for i in range(0, len(matches), budget):
                window = matches[i:i + budget]
                units.append((window[0].start(), window[-1].end(), len(window)))
    return units


def _heading_paths(title: str, headings: list[Heading], length: int) -> list[tuple[int, int, str]]:
    """Sections as (start, end, heading path)."""
    sections = []
    stack: list[Heading] = []
    boundaries = [h.start for h in headings] + [length]
    first = headings[0].start if headings else length
    if first > 0:
        sections.append((0, first, title))
    for i, heading in enumerate(headings):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        path = PATH_SEPARATOR.join([title, *(h.title for h in stack)] if title else [h.title for h in stack])
        sections.append((heading.start, boundaries[i + 1], path))
    return sections


def chunk_document(text: str, headings: list[Heading], *, title: str = "", budget: int = 200,
                   overlap: int = 40) -> list[ChunkSpan]:
    if budget < 8:
        raise ValueError("chunk budget must be at least 8 tokens")
    overlap = max(0, min(overlap, budget // 2))
    chunks: list[ChunkSpan] = []
    for sec_start, sec_end, path in _heading_paths(title, sorted(headings, key=lambda h: h.start), len(text)):
        units = _units(text, sec_start, sec_end, budget)
        i = 0
        while i < len(units):
            total, j = 0, i
            while j < len(units) and total + units[j][2] <= budget:
                total += units[j][2]
                j += 1
            if j == i:  # cannot happen (units fit the budget), but never loop forever
                j, total = i + 1, units[i][2]
            chunks.append(ChunkSpan(start=units[i][0], end=units[j - 1][1], heading_path=path[:1000],
                                    token_count=total))
            if j >= len(units):
                break
            # Overlap: step back over trailing units worth ≤ overlap tokens, but always advance.
            back, carried = j, 0
            while back - 1 > i and carried + units[back - 1][2] <= overlap:
                back -= 1
                carried += units[back][2]
            i = back
    return chunks
