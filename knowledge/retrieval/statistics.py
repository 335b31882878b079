"""The word statistics a caller's searches and answers weigh words by: their own tenant's and the platform corpus's.

BM25's idf, the refusal gate's term weights and the hint probe's coverage all ask one thing of a word: in what
share of the records is it? That share is taken over the caller's corpus only (their tenant plus the platform
corpus), from each tenant's counted statistics (knowledge.models.CorpusStatistics). Never across tenants: a
word's weight there would move with another tenant's records, and the order of a caller's own results would
tell them which words another tenant writes about. And only over the records every reader of that corpus shares
(workspace-visible ones): counted with restricted records, a word's weight would move with records the caller
cannot read — an HR import full of one word reorders a member's results and changes what the gate refuses.

Read once per tenant and kept in this process for STATS_TTL_S (they move slowly). A tenant whose shared chunk count
has moved by more than STALE_SHARE since it was counted (or that was never counted) is queued for a recount
(knowledge.tasks.corpus_statistics_task, inline without a broker); until then its last counts serve, or, if it
has none, its words are counted rather than weighed (every word weighs the same).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import connection

from groundwork.task_queue import enqueue_on_commit

from ..models import CorpusStatistics
from .sql import TENANT_CHUNK_COUNTS, TENANT_CHUNK_SIZES

STATS_TTL_S = 300.0
# While a recount is queued, look again soon: with no broker it has run by the next question's transaction.
PENDING_TTL_S = 5.0
STALE_SHARE = 0.1
CACHED_TENANTS_MAX = 64  # each holds up to knowledge.services.statistics.LEXEMES_KEPT words

_lock = threading.Lock()
_cache: OrderedDict[int, tuple[TenantCounts | None, float]] = OrderedDict()


@dataclass(frozen=True)
class TenantCounts:
    """One tenant's counted statistics. `counts` are per sampled chunk; `floor` is the smallest kept count
    (a word left out of a truncated list is rarer than that). `sampled` 0: its words are not counted yet."""

    chunks: int
    sampled: int
    average_tokens: float
    counts: dict[str, int] = field(repr=False)
    truncated: bool
    floor: int

    @classmethod
    def of(cls, row: CorpusStatistics) -> TenantCounts:
        return cls(chunks=row.chunks, sampled=row.sampled, average_tokens=row.average_tokens,
                   counts=dict(zip(row.lexemes, row.counts, strict=True)), truncated=row.truncated,
                   floor=min(row.counts, default=0))

    def chunks_holding(self, lexeme: str) -> float:
        """Estimated chunks of this tenant holding `lexeme`."""
        count = self.counts.get(lexeme)
        if count is None:
            count = self.floor / 2 if self.truncated else 0
        return count * self.chunks / self.sampled if self.sampled else 0.0


@dataclass(frozen=True)
class CorpusStats:
    """The statistics of one caller's corpus: the counted tenants among it."""

    parts: tuple[TenantCounts, ...] = ()

    @property
    def counted(self) -> tuple[TenantCounts, ...]:
        return tuple(part for part in self.parts if part.sampled)

    @property
    def total(self) -> int:
        """The chunks whose words are counted."""
        return sum(part.chunks for part in self.counted)

    @property
    def known(self) -> bool:
        """Whether there is anything to weigh by (else callers count words instead)."""
        return self.total > 0

    @property
    def average_tokens(self) -> float:
        chunks = sum(part.chunks for part in self.parts)
        return sum(p.average_tokens * p.chunks for p in self.parts) / chunks if chunks else 1.0

    def chunks_holding(self, lexeme: str) -> float:
        """Estimated counted chunks holding `lexeme`."""
        return sum(part.chunks_holding(lexeme) for part in self.counted)

    def share(self, lexeme: str) -> float:
        """The share of the counted chunks holding `lexeme`; a word none holds counts as half a chunk."""
        total = self.total
        return max(self.chunks_holding(lexeme), 0.5) / total if total else 0.0


def idf_for(lexemes: Sequence[str], stats: CorpusStats) -> list[float]:
    """BM25 idf of each lexeme in `stats`' corpus; 1.0 each when nothing is counted yet."""
    if not stats.known:
        return [1.0] * len(lexemes)
    out = []
    for lexeme in lexemes:
        f = min(max(stats.share(lexeme), 1e-6), 0.999)
        out.append(math.log(1 + (1 - f) / f))
    return out


def corpus_stats(tenant_ids: Sequence[int]) -> CorpusStats:
    """The statistics of the corpus made of these tenants (a caller's `corpus_tenant_ids`)."""
    now = time.monotonic()
    wanted = list(dict.fromkeys(int(t) for t in tenant_ids))
    with _lock:
        found = {t: _cache[t][0] for t in wanted if t in _cache and _cache[t][1] > now}
    missing = [t for t in wanted if t not in found]
    if missing:
        loaded = _load(missing)
        with _lock:
            for tenant_id, (counts, expires) in loaded.items():
                _cache[tenant_id] = (counts, expires)
                _cache.move_to_end(tenant_id)
            while len(_cache) > CACHED_TENANTS_MAX:
                _cache.popitem(last=False)
        found.update({t: counts for t, (counts, _) in loaded.items()})
    return CorpusStats(parts=tuple(found[t] for t in wanted if found.get(t) is not None))


def _load(tenant_ids: list[int]) -> dict[int, tuple[TenantCounts | None, float]]:
    """Each tenant's stored counts, and a recount queued for those whose chunk count has moved. A tenant never
    counted still has its size and mean chunk length (BM25's length normalisation needs them), no word counts."""
    rows = {row.tenant_id: row for row in CorpusStatistics.objects.filter(tenant_id__in=tenant_ids)}
    with connection.cursor() as cursor:
        cursor.execute(TENANT_CHUNK_COUNTS, {"tenant_ids": tenant_ids})
        current = dict(cursor.fetchall())
        uncounted = [t for t in tenant_ids if current.get(t) and (t not in rows or not rows[t].chunks)]
        sizes = {}
        if uncounted:
            cursor.execute(TENANT_CHUNK_SIZES, {"tenant_ids": uncounted})
            sizes = {tenant_id: float(average) for tenant_id, _, average in cursor.fetchall()}
    now, out = time.monotonic(), {}
    for tenant_id in tenant_ids:
        row, chunks = rows.get(tenant_id), current.get(tenant_id, 0)
        stale = abs(chunks - row.chunks) > STALE_SHARE * row.chunks if row is not None else chunks > 0
        if stale:
            enqueue_on_commit("knowledge.tasks.corpus_statistics_task", tenant_id)
        if tenant_id in sizes:
            counts = TenantCounts(chunks=chunks, sampled=0, average_tokens=sizes[tenant_id], counts={},
                                  truncated=False, floor=0)
        else:
            counts = TenantCounts.of(row) if row is not None and row.chunks else None
        out[tenant_id] = (counts, now + (PENDING_TTL_S if stale else STATS_TTL_S))
    return out


def corpus_stats_forget() -> None:
    """Drop the cached statistics: the next reader reads them afresh (tests, each on its own data; benches after
    loading a corpus)."""
    with _lock:
        _cache.clear()
