"""A list under a heading. "## Success criteria for the extension" over "- 125 picks per robot-hour across both
shifts." and two more items: the heading says what each item is about, and the items together answer a question
about it ("What are the success criteria for the Northgate extension?"). Records state steps, criteria, options,
members and known issues this way far more often than in a sentence that names them."""

from __future__ import annotations

import re
from collections.abc import Sequence

from knowledge.structure import HEADING, ITEM, Unit, list_item_at, units_of

# "What are the success criteria ...?", "Which steps ...?", "How do I report an incident?": a question asking for
# several things, or for a procedure. "What is the maximum charging current?" asks for one: its item answers alone.
_ASKS_SEVERAL = re.compile(r"^\W*(?:(?:what|which|who)\s+(?:\w+\s+)?(?:are|were)\b"
                           r"|how\s+(?:do|does|can|should|must|to)\b|(?:list|name)\s)", re.IGNORECASE)


def asks_for_several(question: str) -> bool:
    """Whether `question` asks for several things or a procedure, which a list answers whole."""
    return bool(_ASKS_SEVERAL.search(question))


def _opens_line(text: str, start: int) -> bool:
    return not text[text.rfind("\n", 0, start) + 1:start].strip() or list_item_at(text, start)


def list_block(text: str, start: int, units: Sequence[Unit] | None = None) -> list[tuple[int, int]]:
    """The sentences of the list the item at `start` is in, in order (itself included): its items and the
    sentences that continue them, up to a heading or a line that is no item. Empty when `start` is no item.
    `units`: the text's structure when the caller has it (`Evidence.units`)."""
    units = units_of(text, units)
    spans = [(u.start, u.end) for u in units]
    here = next((i for i, (s, _) in enumerate(spans) if s == start), None)
    if here is None or units[here].kind != ITEM:
        return []

    def inside(i: int) -> bool:  # an item (however short: "- Tom Becker"), or a sentence going on in one
        return units[i].kind == ITEM or not (units[i].kind == HEADING or _opens_line(text, spans[i][0]))

    first = here
    while first > 0 and inside(first - 1):
        first -= 1
    last = here
    while last + 1 < len(spans) and inside(last + 1):
        last += 1
    return spans[first:last + 1]


def heading_over(text: str, start: int, outline: str = "", units: Sequence[Unit] | None = None) -> str:
    """The heading the sentence at `start` sits under: the last one above it in `text`, else the last of the
    record's headings above the chunk (`outline`, as `Evidence.outline` gives it)."""
    above = [text[u.start:u.end] for u in units_of(text, units) if u.start < start and u.kind == HEADING]
    if above:
        return above[-1]
    return outline.rsplit(" › ", 1)[-1] if outline else ""
