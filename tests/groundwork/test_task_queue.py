"""Queueing a task by its name (groundwork/task_queue.py): what services use instead of importing `tasks`."""

import os
import subprocess
import sys

import pytest
from django.db import transaction

from groundwork.task_queue import enqueue, enqueue_on_commit, task_by_name


@pytest.fixture
def verify_calls(monkeypatch):
    calls = []
    monkeypatch.setattr(task_by_name("chat.answer_verify"), "delay", lambda *args: calls.append(args))
    return calls


def test_a_task_is_found_by_the_name_celery_registered():
    from chat.tasks import answer_verify_task
    from findings.tasks import document_extract_task

    # (shared_task hands the module a proxy of the registered task)
    assert task_by_name("chat.answer_verify") is answer_verify_task._get_current_object()
    assert task_by_name("findings.tasks.document_extract_task") is document_extract_task._get_current_object()


def test_an_unknown_name_fails_at_the_call_not_after_the_commit():
    with pytest.raises(LookupError, match="findings.tasks.no_such_task"):
        enqueue_on_commit("findings.tasks.no_such_task", 1)


def test_a_fresh_process_finds_tasks_whose_module_nobody_imported_yet():
    """A web process has imported no `tasks` module when a service first queues one."""
    code = ("import django, sys; django.setup(); "
            "assert 'findings.tasks' not in sys.modules; "
            "from groundwork.task_queue import task_by_name; "
            "print(task_by_name('findings.tasks.document_extract_task').name)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "DJANGO_SETTINGS_MODULE": "groundwork.settings"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "findings.tasks.document_extract_task"


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_waits_for_the_commit_and_a_rollback_drops_it(verify_calls):
    with transaction.atomic():
        enqueue_on_commit("chat.answer_verify", 7)
        assert verify_calls == []  # the worker must find committed rows
        [callback] = transaction.get_connection().run_on_commit[-1:]
        assert callback[1].task_name == "chat.answer_verify"  # how tests capturing callbacks tell them apart
    assert verify_calls == [(7,)]
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue_on_commit("chat.answer_verify", 8)
        raise RuntimeError("rolled back")
    assert verify_calls == [(7,)]


def test_enqueue_queues_now(verify_calls):
    enqueue("chat.answer_verify", 9)
    assert verify_calls == [(9,)]


@pytest.mark.django_db
def test_without_a_broker_the_task_runs_inline(monkeypatch):
    """CELERY_BROKER_URL unset → eager: `.delay()` of the task found runs it here (send_task would not)."""
    from findings.tasks import document_extract_task

    ran = []
    monkeypatch.setattr(document_extract_task, "run", lambda document_id, force=False: ran.append(document_id) or 0)
    enqueue("findings.tasks.document_extract_task", 123)
    assert ran == [123]


def test_with_a_broker_the_task_is_sent_not_run(monkeypatch):
    """CELERY_BROKER_URL set → not eager: the message goes to the broker (here the in-memory transport) with
    the task's registered name, for a worker to run; nothing runs in the caller."""
    from groundwork import celery_app

    task = task_by_name("findings.tasks.document_extract_task")
    monkeypatch.setattr(task, "run", lambda *args, **kwargs: pytest.fail("ran in the caller"))
    celery_app.conf.task_always_eager = False  # (tests/conftest.py sets it for the session)
    try:
        with celery_app.connection_for_read() as conn:
            # A message an earlier test left on the in-memory transport would be read first.
            conn.SimpleQueue(celery_app.conf.task_default_queue).clear()
        enqueue("findings.tasks.document_extract_task", 123)
        with celery_app.connection_for_read() as conn:
            message = conn.SimpleQueue(celery_app.conf.task_default_queue).get(timeout=5)
            message.ack()
    finally:
        celery_app.conf.task_always_eager = True
    assert message.headers["task"] == "findings.tasks.document_extract_task"
    assert message.payload[0] == [123]


@pytest.mark.django_db
def test_off_request_without_a_broker_runs_on_a_background_thread(monkeypatch, settings,
                                                                   django_capture_on_commit_callbacks):
    """An upload's parsing must not run inside the request: without a broker it goes to a background thread and
    the caller carries on at once."""
    import threading

    from findings.tasks import document_extract_task
    from groundwork.task_queue import background_wait

    settings.TASKS_OFF_REQUEST = True
    release, ran = threading.Event(), []

    def run(document_id, force=False):
        release.wait(30)
        ran.append((document_id, threading.current_thread().name))
        return 0

    monkeypatch.setattr(document_extract_task, "run", run)
    with django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit("findings.tasks.document_extract_task", 5, off_request=True)
    assert ran == []  # the caller did not wait for it
    release.set()
    assert background_wait(30)
    [(document_id, thread)] = ran
    assert document_id == 5 and thread.startswith("task-off-request")


@pytest.mark.django_db
def test_off_request_runs_inline_when_turned_off(monkeypatch, settings, django_capture_on_commit_callbacks):
    from findings.tasks import document_extract_task

    settings.TASKS_OFF_REQUEST = False
    ran = []
    monkeypatch.setattr(document_extract_task, "run", lambda document_id, force=False: ran.append(document_id) or 0)
    with django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit("findings.tasks.document_extract_task", 6, off_request=True)
    assert ran == [6]
