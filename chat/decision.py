"""The grounding pass: ACL-filtered search for a question, the refusal gate, one repeat search on low
confidence, and the content-free hidden-record probe — everything an answer may be built from.

Read-only. It decides, per sub-question of a compound question, "answer", "not found" (with the gap kind
to record) or "unavailable"; the service that persists the answer records the gap events.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.postgres.search import SearchQuery
from django.db import DatabaseError

from chat.answerability import Verdict, answerability_decide, answerability_judge
from chat.evidence import Evidence
from chat.gate import GapKind, GateDecision, gate_decide, question_identifiers, reformulate
from chat.sql import word_lexemes
from chat.terms import content_words, key_terms, stem
from groundwork.authority import Authority
from knowledge.access import readable_chunks, readable_documents
from knowledge.retrieval import (
    SEMANTIC_FAILURES,
    Hit,
    RetrievalUnavailable,
    hybrid_search,
    semantic_failure_cause,
)
from knowledge.retrieval.hints import HiddenRecord, hidden_relevant, hidden_relevant_document_ids
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


def evidence_from_hit(hit: Hit) -> Evidence:
    return Evidence(
        chunk_id=hit.chunk_id, document_id=hit.document_id, title=hit.title, record_url=hit.record_url,
        source_kind=hit.source_kind, source_name=hit.source_name, text=hit.text, start=hit.start, end=hit.end,
        score=hit.score, lexical_rank=hit.lexical_rank, vector_rank=hit.vector_rank, corpus=hit.corpus,
        vector_similarity=hit.vector_similarity,
    )


@dataclass
class PartResult:
    question: str
    evidence: list[Evidence] = field(default_factory=list)
    decision: GateDecision | None = None
    hidden: list[HiddenRecord] = field(default_factory=list)
    unavailable: str | None = None  # RetrievalUnavailable.cause
    retried_with: str | None = None
    # The vector channel of its search ("off": none ran); a failing embedder leaves the search to full text.
    semantic: str = "off"
    # Whether the evidence holds an answer, and in which sentence (chat.answerability); None when not searched.
    verdict: Verdict | None = None

    @property
    def answerable(self) -> bool:
        return self.unavailable is None and self.decision is not None and self.decision.answer

    @property
    def gap(self) -> tuple[GapKind, str] | None:
        """(kind, cause) to record when this part is refused; None when answered or hidden by rights
        (the knowledge exists, the caller just may not read it)."""
        if self.unavailable is not None:
            return GapKind.RETRIEVAL_FAILED, self.unavailable
        if self.answerable or self.hidden:
            return None
        failure = semantic_failure_cause(self.semantic)
        if failure:
            # Full text alone found nothing: with the embedder down, that says little about the knowledge.
            return GapKind.RETRIEVAL_FAILED, failure
        decision = self.decision
        kind = decision.gap_kind if decision and decision.gap_kind else GapKind.KNOWLEDGE_MISSING
        return kind, decision.reason if decision else "no_evidence"


@dataclass
class Grounding:
    question: str
    parts: list[PartResult]

    @property
    def evidence(self) -> list[Evidence]:
        """Evidence of the answerable parts, best first per part, each chunk once."""
        seen: set[int] = set()
        out: list[Evidence] = []
        for part in self.parts:
            if not part.answerable:
                continue
            for item in part.evidence:
                if item.chunk_id not in seen:
                    seen.add(item.chunk_id)
                    out.append(item)
        return out

    @property
    def hidden(self) -> list[HiddenRecord]:
        out: list[HiddenRecord] = []
        for part in self.parts:
            out.extend(h for h in part.hidden if h not in out)
        return out

    @property
    def unavailable(self) -> bool:
        return any(part.unavailable for part in self.parts)

    @property
    def lexical_only(self) -> bool:
        """Some part was searched by full text alone because the configured embedder failed."""
        return any(part.semantic in SEMANTIC_FAILURES for part in self.parts)


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


def _search(authority: Authority, query: str, k: int) -> tuple[list[Evidence], str]:
    """Evidence for `query` and the state of the semantic channel ("ok" when it took part). A failing embedder
    leaves the search to full text; with RETRIEVAL_REQUIRE_SEMANTIC it raises RetrievalUnavailable instead."""
    result = hybrid_search(authority, query, k=k, require_vector=True)
    return [evidence_from_hit(h) for h in result.hits], result.vector


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


def part_ground(authority: Authority, question: str, *, k: int | None = None) -> PartResult:
    k = k or settings.ANSWER_TOP_K
    part = PartResult(question=question)
    try:
        if identifiers_unknown(authority, question):
            # About something the readable records do not hold: evidence about anything else would answer
            # another question ("ticket KR-9999" answered from KR-1042).
            part.decision = GateDecision(answer=False, reason="unknown_identifier", confidence=0.0, coverage=0.0,
                                         gap_kind=GapKind.KNOWLEDGE_MISSING)
            return part
        weights = term_weights(question)
        evidence, part.semantic = _search(authority, question, k)
        decision = gate_decide(question, evidence, vector_enabled=part.semantic == "ok", term_weights=weights)
        if decision.retry_worthwhile:
            retry = reformulate(question)
            if retry:
                again, semantic_again = _search(authority, retry, k)
                if semantic_again != "ok":
                    part.semantic = semantic_again
                second = gate_decide(question, again, vector_enabled=semantic_again == "ok", term_weights=weights)
                part.retried_with = retry
                if second.answer or second.confidence > decision.confidence:
                    evidence, decision = again, second
        # Topic is not answerability: the evidence must hold an answer to this question, not just its subject.
        part.verdict = answerability_judge(question, evidence, term_weights=weights)
        decision = answerability_decide(question, decision, part.verdict,
                                        top_chunk_id=evidence[0].chunk_id if evidence else None)
        part.evidence, part.decision = evidence, decision
    except (RetrievalUnavailable, DatabaseError) as exc:
        part.unavailable = getattr(exc, "cause", "database_error")
        return part
    return part


def hidden_probe(authority: Authority, groundings: list[Grounding], *, k: int | None = None) -> None:
    """Fill in each part's hidden relevant records. Runs whatever the gate said (a readable answer can still
    leave a relevant record hidden), after the sources went out: the hint is only needed for the final event."""
    k = k or settings.ANSWER_TOP_K
    for grounding in groundings:
        for part in grounding.parts:
            if part.unavailable is None:
                part.hidden = hidden_relevant(authority, part.question, k=k)


def hidden_document_ids(authority: Authority, question: str, *, k: int | None = None) -> list[int]:
    """The records behind a question's hint, by the same probe over the same sub-questions. Server-side only:
    an access request records them for the tenant's admins; the asker never sees them."""
    k = k or settings.ANSWER_TOP_K
    ids: list[int] = []
    for part in split_question(question):
        ids.extend(i for i in hidden_relevant_document_ids(authority, part, k=k) if i not in ids)
    return ids


def ground_question(authority: Authority, question: str) -> Grounding:
    """Search each sub-question of `question` under the caller's authority (and nothing else)."""
    return Grounding(question=question, parts=[part_ground(authority, q) for q in split_question(question)])


def hint_payload(hidden: list[HiddenRecord]) -> dict | None:
    """The hint as sent to clients: that something exists, its source system, and whom to ask — never a
    title, snippet, id, count or score. Sources are de-duplicated so the list length is not a count."""
    if not hidden:
        return None
    sources: list[dict] = []
    for record in hidden:
        entry = {"source_kind": record.source_kind, "source_name": record.source_name}
        if record.author_email:
            entry["contact"] = record.author_email
        if entry not in sources:
            sources.append(entry)
    return {"exists": True, "sources": sources}
