"""Retrieve: a question's sub-questions, their vectors (embedded once, in one call) and the ACL-filtered search.

Everything the answer may be built from is found here, under the caller's authority and nothing else. The
question is embedded once, in one embedder call with the other texts it may need — the reworded query of the one
repeat search, and the hidden-record probe's topic words (knowledge.retrieval.hints explains why the probe never
sees the question as asked) — and the vectors are passed on: to the answer cache's similarity lookup, the search,
its repeat and the probe.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.contrib.postgres.search import SearchQuery

from chat.evidence import Evidence
from chat.gate import question_identifiers, reformulate
from chat.sql import word_lexemes
from chat.terms import content_words, key_terms, stem
from groundwork.authority import Authority
from knowledge.access import readable_chunks, readable_documents
from knowledge.retrieval import Hit, QueryVector, hybrid_search, query_vectors
from knowledge.retrieval.hints import probe_query
from knowledge.retrieval.lexical import corpus_stats, idf_for, query_lexemes

# " and ", "?" and ";" split a compound question; a piece without key terms of its own ("and why?") is
# glued back to the one before it, so "terms and conditions" style phrases survive when one side is empty.
_SPLIT = re.compile(r"\s+and\s+|\?+|;+", re.IGNORECASE)


# Longer than this, a question is one information need described at length (a paragraph, a pasted
# abstract), not "X and Y?": splitting it tests many fragments, and any one of them matching something by
# chance would answer it. Measured on CISI's descriptive queries over 30 words asked of the SciFact tenant:
# split, 17 % got an answer from that unrelated corpus; whole, 10 %.
SPLIT_MAX_WORDS = 30


def split_question(question: str) -> list[str]:
    if len(question.split()) > SPLIT_MAX_WORDS:
        return [question.strip()]
    pieces = [p.strip(" ,.") for p in _SPLIT.split(question)]
    parts: list[str] = []
    for piece in pieces:
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


def question_vectors(question: str, *, whole: bool = False) -> QuestionVectors:
    """Embed, in one embedder call, every text `question` will be searched or probed with (`whole`: for the
    answer cache too — the question as asked when it is split into several searches, and even before anything
    was embedded for the search)."""
    parts = split_question(question)
    # The repeat search's reworded text is embedded up front too: a short extra text in the same batch costs
    # less than a second round trip when the gate asks for it.
    retries = [r for r in (reformulate(part) for part in parts) if r]
    probes = [p for p in (probe_query(part) for part in parts) if p]
    texts = list(dict.fromkeys([*([question] if whole and len(parts) > 1 else []), *parts, *retries, *probes]))
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
        vector_similarity=hit.vector_similarity,
    )


def evidence_search(authority: Authority, query: str, k: int,
                    embedded: QueryVector | None) -> tuple[tuple[Evidence, ...], str]:
    """Evidence for `query` and the state of the semantic channel ("ok" when it took part). A failing embedder
    leaves the search to full text; with RETRIEVAL_REQUIRE_SEMANTIC it raises RetrievalUnavailable instead."""
    result = hybrid_search(authority, query, k=k, require_vector=True, embedded=embedded)
    return tuple(evidence_from_hit(h) for h in result.hits), result.vector


def term_weights(question: str) -> dict[str, float]:
    """Corpus idf of each key term of `question` (its rarest Postgres lexeme), for the gate's coverage.
    Empty when the lexeme statistics are not there yet (before ANALYZE): the gate then counts terms."""
    stats = corpus_stats()
    if not stats.get("freqs"):
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
    record is read, and records the caller cannot read are never consulted."""
    missing = []
    for identifier in question_identifiers(question):
        if not query_lexemes(identifier):
            continue  # only stop words to Postgres: nothing to look for
        phrase = SearchQuery(identifier, config="english", search_type="phrase")
        if not (readable_chunks(authority).filter(search=phrase).exists()
                or readable_documents(authority).filter(title__icontains=identifier).exists()):
            missing.append(identifier)
    return missing
