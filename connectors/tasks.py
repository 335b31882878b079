from celery import shared_task

from .services import sync_runs_requeue, sync_scheduled_start
from .sync import sync_run_execute

# A scheduled tick that finds the source busy with its other mode's run tries again every minute, for at most
# about as long as a run may last (sync_run_task's hard limit, 61 minutes).
SCHEDULED_WAIT_S = 60
SCHEDULED_WAIT_RETRIES = 61


@shared_task(acks_late=True, soft_time_limit=3600, time_limit=3660)
def sync_run_task(run_id: int) -> str:
    """Execute one queued sync run. Takes the id and re-fetches; a finished run or one another worker holds the
    source's lock for is skipped, so a re-delivery is harmless."""
    return sync_run_execute(run_id=run_id)


@shared_task(bind=True, acks_late=True, soft_time_limit=60, time_limit=90, max_retries=SCHEDULED_WAIT_RETRIES)
def sync_scheduled_task(self, connector_id: int, mode: str) -> str:
    """Celery beat, from the connector's PeriodicTask `connector:<id>:<mode>`: start a scheduled run of that
    mode unless one is active or just ran (connectors.services.sync_scheduled_start). Safe to run twice."""
    outcome = sync_scheduled_start(connector_id=connector_id, mode=mode)
    if outcome == "waiting" and self.request.retries < self.max_retries:
        raise self.retry(countdown=SCHEDULED_WAIT_S)
    return outcome


@shared_task(acks_late=True, soft_time_limit=120, time_limit=150)
def sync_runs_requeue_task() -> list[int]:
    """Celery beat (settings.CELERY_BEAT_SCHEDULE): queue again runs whose task was lost."""
    return sync_runs_requeue()
