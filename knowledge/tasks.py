import logging

from celery import shared_task
from celery.signals import worker_process_init
from django.conf import settings

from .embedders.onnx import processes_sharing_set
from .embedding import chunks_embed
from .resume import work_resume
from .services.statistics import corpus_statistics_count
from .uploads import upload_batch_process

logger = logging.getLogger(__name__)


@worker_process_init.connect
def _embed_on_a_share_of_the_cores(**_kwargs) -> None:
    """A prefork worker runs CELERY_WORKER_CONCURRENCY processes side by side: each embeds on its share of the
    cores (EMBEDDING_ONNX_THREADS, when set, still wins)."""
    processes_sharing_set(settings.CELERY_WORKER_CONCURRENCY)


@shared_task(bind=True, max_retries=5, default_retry_delay=30, soft_time_limit=600, time_limit=660,
             acks_late=True)
def chunks_embed_task(self, document_ids: list[int]) -> dict:
    """Embed the chunks of these documents that have no vector yet. Safe to run twice: embedded
    chunks are skipped; deleted documents simply have no chunks left."""
    from .embedders import EmbeddingError

    try:
        report = chunks_embed(document_ids=document_ids)
    except EmbeddingError as exc:
        if self.request.is_eager:
            # Inline mode: the ingest already committed and chunks are full-text searchable; a later
            # `manage.py reembed` fills the gap. Failing the caller's request would lose nothing but help no one.
            logger.warning("embedding failed inline for documents %s: %s", document_ids[:5], exc)
            return {"error": str(exc)}
        logger.warning("embedding failed for documents %s: %s; retrying", document_ids[:5], exc)
        raise self.retry(exc=exc) from exc
    return report.__dict__


@shared_task(bind=True, max_retries=3, default_retry_delay=30, soft_time_limit=1800, time_limit=1860,
             acks_late=True)
def upload_batch_process_task(self, batch_id: int) -> dict:
    """Parse and ingest an upload batch's pending items. Takes the id and re-fetches; safe to run twice
    (processed items are skipped, ingestion is idempotent by content hash)."""
    return upload_batch_process(batch_id=batch_id)


@shared_task(acks_late=True, soft_time_limit=120, time_limit=150)
def work_resume_task() -> dict:
    """Celery beat: queue again ingestion and embedding whose task message was lost (knowledge/resume.py)."""
    return work_resume()


@shared_task(acks_late=True, soft_time_limit=600, time_limit=660)
def corpus_statistics_task(tenant_id: int) -> dict:
    """Count a tenant's word statistics afresh (queued by knowledge.retrieval.statistics when its shared chunk count
    has moved). Safe to run twice: the last count replaces the one before."""
    row = corpus_statistics_count(tenant_id)
    return {"tenant": tenant_id, "chunks": row.chunks, "sampled": row.sampled, "lexemes": len(row.lexemes)}
