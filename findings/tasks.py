"""Celery tasks of the findings app. They take ids, re-fetch, call one service and are safe to run twice."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db.models import Exists, OuterRef

from knowledge.models import Chunk
from knowledge.resume import resume_range

from .models import ProjectionQuality
from .selectors import chunks_to_extract
from .services import ExtractionFailed, chunk_extract

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, soft_time_limit=60, time_limit=90)
def document_extract_task(document_id: int, force: bool = False) -> int:
    """Fan out one extraction task per chunk of the document (gone → nothing to do). Chunks the configured
    extractor already audited are skipped unless `force` (see chunks_to_extract)."""
    ids = chunks_to_extract(document_id=document_id, force=force)
    if not ids:
        logger.info("document %s: no chunks left to extract", document_id)
    for chunk_id in ids:
        chunk_extract_task.delay(chunk_id)
    return len(ids)


@shared_task(bind=True, acks_late=True, max_retries=None, default_retry_delay=20, soft_time_limit=240,
             time_limit=300)
def chunk_extract_task(self, chunk_id: int) -> dict:
    """Extract one chunk into claims. A malformed model answer is counted (ModelUsage.failures) and the chunk
    retried; nothing of a failed attempt was written, and a repeat of a finished chunk adds nothing."""
    limit = settings.FINDINGS_EXTRACT_MAX_RETRIES
    attempts = 0
    while True:
        try:
            result = chunk_extract(chunk_id=chunk_id)
        except ExtractionFailed as exc:
            if self.request.is_eager:
                # Inline mode has no broker to re-deliver a retry; retry here, then give up loudly.
                attempts += 1
                if attempts <= limit:
                    logger.warning("%s; retrying inline (%d/%d)", exc, attempts, limit)
                    continue
                logger.error("%s; giving up after %d retries", exc, limit)
                return {"chunk": chunk_id, "error": str(exc)}
            if self.request.retries >= limit:
                raise
            raise self.retry(exc=exc) from exc
        break
    if result is None:
        return {"chunk": chunk_id, "skipped": True}
    written = result.written
    return {"chunk": chunk_id, "proposed": result.proposed, "accepted": result.accepted,
            "verdicts": written.verdicts if written else {}}


@shared_task(acks_late=True, soft_time_limit=120, time_limit=150)
def extraction_resume_task() -> int:
    """Celery beat: queue again the extraction of recent chunks the configured extractor has not audited — their
    task message was lost (see knowledge/resume.py). At most 1,000 chunks a sweep."""
    if settings.FINDINGS_EXTRACTOR == "none":
        return 0
    oldest, newest = resume_range()
    done = ProjectionQuality.objects.filter(chunk=OuterRef("pk"), extractor=settings.FINDINGS_EXTRACTOR)
    ids = list(Chunk.objects.filter(document__ingested_at__gte=oldest, document__ingested_at__lt=newest)
               .exclude(Exists(done)).order_by("pk").values_list("pk", flat=True)[:1000])
    for chunk_id in ids:
        chunk_extract_task.delay(chunk_id)
    return len(ids)
