"""The Celery app. With CELERY_BROKER_URL unset, settings make every task run inline."""

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groundwork.settings")

app = Celery("groundwork")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Row-level security (groundwork/rls.py): a task acts for no request, on ids it was handed by code that
# already checked them; it runs in the named system scope `task:<name>` for exactly its own run.
_task_scopes: dict[str, tuple] = {}


@task_prerun.connect
def _task_scope_enter(task_id=None, task=None, **kwargs) -> None:
    from groundwork.rls import DatabaseScope, scope_set

    _task_scopes[task_id] = scope_set(DatabaseScope(system_reason=f"task:{getattr(task, 'name', 'unknown')}"))


@task_postrun.connect
def _task_scope_leave(task_id=None, **kwargs) -> None:
    from groundwork.rls import scope_reset

    tokens = _task_scopes.pop(task_id, None)
    if tokens is not None:
        scope_reset(tokens)
