"""Queue a Celery task by its registered name.

A task takes ids and calls one service, so every `tasks` module imports its app's `services`. A service that
queues follow-up work therefore must not import `tasks` back — not even inside a function: that is the
same circle, only hidden. Services name the task instead (`"findings.tasks.document_extract_task"`, the name
Celery registered it under), and it is looked up here when queued. `.delay()` on the task found keeps
everything Celery does for a direct call: the task's own options (retries, time limits, acks_late) and, with
CELERY_BROKER_URL unset, the inline (eager) run the settings ask for — which `app.send_task` would not do.

Inline is wrong for work a request must not wait for (parsing an upload, a connector's sync): without a broker
such a task, queued with `off_request=True`, runs on a background thread of this process after the request has
answered (settings.TASKS_OFF_REQUEST; the test suite turns it off to see outcomes in its own transaction).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait

from celery import Task
from django.conf import settings
from django.db import connections, transaction
from django.utils.module_loading import autodiscover_modules

from .celery import app as celery_app

logger = logging.getLogger(__name__)


def task_by_name(name: str) -> Task:
    """The registered task called `name`. Raises LookupError for a name no app registers: a misspelt task
    must fail in the caller's request, not silently after its commit."""
    if name not in celery_app.tasks:
        # A worker imports every app's `tasks` module when it starts; a web process imports one only when
        # something asks for it. Django's own lookup (as the admin does for `admin` modules) loads them all.
        autodiscover_modules("tasks")
    try:
        return celery_app.tasks[name]
    except KeyError:
        raise LookupError(f"no Celery task is registered as {name!r}") from None


def enqueue(name: str, *args) -> None:
    """Queue the task now (for callers outside a transaction, such as the periodic sweeps)."""
    task_by_name(name).delay(*args)


def enqueue_on_commit(name: str, *args, off_request: bool = False) -> None:
    """Queue the task once the current transaction commits, so the worker finds the rows it is handed
    (immediately when no transaction is open, as Django's on_commit does). `off_request`: without a broker, run it
    on a background thread rather than inline (see the module's docstring)."""
    task = task_by_name(name)

    def queue() -> None:
        if off_request and celery_app.conf.task_always_eager and settings.TASKS_OFF_REQUEST:
            background_run(task, args)
        else:
            task.delay(*args)

    queue.task_name = name  # what a test capturing on-commit callbacks can tell them apart by
    transaction.on_commit(queue)


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_pending: set[Future] = set()


def _run(task: Task, args: tuple) -> None:
    try:
        # apply() runs it as an eager call would: Celery's signals (the task's database scope) included.
        task.apply(args=args, throw=True)
    except Exception:  # a thread has no caller to raise to: the task's own rows record its outcome
        logger.exception("background task %s%r failed", task.name, args)
    finally:
        connections.close_all()  # this thread's connections; the next task on it opens its own


def background_run(task: Task, args: tuple) -> Future:
    """Run the task eagerly on one of this process's background threads (created on first use). Work still
    queued when the process exits is run before it does (the executor joins its threads)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=settings.TASKS_OFF_REQUEST_THREADS,
                                       thread_name_prefix="task-off-request")
        future = _pool.submit(_run, task, args)
        _pending.add(future)
    future.add_done_callback(_pending.discard)
    return future


def background_wait(timeout: float) -> bool:
    """Wait until the background tasks queued so far have run (a test, a bench); False if some still run."""
    with _pool_lock:
        running = list(_pending)
    return not wait(running, timeout=timeout).not_done
