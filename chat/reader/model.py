"""The reader model on onnxruntime: one batch of (question, window) pairs in, a reading per window out.

The model file is vendored in `data/reader.onnx` (trained by training/reader, card in data/MODEL_CARD.md) and
checked against the sha256 in `data/reader.json` on load, as the embedder's is; so are its calibration (the
probability the answerable logit maps to) and the refusal threshold fitted on public data.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .encoding import best_span, encode_pairs

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # see knowledge.embedders.onnx: no phoning home

DATA = Path(__file__).resolve().parent / "data"
MODEL_PATH = DATA / "reader.onnx"
META_PATH = DATA / "reader.json"
TOKENIZER_PATH = Path(__file__).resolve().parents[2] / "knowledge" / "embedders" / "data" / "tokenizer.json"


class ReaderUnavailable(Exception):
    """The reader model cannot be loaded or run (missing, corrupt, onnxruntime failing)."""

    def __init__(self, message: str, *, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


@dataclass(frozen=True)
class Reading:
    """The reader's view of one window: how likely it answers the question, and where (window characters)."""

    probability: float
    logit: float
    span_start: int
    span_end: int
    span_score: float


@dataclass(frozen=True)
class ReaderMeta:
    version: str
    sha256: str
    threshold: float  # answerable when the calibrated probability reaches it
    # Answerable although the retrieval gate refused the evidence as too weakly similar (chat.answerability.decide).
    rescue: float = 1.01
    scale: float = 1.0  # calibration: probability = sigmoid(scale * logit + shift)
    shift: float = 0.0

    def probability(self, logit: float) -> float:
        return float(1.0 / (1.0 + np.exp(-(self.scale * logit + self.shift))))


def reader_meta(path: Path = META_PATH) -> ReaderMeta:
    """The model's id, checksum and fitted calibration; ReaderUnavailable when there is no trained reader here
    (`make train-reader` writes it) or its file is unreadable."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReaderUnavailable(f"no trained reader at {path} (make train-reader writes it)", cause=exc) from exc
    calibration = payload.get("calibration", {})
    return ReaderMeta(version=payload["version"], sha256=payload["sha256"], threshold=float(payload["threshold"]),
                      rescue=float(payload.get("rescue", 1.01)), scale=float(calibration.get("scale", 1.0)),
                      shift=float(calibration.get("shift", 0.0)))


def _sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class ReaderModel:
    """Thread-safe; loads on first use. One instance per process (`reader_get`)."""

    def __init__(self, *, model_path: Path = MODEL_PATH, meta: ReaderMeta | None = None,
                 threads: int | None = None) -> None:
        self.model_path = Path(model_path)
        self.meta = meta or reader_meta()
        self.threads = threads or max(1, min(4, os.cpu_count() or 1))
        self._lock = threading.Lock()
        self._session = None
        self._tokenizer = None
        # Set to a list to collect each read's milliseconds (the answers bench's reader_ms).
        self.timings: list[float] | None = None

    @property
    def version(self) -> str:
        return self.meta.version

    def _load(self):
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._tokenizer = self._tokenizer_load()
                    self._session = self._session_load()
        return self._session, self._tokenizer

    def _tokenizer_load(self):
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        except Exception as exc:  # tokenizers raises plain Exception on unreadable files
            raise ReaderUnavailable(f"cannot load tokenizer {TOKENIZER_PATH}", cause=exc) from exc
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    def _session_load(self):
        import onnxruntime as ort

        try:
            actual = _sha256(self.model_path)
        except OSError as exc:
            raise ReaderUnavailable(f"cannot read reader model {self.model_path}", cause=exc) from exc
        if actual != self.meta.sha256:
            raise ReaderUnavailable(f"reader model {self.model_path} has sha256 {actual}, expected "
                                    f"{self.meta.sha256}: the vendored file is damaged or was replaced")
        ort.disable_telemetry_events()
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            return ort.InferenceSession(str(self.model_path), sess_options=options,
                                        providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime has no common exception base
            raise ReaderUnavailable(f"cannot load reader model {self.model_path}", cause=exc) from exc

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Word pieces per text (the window budget's unit)."""
        _, tokenizer = self._load()
        return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]

    def read(self, question: str | Sequence[str], windows: Sequence[str]) -> list[Reading]:
        """One reading per window, in order; `question` is one question for all windows or one per window."""
        if not windows:
            return []
        session, tokenizer = self._load()
        started = time.perf_counter()
        pairs = encode_pairs(tokenizer, question, windows)
        try:
            start, end, logit = session.run(["start_logits", "end_logits", "answerable_logit"], pairs.inputs())
        except Exception as exc:
            raise ReaderUnavailable("onnxruntime failed to read a batch", cause=exc) from exc
        out = []
        for row in range(len(windows)):
            s, e, score = best_span(start[row], end[row], pairs.offsets[row])
            value = float(logit[row])
            out.append(Reading(probability=self.meta.probability(value), logit=value, span_start=s, span_end=e,
                               span_score=score))
        if self.timings is not None:
            self.timings.append(1000 * (time.perf_counter() - started))
        return out


_state: dict[str, ReaderModel] = {}
_state_lock = threading.Lock()


def reader_get() -> ReaderModel:
    """The process-wide reader (the model itself loads on the first read)."""
    if "reader" not in _state:
        with _state_lock:
            if "reader" not in _state:
                _state["reader"] = ReaderModel()
    return _state["reader"]


def reader_reset() -> None:
    with _state_lock:
        _state.clear()
