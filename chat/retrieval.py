"""Retrieve: a question's sub-questions, their vectors (embedded once, in one call) and the ACL-filtered search.

Everything the answer may be built from is found here, under the caller's authority and nothing else. The
question is embedded once, in one embedder call with the other texts it may need — the reworded query of the one
repeat search, and the hidden-record probe's topic words (knowledge.retrieval.hints explains why the probe never
sees the question as asked) — and the vectors are passed on: to the answer cache's similarity lookup, the search,
its repeat and the probe.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from django.conf import settings
from django.contrib.postgres.search import SearchQuery
from django.db.models import Case, Q, TextField, When
from django.db.models.functions import Substr

from chat.evidence import Evidence
from chat.gate import is_description, question_identifiers
from chat.sql import word_lexemes
from chat.terms import OPENS_QUESTION, content_words, key_terms, stem
from groundwork.authority import Authority
from knowledge.access import readable_chunks, readable_documents
from knowledge.chunking import shared_heading_path
from knowledge.retrieval import Hit, QueryVector, hybrid_search, query_vectors
from knowledge.retrieval.hints import probe_query
from knowledge.retrieval.lexical import query_lexemes
from knowledge.retrieval.statistics import corpus_stats, idf_for
from knowledge.structure import Unit, structure_load, units_joined

# "?" and ";" end a question. " and " joins two questions only when what follows it opens a question of its own
# ("… take and how many …"); otherwise it joins two things one question asks about ("printing, and distribution
# of scientific journals"), and searching those halves apart tests fragments that match anything by chance (CISI
# queries asked of the SciFact tenant: 6 of the 11 answered were answered on such a fragment).
_SPLIT = re.compile(r"\?+|;+")
_AND = re.compile(r"(?<!\s)\s+and\s+", re.IGNORECASE)


# Longer than this, a question is one information need described at length (a paragraph, a pasted
# abstract), not "X and Y?": splitting it tests many fragments, and any one of them matching something by
# chance would answer it. Measured on CISI's descriptive queries over 30 words asked of the SciFact tenant:
# split, 17 % got an answer from that unrelated corpus; whole, 10 %.
SPLIT_MAX_WORDS = 30


def _pieces(question: str) -> list[str]:
    pieces = []
    for sentence in _SPLIT.split(question):
        halves = _AND.split(sentence)
        current = halves[0]
        for half in halves[1:]:
            if OPENS_QUESTION.match(half):
                pieces.append(current)
                current = half
            else:
                current = f"{current} and {half}"
        pieces.append(current)
    return [p.strip(" ,.") for p in pieces]


def split_question(question: str) -> list[str]:
    if len(question.split()) > SPLIT_MAX_WORDS:
        return [question.strip()]
    parts: list[str] = []
    for piece in _pieces(question):
        if not piece:
            continue
        if parts and len(key_terms(piece)) < 1:
            parts[-1] = f"{parts[-1]} {piece}"
            continue
        parts.append(piece)
    # A one-word side ("refunds and returns policy") is a noun phrase, not a question of its own.
    if len(parts) > 1 and any(len(key_terms(p)) < 2 for p in parts):
        return [question.strip()]
    return parts or [question.strip()]


@dataclass(frozen=True)
class QuestionVectors:
    """The vectors one question needs, by text: its sub-questions (searched) and their probes' topic words."""

    by_text: Mapping[str, QueryVector] = field(default_factory=dict)

    def get(self, text: str | None) -> QueryVector | None:
        return self.by_text.get(text) if text else None


def question_vectors(authority: Authority, question: str, *, whole: bool = False) -> QuestionVectors:
    """Embed, in one embedder call, every text `question` will be searched or probed with (`whole`: for the
    answer cache too — the question as asked when it is split into several searches, and even before anything
    was embedded for the search)."""
    parts = split_question(question)
    # (The repeat search's reworded text is not embedded: it searches with its part's vector, chat.decision.)
    probes = [p for p in (probe_query(authority, part) for part in parts) if p]
    texts = list(dict.fromkeys([*([question] if whole and len(parts) > 1 else []), *parts, *probes]))
    by_text = dict(zip(texts, query_vectors(texts, unindexed=whole), strict=True))
    if len(parts) == 1:
        # One search: the question as asked is that search's text, trimmed ("How long ...?" -> "How long ...").
        by_text.setdefault(question, by_text[parts[0]])
    return QuestionVectors(by_text)


def evidence_from_hit(hit: Hit) -> Evidence:
    return Evidence(
        chunk_id=hit.chunk_id, document_id=hit.document_id, title=hit.title, record_url=hit.record_url,
        source_kind=hit.source_kind, source_name=hit.source_name, text=hit.text, start=hit.start, end=hit.end,
        score=hit.score, lexical_rank=hit.lexical_rank, vector_rank=hit.vector_rank, corpus=hit.corpus,
        vector_similarity=hit.vector_similarity, heading_path=hit.heading_path, structure=hit.structure,
    )


def evidence_search(authority: Authority, query: str, k: int,
                    embedded: QueryVector | None) -> tuple[tuple[Evidence, ...], str]:
    """Evidence for `query` and the state of the semantic channel ("ok" when it took part). A failing embedder
    leaves the search to full text; with RETRIEVAL_REQUIRE_SEMANTIC it raises RetrievalUnavailable instead."""
    result = hybrid_search(authority, query, k=k, require_vector=True, embedded=embedded)
    return tuple(evidence_from_hit(h) for h in result.hits), result.vector


def evidence_widen(authority: Authority, evidence: Sequence[Evidence], *, top: int | None = None,
                   max_tokens: int | None = None) -> tuple[Evidence, ...]:
    """The `top` best-ranked chunks each joined with the chunks around it in its record (read through the same
    access path), nearest first and the one after before the one before, while the whole stays within
    `max_tokens`.

    A chunk is cut by a token budget, not by meaning: the sentence that answers often sits in the next chunk of
    the record that ranked first (on SciFact, the top chunk's record holds a gold rationale sentence for 76 % of
    the claims; the chunk itself for 62 %). Widening lets the answer quote it, and cite the record's passage as
    one fragment. A chunk already joined to a better-ranked one is dropped from the list; the rest keep their
    rank. The widened text is the record's own text from the first joined chunk's start to the last one's end
    (what lies between two chunks, whitespace the chunker trimmed, included), so offsets stay exact."""
    top = settings.ANSWER_WIDEN_TOP if top is None else top
    max_tokens = settings.ANSWER_WIDEN_MAX_TOKENS if max_tokens is None else max_tokens
    heads = list(evidence[:top])
    if not heads or top <= 0:
        return tuple(evidence)
    anchors = {row["pk"]: row for row in readable_chunks(authority).filter(pk__in=[e.chunk_id for e in heads])
               .values("pk", "document_id", "ordinal", "token_count")}
    if not anchors:
        return tuple(evidence)
    wanted = Q()
    for row in anchors.values():
        near_ordinals = [row["ordinal"] + d for d in range(-WIDEN_REACH, WIDEN_REACH + 1) if d]
        wanted |= Q(document_id=row["document_id"], ordinal__in=near_ordinals)
    near = {(row["document_id"], row["ordinal"]): row for row in readable_chunks(authority).filter(wanted)
            .values("pk", "document_id", "ordinal", "token_count", "start", "end", "heading_path", "structure")}
    covered: set[int] = set()
    kept: list[Evidence] = []
    spans: dict[int, tuple[int, int, int]] = {}  # position in `kept` -> (record, start, end) to read
    paths: dict[int, str] = {}  # position in `kept` -> the heading path every joined chunk sits under
    units: dict[int, tuple[Unit, ...]] = {}  # position in `kept` -> the joined chunks' stored structure
    for rank, item in enumerate(evidence):
        if item.chunk_id in covered:
            continue  # joined to a better-ranked chunk of its record
        covered.add(item.chunk_id)
        anchor = anchors.get(item.chunk_id) if rank < top else None
        joined = _join_neighbours(anchor, near, covered, max_tokens) if anchor else []
        if joined:
            spans[len(kept)] = (item.document_id, min([item.start, *(p["start"] for p in joined)]),
                                max([item.end, *(p["end"] for p in joined)]))
            paths[len(kept)] = shared_heading_path([item.heading_path, *(p["heading_path"] for p in joined)])
            pieces = [(item.start, item.structure), *((p["start"], structure_load(p["structure"])) for p in joined)]
            if all(piece_units for _, piece_units in pieces):
                units[len(kept)] = units_joined(pieces, spans[len(kept)][1])
        kept.append(item)
    passages = _record_passages(authority, spans)
    # Nothing joined, or the record's text is not at hand: the chunk as found.
    return tuple(replace(item, text=passages[i], start=spans[i][1], end=spans[i][2], heading_path=paths[i],
                         structure=units.get(i, ()))
                 if i in passages else item for i, item in enumerate(kept))


# How many chunks on each side of a best-ranked chunk `evidence_widen` may join (within its token budget).
WIDEN_REACH = 2


def _join_neighbours(anchor: dict, near: Mapping[tuple[int, int], dict], covered: set[int],
                     max_tokens: int) -> list[dict]:
    """The chunks of `anchor`'s record around it to join, nearest first and after before before, while the
    tokens fit (they are added to `covered`). A side stops at its first chunk that is missing (unreadable,
    absent), already joined elsewhere or too big, so the joined chunks are contiguous."""
    tokens, joined = anchor["token_count"], []
    doc, ordinal = anchor["document_id"], anchor["ordinal"]
    open_sides = {1, -1}
    for distance in range(1, WIDEN_REACH + 1):
        for side in (1, -1):  # after first: an answer more often follows the sentence that matched
            piece = near.get((doc, ordinal + side * distance)) if side in open_sides else None
            if piece is None or piece["pk"] in covered or tokens + piece["token_count"] > max_tokens:
                open_sides.discard(side)
                continue
            tokens += piece["token_count"]
            covered.add(piece["pk"])
            joined.append(piece)
    return joined


def _record_passages(authority: Authority, spans: Mapping[int, tuple[int, int, int]]) -> dict[int, str]:
    """For each key, text[start:end] of its readable record (absent when that record is not readable), all in
    one query and cut in the database: a record may be large, a passage is not."""
    if not spans:
        return {}
    cuts = {f"p{key}": Case(When(pk=record, then=Substr("text", start + 1, end - start)), default=None,
                            output_field=TextField())
            for key, (record, start, end) in spans.items()}
    rows = (readable_documents(authority).filter(pk__in={record for record, _, _ in spans.values()})
            .annotate(**cuts).values(*cuts))
    return {int(name[1:]): passage for row in rows for name, passage in row.items() if passage is not None}


def term_weights(authority: Authority, question: str) -> dict[str, float]:
    """Idf of each key term of `question` (its rarest Postgres lexeme) in the caller's corpus, for the gate's
    coverage. Empty when that corpus has not been counted yet (knowledge.retrieval.statistics): the gate then
    counts terms."""
    stats = corpus_stats(authority.corpus_tenant_ids)
    if not stats.known:
        return {}
    content = list(dict.fromkeys(content_words(question)))
    lexemes = word_lexemes(content)
    weights: dict[str, float] = {}
    for word in content:
        found = lexemes.get(word) or []
        weight = max(idf_for(found, stats)) if found else 0.0
        weights[stem(word)] = max(weights.get(stem(word), 0.0), weight)
    return weights


def identifiers_unknown(authority: Authority, question: str) -> list[str]:
    """The codes and names of `question` (chat.gate.question_identifiers) that no record the caller can read
    contains — as a phrase of its chunks' full-text index, or in a readable title. Existence only: nothing of a
    record is read, and records the caller cannot read are never consulted.

    A question is about the things it names; a description (chat.gate.is_description: a pasted abstract) names
    many in passing, so for one the list is empty unless none of its names is in the records."""
    named = [identifier for identifier in question_identifiers(question) if query_lexemes(identifier)]
    missing = []
    for identifier in named:  # an identifier of only stop words to Postgres has nothing to look for
        phrase = SearchQuery(identifier, config="english", search_type="phrase")
        if not (readable_chunks(authority).filter(search=phrase).exists()
                or readable_documents(authority).filter(title__icontains=identifier).exists()):
            missing.append(identifier)
    if missing and len(missing) < len(named) and is_description(question):
        return []
    return missing
