from celery import shared_task

from .services import sync_due_start, sync_runs_requeue
from .sync import sync_run_execute


@shared_task(acks_late=True, soft_time_limit=3600, time_limit=3660)
def sync_run_task(run_id: int) -> str:
    """Execute one queued sync run. Takes the id and re-fetches; a finished run or one another worker holds the
    source's lock for is skipped, so a re-delivery is harmless."""
    return sync_run_execute(run_id=run_id)


@shared_task(acks_late=True, soft_time_limit=120, time_limit=150)
def sync_schedule_task() -> dict:
    """Celery beat: queue again runs whose task was lost, then the runs whose per-source interval has passed
    (connectors.services)."""
    return {"requeued": sync_runs_requeue(), "queued": sync_due_start()}
