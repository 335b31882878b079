"""The embedder contract and its typed errors, shared by every backend."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Turns text into unit-length vectors of a fixed `dimension`.

    `model_id` is stored next to every vector, so vectors from different models are never compared.
    Documents and queries are separate calls because instruction-tuned models (e5, bge, nomic ...) want a
    query prefix that documents must not get; `embed_query` applies it.
    """

    model_id: str
    dimension: int

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...

    # Optional `embed_queries(texts) -> list[list[float]]`: several queries in one call (retrieval uses it
    # when present, so a question's texts cost one round trip).


class EmbeddingError(Exception):
    """Embedding failed; `cause` is the underlying error (a `ModelError`, an onnxruntime failure ...)."""

    def __init__(self, message: str, *, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class EmbeddingModelCorrupt(EmbeddingError):
    """The local model file is not the one we pinned (sha256 differs): refuse to produce vectors that
    would silently disagree with the ones already stored."""


def vector_problem(vec: Sequence[float], dimension: int) -> str | None:
    """Why `vec` must not be stored for a `dimension`-wide column, or None if it is fine.

    "wrong_dimension", "not_finite" (NaN or infinity) or "zero_vector" (cosine distance is undefined
    for it, and pgvector answers NaN for it, which would poison ranking).
    """
    if len(vec) != dimension:
        return "wrong_dimension"
    if not all(math.isfinite(x) for x in vec):
        return "not_finite"
    if not any(vec):
        return "zero_vector"
    return None
