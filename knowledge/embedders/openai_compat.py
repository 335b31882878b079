"""Embeddings from any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama, TEI ...)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from groundwork.modelclient import ModelEndpoint, ModelError, embeddings_create

from .base import EmbeddingError


class OpenAIEmbedder:
    """`dimension` is the configured one when given (MODEL_EMBEDDING_DIM); otherwise it is learnt from
    the first response, and reading it before any embedding costs one probe request."""

    def __init__(
        self,
        *,
        endpoint: ModelEndpoint,
        model: str,
        batch_size: int = 64,
        query_instruction: str = "",
        dimension: int | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.model_id = model
        self.batch_size = max(1, batch_size)
        self.query_instruction = query_instruction
        self._dimension = dimension
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed_documents(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def _check_dimension(self, vectors: list[list[float]]) -> None:
        with self._lock:
            if self._dimension is None and vectors:
                self._dimension = len(vectors[0])
        for vector in vectors:
            # A dimension change means the server now runs another model; its vectors cannot share a
            # column with the stored ones, so this is an error, not a per-vector problem.
            if len(vector) != self._dimension:
                raise EmbeddingError(
                    f"{self.model_id} returned a {len(vector)}-dimensional vector, expected {self._dimension}"
                )

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string")
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start:start + self.batch_size])
            try:
                got = embeddings_create(self.endpoint, model=self.model_id, inputs=batch)
            except ModelError as exc:
                raise EmbeddingError(f"embedding with {self.model_id} failed: {exc}", cause=exc) from exc
            self._check_dimension(got)
            vectors.extend(got)
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([self.query_instruction + text])[0]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Several queries in one call (one batch, one round trip): what one question needs embedded."""
        return self.embed_documents([self.query_instruction + text for text in texts])
