"""A task sent through Redis runs on a real Celery worker, and its effect lands exactly once even when
the same message is delivered twice."""

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from groundwork import celery_app
from groundwork.models import ApiKeyUse
from groundwork.services import api_key_issue_service
from groundwork.tasks import api_key_use_record_task

BROKER = os.environ.get("CELERY_TEST_BROKER_URL", "")


def _broker_up() -> bool:
    if not BROKER:
        return False
    parts = urlsplit(BROKER)
    try:
        socket.create_connection((parts.hostname, parts.port or 6379), timeout=0.5).close()
        return True
    except OSError:
        return False


def _database_url() -> str:
    p = connection.settings_dict
    if p["HOST"].startswith("/"):
        return f"postgresql://{p['USER']}:{p['PASSWORD']}@/{p['NAME']}?host={p['HOST']}"
    return f"postgresql://{p['USER']}:{p['PASSWORD']}@{p['HOST']}:{p['PORT'] or 5432}/{p['NAME']}"


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_task_runs_on_a_real_worker_exactly_once(world):
    if not _broker_up():
        pytest.skip("no Redis broker (make test starts one)")
    key = api_key_issue_service(tenant=world.acme, name="worker-test").api_key
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DATABASE_URL": _database_url(), "CELERY_BROKER_URL": BROKER}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "groundwork", "worker", "--pool=solo", "-Q", queue,
         "--without-mingle", "--without-gossip", "--loglevel=WARNING"],
        cwd=Path(settings.BASE_DIR), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    request_id, marker = uuid.uuid4(), uuid.uuid4()
    celery_app.conf.task_always_eager = False
    try:
        with celery_app.connection_for_write(BROKER) as conn:
            now = timezone.now().isoformat()
            for rid in (request_id, request_id, marker):  # the same message twice, then a marker
                api_key_use_record_task.apply_async((key.pk, str(rid), now), connection=conn, queue=queue)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not ApiKeyUse.objects.filter(request_id=marker).exists():
            assert worker.poll() is None, worker.stderr.read()
            time.sleep(0.3)
        assert ApiKeyUse.objects.filter(request_id=marker).exists(), "the worker never ran the tasks"
        assert ApiKeyUse.objects.filter(request_id=request_id).count() == 1
        key.refresh_from_db()
        assert key.last_used_at is not None
    finally:
        celery_app.conf.task_always_eager = True
        worker.terminate()
        worker.wait(timeout=30)
