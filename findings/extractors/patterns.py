"""The offline extractor: ontology phrasings between two names in a sentence. No model, fully deterministic.

It is the default when no model is configured, and a baseline for measuring one. It favours precision: a
sentence carrying any hedge or negation (see `findings.audit.HEDGE_FAMILIES`) yields nothing, because
a pattern cannot tell "Priya is not the owner of Billing" from "Priya is the owner of Billing" in a triple.
It reads only what the writer asserts: quoted examples, headings, blockquotes and code are masked first
(`findings.extractors.unasserted`), and a name followed by common nouns is read as the whole noun phrase
("maintains the Northgate pilot board" is about a board, not about Northgate). Facts stated by layout rather
than in sentences (field lines such as "Assignee: Priya Nair", tables with field columns, member lists) are read
by `findings.extractors.fields`.

Its precision and recall on the labelled sample corpus are measured by `benchmarks.findings.extraction`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from knowledge.sentences import sentence_spans
from knowledge.stopwords import STOPWORDS

from ..audit import entity_key, hedges_in
from ..dates import find_date_in
from ..ontology import GENERIC_RELATION, RelationSpec
from ..proposals import Extraction, ProposedEntity, ProposedFact
from .fields import field_facts_add
from .unasserted import BLOCKED, masked, unasserted_spans

# Capitalised words that start sentences or name dates, never entities on their own.
_NOT_NAMES = frozenset("""
a an and as at after before but by during for from here however i if in it its last meanwhile next
of on our since so that the their then there these they this those today tomorrow we when while yesterday
monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
september october november december jan feb mar apr jun jul aug sep sept oct nov dec he she also
""".split())
_CONNECTORS = frozenset({"of", "for", "and", "&", "de", "van", "von", "the"})
_COORDINATORS = frozenset({"and", "&"})
_COORDINATED = re.compile(r"\s*(?:,\s*)?(?:(?:and|&)\s+)?(?:(?:the|a|an)\s+)?", re.IGNORECASE)
# Object kinds whose names are rarely joined by "and" ("uses Figma and Linear" is two tools), unlike teams and
# organisations ("Data and Analytics", "Procter & Gamble"), which stay one name.
_LISTED_KINDS = frozenset({"product", "system", "vendor", "project"})
_NAMED_GROUP_KINDS = frozenset({"team", "organisation", "committee"})

_HANDLE = re.compile(r"(?<![\w@])@[A-Za-z0-9][\w.-]*[A-Za-z0-9_]|(?<![\w@])@[A-Za-z0-9]")
_CODE = re.compile(r"`([^`\n]{1,80})`")
_WORD = re.compile(r"[A-Za-z0-9][\w'’&-]*(?:\.[A-Za-z0-9]+)*|&")
# Between subject and phrasing only adverbs and auxiliaries ("Priya Nair officially took over as"); a conjunction
# or a verb means the name belongs to another clause ("uses `pgbouncer` and relies on Stripe").
_SUBJECT_GAP = re.compile(r"^(?:\s+(?:[a-z]+ly|also|now|still|just|then|has|have|had|was|is|were|are))*\s+$")
# An opening quote mark may precede a quoted short name ('uses "Stripe"'); longer quotes are masked before this.
_OBJECT_GAP = re.compile(r"^\s*(?:(?:the|a|an|our|their|its|his|her)\s+)?[\"“‘']?$", re.IGNORECASE)
# Possessive spaces and a lookahead tried at a run's first space only: linear in a long run of whitespace.
_LITERAL = re.compile(
    r"\s*+(?:(?:the|a|an)\s++)?(?P<value>.+?)"
    r"(?=(?<!\s)\s+(?:from|since|until|as of|on|in|at|by|after|before|effective|for|when|while)\b|[,;:!?()]"
    r"|\.(?:\s|$)|$)",
    re.IGNORECASE,
)
_MAX_LITERAL_WORDS = 6
# Words that never end a noun phrase's head: function words, time adverbs ("uses Grafana today") and
# prepositions, where a name's phrase stops ("Head of Support at Kestrel", "Grafana for dashboards").
_FILLER = STOPWORDS | frozenset("""
already today tomorrow yesterday now soon currently again here there plus too instead anyway still ago
since after before during across around behind beyond near toward towards among unless though although
""".split())
# A lower-case word that continues a name as a compound noun: "the Northgate pilot board", "the Perch team".
# Past forms and -ly adverbs are verbs or modifiers of the verb, not part of the name.
_NEXT_WORD = re.compile(r"[ \t]+([a-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*)(?![\w'’-])")  # "app", "iOS"
_ANY_WORD = re.compile(r"[ \t]+([A-Za-z][\w'’-]*)")
_MAX_TAIL_WORDS = 3
_DETERMINERS = frozenset("the a an this that these those its his her their our my your every each".split())
_MAX_SUBJECT_TAIL_WORDS = 2
_BE = frozenset("is are was were be been being".split())
_BE_BEFORE = re.compile(r"\b(?:" + "|".join(sorted(_BE)) + r")(?:\s+[a-z]+ly)?\s+$", re.IGNORECASE)
# A common-noun name of a group: "the firmware team", "the safety committee". The head noun says it is a group;
# one or two modifiers say which (a bare "the team" names no one in particular).
_GROUP_NOUNS = ("team", "committee", "board", "group", "department", "squad", "council", "guild")
_GROUP = re.compile(r"(?<![\w])[Tt]he\s+(?P<name>(?:[a-z][a-z0-9-]*\s+){1,2}(?:"
                    + "|".join(_GROUP_NOUNS) + r"))\b")
_VAGUE_MODIFIERS = frozenset("new old whole entire same other next last first current former wider".split())
# What the kinds of a span can be, for the type check against a relation's subject and object kinds.
_SPAN_KINDS = {
    "handle": {"person"},
    "product": {"product", "system", "vendor", "project", "document", "process", "initiative"},
    "group": {"team", "committee", "organisation"},
}
# A value-first phrasing ("{n} robots are in") puts the value before the trigger words and the subject after
# them. `{n}` is a number plus up to four capitalised model names before the counted noun ("12 K2 robots"); the
# value runs from the number through the noun that follows `{n}`. (Unbounded, a run of numbers was read from each.)
_TEMPLATE_SLOT = "{n}"
_TEMPLATE_NUMBER = r"(?P<value>(?<![\w.])(?<!\d,)\d[\d,]*(?:\s+[A-Z0-9][\w-]*){0,4}?\s+"


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    name: str
    kind: str


def sentences(text: str) -> list[tuple[int, int]]:
    """`(start, end)` of each sentence in `text` (knowledge.sentences), every line its own: a Markdown bullet or a
    heading without a full stop is a statement of its own."""
    return sentence_spans(text, line_breaks=True)


def _names(sentence: str) -> list[_Span]:
    """Entity candidates: @handles, `code spans` and runs of capitalised words (joined by "of", "and", ...)."""
    spans: list[_Span] = []
    taken: list[tuple[int, int]] = []
    for match in _GROUP.finditer(sentence):
        modifiers = match.group("name").split()[:-1]
        if not any(m in _FILLER or m in _VAGUE_MODIFIERS for m in modifiers):
            spans.append(_Span(match.start("name"), match.end("name"), match.group("name"), "group"))
            taken.append(match.span("name"))
    for match in _HANDLE.finditer(sentence):
        spans.append(_Span(match.start(), match.end(), match.group(0), "handle"))
        taken.append(match.span())
    for match in _CODE.finditer(sentence):
        spans.append(_Span(match.start(), match.end(), match.group(1).strip(), "product"))
        taken.append(match.span())
    run: list[re.Match[str]] = []

    def close() -> None:
        while run and (run[-1].group(0).casefold() in _CONNECTORS):
            run.pop()
        while run and run[0].group(0).casefold() in _NOT_NAMES:
            run.pop(0)
        # A lone capitalised function word opens a sentence ("Yours is approved already"); it names nothing.
        if len(run) == 1 and run[0].group(0).casefold() in _FILLER and not run[0].group(0).isupper():
            run.pop()
        if run:
            start, end = run[0].start(), run[-1].end()
            spans.append(_Span(start, end, sentence[start:end], "name"))
        run.clear()

    for word in _WORD.finditer(sentence):
        if any(a <= word.start() < b for a, b in taken):
            close()
            continue
        token = word.group(0)
        gap = sentence[run[-1].end():word.start()] if run else " "
        contiguous = gap.strip() == ""
        if token[0].isupper() and not token.isdigit() and token.casefold() not in _NOT_NAMES:
            if not contiguous:
                close()
            run.append(word)
        elif run and contiguous and token.casefold() == "the" and run[-1].group(0).casefold() in _COORDINATORS:
            close()  # "the Checkout Service and the Refunds API": an article after "and" opens another name
        elif run and contiguous and token.casefold() in _CONNECTORS:
            run.append(word)
        elif run and contiguous and token.casefold() in _NOT_NAMES and token[0].isupper():
            close()
        else:
            close()
    close()
    return sorted(spans, key=lambda s: s.start)


def template_regex(phrase: str) -> re.Pattern[str]:
    """`"there are {n} robots in"` as a case-insensitive pattern whose `value` group is "20 robots"."""
    before, after = phrase.split(_TEMPLATE_SLOT, 1)
    noun, _, rest = after.strip().partition(" ")
    pattern = (r"(?<!\w)" + re.escape(before) + _TEMPLATE_NUMBER + re.escape(noun) + ")"
               + (r"\s+" + re.escape(rest) if rest else "") + r"(?!\w)")
    return re.compile(pattern, re.IGNORECASE)


def _template_hits(sentence: str, ontology: list[RelationSpec]) -> list[tuple[int, int, RelationSpec, str]]:
    """Value-first phrasings: (start, end, relation, value) for each match."""
    hits = []
    for spec in ontology:
        for phrase in spec.phrasings:
            if _TEMPLATE_SLOT in phrase and spec.takes_literal_object:
                for match in template_regex(phrase).finditer(sentence):
                    hits.append((match.start(), match.end(), spec, match.group("value")))
    return hits


def _phrase_hits(sentence: str, ontology: list[RelationSpec]) -> list[tuple[int, int, RelationSpec]]:
    """Non-overlapping phrasing occurrences; at one position the longest phrasing wins. Value-first
    templates are matched by `_template_hits`, not here."""
    lowered = sentence.casefold()
    hits = []
    for spec in ontology:
        if spec.name == GENERIC_RELATION:
            continue
        for phrase in spec.phrasings:
            if _TEMPLATE_SLOT in phrase:
                continue
            for match in re.finditer(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", lowered):
                hits.append((match.start(), match.end(), spec))
    hits.sort(key=lambda h: (h[0], -(h[1] - h[0]), h[2].name))
    chosen: list[tuple[int, int, RelationSpec]] = []
    for hit in hits:
        if not chosen or hit[0] >= chosen[-1][1]:
            chosen.append(hit)
    return chosen


def _tail_end(sentence: str, end: int, limit: int = _MAX_TAIL_WORDS) -> int:
    """Where the noun phrase of a name ending at `end` ends: past up to `limit` compound-noun words."""
    for _ in range(limit):
        match = _NEXT_WORD.match(sentence, end)
        if match is None or not _is_tail_word(match.group(1)) or _verb_like(match.group(1), sentence, match.end()):
            break
        end = match.end()
    return end


def _is_tail_word(word: str) -> bool:
    return word not in _FILLER and not word.endswith(("ly", "ed"))


def _verb_like(word: str, sentence: str, end: int) -> bool:
    """An -s word is a plural noun where the phrase ends ("the Perch release notes." / "notes for ...") but a verb
    when an adverb or an object follows it ("Crashlytics builds nightly", "Billing reports the numbers")."""
    if not word.endswith("s") or word.endswith("ss"):
        return False
    following = _ANY_WORD.match(sentence, end)
    if following is None:
        return False
    word = following.group(1)
    return word[0].isupper() or word in _DETERMINERS or word.endswith("ly") or word not in _FILLER


def _with_tail(span: _Span, sentence: str, end: int) -> _Span:
    return span if end == span.end else _Span(span.start, end, sentence[span.start:end], span.kind)


def _compatible(span: _Span, kinds: tuple[str, ...]) -> bool:
    """A span whose form tells its kind (a @handle is a person, a code span a product) fits the relation's kinds."""
    known = _SPAN_KINDS.get(span.kind)
    return not kinds or known is None or bool(known & set(kinds))


def _passive(sentence: str, phrase_start: int, phrase: str) -> bool:
    """"The budget was approved by the board": a bare verb phrasing after a form of "be" makes its subject the
    thing acted on, not the actor. Phrasings that carry their own auxiliary ("is managed by") are exempt."""
    return phrase.split()[0] not in _BE and bool(_BE_BEFORE.search(sentence, 0, phrase_start))


def _subject(names: list[_Span], phrase_start: int, sentence: str) -> _Span | None:
    before = [n for n in names if n.end <= phrase_start]
    if not before:
        return None
    name = before[-1]
    # A subject's compound noun never ends in a verb of the clause ("Grace Kim's team reimburses approved ...").
    end = _tail_end(sentence, name.end, _MAX_SUBJECT_TAIL_WORDS)
    while end > name.end and sentence[:end].endswith("s") and not sentence[:end].endswith("ss"):
        end = sentence.rfind(" ", name.end, end)
    if end <= phrase_start and _SUBJECT_GAP.match(sentence[end:phrase_start]):
        return _with_tail(name, sentence, end)
    if _SUBJECT_GAP.match(sentence[name.end:phrase_start]):
        return name
    return None


def _object(names: list[_Span], phrase_end: int, sentence: str, spec: RelationSpec) -> _Span | str | None:
    for name in names:
        if name.start >= phrase_end:
            if not _OBJECT_GAP.match(sentence[phrase_end:name.start]):
                break
            if set(spec.object_kinds) <= {"value"} and len(name.name.split()) > 1:
                return None  # a multi-word name is an entity ("is now Head of Sales"), not a status or an amount
            return _with_tail(name, sentence, _tail_end(sentence, name.end))
    if not spec.takes_literal_object:
        return None
    literal = _LITERAL.match(sentence, phrase_end)
    if literal is None:
        return None
    value = literal.group("value").strip()
    if not _literal_ok(value):
        return None
    return value


def _conjuncts(obj: _Span, names: list[_Span], sentence: str, spec: RelationSpec) -> list[_Span]:
    """The objects of a set relation stated as a list: "uses Stripe, Adyen and the Ledger Service" is three facts,
    "uses Figma and Linear" two. State and event relations keep the first object only (one value per slot)."""
    if spec.policy != "set":
        return [obj]
    kinds = set(spec.object_kinds)
    parts = [obj]
    if kinds & _LISTED_KINDS and not kinds & _NAMED_GROUP_KINDS and obj.kind == "name":
        parts = _split_coordinated(obj)
    end = obj.end
    for name in names:
        if name.start < end:
            continue
        gap = _COORDINATED.fullmatch(sentence, end, name.start)
        if gap is None or not gap.group(0).strip():
            break
        parts.append(_with_tail(name, sentence, _tail_end(sentence, name.end)))
        end = parts[-1].end
    return parts


def _clauses_split(names: list[_Span], hits: list[tuple[int, int, RelationSpec]], sentence: str) -> list[_Span]:
    """A name joined by "and" that is the object of one phrasing and the subject of the next straddles two
    clauses: "Priya owns Billing and Tom Becker owns Search" is Billing, then Tom Becker."""
    out = []
    for name in names:
        ends_clause = any(end <= name.start and _OBJECT_GAP.match(sentence[end:name.start]) for _s, end, _ in hits)
        opens_clause = any(start >= name.end and _SUBJECT_GAP.match(sentence[name.end:start]) for start, _e, _ in hits)
        out.extend(_split_coordinated(name) if ends_clause and opens_clause else [name])
    return out


def _split_coordinated(span: _Span) -> list[_Span]:
    pieces, start = [], 0
    for match in re.finditer(r"(?<!\s)\s+(?:and|&)\s+", span.name):  # (?<!\s): a run is read once
        pieces.append((start, match.start()))
        start = match.end()
    pieces.append((start, len(span.name)))
    return [_Span(span.start + a, span.start + b, span.name[a:b], span.kind) for a, b in pieces if b > a]


def _literal_ok(value: str) -> bool:
    """A literal object says something: a number, a name or a content word ("on hold", "$2.5M"), not a lone
    adverb ("approved already") and nothing masked as unasserted."""
    words = value.split()
    if not words or len(words) > _MAX_LITERAL_WORDS or BLOCKED in value:
        return False
    return any(any(c.isdigit() or c.isupper() for c in w) or w.casefold().strip(".,'’\"") not in _FILLER
               for w in words)


def _statement(sentence: str) -> str:
    return " ".join(sentence.replace("`", "").split())


# The head noun of a named group ("the Perch team", "Finance Committee"): the name says what it is, where the
# relation's first kind would type it as a person. Not "board": "the Northgate pilot board" is a dashboard.
_GROUP_HEADS = {"team": "team", "squad": "team", "guild": "team", "department": "team", "group": "team",
                "committee": "committee", "council": "committee"}


def _kind(kinds: tuple[str, ...], span: _Span) -> str:
    named = [k for k in kinds if k != "value"]
    if span.kind == "group":
        return "committee" if span.name.endswith("committee") else "team"
    if span.kind == "name":
        group = _GROUP_HEADS.get(span.name.rsplit(None, 1)[-1].casefold()) if " " in span.name else None
        if group is not None and (not named or group in named):
            return group
    return named[0] if span.kind == "name" and named else span.kind


def _fits(spec: RelationSpec, subject: _Span, obj: _Span | str) -> bool:
    """Type checks: each side's form fits the relation's kinds, and nothing relates to itself."""
    if not _compatible(subject, spec.subject_kinds):
        return False
    if isinstance(obj, _Span):
        return _compatible(obj, spec.object_kinds) and entity_key(obj.name) != entity_key(subject.name)
    return True


# The id of this rule set: the phrasings' matching here, the field readers (fields.py) and the masking of what the
# writer does not assert (unasserted.py). Give it a new date when a change alters what they extract, so evidence
# found under the old rules stays told apart from the new (ClaimEvidence.extractor).
PATTERNS_VERSION = "extract-patterns:2026-12"


class PatternsExtractor:
    """See the module docstring. Stateless; one instance may serve every chunk."""

    name = "patterns"
    version = PATTERNS_VERSION

    def extract(self, *, chunk_text: str, ontology: list[RelationSpec], context: dict[str, Any]) -> Extraction:
        entities: dict[str, ProposedEntity] = {}
        facts: list[ProposedFact] = []
        # Names and phrasings are read from the masked view (same offsets); quotes and statements stay the
        # original sentence, which the audit finds verbatim in the chunk.
        view = masked(chunk_text, unasserted_spans(chunk_text, title=str(context.get("title") or "")))
        for start, end in sentences(chunk_text):
            sentence, seen = chunk_text[start:end], view[start:end]
            if not seen.strip(BLOCKED + " \t") or hedges_in(sentence):
                continue
            dated = find_date_in(seen)
            for subject, spec, obj in self._triples(seen, ontology):
                self._remember(entities, subject, spec.subject_kinds)
                if isinstance(obj, _Span):
                    self._remember(entities, obj, spec.object_kinds)
                facts.append(ProposedFact(
                    subject=subject.name,
                    predicate=spec.name,
                    object=obj.name if isinstance(obj, _Span) else obj,
                    statement=_statement(sentence),
                    quote=sentence,
                    valid_from=dated.isoformat() if dated else None,
                ))
        field_facts_add(chunk_text, ontology, context, entities, facts)
        return Extraction(entities=tuple(entities.values()), facts=tuple(facts))

    @staticmethod
    def _triples(sentence: str, ontology: list[RelationSpec]):
        """(subject, relation, object) for each phrasing in one (masked) sentence that passes the type checks."""
        hits = [h for h in _phrase_hits(sentence, ontology)
                if not _passive(sentence, h[0], sentence[h[0]:h[1]].casefold())]
        names = _clauses_split(_names(sentence), hits, sentence)
        for _start, phrase_end, spec, value in _template_hits(sentence, ontology):
            subject = next((n for n in names if n.start >= phrase_end), None)
            if subject is None or not _OBJECT_GAP.match(sentence[phrase_end:subject.start]):
                continue
            if _fits(spec, subject, value):
                yield subject, spec, value
        for phrase_start, phrase_end, spec in hits:
            subject = _subject(names, phrase_start, sentence)
            obj = _object(names, phrase_end, sentence, spec)
            if subject is None or obj is None:
                continue
            for each in _conjuncts(obj, names, sentence, spec) if isinstance(obj, _Span) else [obj]:
                if _fits(spec, subject, each):
                    yield subject, spec, each

    @staticmethod
    def _remember(entities: dict[str, ProposedEntity], span: _Span, kinds: tuple[str, ...]) -> None:
        key = entity_key(span.name)
        if key and key not in entities:
            entities[key] = ProposedEntity(name=span.name, kind=_kind(kinds, span))
