"""The /ground endpoint's evidence lookup in tiers, and the direct evidence lookup with its two different empties.

`ground()` answers from the first tier that has something:
  (a) memo  — an exact (name, fingerprint) hit for this tenant and principal set: no search at all;
  (b) hybrid — lexical + vector search, top 5 with scores;
  (c) grep  — the sandboxed keyword grep, only when GROUNDING_GREP_ROOT is set;
  (d) none  — an empty result that cites nothing.
Each response says which tier produced it.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from groundwork.authority import Authority

from ..access import readable_chunks, tenant_has_corpus
from ..models import GroundingMemo
from . import grep
from .search import hybrid_search
from .types import Hit, RetrievalUnavailable, SearchFilters, SearchResult

GROUND_TOP_K = 5


@dataclass
class GroundResponse:
    tier: str  # memo | hybrid | grep | none
    results: list[dict] = field(default_factory=list)
    cached: bool = False
    semantic: str = "off"

    def as_dict(self) -> dict:
        return asdict(self)


def _hit_dict(hit: Hit) -> dict:
    return {"chunk_id": hit.chunk_id, "document_id": hit.document_id, "title": hit.title,
            "record_url": hit.record_url, "source": hit.source_name, "text": hit.text, "start": hit.start,
            "end": hit.end, "score": round(hit.score, 6), "channels": list(hit.channels), "corpus": hit.corpus}


def fingerprint_for(query: str) -> str:
    return hashlib.sha256(" ".join(query.casefold().split()).encode()).hexdigest()


def _memo_get(authority: Authority, name: str, fingerprint: str) -> GroundingMemo | None:
    memo = GroundingMemo.objects.filter(tenant_id=authority.tenant_id, principal_hash=authority.principal_hash,
                                        name=name, fingerprint=fingerprint).first()
    if memo is None:
        return None
    ttl = settings.GROUNDING_MEMO_TTL_S
    if ttl and memo.created_at < timezone.now() - timedelta(seconds=ttl):
        memo.delete()
        return None
    if memo.chunk_ids:
        # Rights or content may have changed since the memo was written: every cited chunk must
        # still exist and be readable, or the memo is discarded and the lookup runs again.
        readable = readable_chunks(authority).filter(pk__in=memo.chunk_ids).count()
        if readable != len(set(memo.chunk_ids)):
            memo.delete()
            return None
    GroundingMemo.objects.filter(pk=memo.pk).update(hits=F("hits") + 1)
    return memo


def _memo_put(authority: Authority, name: str, fingerprint: str, response: GroundResponse, chunk_ids: list[int]):
    try:
        with transaction.atomic():
            GroundingMemo.objects.update_or_create(
                tenant_id=authority.tenant_id, principal_hash=authority.principal_hash, name=name,
                fingerprint=fingerprint, defaults={"response": response.as_dict(), "chunk_ids": chunk_ids},
            )
    except IntegrityError:
        pass  # a concurrent lookup stored the same request


def ground(authority: Authority, *, name: str, fingerprint: str | None, query: str) -> GroundResponse:
    fingerprint = fingerprint or fingerprint_for(query)
    memo = _memo_get(authority, name, fingerprint)
    if memo is not None:
        stored = memo.response
        return GroundResponse(tier="memo", results=stored.get("results", []), cached=True,
                              semantic=stored.get("semantic", "off"))
    semantic = "off"
    try:
        result = hybrid_search(authority, query, k=GROUND_TOP_K, per_document_cap=1)
        semantic = result.vector
        if result.hits:
            response = GroundResponse(tier="hybrid", results=[_hit_dict(h) for h in result.hits], semantic=semantic)
            _memo_put(authority, name, fingerprint, response, [h.chunk_id for h in result.hits])
            return response
    except RetrievalUnavailable:
        pass  # the hybrid tier steps aside; grep may still answer
    if grep.available():
        slugs = [authority.tenant_slug] if authority.is_platform else [authority.tenant_slug, "platform"]
        hits = grep.grep_search(tenant_slugs=slugs, query=query)
        if hits:
            response = GroundResponse(tier="grep", semantic=semantic, results=[
                {"path": h.path, "line": h.line_no, "text": h.line, "matched": h.matched} for h in hits[:GROUND_TOP_K]])
            _memo_put(authority, name, fingerprint, response, [])
            return response
    return GroundResponse(tier="none", semantic=semantic)


def ground_search(authority: Authority, query: str, *, k: int = 10,
                  filters: SearchFilters | None = None) -> SearchResult:
    """The search for `query`: no hits when the corpus was searched and had nothing; RetrievalUnavailable when it
    could not be searched (no corpus, a database failure; with RETRIEVAL_REQUIRE_SEMANTIC, a failing or absent
    embedder). A failing embedder otherwise gives a full-text-only result that says so (`lexical_only`)."""
    if not tenant_has_corpus(authority):
        raise RetrievalUnavailable("no_corpus", "nothing is searchable for this caller")
    return hybrid_search(authority, query, k=k, filters=filters, require_vector=True)


def ground_evidence(authority: Authority, query: str, *, k: int = 10,
                    filters: SearchFilters | None = None) -> list[Hit]:
    """The hits of ground_search."""
    return ground_search(authority, query, k=k, filters=filters).hits
