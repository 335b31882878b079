"""Which embedder this process uses, chosen by the EMBEDDER setting.

- `onnx` (default): all-MiniLM-L6-v2 int8 on onnxruntime, offline, 384 dimensions.
- `openai`: an OpenAI-compatible server at EMBEDDING_URL with EMBEDDING_MODEL.
- `none`: no semantic channel at all; `embedder_get()` returns None and retrieval is lexical only.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from .base import Embedder, EmbeddingError, EmbeddingModelCorrupt, vector_problem

__all__ = [
    "EMBEDDER_CHOICES",
    "Embedder",
    "EmbeddingError",
    "EmbeddingModelCorrupt",
    "configured_dimension",
    "embedder_get",
    "embedder_reset",
    "query_embedding_failed",
    "query_embedding_suspended",
    "vector_problem",
]

EMBEDDER_CHOICES = ("onnx", "openai", "none")

_lock = threading.Lock()
_state: dict[str, Embedder | None] = {}  # "embedder" present once built; a dict so None can be cached too


def _build() -> Embedder | None:
    kind = settings.EMBEDDER
    if kind == "none":
        return None
    if kind == "onnx":
        from .onnx import OnnxEmbedder

        return OnnxEmbedder(batch_size=settings.EMBEDDING_BATCH_SIZE, threads=settings.EMBEDDING_ONNX_THREADS or None)
    if kind == "openai":
        from groundwork.modelclient import ModelEndpoint

        from .openai_compat import OpenAIEmbedder

        if not settings.EMBEDDING_URL or not settings.EMBEDDING_MODEL:
            raise ImproperlyConfigured("EMBEDDER=openai needs EMBEDDING_URL and EMBEDDING_MODEL")
        return OpenAIEmbedder(
            endpoint=ModelEndpoint(settings.EMBEDDING_URL, api_key=settings.EMBEDDING_API_KEY,
                                   timeout=settings.EMBEDDING_TIMEOUT),
            model=settings.EMBEDDING_MODEL,
            batch_size=settings.EMBEDDING_BATCH_SIZE,
            query_instruction=settings.EMBEDDING_QUERY_INSTRUCTION,
            dimension=settings.MODEL_EMBEDDING_DIM,
        )
    raise ImproperlyConfigured(f"EMBEDDER must be one of {', '.join(EMBEDDER_CHOICES)}, got {kind!r}")


def embedder_get() -> Embedder | None:
    """The process-wide embedder, built on first use (the ONNX model itself loads on first embed)."""
    if "embedder" not in _state:
        with _lock:
            if "embedder" not in _state:
                _state["embedder"] = _build()
    return _state["embedder"]


def embedder_reset() -> None:
    """Forget the cached embedder, so the next `embedder_get()` reads the settings again (tests)."""
    global _suspended_until
    with _lock:
        _state.clear()
        _suspended_until = 0.0


# After a query embedding fails, questions skip the embedder for EMBEDDING_FAILURE_COOLDOWN_S and search full
# text alone: during an outage each question would otherwise wait out every retry of every embedding call.
_suspended_until = 0.0


def query_embedding_failed() -> None:
    global _suspended_until
    _suspended_until = time.monotonic() + settings.EMBEDDING_FAILURE_COOLDOWN_S


def query_embedding_suspended() -> bool:
    return time.monotonic() < _suspended_until


def configured_dimension() -> int | None:
    """The vector width the database columns must have: MODEL_EMBEDDING_DIM when set, else the
    embedder's own (which may cost one probe request for an `openai` embedder), None without one."""
    if settings.MODEL_EMBEDDING_DIM:
        return settings.MODEL_EMBEDDING_DIM
    embedder = embedder_get()
    return None if embedder is None else embedder.dimension
