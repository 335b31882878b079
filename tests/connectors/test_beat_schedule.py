"""Connector schedules through django-celery-beat: every path that changes a connector (API, Manage page, admin,
deleting its source) keeps one PeriodicTask per scheduled mode in step; the beat scheduler sees them and when
they are due; the scheduled task starts at most one run per source and is safe to run twice; another tenant's
admin can neither see nor change a schedule.
"""

from __future__ import annotations

import importlib
import json
from datetime import timedelta

import pytest
from celery.exceptions import Retry
from django.apps import apps as django_apps
from django.contrib import admin
from django.core.management import call_command
from django.test import Client
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django_celery_beat.models import PeriodicTask, PeriodicTasks
from django_celery_beat.schedulers import DatabaseScheduler

from connectors import tasks  # registers the tasks with the Celery app beat dispatches through
from connectors.models import Connector, SyncRun
from connectors.services import sync_run_start
from connectors.sync import sync_run_execute
from groundwork import celery_app
from knowledge.models import Source

from .conftest import slack_export

pytestmark = pytest.mark.django_db
SETTINGS = {"path": "slack", "workspace_url": "https://acme.slack.test"}


def _api(name: str, **kwargs) -> str:
    return reverse(f"api:{name}", kwargs=kwargs)


@pytest.fixture
def bare_source(world, import_root) -> Source:
    """Acme's Slack export as a source with no connector yet."""
    slack_export(import_root / "acme" / "slack")
    return Source.objects.create(tenant=world.acme, kind="chat", name="Acme Slack")


def _put(client, source: Source, **body):
    response = client.put(_api("source-connector", source_id=source.pk), body, format="json")
    assert response.status_code == 200, response.content
    return Connector.objects.get(source=source)


def _rows(connector: Connector) -> dict[str, PeriodicTask]:
    """{mode: row} of the connector's beat rows."""
    found = PeriodicTask.objects.select_related("interval").filter(name__startswith=f"connector:{connector.pk}:")
    return {row.name.rsplit(":", 1)[1]: row for row in found}


def test_creating_a_connector_through_the_api_writes_one_periodic_task_per_mode(world, bare_source):
    connector = _put(world.client(world.admin), bare_source, kind="slack_export", settings=SETTINGS,
                     content_interval_minutes=60, permissions_interval_minutes=15)
    rows = _rows(connector)
    assert set(rows) == {"content", "permissions"}
    for mode, minutes in (("content", 60), ("permissions", 15)):
        row = rows[mode]
        assert row.name == f"connector:{connector.pk}:{mode}"
        assert row.task == "connectors.tasks.sync_scheduled_task"
        assert json.loads(row.args) == [connector.pk, mode] and json.loads(row.kwargs) == {}
        assert (row.interval.every, row.interval.period) == (minutes, "minutes")
        assert row.enabled and row.crontab_id is None and not row.one_off
        # Never ran: beat counts from an interval ago, so the first run is due at its next tick.
        assert timezone.now() - row.last_run_at >= timedelta(minutes=minutes)


def test_a_connector_without_intervals_has_no_schedule(world, bare_source):
    connector = _put(world.client(world.admin), bare_source, kind="slack_export", settings=SETTINGS)
    assert _rows(connector) == {}


def test_changing_an_interval_updates_its_row_and_clearing_it_removes_the_row(world, bare_source):
    client = world.client(world.admin)
    connector = _put(client, bare_source, kind="slack_export", settings=SETTINGS, content_interval_minutes=60,
                     permissions_interval_minutes=15)
    before = _rows(connector)
    _put(client, bare_source, content_interval_minutes=30)
    after = _rows(connector)
    assert after["content"].pk == before["content"].pk and after["content"].interval.every == 30
    assert after["content"].last_run_at == before["content"].last_run_at  # beat's own count is kept
    assert after["permissions"].date_changed == before["permissions"].date_changed  # untouched
    # A save that changes nothing writes no row, so beat is not made to re-read its whole schedule.
    changed_at = PeriodicTasks.last_change()
    _put(client, bare_source, content_interval_minutes=30)
    assert PeriodicTasks.last_change() == changed_at
    _put(client, bare_source, permissions_interval_minutes=None)
    assert set(_rows(connector)) == {"content"}
    # The Manage page goes through the same service.
    page = Client()
    page.force_login(world.admin)
    response = page.post(reverse("pages:connectors", kwargs={"tenant_slug": "acme"}), {
        "action": "configure", "source_id": bare_source.pk, "kind": "slack_export", "path": "slack",
        "content_interval": "", "permissions_interval": "45", "enabled": "on"})
    assert response.status_code == 302
    rows = _rows(connector)
    assert set(rows) == {"permissions"} and rows["permissions"].interval.every == 45


def test_disabling_disables_the_rows_and_enabling_counts_from_the_last_run(world, bare_source):
    client = world.client(world.admin)
    connector = _put(client, bare_source, kind="slack_export", settings=SETTINGS, content_interval_minutes=60,
                     permissions_interval_minutes=15)
    _put(client, bare_source, enabled=False)
    rows = _rows(connector)
    assert {mode: row.enabled for mode, row in rows.items()} == {"content": False, "permissions": False}
    assert not PeriodicTask.objects.enabled().filter(pk__in=[r.pk for r in rows.values()]).exists()
    run = SyncRun.objects.create(tenant=world.acme, connector=connector, mode="content", status="succeeded")
    SyncRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(minutes=20))
    _put(client, bare_source, enabled=True)
    rows = _rows(connector)
    assert rows["content"].enabled and rows["permissions"].enabled
    assert rows["content"].last_run_at == SyncRun.objects.get(pk=run.pk).created_at


def test_deleting_the_source_or_the_connector_removes_its_rows(world, bare_source, import_root):
    client = world.client(world.admin)
    connector = _put(client, bare_source, kind="slack_export", settings=SETTINGS, content_interval_minutes=60)
    other = Source.objects.create(tenant=world.acme, kind="chat", name="Second")
    kept = _put(client, other, kind="slack_export", settings=SETTINGS, content_interval_minutes=60)
    assert client.delete(_api("source", source_id=bare_source.pk)).status_code == 204
    assert _rows(connector) == {} and set(_rows(kept)) == {"content"}
    # The admin's delete goes through the service too (the source stays).
    page = Client()
    page.force_login(world.admin)
    response = page.post(reverse("admin:connectors_connector_delete", args=[kept.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert not Connector.objects.filter(pk=kept.pk).exists() and _rows(kept) == {}
    assert Source.objects.filter(pk=other.pk).exists()


def test_the_rebuild_command_writes_missing_rows_and_removes_orphans(world, bare_source):
    client = world.client(world.admin)
    connector = _put(client, bare_source, kind="slack_export", settings=SETTINGS, content_interval_minutes=60,
                     permissions_interval_minutes=15)
    other = Source.objects.create(tenant=world.acme, kind="chat", name="Second")
    gone = _put(client, other, kind="slack_export", settings=SETTINGS, content_interval_minutes=5)
    # Around the services: a connector deleted by a cascade (its tenant's deletion), a row deleted by hand.
    Connector.objects.filter(pk=gone.pk).delete()
    PeriodicTask.objects.filter(name=f"connector:{connector.pk}:permissions").delete()
    call_command("connectors_schedule_sync", stdout=(out := _Out()))
    assert "1 orphaned" in out.text
    assert _rows(gone) == {} and set(_rows(connector)) == {"content", "permissions"}


class _Out:
    text = ""

    def write(self, chunk: str) -> None:
        self.text += chunk


def test_the_upgrade_migration_writes_rows_for_existing_connectors(world, bare_source):
    connector = Connector.objects.create(tenant=world.acme, source=bare_source, kind="slack_export",
                                         settings=SETTINGS, content_interval_minutes=60, enabled=False)
    enabled = Connector.objects.create(tenant=world.acme, kind="folder", settings={"path": "docs"},
                                       source=Source.objects.create(tenant=world.acme, kind="wiki", name="Docs"),
                                       permissions_interval_minutes=10)
    run = SyncRun.objects.create(tenant=world.acme, connector=enabled, mode="permissions", status="succeeded")
    assert _rows(connector) == {} and _rows(enabled) == {}
    importlib.import_module("connectors.migrations.0004_beat_schedules").schedules_write(django_apps, None)
    assert {m: (r.enabled, r.interval.every) for m, r in _rows(connector).items()} == {"content": (False, 60)}
    [(mode, row)] = _rows(enabled).items()
    assert (mode, row.enabled, row.last_run_at, json.loads(row.args)) == (
        "permissions", True, run.created_at, [enabled.pk, "permissions"])


def test_the_scheduled_task_starts_one_run_at_a_time_and_is_safe_to_run_twice(world, bare_source):
    client = world.client(world.admin)
    connector = _put(client, bare_source, kind="slack_export", settings=SETTINGS, content_interval_minutes=60,
                     permissions_interval_minutes=60)
    manual = sync_run_start(authority=world.authority(world.admin), source=bare_source)  # content, queued
    assert tasks.sync_scheduled_task.delay(connector.pk, "content").get() == "busy"
    # The other mode waits for the source: the task retries (raised inline here) instead of starting a run.
    with pytest.raises(Retry):
        tasks.sync_scheduled_task.delay(connector.pk, "permissions")
    assert SyncRun.objects.filter(connector=connector).count() == 1
    assert sync_run_execute(run_id=manual.pk) == "succeeded"
    # The content run just finished: a tick now (a re-delivery, a late retry) starts nothing.
    assert tasks.sync_scheduled_task.delay(connector.pk, "content").get() == "recent"
    assert tasks.sync_scheduled_task.delay(connector.pk, "permissions").get() == "queued"
    assert tasks.sync_scheduled_task.delay(connector.pk, "permissions").get() == "busy"
    scheduled = SyncRun.objects.get(connector=connector, mode="permissions")
    assert (scheduled.trigger, scheduled.status) == ("schedule", "queued")
    sync_run_execute(run_id=scheduled.pk)
    # Half an interval later the content schedule starts a run again.
    SyncRun.objects.filter(pk=manual.pk).update(created_at=timezone.now() - timedelta(minutes=31))
    assert tasks.sync_scheduled_task.delay(connector.pk, "content").get() == "queued"
    assert SyncRun.objects.filter(connector=connector).count() == 3


def test_a_tick_for_a_changed_or_deleted_connector_starts_nothing_and_heals_its_rows(world, bare_source):
    client = world.client(world.admin)
    connector = _put(client, bare_source, kind="slack_export", settings=SETTINGS, content_interval_minutes=60)
    Connector.objects.filter(pk=connector.pk).update(enabled=False)  # as if beat sent the tick just before
    assert tasks.sync_scheduled_task.delay(connector.pk, "content").get() == "unscheduled"
    assert _rows(connector)["content"].enabled is False
    Connector.objects.filter(pk=connector.pk).delete()  # a cascade the services did not see
    assert tasks.sync_scheduled_task.delay(connector.pk, "content").get() == "unscheduled"
    assert _rows(connector) == {} and not SyncRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_beat_sees_the_schedules_and_a_due_tick_runs_a_sync_end_to_end(world, bare_source):
    """The scheduler as `celery beat -S django` runs it, on committed rows; its tick runs inline here (no broker
    in tests), so the run it queues after commit executes too."""
    client = world.client(world.admin)
    connector = _put(client, bare_source, kind="slack_export", settings=SETTINGS, content_interval_minutes=60,
                     permissions_interval_minutes=120)
    SyncRun.objects.create(tenant=world.acme, connector=connector, mode="permissions", status="succeeded",
                           trigger="manual")
    _put(client, bare_source, permissions_interval_minutes=None)
    _put(client, bare_source, permissions_interval_minutes=120)  # re-created: counts from that run
    scheduler = DatabaseScheduler(app=celery_app)
    entries = scheduler.schedule
    content = entries[f"connector:{connector.pk}:content"]
    permissions = entries[f"connector:{connector.pk}:permissions"]
    assert "connectors-sync-runs-requeue" in entries  # CELERY_BEAT_SCHEDULE, written into the table at start
    assert entries["connectors-sync-runs-requeue"].task == "connectors.tasks.sync_runs_requeue_task"
    assert (content.task, content.args) == ("connectors.tasks.sync_scheduled_task", [connector.pk, "content"])
    assert content.is_due().is_due
    due, next_in = permissions.is_due()
    assert not due and 119 * 60 < next_in <= 120 * 60
    scheduler.apply_async(content)  # what beat does with a due entry
    run = SyncRun.objects.get(connector=connector, mode="content")
    assert (run.trigger, run.status, run.added) == ("schedule", "succeeded", 4)
    scheduler.sync()
    row = PeriodicTask.objects.get(name=f"connector:{connector.pk}:content")
    assert row.total_run_count == 1 and timezone.now() - row.last_run_at < timedelta(minutes=1)
    # Disabled connectors drop out of what beat runs.
    _put(client, bare_source, enabled=False)
    assert f"connector:{connector.pk}:content" not in scheduler.all_as_schedule()
    scheduler.close()


def test_another_tenants_admin_can_neither_see_nor_change_a_schedule(world, bare_source):
    connector = _put(world.client(world.admin), bare_source, kind="slack_export", settings=SETTINGS,
                     content_interval_minutes=60)
    before = {mode: (row.interval_id, row.enabled, row.date_changed) for mode, row in _rows(connector).items()}
    globex = world.client(world.outsider, world.globex)
    url = _api("source-connector", source_id=bare_source.pk)
    assert globex.get(url).status_code == 404
    assert globex.put(url, {"content_interval_minutes": 1, "enabled": False}, format="json").status_code == 404
    assert globex.delete(_api("source", source_id=bare_source.pk)).status_code == 404
    assert globex.post(_api("source-sync-runs", source_id=bare_source.pk), {}, format="json").status_code == 404
    page = Client()
    page.force_login(world.outsider)
    page.post(reverse("admin:connectors_connector_change", args=[connector.pk]),
              {"kind": "slack_export", "settings": json.dumps(SETTINGS), "content_interval_minutes": "1"})
    page.post(reverse("admin:connectors_connector_delete", args=[connector.pk]), {"post": "yes"})
    after = {mode: (row.interval_id, row.enabled, row.date_changed) for mode, row in _rows(connector).items()}
    assert after == before and not SyncRun.objects.exists()
    # django-celery-beat's own admin is not offered to anyone: the rows are edited through the connector.
    assert PeriodicTask not in admin.site._registry
    with pytest.raises(NoReverseMatch):
        reverse("admin:django_celery_beat_periodictask_changelist")
    assert page.get("/admin/django_celery_beat/periodictask/").status_code == 404


@pytest.mark.parametrize("minutes", ["0", "525601"])
def test_admin_form_names_an_interval_out_of_range(world, bare_source, minutes):
    # The service refused it after the form had passed it, and the admin turned that into a 403 "You are not
    # allowed to do that" page for the tenant's own admin; it is a form error on the field now.
    connector = _put(world.client(world.admin), bare_source, kind="slack_export", settings=SETTINGS,
                     content_interval_minutes=60)
    page = Client()
    page.force_login(world.admin)
    response = page.post(reverse("admin:connectors_connector_change", args=[connector.pk]), {
        "kind": "slack_export", "settings": json.dumps(SETTINGS), "content_interval_minutes": minutes,
        "permissions_interval_minutes": "", "enabled": "on", "credentials": ""})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["content_interval_minutes"]
    connector.refresh_from_db()
    assert connector.content_interval_minutes == 60 and _rows(connector)["content"].interval.every == 60
