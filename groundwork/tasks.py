import logging
import uuid

from celery import shared_task
from django.utils.dateparse import parse_datetime

from .services import api_key_use_record

logger = logging.getLogger(__name__)


@shared_task(bind=True, max_retries=3, default_retry_delay=5, soft_time_limit=30, time_limit=60)
def api_key_use_record_task(self, api_key_id: int, request_id: str, used_at: str) -> bool:
    """Record one API key use. Idempotent by request id, so a re-delivery changes nothing."""
    when = parse_datetime(used_at)
    if when is None:
        logger.error("api_key_use_record_task: bad timestamp %r", used_at)
        return False
    return api_key_use_record(api_key_id=api_key_id, request_id=uuid.UUID(request_id), used_at=when)
