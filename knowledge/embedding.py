"""Embedding chunks, and the guards around it.

Embedding calls run outside any database transaction (a slow model must not hold row locks), in
batches, from a Celery task queued after the ingest commits. Guards:
- the embedder's dimension must equal the vector column's; otherwise a configuration fault is recorded
  once (admin and /healthz show it) and chunks stay full-text searchable — nothing fails per document;
- all-zero (or non-finite) vectors are skipped, never stored: they would match everything equally.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from .models import Chunk, ConfigurationFault, EmbeddingSpace
from .sql import chunk_embeddings_write, index_dimension_get

logger = logging.getLogger(__name__)

DIMENSION_FAULT = "embedding_dimension_mismatch"


def fault_report(code: str, message: str) -> bool:
    """Record a configuration fault; True when it is new (the caller logs it once)."""
    updated = ConfigurationFault.objects.filter(code=code, resolved_at__isnull=True).update(
        occurrences=F("occurrences") + 1, last_seen=timezone.now(), message=message
    )
    if updated:
        return False
    try:
        with transaction.atomic():
            ConfigurationFault.objects.create(code=code, message=message)
    except IntegrityError:
        return False  # another worker reported it first
    logger.error("configuration fault %s: %s", code, message)
    return True


def fault_resolve(code: str) -> None:
    ConfigurationFault.objects.filter(code=code, resolved_at__isnull=True).update(resolved_at=timezone.now())


def faults_open() -> list[ConfigurationFault]:
    return list(ConfigurationFault.objects.filter(resolved_at__isnull=True))


def space_activate(*, model_id: str, dimension: int) -> EmbeddingSpace:
    """The active space for this embedder, created on first use; exactly one space is active."""
    space = EmbeddingSpace.objects.filter(model_id=model_id, dimension=dimension).first()
    if space is not None and space.is_active:
        return space
    with transaction.atomic():
        EmbeddingSpace.objects.filter(is_active=True).exclude(model_id=model_id, dimension=dimension).update(
            is_active=False
        )
        space, _ = EmbeddingSpace.objects.get_or_create(model_id=model_id, dimension=dimension)
        if not space.is_active:
            space.is_active = True
            space.save(update_fields=["is_active"])
    return space


def active_space() -> EmbeddingSpace | None:
    return EmbeddingSpace.objects.filter(is_active=True).first()


def dimension_problem(embedder) -> str | None:
    """A message when the embedder cannot write into the index as built, else None."""
    index_dim = index_dimension_get()
    if embedder.dimension != index_dim:
        return (f"embedder {embedder.model_id} produces {embedder.dimension}-d vectors but the index holds "
                f"{index_dim}-d vectors; set MODEL_EMBEDDING_DIM={embedder.dimension} and run "
                f"`manage.py reembed --dimension {embedder.dimension}`, or use a {index_dim}-d model. "
                "Chunks stay full-text searchable meanwhile.")
    return None


@dataclass
class EmbedReport:
    embedded: int = 0
    skipped_zero: int = 0
    skipped_dimension: int = 0
    faulted: bool = False


def _vector_problem(vector: Sequence[float], dimension: int) -> str | None:
    from .embedders import vector_problem

    return vector_problem(vector, dimension)


def chunks_embed(*, document_ids: Sequence[int] | None = None, batch_size: int | None = None,
                 progress=None) -> EmbedReport:
    """Embed every chunk of these documents (all documents when None) that has no vector yet."""
    from .embedders import embedder_get

    report = EmbedReport()
    embedder = embedder_get()
    if embedder is None:
        return report
    problem = dimension_problem(embedder)
    if problem:
        fault_report(DIMENSION_FAULT, problem)
        report.faulted = True
        return report
    fault_resolve(DIMENSION_FAULT)
    space = space_activate(model_id=embedder.model_id, dimension=embedder.dimension)
    batch_size = batch_size or settings.EMBEDDING_BATCH_SIZE
    pending = Chunk.objects.filter(embedding__isnull=True)
    if document_ids is not None:
        pending = pending.filter(document_id__in=list(document_ids))
    last_id = 0
    while True:
        # Read a batch (autocommit, no transaction held), embed outside the database, write in one UPDATE.
        batch = pending.filter(pk__gt=last_id).order_by("pk").values_list("pk", "heading_path", "text")
        rows = list(batch[:batch_size])
        if not rows:
            break
        last_id = rows[-1][0]
        vectors = embedder.embed_documents([embedding_text(heading, text) for _, heading, text in rows])
        keep_ids, keep_vectors = [], []
        for (pk, _, _), vector in zip(rows, vectors, strict=True):
            issue = _vector_problem(vector, embedder.dimension)
            if issue == "zero_vector" or issue == "not_finite":
                report.skipped_zero += 1
                continue
            if issue == "wrong_dimension":
                report.skipped_dimension += 1
                if fault_report(DIMENSION_FAULT, f"embedder {embedder.model_id} returned a {len(vector)}-d vector; "
                                f"the index holds {embedder.dimension}-d vectors"):
                    report.faulted = True
                continue
            keep_ids.append(pk)
            keep_vectors.append(vector)
        report.embedded += chunk_embeddings_write(space_id=space.pk, ids=keep_ids, vectors=keep_vectors)
        if progress is not None:
            progress(len(rows))
    return report


def embedding_text(heading_path: str, text: str) -> str:
    """What the embedder sees: the heading path gives a chunk its document's context."""
    return f"{heading_path}\n{text}" if heading_path else text


_probe_lock = threading.Lock()
_probe_result: dict | None = None


def semantic_probe(*, refresh: bool = False) -> dict:
    """Embed a query through the same path a real query takes, once per process, and record whether
    semantic grounding is active. Logged once; shown on /healthz."""
    global _probe_result
    with _probe_lock:
        if _probe_result is not None and not refresh:
            return _probe_result
        from .embedders import embedder_get

        result: dict
        try:
            embedder = embedder_get()
            if embedder is None:
                result = {"ok": True, "semantic": "inactive", "reason": "no embedder configured (EMBEDDER=none)"}
            else:
                vector = embedder.embed_query("groundwork start-up probe: is semantic search available?")
                index_dim = index_dimension_get()
                issue = _vector_problem(vector, index_dim)
                if issue:
                    result = {"ok": False, "semantic": "inactive", "model": embedder.model_id,
                              "reason": f"probe vector problem: {issue} (index dimension {index_dim})"}
                else:
                    result = {"ok": True, "semantic": "active", "model": embedder.model_id, "dimension": index_dim}
        except Exception as exc:  # the probe reports; it never stops the process
            result = {"ok": False, "semantic": "inactive", "reason": f"{type(exc).__name__}: {exc}"[:300]}
        log = logger.info if result["semantic"] == "active" else logger.warning
        log("semantic grounding %s (%s)", result["semantic"], result.get("model") or result.get("reason"))
        _probe_result = result
        return result


def embedder_health() -> dict:
    status = dict(semantic_probe())
    faults = faults_open()
    if faults:
        status["ok"] = False
        status["faults"] = [{"code": f.code, "message": f.message, "occurrences": f.occurrences} for f in faults]
    return status
