"""A list under a heading. "## Success criteria for the extension" over "- 125 picks per robot-hour across both
shifts." and two more items: the heading says what each item is about, and the items together answer a question
about it ("What are the success criteria for the Northgate extension?"). Records state steps, criteria, options,
members and known issues this way far more often than in a sentence that names them."""

from __future__ import annotations

import re

from chat.answerability.conflicts import heading_at
from knowledge.sentences import LIST_ITEM_MARK, sentence_spans

# "What are the success criteria ...?", "Which steps ...?", "How do I report an incident?": a question asking for
# several things, or for a procedure. "What is the maximum charging current?" asks for one: its item answers alone.
_ASKS_SEVERAL = re.compile(r"^\W*(?:(?:what|which|who)\s+(?:\w+\s+)?(?:are|were)\b"
                           r"|how\s+(?:do|does|can|should|must|to)\b|(?:list|name)\s)", re.IGNORECASE)
_ITEM_MARK = re.compile(rf"[ \t]*{LIST_ITEM_MARK}[ \t]+")


def asks_for_several(question: str) -> bool:
    """Whether `question` asks for several things or a procedure, which a list answers whole."""
    return bool(_ASKS_SEVERAL.search(question))


def list_item_at(text: str, start: int) -> bool:
    """Whether the sentence at text[start:] opens an item of a list ("- ", "* ", "3. ", "2) ")."""
    return bool(_ITEM_MARK.fullmatch(text, text.rfind("\n", 0, start) + 1, start))


def _opens_line(text: str, start: int) -> bool:
    return not text[text.rfind("\n", 0, start) + 1:start].strip() or list_item_at(text, start)


def list_block(text: str, start: int) -> list[tuple[int, int]]:
    """The sentences of the list the item at `start` is in, in order (itself included): its items and the
    sentences that continue them, up to a heading or a line that is no item. Empty when `start` is no item."""
    spans = sentence_spans(text)
    here = next((i for i, (s, _) in enumerate(spans) if s == start), None)
    if here is None or not list_item_at(text, start):
        return []

    def inside(i: int) -> bool:  # an item (however short: "- Tom Becker"), or a sentence going on in one
        s, e = spans[i]
        return list_item_at(text, s) or not (heading_at(text, s, e) or _opens_line(text, s))

    first = here
    while first > 0 and inside(first - 1):
        first -= 1
    last = here
    while last + 1 < len(spans) and inside(last + 1):
        last += 1
    return spans[first:last + 1]


def heading_over(text: str, start: int, outline: str = "") -> str:
    """The heading the sentence at `start` sits under: the last one above it in `text`, else the last of the
    record's headings above the chunk (`outline`, as `Evidence.outline` gives it)."""
    above = [text[s:e] for s, e in sentence_spans(text)
             if s < start and heading_at(text, s, e) and not list_item_at(text, s)]
    if above:
        return above[-1]
    return outline.rsplit(" › ", 1)[-1] if outline else ""
