"""Re-queue work whose task message was lost.

acks_late and the visibility timeout bring back a task whose worker died while running it. They cannot bring
back a message the broker handed out that never reached the worker's bookkeeping: Redis pops a message
(BRPOP) before the worker records it as unacknowledged, so a worker killed in between loses it
(celery/kombu#305). Nor a message that was never sent: a process killed between a commit and its after-commit
`.delay()`. The effects tell what is missing, so a periodic sweep (`work_resume_task`, run by Celery beat)
queues the work again for recent rows that lack them; the tasks are idempotent, so one queued twice costs a
no-op. Only rows of the last WORK_RESUME_WINDOW_S, older than WORK_RESUME_AFTER_S (so work still in a queue is
not doubled), and at most `limit` per kind a sweep.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from groundwork.task_queue import enqueue

from .models import Chunk, UploadBatch

EMBED_TASK_DOCUMENTS = 50  # documents per re-queued embedding task


def resume_range() -> tuple[datetime, datetime]:
    """(oldest, newest) creation or ingest time of rows a sweep looks at."""
    now = timezone.now()
    return now - timedelta(seconds=settings.WORK_RESUME_WINDOW_S), now - timedelta(seconds=settings.WORK_RESUME_AFTER_S)


def work_resume(*, limit: int = 1000) -> dict[str, int]:
    """Queue again unfinished upload batches and the embedding of chunks without a vector."""
    oldest, newest = resume_range()
    batches = list(UploadBatch.objects.filter(status__in=[UploadBatch.Status.PENDING, UploadBatch.Status.PROCESSING],
                                              created_at__gte=oldest, created_at__lt=newest)
                   .order_by("pk").values_list("pk", flat=True)[:limit])
    for batch_id in batches:
        enqueue("knowledge.tasks.upload_batch_process_task", batch_id)
    documents: list[int] = []
    if settings.EMBEDDER != "none":
        documents = list(Chunk.objects.filter(embedding__isnull=True, document__ingested_at__gte=oldest,
                                              document__ingested_at__lt=newest)
                         .order_by("document_id").values_list("document_id", flat=True).distinct()[:limit])
        for start in range(0, len(documents), EMBED_TASK_DOCUMENTS):
            enqueue("knowledge.tasks.chunks_embed_task", documents[start:start + EMBED_TASK_DOCUMENTS])
    return {"upload_batches": len(batches), "documents_to_embed": len(documents)}
