"""The grounding audit: deterministic rules deciding which proposed facts the source text supports.

Nothing a model (or the patterns extractor) proposes is trusted. `GroundedProjection.from_extraction` keeps a
fact only when its quote can be found in the chunk, the statement is no more certain than the source
sentence, both endpoints are the extraction's own entities, and the predicate is a real, non-generic
relation of the ontology. Every rejection carries exactly one reason: the first in `REJECTION_REASONS` that
applies, so per-reason counts are comparable across chunks and extractor versions.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from knowledge.sentences import sentence_spans

from .ontology import GENERIC_RELATION, RelationSpec, predicate_key
from .proposals import Extraction, ProposedEntity, ProposedFact

# The order is the contract: a fact is rejected with the first reason that applies. `unknown_predicate` is
# ours, appended after the six of the specification: a predicate outside the ontology is neither vacuous nor
# generic, it is vocabulary we do not have, and counting it apart tells us when the ontology needs to grow.
REJECTION_REASONS = (
    "missing_quote",
    "unsupported_quote",
    "stripped_qualifier",
    "unresolved_endpoint",
    "self_relation",
    "generic_relation",
    "unknown_predicate",
)

# --- quote alignment -------------------------------------------------------------------------------------


def fold_with_offsets(text: str) -> tuple[str, list[int]]:
    """Fold `text` for tolerant matching and record, for every folded character, the index in `text` it came
    from.

    Folding drops Markdown backticks, turns every whitespace run into one space and casefolds. Casefolding may
    emit several characters for one ('ß' → 'ss'), so each emitted character gets its own entry; `offsets` is
    always exactly as long as the folded string.
    """
    folded: list[str] = []
    offsets: list[int] = []
    for index, char in enumerate(text):
        if char == "`":
            continue
        if char.isspace():
            if folded and folded[-1] == " ":
                continue
            folded.append(" ")
            offsets.append(index)
            continue
        for piece in char.casefold():
            folded.append(piece)
            offsets.append(index)
    return "".join(folded), offsets


def fold(text: str) -> str:
    """The folded form used for comparison, without the surrounding space a whitespace run may leave."""
    return fold_with_offsets(text)[0].strip(" ")


def quote_interval(text: str, quote: str) -> tuple[int, int] | None:
    """Where `quote` sits in `text`, as `(start, end)` with `text[start:end]` the real source characters.

    An exact match wins (the common, free case). Otherwise both sides are folded alike and the folded quote
    is searched for; a hit is only accepted where it starts and ends on whole source characters, so a quote
    "s" never claims half of a 'ß'. Returns None for a quote that folds to nothing or when nothing aligns.
    """
    needle = fold(quote) if quote else ""
    if not needle:
        return None  # blank, or only backticks and whitespace: nothing to stand on
    exact = text.find(quote)
    if exact >= 0:
        return exact, exact + len(quote)
    haystack, offsets = fold_with_offsets(text)
    position = haystack.find(needle)
    while position >= 0:
        last = position + len(needle) - 1
        starts_whole = position == 0 or offsets[position - 1] != offsets[position]
        ends_whole = last + 1 == len(offsets) or offsets[last + 1] != offsets[last]
        if starts_whole and ends_whole:
            return offsets[position], offsets[last] + 1
        position = haystack.find(needle, position + 1)
    return None


# --- names ---------------------------------------------------------------------------------------------------

_APOSTROPHES = re.compile(r"['’`]")
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an) (?=\S)")


def entity_key(name: str) -> str:
    """The normalised form two names must share to denote the same entity.

    NFKC, casefold, apostrophes removed ("O'Brien" = "OBrien"), every other run of punctuation or whitespace
    made one space, and one leading article dropped ("The Support Team" = "support team"). Only a *leading*
    article goes: inside a name it can be meaningful ("Plan A").
    """
    key = unicodedata.normalize("NFKC", name).casefold()
    key = _APOSTROPHES.sub("", key)
    key = _NON_WORD.sub(" ", key).strip()
    return _LEADING_ARTICLE.sub("", key)


# A surname after a first name: a capitalised word on the same line, possessive dropped.
_SURNAME = r"[ \t]+([A-Z][\w-]*?)(?:['’]s)?(?![\w'’-])"


def full_name_in(text: str, name: str) -> str | None:
    """The one longer name `text` gives a one-word person `name`: "Priya" → "Priya Nair" when the record says
    "Priya Nair" somewhere and no other "Priya …". A record introduces a person by full name and then uses the
    first name; without this, "Priya reports to Ada Okafor" would be a fact about a second person, "Priya".

    None when `name` is more than one word, when the record has no such longer name, or has two ("Tom Becker"
    and "Tom Ortiz"): the first name alone then does not say who. Same line only: a heading's last word and the
    next line's first are not a name.
    """
    if len(name.split()) != 1 or not name[:1].isupper():
        return None
    surnames = {match.group(1) for match in re.finditer(rf"(?<![\w'’-]){re.escape(name)}{_SURNAME}", text)}
    return f"{name} {surnames.pop()}" if len(surnames) == 1 else None


# --- qualifiers ----------------------------------------------------------------------------------------------

# The hedge rule set. Each family is a group of markers that weaken a claim in the same way; a statement keeps
# the source's certainty if, for every family present in the source sentence, some marker of that family (or
# the family's name as a qualifier tag) appears in the statement or its qualifiers. Families, not single
# words, so "might" in the statement preserves a "may" in the source. Matching is on whole words, casefolded.
HEDGE_FAMILIES: dict[str, tuple[str, ...]] = {
    "possibility": (r"may", r"might", r"could", r"maybe", r"perhaps", r"possibly", r"possible", r"potentially"),
    "likelihood": (r"likely", r"unlikely", r"probably", r"probable"),
    "hearsay": (r"reportedly", r"allegedly", r"alleged", r"rumou?r(?:ed|s)?", r"supposedly", r"apparently"),
    "intention": (r"plans? to", r"planned", r"planning", r"expected to", r"expects? to", r"intends? to",
                  r"proposed", r"proposes?", r"proposal", r"considering", r"considers?", r"under consideration",
                  r"tentative(?:ly)?", r"draft"),
    "negation": (r"not", r"never", r"no longer", r"cannot", r"\w+n['’]t"),
}
_HEDGE_PATTERNS = {
    family: re.compile(r"\b(?:" + "|".join((family, *markers)) + r")\b", re.IGNORECASE)
    for family, markers in HEDGE_FAMILIES.items()
}
# The family's own name counts only as a qualifier tag, not as a hedge found in prose ("a possibility").
_SOURCE_PATTERNS = {
    family: re.compile(r"\b(?:" + "|".join(markers) + r")\b", re.IGNORECASE)
    for family, markers in HEDGE_FAMILIES.items()
}
# The month is not a hedge: "launched on 3 May 2025" must not read as "may have launched". Case-sensitive on
# purpose: the month is capitalised, the modal only at the start of a sentence, where a date rarely follows.
_MONTH_MAY = re.compile(
    r"\bMay\b(?=[\s,]+\d)|(?<=\d )May\b"
    r"|\b(?i:in|on|of|since|until|by|from|early|late|mid|during|before|after|through|last|next|this)[\s-]May\b"
)


def _without_month(text: str) -> str:
    return _MONTH_MAY.sub(" month", text)


def hedges_in(text: str) -> set[str]:
    """The hedge families a piece of source prose carries."""
    text = _without_month(text)
    return {family for family, pattern in _SOURCE_PATTERNS.items() if pattern.search(text)}


def stripped_hedges(*, source: str, statement: str, qualifiers: Iterable[str]) -> set[str]:
    """Hedge families the source carries that the statement and its qualifiers dropped (empty when faithful)."""
    claimed = _without_month(" ".join((statement, *qualifiers)))
    return {family for family in hedges_in(source) if not _HEDGE_PATTERNS[family].search(claimed)}


def enclosing_sentence(text: str, start: int, end: int) -> str:
    """The sentence(s) of `text` (knowledge.sentences) that the span `[start, end)` touches.

    The whole sentence is audited, not only the quote, because a model can quote "Priya will lead Support" out of
    "It is rumoured that Priya will lead Support."
    """
    touched = [(s, e) for s, e in sentence_spans(text) if s < end and e > start]
    if not touched:  # the span holds only the space between sentences
        return text[start:end]
    return text[touched[0][0]:touched[-1][1]]


# --- the audit -----------------------------------------------------------------------------------------------

_VALUE_HINT = re.compile(r"\d")


def _is_literal_value(value: str) -> bool:
    """A literal object (a status, an amount, a date) rather than a name, so it needs no entity.

    Deterministic rule: anything with a digit ("$2M", "Q3", "2025-03-01") or without any capital letter, handle
    or code span ("on hold", "in progress") is a value. Everything else reads as a proper name and must resolve.
    """
    if _VALUE_HINT.search(value):
        return True
    return not any(c.isupper() for c in value) and "@" not in value and "`" not in value


@dataclass(frozen=True)
class RejectedFact:
    fact: ProposedFact
    reason: str


@dataclass(frozen=True)
class ProjectionQuality:
    """What the audit did to one chunk's proposals, in a form that can be stored as JSON and queried."""

    proposed: int
    accepted: int
    rejected: dict[str, int] = field(default_factory=dict)

    @property
    def accepted_ratio(self) -> float:
        return self.accepted / self.proposed if self.proposed else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "proposed": self.proposed,
            "accepted": self.accepted,
            "accepted_ratio": round(self.accepted_ratio, 4),
            "rejected": {reason: self.rejected.get(reason, 0) for reason in REJECTION_REASONS},
        }


class _EntityIndex:
    """Resolves a name to the canonical (first-declared) name of the extraction's entity it denotes."""

    def __init__(self, entities: Iterable[ProposedEntity]) -> None:
        self.by_key: dict[str, ProposedEntity] = {}
        for entity in entities:
            for name in (entity.name, *entity.aliases):
                key = entity_key(name)
                if key:
                    self.by_key.setdefault(key, entity)

    def resolve(self, name: str) -> ProposedEntity | None:
        return self.by_key.get(entity_key(name))


@dataclass(frozen=True)
class GroundedProjection:
    accepted: tuple[ProposedFact, ...]
    rejected: tuple[RejectedFact, ...]
    entities: tuple[ProposedEntity, ...]
    quality: ProjectionQuality

    @classmethod
    def from_extraction(
        cls, extraction: Extraction, chunk_text: str, ontology: Iterable[RelationSpec]
    ) -> GroundedProjection:
        """Audit every proposed fact against `chunk_text` and the ontology (see the module docstring).

        Accepted facts are new values: endpoints carry the canonical entity name, the predicate its ontology
        name, and `quote_start`/`quote_end` the aligned span in `chunk_text`. Only entities that some accepted
        fact uses are kept, in their declared order.
        """
        relations = {spec.name: spec for spec in ontology}
        index = _EntityIndex(extraction.entities)
        accepted: list[ProposedFact] = []
        rejected: list[RejectedFact] = []
        for fact in extraction.facts:
            outcome = _audit(fact, chunk_text, relations, index)
            if isinstance(outcome, str):
                rejected.append(RejectedFact(fact=fact, reason=outcome))
            else:
                accepted.append(outcome)
        used = {entity_key(f.subject) for f in accepted} | {entity_key(f.object) for f in accepted}
        kept, seen = [], set()
        for entity in extraction.entities:
            key = entity_key(entity.name)
            if key in used and key not in seen:
                seen.add(key)
                kept.append(entity)
        quality = ProjectionQuality(
            proposed=len(extraction.facts),
            accepted=len(accepted),
            rejected=dict(Counter(r.reason for r in rejected)),
        )
        return cls(accepted=tuple(accepted), rejected=tuple(rejected), entities=tuple(kept), quality=quality)


def _audit(
    fact: ProposedFact, chunk_text: str, relations: dict[str, RelationSpec], index: _EntityIndex
) -> ProposedFact | str:
    """The rewritten fact, or the first rejection reason that applies."""
    if fact.quote is None or not fact.quote.strip():
        return "missing_quote"
    span = quote_interval(chunk_text, fact.quote)
    if span is None:
        return "unsupported_quote"
    source = enclosing_sentence(chunk_text, *span)
    if stripped_hedges(source=source, statement=fact.statement, qualifiers=fact.qualifiers):
        return "stripped_qualifier"
    subject = index.resolve(fact.subject)
    if subject is None:
        return "unresolved_endpoint"
    named_object = index.resolve(fact.object)
    if named_object is None and not _is_literal_value(fact.object):
        return "unresolved_endpoint"
    object_name = named_object.name if named_object is not None else fact.object.strip()
    if entity_key(subject.name) == entity_key(object_name):
        return "self_relation"
    predicate = predicate_key(fact.predicate)
    if predicate == GENERIC_RELATION:
        return "generic_relation"
    if predicate not in relations:
        return "unknown_predicate"
    return replace(
        fact, subject=subject.name, object=object_name, predicate=predicate, quote_start=span[0], quote_end=span[1]
    )
