"""Facts a record states by its layout rather than in sentences: field lines, tables with field columns, and
member lists. Part of the offline patterns extractor (findings.extractors.patterns), as deterministic as it.

Three forms, each read only where the writer asserts it (quoted examples, blockquotes, code and example lists are
masked as for sentences; see findings.extractors.unasserted):

- Field lines: ``Assignee: Priya Nair``, ``**Owner:** Tom Becker``, several on one line joined by "·" or "|"
  (``Ticket OPS-12 · Status: Closed · Priority: High``), and the subjectless ``Maintained by Grace Kim.``. The
  record the line belongs to is the subject: an issue key (``OPS-12``) from the title or the external id, else
  the page's title without a trailing parenthesis ("(draft)") and without a trailing "Status" (the "Atlas
  Status" page is about Atlas).
- Tables: a header row naming fields (``| Area | Lead | Reports to |``). A field column relates each row's label
  (its first plain column) or, for a person's own fields (reports to), the person in the row's person column
  ("Lead", "Name", "Owner" ...). A title in the person cell ("Marcus Lee (Head of Support since 2025-09-01)")
  is not read as the person's role: an org chart's snapshot of a title would become the role claim of record,
  and the announcement that says whom the person succeeded would only confirm it (chat's current facts then
  lose "previously Priya Nair": current_fact_first fell from 0.97 to 0.94 with it).
- Member lists: list items under a "Members" heading or line, on a page about a group (its title ends with
  "Committee", "Team", "Council" ...): each person is a member of that group, and a parenthesis holding a known
  office ("(chair)") is their role there — a literal value, not an entity.

Only a small set of well-known field names is read (`FIELDS`); every other ("Reporter", "Component", "Pilot
lead", a chat line's "Ana Ruiz:") states nothing here. Values must be well formed: a person-like name (two to
four capitalised words, no function word, no digit) for people, a status of at most three words, never free
text ("Assignee: unassigned", "Owner: Head of Support (...)" propose nothing). "Reporter" and "Component" are
left out on purpose: no relation of the ontology says who reported something or which component it concerns.
A line or row that carries a hedge or negation ("Status: draft, not committed") yields nothing, as for sentences.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from knowledge.sentences import sentence_spans
from knowledge.stopwords import STOPWORDS

from ..audit import enclosing_sentence, entity_key, hedges_in
from ..dates import find_date_in
from ..ontology import RelationSpec
from ..proposals import ProposedEntity, ProposedFact
from .unasserted import BLOCKED, masked, unasserted_spans

# field name (case-folded) → (relation, role of the field's value): an "agent" value is the relation's subject
# and the record its object ("Assignee: X" — X works on the record); an "attribute" value is the object and the
# record the subject ("Status: closed", "Reports to: X").
FIELDS: dict[str, tuple[str, str]] = {
    "assignee": ("works_on", "agent"), "assigned to": ("works_on", "agent"),
    "owner": ("owns", "agent"), "owned by": ("owns", "agent"), "maintained by": ("owns", "agent"),
    "maintainer": ("owns", "agent"),
    "status": ("status", "attribute"),
    "reports to": ("reports_to", "attribute"), "line manager": ("reports_to", "attribute"),
}
# Fields whose value is a person (or a team), not a literal.
_PERSON_VALUED = frozenset({"works_on", "owns", "reports_to"})
# Column headers that say a column holds people.
PERSON_HEADERS = frozenset("name person lead owner manager member employee who contact assignee people".split())
MEMBER_HEADINGS = frozenset({"members", "membership", "current members", "committee members", "team members"})
GROUP_NOUNS = ("team", "committee", "board", "group", "department", "squad", "council", "guild")
# Offices a member list puts in parentheses: "Raj Iyer (chair)".
OFFICES = frozenset({"chair", "co-chair", "vice chair", "vice-chair", "secretary", "treasurer"})

_ISSUE_KEY = re.compile(r"[A-Z][A-Z0-9]{1,9}-\d{1,7}")
_TITLE_KEY = re.compile(r"^\[?(" + _ISSUE_KEY.pattern + r")\]?(?![\w-])")
# Searched patterns start a whitespace run at its first character only (`(?<!\s)`: same matches, but a long run is
# not rescanned from each of its spaces), and of two quantifiers that could share a run the first takes it whole
# (`*+`): linear on any record (tests/test_regex_linear.py).
_TRAILING_PAREN = re.compile(r"(?<!\s)\s*\([^()]*\)\s*$")
_EMPHASIS = re.compile(r"\*\*|__|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)")
_SEPARATOR = re.compile(r"(?<!\s)\s+[·•|]\s+")
# "Owner: X", "**Owner:** X", "**Owner**: X", "- Owner: X" (markers and emphasis are stripped before this).
_FIELD = re.compile(r"(?P<key>[A-Za-z][A-Za-z ]{0,28}[A-Za-z])\s*:\s+(?P<value>\S.*)$")
_BY_FIELD = re.compile(r"(?P<key>(?:owned|maintained) by)\s+(?P<value>\S.*)$", re.IGNORECASE)
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+•]|\d+[.)])[ \t]+")
_ATX = re.compile(r"[ \t]{0,3}(#{1,6})[ \t]+(?P<text>(?:.*[^ \t#\n])?)[ \t#]*$")
_TABLE_ROW = re.compile(r"[ \t]*\|.*\|[ \t]*$")
_TABLE_RULE = re.compile(r"[ \t]*+\|?[ \t]*:?-{3,}:?[ \t]*+(?:\|[ \t]*:?-{3,}:?[ \t]*+)*\|?[ \t]*$")
_PARTICLES = frozenset("van von de da del der di du le la bin al".split())
# Where a name in a cell or list item ends: a parenthesis, a dash, a comma, "since".
_NAME_END = re.compile(r"(?<!\s)\s*(?:\(|\s[-–—]\s|,|;|\ssince\s|$)")
_STATUS = re.compile(r"[A-Za-z][A-Za-z-]*(?: [A-Za-z][A-Za-z-]*){0,2}$")
# A name's last word that makes it a group's ("People Operations", "Payments Team"), not a person's.
_TEAM_WORDS = frozenset((*"operations support engineering finance sales marketing legal security ops it hr people"
                           .split(), "team", "committee", "board", "group", "department", "squad", "council",
                         "guild"))
# Words a row label (a named thing) may hold in lower case: "Data and Analytics", "Head of Sales".
_LABEL_SMALL = frozenset("of and & the for".split())


@dataclass(frozen=True)
class FieldFact:
    subject: str
    subject_kind: str
    predicate: str
    object: str
    object_kind: str | None  # None for a literal
    statement: str
    quote: str
    valid_from: str | None = None


@dataclass(frozen=True)
class _Record:
    name: str
    kind: str | None  # "ticket" for an issue key; otherwise the relation's kind decides


def record_of(context: dict[str, Any]) -> _Record | None:
    """The entity a record's own fields describe: its issue key, else its title (see the module docstring)."""
    title = " ".join(str(context.get("title") or "").split())
    external_id = str(context.get("external_id") or "")
    key = _TITLE_KEY.match(title)
    if key:
        return _Record(key.group(1), "ticket")
    if _ISSUE_KEY.fullmatch(external_id):
        return _Record(external_id, "ticket")
    name = _TRAILING_PAREN.sub("", title).strip()
    if name.casefold().endswith(" status"):
        name = name[: -len(" status")].strip()
    if not name or len(name.split()) > 8 or name[-1] in ".?!" or not entity_key(name):
        return None
    return _Record(name, None)


def _plain(text: str) -> str:
    return " ".join(_EMPHASIS.sub("", text).split())


def _name_word(word: str) -> bool:
    """A capitalised word of letters (apostrophes and hyphens inside: "O'Brien", "Smith-Jones", "McDonald",
    "Álvarez"), not an acronym ("CEO", "IT")."""
    letters = word.replace("-", "").replace("'", "").replace("’", "")
    return word[:1].isupper() and letters.isalpha() and not letters.isupper() and word[-1].isalpha()


def person_name(text: str) -> str | None:
    """`text` when it is a person-like name: two to four capitalised words (particles like "van" inside), no
    function word, no digit, nothing after it."""
    words = text.split()
    if not 2 <= len(words) <= 4:
        return None
    for i, word in enumerate(words):
        if word in _PARTICLES and 0 < i < len(words) - 1:
            continue
        if not _name_word(word) or word.casefold() in STOPWORDS:
            return None
    return text


def is_group_name(name: str) -> bool:
    return name.split()[-1].casefold() in _TEAM_WORDS


def _label(cell: str) -> str | None:
    """A row's label when it names something ("K2 Firmware", "OPS-12"), not a description ("Raise OPS-1 to High",
    "Force costmap refresh on map update"): at most six words, each capitalised or numbered but a few
    connectors."""
    label = _TRAILING_PAREN.sub("", cell).strip()
    words = label.split()
    if not words or len(words) > 6 or not words[0][0].isupper() or label[-1] in ".?!":
        return None
    ok = all(w[0].isupper() or any(c.isdigit() for c in w) or w.casefold() in _LABEL_SMALL for w in words)
    return label if ok else None


def _leading_name(text: str) -> tuple[str | None, str]:
    """The person-like name a cell or item starts with, and what follows it."""
    text = _plain(text)
    end = _NAME_END.search(text)
    head = text[: end.start()].strip() if end else text
    return person_name(head), text[len(head):].strip()


def _status(text: str) -> str | None:
    value = _TRAILING_PAREN.sub("", _plain(text)).strip().rstrip(".;,").strip()
    return value.casefold() if _STATUS.match(value) else None


def _kind(spec: RelationSpec, side: str, record: _Record | None = None) -> str:
    if record is not None and record.kind:
        return record.kind
    kinds = [k for k in (spec.subject_kinds if side == "subject" else spec.object_kinds) if k != "value"]
    return kinds[0] if kinds else ""


class _Reader:
    """One chunk: the masked view, the relations by name, and the facts found so far."""

    def __init__(self, text: str, ontology: list[RelationSpec], context: dict[str, Any]) -> None:
        self.text = text
        # Headings are masked for sentences because a bare Title-Cased line names a topic; here a line such as
        # "Assignee: Priya Nair" or a member list's "- Tom Becker" is exactly what is read, so only the other
        # reasons mask (and real Markdown headings are skipped by form).
        spans = [s for s in unasserted_spans(text, title=str(context.get("title") or "")) if s[2] != "heading"]
        self.view = masked(text, spans)
        self.relations = {spec.name: spec for spec in ontology}
        self.record = record_of(context)
        self.facts: list[FieldFact] = []

    def asserted(self, start: int, end: int) -> bool:
        """Nothing masked in the span, and no hedge in it or in the sentence the audit will read around it."""
        if BLOCKED in self.view[start:end]:
            return False
        return not hedges_in(self.text[start:end]) and not hedges_in(enclosing_sentence(self.text, start, end))

    def add(self, predicate: str, subject: tuple[str, str], obj: tuple[str, str | None], start: int, end: int,
            statement: str, dated: str = "") -> None:
        spec = self.relations.get(predicate)
        if spec is None or entity_key(subject[0]) == entity_key(obj[0]):
            return
        # A kind the form tells (an issue key is a ticket) must be one the relation takes, as for sentences.
        for kind, kinds in ((subject[1], spec.subject_kinds), (obj[1], spec.object_kinds)):
            if kind and kinds and kind not in kinds:
                return
        found = find_date_in(dated)
        self.facts.append(FieldFact(subject[0], subject[1], predicate, obj[0], obj[1], statement,
                                    self.text[start:end], found.isoformat() if found else None))


def _lines(text: str) -> Iterator[tuple[int, int]]:
    start = 0
    for line in text.split("\n"):
        yield start, start + len(line)
        start += len(line) + 1


def _sentences_of(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Sentences of one line ("Status: draft. Owner: Rafael Costa." is two), offsets into the chunk."""
    for s, e in sentence_spans(text[start:end], line_breaks=True):
        yield start + s, start + e


def _field_value(reader: _Reader, key: str, value: str) -> tuple[str, tuple[str, str | None]] | None:
    """The relation and the (value, kind) a field states, or None for an ill-formed value."""
    predicate, role = FIELDS[key]
    spec = reader.relations.get(predicate)
    if spec is None:
        return None
    if predicate in _PERSON_VALUED:
        name, _rest = _leading_name(value)
        if name is None:
            return None
        if is_group_name(name):
            # A team may own or work on something; only a person has a line manager.
            kinds = spec.subject_kinds if role == "agent" else spec.object_kinds
            return (predicate, (name, "team")) if "team" in kinds else None
        return predicate, (name, "person")
    status = _status(value)
    return (predicate, (status, None)) if status else None


def _field_lines(reader: _Reader) -> None:
    text = reader.text
    for line_start, line_end in _lines(text):
        line = text[line_start:line_end]
        if _ATX.match(line) or _TABLE_ROW.match(line) or reader.record is None:
            continue
        for s_start, s_end in _sentences_of(text, line_start, line_end):
            offset = s_start
            for part in _SEPARATOR.split(text[s_start:s_end]):
                p_start = text.index(part, offset)
                offset = p_start + len(part)
                _field_segment(reader, part, p_start, offset)


def _field_segment(reader: _Reader, part: str, start: int, end: int) -> None:
    item = _LIST_ITEM.match(part)
    plain = _plain(part[item.end():] if item else part)
    match = _FIELD.match(plain) or _BY_FIELD.match(plain)
    if match is None:
        return
    key = " ".join(match.group("key").split()).casefold()
    if key not in FIELDS or not reader.asserted(start, end):
        return
    found = _field_value(reader, key, match.group("value").strip().rstrip("."))
    if found is None:
        return
    predicate, value = found
    record = reader.record
    spec = reader.relations[predicate]
    statement = f"{record.name} — {plain}"
    if FIELDS[key][1] == "agent":
        reader.add(predicate, (value[0], value[1] or ""), (record.name, _kind(spec, "object", record)),
                   start, end, statement, plain)
    else:
        reader.add(predicate, (record.name, _kind(spec, "subject", record)), value, start, end, statement, plain)


def _cells(line: str) -> list[str]:
    return [_plain(c) for c in line.strip().strip("|").split("|")]


def _tables(reader: _Reader) -> None:
    lines = list(_lines(reader.text))
    i = 0
    while i + 1 < len(lines):
        header = reader.text[lines[i][0]:lines[i][1]]
        if _TABLE_ROW.match(header) and _TABLE_RULE.match(reader.text[lines[i + 1][0]:lines[i + 1][1]]):
            headers = [" ".join(h.split()).casefold() for h in _cells(header)]
            i += 2
            while i < len(lines) and _TABLE_ROW.match(reader.text[lines[i][0]:lines[i][1]]):
                _table_row(reader, headers, *lines[i])
                i += 1
        else:
            i += 1


def _table_row(reader: _Reader, headers: list[str], start: int, end: int) -> None:
    cells = _cells(reader.text[start:end])
    if len(cells) != len(headers) or not reader.asserted(start, end):
        return
    people = [i for i, h in enumerate(headers) if h in PERSON_HEADERS]
    plain = [i for i, h in enumerate(headers) if h not in FIELDS and h not in PERSON_HEADERS]
    label = _label(cells[plain[0]]) if plain else None
    row = " | ".join(cells)
    person = next((n for n in (_leading_name(cells[i])[0] for i in people if headers[i] not in FIELDS)
                   if n and not is_group_name(n)), None)
    for i, header in enumerate(headers):
        if header not in FIELDS or not cells[i]:
            continue
        found = _field_value(reader, header, cells[i])
        if found is None:
            continue
        predicate, value = found
        spec = reader.relations[predicate]
        statement = f"{row} ({headers[i]})"
        if FIELDS[header][1] == "agent" and label:
            reader.add(predicate, (value[0], value[1] or ""), (label, _kind(spec, "object")), start, end,
                       statement)
        elif predicate == "reports_to" and person:
            reader.add(predicate, (person, "person"), value, start, end, statement)
        elif predicate == "status" and label:
            reader.add(predicate, (label, _kind(spec, "subject")), value, start, end, statement)


def _member_lists(reader: _Reader) -> None:
    record = reader.record
    if record is None or record.kind or not record.name.casefold().endswith(GROUP_NOUNS):
        return
    kind = "team" if record.name.casefold().endswith(("team", "squad", "group", "department", "guild")) \
        else "committee"
    in_list = False
    for start, end in _lines(reader.text):
        line = reader.text[start:end]
        heading = _ATX.match(line)
        intro = _plain(heading.group("text") if heading else line).rstrip(":").strip().casefold()
        if intro in MEMBER_HEADINGS and (heading or line.rstrip().endswith(":")):
            in_list = True
            continue
        item = _LIST_ITEM.match(line)
        if in_list and item:
            _member(reader, line[item.end():], start + item.end(), end, (record.name, kind))
        elif line.strip() or heading:
            in_list = False


def _member(reader: _Reader, item: str, start: int, end: int, group: tuple[str, str]) -> None:
    name, rest = _leading_name(item)
    if name is None or is_group_name(name) or not reader.asserted(start, end):
        return
    statement = f"{group[0]} members: {_plain(item)}"
    reader.add("member_of", (name, "person"), group, start, end, statement, item)
    office = re.match(r"\(([^()]*)\)", rest)
    if office and office.group(1).strip().casefold() in OFFICES:
        # The office is a value of the person's role, not an entity: a node "chair" would join every chair of every
        # committee in the graph, and list itself among the tenant's people, teams and projects.
        reader.add("role", (name, "person"), (office.group(1).strip().casefold(), None), start, end, statement)


def field_facts(text: str, ontology: list[RelationSpec], context: dict[str, Any]) -> list[FieldFact]:
    """Every fact the chunk's field lines, field tables and member lists state (see the module docstring)."""
    reader = _Reader(text, ontology, context)
    _field_lines(reader)
    _tables(reader)
    _member_lists(reader)
    return reader.facts


def field_facts_add(text: str, ontology: list[RelationSpec], context: dict[str, Any],
                    entities: dict[str, ProposedEntity], facts: list[ProposedFact]) -> None:
    """Add the chunk's field facts to an extraction under way (entities by key), less those its sentences stated."""
    seen = {(entity_key(f.subject), f.predicate, entity_key(f.object)) for f in facts}
    for fact in field_facts(text, ontology, context):
        key = (entity_key(fact.subject), fact.predicate, entity_key(fact.object))
        if key in seen:
            continue
        seen.add(key)
        for name, kind in ((fact.subject, fact.subject_kind), (fact.object, fact.object_kind)):
            if kind is not None and entity_key(name) and entity_key(name) not in entities:
                entities[entity_key(name)] = ProposedEntity(name=name, kind=kind)
        facts.append(ProposedFact(subject=fact.subject, predicate=fact.predicate, object=fact.object,
                                  statement=fact.statement, quote=fact.quote, valid_from=fact.valid_from))
