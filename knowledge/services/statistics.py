"""Counting a tenant's word statistics over its shared records (knowledge.models.CorpusStatistics; read by
knowledge.retrieval.statistics)."""

from __future__ import annotations

import math

from django.db import connection, transaction

from groundwork.rls import DatabaseScope, scope_reset, scope_set

from ..models import CorpusStatistics
from ..retrieval.sql import TENANT_CHUNK_SIZES, TENANT_SAMPLE_SIZE, TENANT_STATISTICS_WRITE

# A tenant larger than this is counted on an even sample of about this many chunks (every n-th id): ts_stat reads
# every vector it is given, ~1 s per 100,000 chunks here, and shares of common words settle long before that.
SAMPLE_CHUNKS = 100_000
# The commonest words kept. A rarer word is estimated at half the rarest kept one's count; at SciFact's size
# (9,444 chunks, ~35,000 words) that is a word in fewer than 3 chunks.
LEXEMES_KEPT = 20_000


def corpus_statistics_count(tenant_id: int) -> CorpusStatistics:
    """Count the tenant's shared (workspace-visible) chunks, their mean length and the commonest words, and store
    them (replacing what was there). Restricted chunks are never read, so importing them leaves the row as it was.
    Reads and writes that one tenant's rows only. Safe to run twice: the last count wins."""
    tokens = scope_set(DatabaseScope(read_tenant_ids=(tenant_id,), write_tenant_ids=(tenant_id,)))
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(TENANT_CHUNK_SIZES, {"tenant_ids": [tenant_id]})
            _, chunks, average_tokens = cursor.fetchone() or (tenant_id, 0, 1.0)
            step, sampled = max(1, math.ceil(chunks / SAMPLE_CHUNKS)), chunks
            if step > 1:
                cursor.execute(TENANT_SAMPLE_SIZE, {"tenant_id": tenant_id, "step": step})
                sampled = cursor.fetchone()[0]
            cursor.execute(TENANT_STATISTICS_WRITE, {
                "tenant_id": tenant_id, "step": step, "keep": LEXEMES_KEPT, "chunks": chunks, "sampled": sampled,
                "average_tokens": float(average_tokens)})
            lexemes, counts, truncated, counted_at = cursor.fetchone()
    finally:
        scope_reset(tokens)
    row = CorpusStatistics(tenant_id=tenant_id, chunks=chunks, sampled=sampled, average_tokens=float(average_tokens),
                           lexemes=lexemes, counts=counts, truncated=truncated, counted_at=counted_at)
    row._state.adding = False  # the stored row, as the statement returned it
    return row
