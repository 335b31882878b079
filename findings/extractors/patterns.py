"""The offline extractor: ontology phrasings between two names in a sentence. No model, fully deterministic.

It is the default when no model is configured, and a baseline for measuring one. It favours precision: a
sentence carrying any hedge or negation (see `findings.audit.HEDGE_FAMILIES`) yields nothing, because
a pattern cannot tell "Priya is not the owner of Billing" from "Priya is the owner of Billing" in a triple.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from knowledge.sentences import sentence_spans

from ..audit import entity_key, hedges_in
from ..dates import find_date_in
from ..ontology import GENERIC_RELATION, RelationSpec
from ..proposals import Extraction, ProposedEntity, ProposedFact

# Capitalised words that start sentences or name dates, never entities on their own.
_NOT_NAMES = frozenset("""
a an and as at after before but by during for from here however i if in it its last meanwhile next
of on our since so that the their then there these they this those today tomorrow we when while yesterday
monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
september october november december jan feb mar apr jun jul aug sep sept oct nov dec he she also
""".split())
_CONNECTORS = frozenset({"of", "for", "and", "&", "de", "van", "von", "the"})

_HANDLE = re.compile(r"(?<![\w@])@[A-Za-z0-9][\w.-]*[A-Za-z0-9_]|(?<![\w@])@[A-Za-z0-9]")
_CODE = re.compile(r"`([^`\n]{1,80})`")
_WORD = re.compile(r"[A-Za-z0-9][\w'’&-]*(?:\.[A-Za-z0-9]+)*|&")
# Between subject and phrasing only adverbs and auxiliaries ("Priya Nair officially took over as"); a conjunction
# or a verb means the name belongs to another clause ("uses `pgbouncer` and relies on Stripe").
_SUBJECT_GAP = re.compile(r"^(?:\s+(?:[a-z]+ly|also|now|still|just|then|has|have|had|was|is|were|are))*\s+$")
_OBJECT_GAP = re.compile(r"^\s*(?:(?:the|a|an|our|their|its|his|her)\s+)?$", re.IGNORECASE)
_LITERAL = re.compile(
    r"\s*(?:(?:the|a|an)\s+)?(?P<value>.+?)"
    r"(?=\s+(?:from|since|until|as of|on|in|at|by|after|before|effective|for|when|while)\b|[,;:!?()]|\.(?:\s|$)|$)",
    re.IGNORECASE,
)
_MAX_LITERAL_WORDS = 6
# A value-first phrasing ("{n} robots are in") puts the value before the trigger words and the subject after
# them. `{n}` is a number plus any capitalised model names before the counted noun ("12 K2 robots"); the value
# runs from the number through the noun that follows `{n}`.
_TEMPLATE_SLOT = "{n}"
_TEMPLATE_NUMBER = r"(?P<value>(?<![\w.])\d[\d,]*(?:\s+[A-Z0-9][\w-]*)*?\s+"


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
        elif run and contiguous and token.casefold() in _CONNECTORS:
            run.append(word)
        elif run and contiguous and token.casefold() in _NOT_NAMES and token[0].isupper():
            close()
        else:
            close()
    close()
    return sorted(spans, key=lambda s: s.start)


def _template_regex(phrase: str) -> re.Pattern[str]:
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
                for match in _template_regex(phrase).finditer(sentence):
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


def _subject(names: list[_Span], phrase_start: int, sentence: str) -> _Span | None:
    before = [n for n in names if n.end <= phrase_start]
    if before and _SUBJECT_GAP.match(sentence[before[-1].end:phrase_start]):
        return before[-1]
    return None


def _object(names: list[_Span], phrase_end: int, sentence: str, spec: RelationSpec) -> _Span | str | None:
    for name in names:
        if name.start >= phrase_end:
            if _OBJECT_GAP.match(sentence[phrase_end:name.start]):
                return name
            break
    if not spec.takes_literal_object:
        return None
    literal = _LITERAL.match(sentence, phrase_end)
    if literal is None:
        return None
    value = literal.group("value").strip()
    if not value or len(value.split()) > _MAX_LITERAL_WORDS:
        return None
    return value


def _statement(sentence: str) -> str:
    return " ".join(sentence.replace("`", "").split())


def _kind(kinds: tuple[str, ...], fallback: str) -> str:
    named = [k for k in kinds if k != "value"]
    return named[0] if fallback == "name" and named else fallback


class PatternsExtractor:
    """See the module docstring. Stateless; one instance may serve every chunk."""

    name = "patterns"

    def extract(self, *, chunk_text: str, ontology: list[RelationSpec], context: dict[str, Any]) -> Extraction:
        entities: dict[str, ProposedEntity] = {}
        facts: list[ProposedFact] = []
        for start, end in sentences(chunk_text):
            sentence = chunk_text[start:end]
            if hedges_in(sentence):
                continue
            names = _names(sentence)
            dated = find_date_in(sentence)
            for _start, phrase_end, spec, value in _template_hits(sentence, ontology):
                subject = next((n for n in names if n.start >= phrase_end), None)
                if subject is None or not _OBJECT_GAP.match(sentence[phrase_end:subject.start]):
                    continue
                self._remember(entities, subject, spec.subject_kinds)
                facts.append(ProposedFact(
                    subject=subject.name, predicate=spec.name, object=value, statement=_statement(sentence),
                    quote=sentence, valid_from=dated.isoformat() if dated else None,
                ))
            for phrase_start, phrase_end, spec in _phrase_hits(sentence, ontology):
                subject = _subject(names, phrase_start, sentence)
                obj = _object(names, phrase_end, sentence, spec)
                if subject is None or obj is None:
                    continue
                self._remember(entities, subject, spec.subject_kinds)
                if isinstance(obj, _Span):
                    self._remember(entities, obj, spec.object_kinds)
                object_name = obj.name if isinstance(obj, _Span) else obj
                facts.append(ProposedFact(
                    subject=subject.name,
                    predicate=spec.name,
                    object=object_name,
                    statement=_statement(sentence),
                    quote=sentence,
                    valid_from=dated.isoformat() if dated else None,
                ))
        return Extraction(entities=tuple(entities.values()), facts=tuple(facts))

    @staticmethod
    def _remember(entities: dict[str, ProposedEntity], span: _Span, kinds: tuple[str, ...]) -> None:
        key = entity_key(span.name)
        if key and key not in entities:
            entities[key] = ProposedEntity(name=span.name, kind=_kind(kinds, span.kind))
