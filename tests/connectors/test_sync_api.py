"""Connector configuration and sync runs through the API, the Manage pages and the admin: credentials are
write-only and encrypted, one run per source at a time, runs visible to their tenant's admins only."""

from __future__ import annotations

import json

import pytest
from django.contrib import admin
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse

from connectors.crypto import credentials_decrypt
from connectors.models import Connector, SyncRun
from connectors.services import SyncBusy, sync_run_start
from connectors.sql import source_lock_release, source_lock_try
from connectors.sync import sync_run_execute

from .conftest import sync

pytestmark = pytest.mark.django_db
SECRET = "xoxb-TOPSECRET-123"


def _url(name: str, **kwargs) -> str:
    return reverse(f"api:{name}", kwargs=kwargs)


def test_credentials_are_encrypted_and_never_returned(world, slack_source):
    client = world.client(world.admin)
    response = client.put(_url("source-connector", source_id=slack_source.pk),
                          {"credentials": {"token": SECRET}, "content_interval_minutes": 60}, format="json")
    assert response.status_code == 200, response.content
    assert SECRET not in response.content.decode() and response.json()["has_credentials"] is True
    stored = Connector.objects.get(source=slack_source)
    assert SECRET not in stored.credentials_encrypted and credentials_decrypt(stored.credentials_encrypted) == {
        "token": SECRET}
    got = client.get(_url("source-connector", source_id=slack_source.pk))
    assert got.status_code == 200 and SECRET not in got.content.decode() and "credentials" not in got.json()
    schema = client.get("/api/schema/?format=json")
    assert schema.status_code == 200


def test_only_the_tenants_admins_configure_and_run(world, slack_source):
    url = _url("source-sync-runs", source_id=slack_source.pk)
    assert world.client(world.member).post(url, {}, format="json").status_code == 403
    # Another tenant's admin: the source does not exist for them.
    assert world.client(world.outsider, world.globex).post(url, {}, format="json").status_code == 404
    assert world.client(world.outsider, world.globex).get(
        _url("source-connector", source_id=slack_source.pk)).status_code == 404
    bad = world.client(world.admin).put(_url("source-connector", source_id=slack_source.pk),
                                        {"settings": {"path": "../globex/slack"}}, format="json")
    assert bad.status_code == 400 and "import folder" in bad.json()["detail"]


def test_post_starts_a_run_202_and_a_second_is_409(world, slack_source):
    client = world.client(world.admin)
    url = _url("source-sync-runs", source_id=slack_source.pk)
    first = client.post(url, {"mode": "content"}, format="json")
    assert first.status_code == 202, first.content
    run_id = first.json()["id"]
    # The test transaction never commits, so the run is still queued: a second one is refused.
    second = client.post(url, {"mode": "permissions"}, format="json")
    assert second.status_code == 409 and second.json()["run"] == run_id
    with pytest.raises(SyncBusy):
        sync_run_start(authority=world.authority(world.admin), source=slack_source)
    with pytest.raises(IntegrityError), transaction.atomic():  # the database refuses it too
        SyncRun.objects.create(tenant=world.acme, connector=slack_source.connector, mode="content")
    sync_run_execute(run_id=run_id)
    detail = client.get(_url("sync-run", run_id=run_id)).json()
    assert detail["status"] == "succeeded" and detail["added"] == 4
    listed = client.get(url).json()
    assert [r["id"] for r in listed["results"]] == [run_id]
    assert world.client(world.outsider, world.globex).get(_url("sync-run", run_id=run_id)).status_code == 404
    assert client.post(url, {"mode": "bogus"}, format="json").status_code == 400


def test_a_source_locked_by_another_worker_is_skipped(world, slack_source):
    run = sync_run_start(authority=world.authority(world.admin), source=slack_source)
    from django.db import connections

    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:  # another session holds the source's advisory lock
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [0x4757434E, slack_source.pk])
        assert sync_run_execute(run_id=run.pk) == "busy"
        assert SyncRun.objects.get(pk=run.pk).status == "queued"
        with other.cursor() as cursor:  # released explicitly: a closed session's locks go only once its backend exits
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [0x4757434E, slack_source.pk])
    finally:
        other.close()
    assert source_lock_try(slack_source.pk)
    source_lock_release(slack_source.pk)
    assert sync_run_execute(run_id=run.pk) == "succeeded"
    assert sync_run_execute(run_id=run.pk) == "skipped"  # re-delivered after it finished


def test_manage_page_lists_runs_and_starts_a_sync(world, slack_source):
    sync(world, slack_source)
    client = Client()
    client.force_login(world.admin)
    page = client.get(reverse("pages:connectors", kwargs={"tenant_slug": "acme"}))
    assert page.status_code == 200 and "Acme Slack" in page.content.decode()
    connector = slack_source.connector
    connector.credentials_encrypted = "gAAAA-not-shown"
    connector.save()
    page = client.get(reverse("pages:connectors", kwargs={"tenant_slug": "acme"}))
    assert "gAAAA-not-shown" not in page.content.decode()
    started = client.post(reverse("pages:connectors", kwargs={"tenant_slug": "acme"}),
                          {"action": "sync", "source_id": slack_source.pk, "mode": "permissions"})
    assert started.status_code == 302
    busy = client.post(reverse("pages:connectors", kwargs={"tenant_slug": "acme"}),
                       {"action": "sync", "source_id": slack_source.pk, "mode": "content"})
    assert busy.status_code == 409
    run = SyncRun.objects.filter(connector__source=slack_source).first()
    detail = client.get(reverse("pages:sync-run", kwargs={"tenant_slug": "acme", "run_id": run.pk}))
    assert detail.status_code == 200
    member = Client()
    member.force_login(world.member)
    assert member.get(reverse("pages:connectors", kwargs={"tenant_slug": "acme"})).status_code == 403
    outsider = Client()
    outsider.force_login(world.outsider)
    assert outsider.get(reverse("pages:sync-run", kwargs={"tenant_slug": "globex", "run_id": run.pk})
                        ).status_code == 404


def test_admin_never_renders_credentials_and_scopes_runs(world, slack_source):
    sync(world, slack_source)
    connector = slack_source.connector
    from connectors.services import connector_configure
    connector_configure(authority=world.authority(world.admin), source=slack_source, credentials={"token": SECRET})
    connector.refresh_from_db()
    assert connector.credentials_encrypted
    client = Client()
    client.force_login(world.admin)
    change = client.get(reverse("admin:connectors_connector_change", args=[connector.pk]))
    assert change.status_code == 200 and SECRET not in change.content.decode()
    assert connector.credentials_encrypted not in change.content.decode()
    outsider = Client()
    outsider.force_login(world.outsider)
    runs = outsider.get(reverse("admin:connectors_syncrun_changelist"))
    assert runs.status_code == 200 and not list(runs.context["cl"].result_list)
    run = SyncRun.objects.filter(connector=connector).first()
    assert outsider.get(reverse("admin:connectors_syncrun_change", args=[run.pk])).status_code in (302, 404)
    assert isinstance(admin.site._registry[SyncRun], admin.ModelAdmin)


def test_a_run_whose_task_was_lost_is_queued_again_and_finishes(world, slack_source):
    from datetime import timedelta

    from django.utils import timezone

    from connectors.services import sync_runs_requeue
    from connectors.tasks import sync_runs_requeue_task

    run = sync_run_start(authority=world.authority(world.admin), source=slack_source)
    assert sync_runs_requeue() == []  # just queued: its task may still be on the way
    SyncRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(minutes=30))
    assert sync_runs_requeue_task.delay().get() == [run.pk]  # inline queue in tests: it ran now
    run.refresh_from_db()
    assert run.status == "succeeded" and run.added == 4


def test_admin_add_form_refuses_bad_settings_and_stores_credentials_encrypted(world):
    from knowledge.models import Source

    source = Source.objects.create(tenant=world.acme, kind="folder", name="Drop")
    client = Client()
    client.force_login(world.admin)
    url = reverse("admin:connectors_connector_add")
    form = {"source": source.pk, "kind": "folder", "settings": '{"path": "../globex"}', "enabled": "on",
            "credentials": json.dumps({"token": SECRET})}
    refused = client.post(url, form)
    assert refused.status_code == 200 and "import folder" in refused.content.decode()
    assert SECRET not in refused.content.decode()
    saved = client.post(url, {**form, "settings": '{"path": "drop"}'})
    assert saved.status_code == 302, saved.content.decode()[:2000]
    connector = Connector.objects.get(source=source)
    assert credentials_decrypt(connector.credentials_encrypted) == {"token": SECRET}
    assert connector.tenant_id == world.acme.pk
    globex_source = Source.objects.create(tenant=world.globex, kind="folder", name="Theirs")
    foreign = client.post(url, {**form, "source": globex_source.pk, "settings": '{"path": "drop"}'})
    assert foreign.status_code == 200 and not Connector.objects.filter(source=globex_source).exists()
