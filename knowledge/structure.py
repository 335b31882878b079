"""A text's sentence, heading and list structure, read once at ingest and stored with each chunk.

Each unit is a sentence span of `knowledge.sentences.sentence_spans` (list markers trimmed) with its kind: a
heading ("## Rate limits", or a short bare title line), a list item ("- Tom Becker", "2) Charge the pack"), or a
sentence. The answer path reads it from the chunk (`Chunk.structure`) instead of splitting the same text again in
every step; chunks written before it was stored are read on the fly (`units_of`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .sentences import LIST_ITEM_MARK, sentence_spans
from .stopwords import STOPWORDS

HEADING = "h"
ITEM = "i"
SENTENCE = "s"


@dataclass(frozen=True)
class Unit:
    start: int
    end: int
    kind: str  # HEADING, ITEM or SENTENCE

    @property
    def heading(self) -> bool:
        return self.kind == HEADING


_HEADING_END = re.compile(r"[.!?:;\"')\]]$")
_ITEM_MARK = re.compile(rf"[ \t]*{LIST_ITEM_MARK}[ \t]+")


def is_heading(sentence: str) -> bool:
    """A heading or bare title, not a statement: a Markdown heading, up to three words without closing
    punctuation ("Steam engine"), or a line of Title Case words ("Refund Policy for Business Customers")."""
    text = sentence.strip()
    if text.startswith("#"):
        return True
    tokens = text.split()
    if not tokens:
        return True
    if _HEADING_END.search(text):
        return False
    if len(tokens) <= 3:
        return True
    titled = [t for t in tokens if t[:1].isalpha()]
    return len(tokens) <= 12 and bool(titled) and all(t[0].isupper() or t.lower() in STOPWORDS for t in titled)


def heading_at(text: str, start: int, end: int) -> bool:
    """`is_heading` for the sentence at text[start:end], seeing its line: `sentence_spans` trims a Markdown
    heading's "#" marks, and "Perch Roadmap 2026 (draft)" without them ends like a statement."""
    line_start = text.rfind("\n", 0, start) + 1
    return text[line_start:start].lstrip().startswith("#") or is_heading(text[start:end])


def list_item_at(text: str, start: int) -> bool:
    """Whether the sentence at text[start:] opens an item of a list ("- ", "* ", "3. ", "2) ")."""
    return bool(_ITEM_MARK.fullmatch(text, text.rfind("\n", 0, start) + 1, start))


def text_structure(text: str) -> tuple[Unit, ...]:
    """The units of `text`, in order."""
    out = []
    for start, end in sentence_spans(text):
        if list_item_at(text, start):
            kind = ITEM
        elif heading_at(text, start, end):
            kind = HEADING
        else:
            kind = SENTENCE
        out.append(Unit(start, end, kind))
    return tuple(out)


def structure_dump(units: Sequence[Unit]) -> list[list]:
    """The JSON stored in `Chunk.structure`: [[start, end, kind], ...]."""
    return [[u.start, u.end, u.kind] for u in units]


def structure_load(raw: Sequence[Sequence] | str | None) -> tuple[Unit, ...]:
    """The units of a stored structure: the JSON value, or its text (Django hands jsonb to raw SQL as text)."""
    if isinstance(raw, str):
        raw = json.loads(raw)
    return tuple(Unit(int(s), int(e), str(k)) for s, e, k in raw or ())


def units_of(text: str, stored: Sequence[Unit] | None) -> tuple[Unit, ...]:
    """The stored units when there are any (and they fit the text), else the text read now."""
    if stored and stored[-1].end <= len(text):
        return tuple(stored)
    return text_structure(text)


def units_joined(pieces: Sequence[tuple[int, Sequence[Unit]]], passage_start: int) -> tuple[Unit, ...]:
    """The units of a passage joined from chunks of one record: `pieces` are (chunk start in the record, its
    units), in any order; offsets move to the passage (which starts at `passage_start` in the record), and a unit
    of a chunk overlapping the one before it is kept only past what that one covered."""
    out: list[Unit] = []
    covered = -1
    for chunk_start, units in sorted(pieces, key=lambda piece: piece[0]):
        shift = chunk_start - passage_start
        for unit in units:
            if unit.start + shift >= covered:
                out.append(Unit(unit.start + shift, unit.end + shift, unit.kind))
        if out:
            covered = max(covered, out[-1].end)
    return tuple(out)
