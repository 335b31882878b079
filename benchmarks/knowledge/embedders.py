"""Raw embedder throughput, for `make bench`."""

from __future__ import annotations

import time
from collections.abc import Sequence

from knowledge.embedders.base import Embedder


def raw_throughput(embedder: Embedder, texts: Sequence[str]) -> float:
    """Texts embedded per second by `embed_documents(texts)`, after one warm-up call so model loading
    and first-run graph optimisation are not counted."""
    if not texts:
        raise ValueError("raw_throughput needs at least one text")
    embedder.embed_documents([texts[0]])
    started = time.perf_counter()
    embedder.embed_documents(texts)
    return len(texts) / max(time.perf_counter() - started, 1e-9)
