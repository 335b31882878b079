"""Queue a Celery task by its registered name.

A task takes ids and calls one service, so every `tasks` module imports its app's `services`. A service that
queues follow-up work therefore must not import `tasks` back — not even inside a function: that is the
same circle, only hidden. Services name the task instead (`"findings.tasks.document_extract_task"`, the name
Celery registered it under), and it is looked up here when queued. `.delay()` on the task found keeps
everything Celery does for a direct call: the task's own options (retries, time limits, acks_late) and, with
CELERY_BROKER_URL unset, the inline (eager) run the settings ask for — which `app.send_task` would not do.
"""

from __future__ import annotations

from celery import Task
from django.db import transaction
from django.utils.module_loading import autodiscover_modules

from .celery import app as celery_app


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


def enqueue_on_commit(name: str, *args) -> None:
    """Queue the task once the current transaction commits, so the worker finds the rows it is handed
    (immediately when no transaction is open, as Django's on_commit does)."""
    task = task_by_name(name)

    def queue() -> None:
        task.delay(*args)

    queue.task_name = name  # what a test capturing on-commit callbacks can tell them apart by
    transaction.on_commit(queue)
