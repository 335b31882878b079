"""What retrieval returns, and its two different empties.

An empty `SearchResult.hits` means the corpus was searched and had nothing. `RetrievalUnavailable`
means it could not be searched at all (no corpus, no embedder where one is required, an embedding
error, a query vector of the wrong size or all zeros, a database failure). Callers treat them in
opposite ways: "our data says nothing" versus "retrieval is down".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from knowledge.structure import Unit


class RetrievalUnavailable(Exception):
    """The corpus could not be searched. `cause` is a short machine-readable reason."""

    CAUSES = ("no_corpus", "no_embedder", "embedding_error", "wrong_dimension", "zero_vector",
              "database_error")

    def __init__(self, cause: str, detail: str = "") -> None:
        super().__init__(f"retrieval unavailable: {cause}" + (f" ({detail})" if detail else ""))
        self.cause = cause
        self.detail = detail


@dataclass(frozen=True)
class SearchFilters:
    """Caller-supplied narrowing. Always AND-ed with the access path, never OR-ed."""

    source_ids: tuple[int, ...] = ()
    document_ids: tuple[int, ...] = ()
    updated_after: datetime | None = None
    updated_before: datetime | None = None
    metadata: dict = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.source_ids or self.document_ids or self.updated_after or self.updated_before
                    or self.metadata)


ChannelState = Literal["ok", "off", "no_embedder", "wrong_dimension", "zero_vector", "no_space", "error"]

# Vector channel states that mean a configured embedder is failing (rather than absent or not used yet).
SEMANTIC_FAILURES = ("error", "wrong_dimension", "zero_vector")


def semantic_failure_cause(state: str) -> str | None:
    """The RetrievalUnavailable cause a failing vector channel stands for, None when it is not failing."""
    return {"error": "embedding_error", "wrong_dimension": "wrong_dimension",
            "zero_vector": "zero_vector"}.get(state)


@dataclass(frozen=True)
class Hit:
    chunk_id: int
    document_id: int
    ordinal: int
    text: str
    start: int
    end: int
    heading_path: str
    title: str
    record_url: str
    source_id: int
    source_name: str
    source_kind: str
    author_id: int | None
    score: float
    lexical_rank: int | None
    vector_rank: int | None
    lexical_score: float | None
    vector_similarity: float | None
    corpus: Literal["tenant", "platform"]
    # Ranks in registered channels (knowledge.retrieval.channels), and the path the graph channel took to this
    # chunk, e.g. ("OPS-12", "owns", "Priya Nair", "reports_to", "Marcus Lee").
    channel_ranks: dict[str, int] = field(default_factory=dict)
    path: tuple[str, ...] = ()
    structure: tuple[Unit, ...] = ()  # the chunk's stored sentences, headings and list items (knowledge.structure)

    @property
    def channels(self) -> tuple[str, ...]:
        built_in = tuple(name for name, rank in (("lexical", self.lexical_rank), ("vector", self.vector_rank))
                         if rank is not None)
        return built_in + tuple(sorted(self.channel_ranks))

    @property
    def best_rank(self) -> int:
        return min(r for r in (self.lexical_rank, self.vector_rank, *self.channel_ranks.values()) if r is not None)


@dataclass(frozen=True)
class SearchResult:
    hits: list[Hit]
    lexical: ChannelState
    vector: ChannelState
    query: str
    # Registered channels' states: "ok", "off" (nothing to do, e.g. no entity named) or "error" (it failed and the
    # ranking stands on lexical and vector alone: see `degraded_channels`).
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def degraded_channels(self) -> tuple[str, ...]:
        return tuple(sorted(name for name, state in self.extra.items() if state == "error"))

    @property
    def semantic_active(self) -> bool:
        return self.vector == "ok"

    @property
    def lexical_only(self) -> bool:
        """Ranked by full text alone because the configured embedder failed (an error or timeout, a wrong-size or
        zero vector). Other reasons the vector channel stays out — none configured, nothing embedded yet — are
        the normal state of such a deployment, not a degradation; `vector` tells them all apart."""
        return self.lexical == "ok" and self.vector in SEMANTIC_FAILURES
