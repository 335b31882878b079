"""Statement vectors for tier two, made only where it compares them (findings/README.md, "Embedded when
compared")."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from knowledge.sql import vector_literal

from .. import sql
from ..models import RelationType
from ..sql import matching
from .types import _Candidate

logger = logging.getLogger("findings.writer")


def _embed(statements: Sequence[str]) -> list[str | None]:
    """Statement vectors as pgvector literals, or None each when no embedder fits the claim column."""
    from knowledge.embedders import EmbeddingError, embedder_get

    embedder = embedder_get()
    if embedder is None or not statements or embedder.dimension != _claim_dimension():
        return [None] * len(statements)
    try:
        vectors = embedder.embed_documents(list(statements))
    except EmbeddingError as exc:  # similarity falls back to trigram overlap; the write must not fail for it
        logger.warning("statement embedding failed, using text similarity: %s", exc)
        return [None] * len(statements)
    return [vector_literal(v) for v in vectors]


_dimension: dict[str, int] = {}


def _embedder_fits() -> bool:
    """An embedder runs and its vectors fit the claim column (otherwise similarity is trigram overlap)."""
    from knowledge.embedders import embedder_get

    embedder = embedder_get()
    return embedder is not None and embedder.dimension == _claim_dimension()


def _compared(c: _Candidate) -> bool:
    """Tier two's similarity decides this candidate's verdict: not a repeat, and not a state relation (one
    current value per window: its verdict reads object keys only, see consolidation.decide)."""
    return not c.current and c.policy != RelationType.Policy.STATE


def _claim_dimension() -> int:
    if "d" not in _dimension:  # fixed per process: changing the column needs a migration and a restart
        _dimension["d"] = sql.claim_dimension_get()
    return _dimension["d"]


def _embed_compared(candidates: Sequence[_Candidate], claims: dict[int, str]) -> None:
    """Embed, in one call and outside any transaction, the candidates not embedded yet and the current claims
    (id → statement) stored without a vector; store the claims' vectors."""
    todo = [c for c in candidates if not c.embedded]
    if not todo and not claims:
        return
    vectors = _embed([c.fact.statement for c in todo] + list(claims.values()))
    for candidate, vector in zip(todo, vectors[:len(todo)], strict=True):
        candidate.embedding, candidate.embedded = vector, True
    filled = {claim_id: v for claim_id, v in zip(claims, vectors[len(todo):], strict=True) if v is not None}
    if filled:
        matching.claims_embedding_fill(filled)


