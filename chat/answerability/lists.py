"""A list under a heading. "## Success criteria for the extension" over "- 125 picks per robot-hour across both
shifts." and two more items: the heading says what each item is about, and the items together answer a question
about it ("What are the success criteria for the Northgate extension?"). Records state steps, criteria, options,
members and known issues this way far more often than in a sentence that names them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chat.terms import STOPWORDS, key_terms, without_final_e
from knowledge.structure import HEADING, ITEM, SENTENCE, Unit, list_item_at, units_of

if TYPE_CHECKING:
    from chat.evidence import Evidence

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


def outline_heading(outline: str) -> str:
    """The last of the record's headings above a chunk (`Evidence.outline`): the one its first lines sit under."""
    return outline.rsplit(" › ", 1)[-1] if outline else ""


# --- the section a question asks for ----------------------------------------------------------------------------
# Records answer "how do I …" with numbered steps or a code block, and "what are the goals / which teams …" with a
# list or a table under a heading. The sentence a judge reads as the answer is often only near it: the intro above
# the steps ("Use manual charging only when a robot cannot reach a dock."), a bullet of the section before ("New
# hires get a laptop automatically"). So the composer answers such a question with the section's body, in order,
# when the record's structure says which section it is (`answer_section`).

# "How do I request a new laptop?", "What are the steps to …": a procedure, which numbered steps answer.
# The question may open with its situation: "A K2 can't reach its dock - how do I charge it by hand?"
_ASKS_STEPS = re.compile(r"(?:^|[-–—:;,]\s)\W*(?:how\s+(?:do|does|can|should|must|to|would)\b|(?:what|which)\s+"
                         r"(?:are|were)\s+the\s+steps\b|(?:what|which)\s+steps\b)", re.IGNORECASE)
# "What products does Kestrel make?", "Which teams report to the COO?": a plural noun right after the wh-word (an
# adjective may come between) asks for several things.
_AFTER_WH = re.compile(r"^\W*(?:what|which)\s+([a-z-]+)(?:\s+([a-z-]+))?", re.IGNORECASE)
_NOT_PLURAL = re.compile(r"(?:ss|us|is|ics)$")
# A table's rule line ("|---|:---:|"): the stored structure reads it as a bare title, it ends no section.
_TABLE_RULE_CHARS = re.compile(r"[\s|:-]+")
_ORDERED_MARK = re.compile(r"[ \t]*\d+[.)][ \t]+")
# At most this many sentences of a section's prose answer for it ("## Booking time off" and its three sentences).
SECTION_MAX_SENTENCES = 4
# Evidence read for the section asked for: the best-ranked chunks (widened, each holds its record's neighbours).
SECTION_SEARCH_DEPTH = 4


def _table_rule(line: str) -> bool:
    return "---" in line and "|" in line and bool(_TABLE_RULE_CHARS.fullmatch(line))


def asks_for_steps(question: str) -> bool:
    """Whether `question` asks how to do something (numbered steps or a command block answer it)."""
    return bool(_ASKS_STEPS.search(question))


def _asks_plural(question: str) -> bool:
    found = _AFTER_WH.search(question)
    if not found:
        return False
    first, second = (w.lower() if w else "" for w in found.groups())

    def plural(word: str) -> bool:
        return len(word) > 3 and word.endswith("s") and word not in STOPWORDS and not _NOT_PLURAL.search(word)

    return plural(first) or (first not in STOPWORDS and plural(second))


@dataclass(frozen=True)
class Section:
    """A heading and the units up to the next one, in a chunk's text. `heading` "" for text above any heading in
    the chunk (it sits under the outline's last heading: `outline_heading`)."""

    heading: str
    body: tuple[int, ...]  # indexes into the chunk's units


def sections_of(text: str, units: Sequence[Unit]) -> list[Section]:
    """The chunk's sections in order. A table's rule line is part of its table, not a heading."""
    out: list[Section] = []
    heading, body = "", []
    for i, unit in enumerate(units):
        if unit.kind == HEADING and not _table_rule(text[unit.start:unit.end]):
            if body:  # (a heading right under another, or a numbered heading's "2.", heads nothing of its own)
                out.append(Section(heading, tuple(body)))
            heading, body = text[unit.start:unit.end], []
        else:
            body.append(i)
    if body:
        out.append(Section(heading, tuple(body)))
    return out


def _ordered(text: str, start: int) -> bool:
    return bool(_ORDERED_MARK.fullmatch(text, text.rfind("\n", 0, start) + 1, start))


def section_body(text: str, units: Sequence[Unit], section: Section, *, steps: bool, prose: bool
                 ) -> list[tuple[int, int]]:
    """What answers for `section`, as spans in order: for steps, its numbered list or else its command block; for
    several things, its list or its table's rows (the header row and rule left out). `prose`: failing those, up to
    SECTION_MAX_SENTENCES of its sentences. Empty when the section holds none of them."""
    body = [units[i] for i in section.body]
    items = [u for u in body if u.kind == ITEM]
    ordered = [u for u in items if _ordered(text, u.start)]
    code = [u for u in body if text.startswith("```", u.start)]
    if steps:
        if ordered:
            return list_block(text, ordered[0].start, units)
        if code:
            return [(code[0].start, code[0].end)]
        if not prose:
            return []
    if items:
        return list_block(text, items[0].start, units)
    rows = _table_rows(text, body)
    if rows:
        return rows
    if prose:
        return [(u.start, u.end) for u in body if u.kind == SENTENCE][:SECTION_MAX_SENTENCES]
    return []


def _table_rows(text: str, body: Sequence[Unit]) -> list[tuple[int, int]]:
    """A table's data rows: the "|" lines after its rule line."""
    rows: list[tuple[int, int]] = []
    ruled = False
    for unit in body:
        line = text[unit.start:unit.end]
        if _table_rule(line):
            ruled = True
        elif ruled and line.startswith("|"):
            rows.append((unit.start, unit.end))
        elif rows:
            break
    return rows


@dataclass(frozen=True)
class Block:
    """The spans (in reading order) of one chunk that answer a question together."""

    chunk_id: int
    spans: tuple[tuple[int, int], ...]


def _terms(text: str) -> set[str]:
    # ("charging" names what "charge" asks about; a heading's "2." numbers it, it names nothing)
    return {without_final_e(t) for t in key_terms(text) if not t.replace(".", "").isdigit()}


def _heading(item: Evidence, section: Section) -> str:
    return section.heading or outline_heading(item.outline)


def answer_section(question: str, evidence: Sequence[Evidence], *, lead_chunk_id: int | None,
                   lead_start: int | None, factoid: bool) -> Block | None:
    """The section of the evidence that answers `question` whole, in order, or None (the answer sentence answers
    alone). In this order:

    1. a section the question names: every word of its heading is asked ("What's the escalation path for a
       customer problem?" — "## Escalation path"), among the best-ranked evidence, in a record that holds the rest
       of the question as well as the answer sentence's record does. Its list, steps or table rows answer; its
       prose too when the question asks for several things or a procedure. A question asking for one typed value
       (`factoid`) is answered by its sentence, not by the section around it;
    2. for a question asking for several things or a procedure: the section the answer sentence is in, when it
       holds steps (a procedure) or a list or table under a heading naming something asked;
    3. for a procedure: the steps (numbered, or a command block) of the answer sentence's record whose heading
       names most of what was asked — or its only steps, when its title names something asked."""
    steps = asks_for_steps(question)
    several = steps or asks_for_several(question) or _asks_plural(question)
    asked = _terms(question)
    lead = next((item for item in evidence if item.chunk_id == lead_chunk_id), None)
    if not asked or (factoid and not several):
        return None
    pool = list(evidence[:SECTION_SEARCH_DEPTH])
    if lead is not None and lead not in pool:
        pool.append(lead)
    named = _named_section(pool, asked, lead, steps=steps, prose=several)
    if named is not None or not several or lead is None or lead_start is None:
        return named
    return _lead_section(lead, lead_start, asked, steps=steps)


def _named_section(pool: Sequence[Evidence], asked: set[str], lead: Evidence | None, *, steps: bool, prose: bool
                   ) -> Block | None:
    best: tuple | None = None
    records: dict[int, set[str]] = {}  # chunk id → the words of its title and text, read once, where needed

    def record(item: Evidence) -> set[str]:
        if item.chunk_id not in records:
            records[item.chunk_id] = _terms(f"{item.title} {item.text}")
        return records[item.chunk_id]

    for rank, item in enumerate(pool):
        units = item.units
        for section in sections_of(item.text, units):
            heading = _heading(item, section)
            if heading.strip().lower() == item.title.strip().lower():
                continue  # the record's title names the record, not a part of it
            named = _terms(heading)
            if not named or not named <= asked:
                continue
            rest = asked - named
            held = len(rest & record(item)) / len(rest) if rest else 1.0
            if lead is not None and item.document_id != lead.document_id and rest:
                # another record's section of that name: only where it is as much about the rest of the question
                if held < len(rest & record(lead)) / len(rest):
                    continue
            spans = section_body(item.text, units, section, steps=steps, prose=prose)
            if spans and (best is None or (len(named), held, -rank) > best[0]):
                best = ((len(named), held, -rank), Block(item.chunk_id, tuple(spans)))
    return best[1] if best else None


def _lead_section(lead: Evidence, lead_start: int, asked: set[str], *, steps: bool) -> Block | None:
    text, units = lead.text, lead.units
    sections = sections_of(text, units)
    here = next((s for s in sections if any(units[i].start <= lead_start < units[i].end for i in s.body)), None)
    if here is not None:
        shares = bool(_terms(_heading(lead, here)) & asked)
        if steps:
            spans = section_body(text, units, here, steps=True, prose=False)
            if spans:
                return Block(lead.chunk_id, tuple(spans))
        elif shares:
            # the list the answer sentence is an item of, else the section's list or table
            spans = list_block(text, lead_start, units) or section_body(text, units, here, steps=False, prose=False)
            if spans:
                return Block(lead.chunk_id, tuple(spans))
    if not steps:
        return None
    procedures = [(len(_terms(_heading(lead, s)) & asked), spans) for s in sections
                  if (spans := section_body(text, units, s, steps=True, prose=False))]
    if not procedures:
        return None
    overlap, spans = max(procedures, key=lambda p: p[0])  # the first of the best
    if overlap or (len(procedures) == 1 and _terms(lead.title) & asked):
        return Block(lead.chunk_id, tuple(spans))
    return None


def block_markers(text: str, spans: Sequence[tuple[int, int]]) -> dict[int, str]:
    """How each item of a block is shown in an answer: "1.", "2." … for numbered steps (renumbered from 1: a block
    is quoted whole), "-" for a bullet; a sentence going on in an item, a table row, a command block or prose gets
    none (start → marker, items only)."""
    markers: dict[int, str] = {}
    step = 0
    for start, _end in spans:
        if _ordered(text, start):
            step += 1
            markers[start] = f"{step}."
        elif list_item_at(text, start):
            markers[start] = "-"
    return markers
