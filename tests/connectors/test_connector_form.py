"""Issue #35 item 4: a connector is set up from its own form on the Manage page — fields per kind, no raw JSON,
credentials for the live APIs, refusals on the field they are about, the connection tested on save — and a run
shows its phase and progress while it lasts."""

from __future__ import annotations

import pytest
from django.test import Client

from connectors.crypto import credentials_decrypt
from connectors.models import Connector, SyncRun
from connectors.services import connector_configure, sync_run_start
from connectors.sync import sync_run_execute
from knowledge.models import Document, Source

from .confluence_fixtures import space_pages
from .fake_apis import FakeConfluence

pytestmark = pytest.mark.django_db
PAGE = "/t/acme/manage/connectors/"


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def wiki(world) -> Source:
    return Source.objects.create(tenant=world.acme, kind="wiki", name="Acme wiki")


@pytest.fixture
def confluence(settings):
    settings.CONNECTORS_API_ALLOW_HTTP = True
    settings.CONNECTOR_ALLOWED_HOSTS = ["127.0.0.1"]  # a loopback fake of Confluence Cloud's REST API
    fake = FakeConfluence(space_pages(), {})
    yield fake
    fake.close()


@pytest.fixture
def handbook(world, import_root) -> Source:
    root = import_root / "acme" / "handbook"
    root.mkdir(parents=True)
    (root / "welcome.md").write_text("# Welcome\n\nThe canteen opens at eight, says the lanternfish memo.")
    (root / "leave.md").write_text("# Leave\n\nAsk the quillfeather desk for leave.")
    return Source.objects.create(tenant=world.acme, kind="folder", name="Handbook")


def test_live_confluence_from_its_fields_credentials_and_the_connection_tested_on_save(world, wiki, confluence):
    admin = _client(world.admin)
    page = admin.get(PAGE).content.decode()
    assert "extra_settings" not in page and "JSON" not in page  # no raw JSON box for any kind
    assert f'data-kinds="confluence_api github_api" id="field-base_url-{wiki.pk}"' in page
    saved = admin.post(PAGE, {"action": "configure", "source_id": wiki.pk, "kind": "confluence_api",
                              "base_url": confluence.url + "/wiki", "space_key": "ENG",
                              "user_emails": "acc-analyst = analyst@example.test\n\n",
                              "account_email": "bot@acme.test", "token": "tok", "enabled": "on",
                              # another kind's field, left filled in the form: not this kind's setting
                              "repo": "acme/tools", "path": "ignored"})
    assert saved.status_code == 302, saved.content.decode()[:2000]
    connector = Connector.objects.get(source=wiki)
    assert connector.settings == {"base_url": confluence.url + "/wiki", "space_key": "ENG",
                                  "user_emails": {"acc-analyst": "analyst@example.test"}}
    assert credentials_decrypt(connector.credentials_encrypted) == {"email": "bot@acme.test", "api_token": "tok"}
    assert confluence.hits("/wiki/rest/api/content")  # the test on save read the space
    shown = admin.get(PAGE).content.decode()
    assert "Connector of “Acme wiki” saved. The connection works: Confluence Cloud (live) read" in shown
    assert 'name="space_key" type="text" value="ENG"' in shown
    assert "acc-analyst = analyst@example.test</textarea>" in shown
    assert "tok" not in shown.replace("token", "").replace("autocomplete", "")  # the token is never shown back
    # A wrong token: kept (the site may be down this minute), and the admin told why at once.
    kept = admin.post(PAGE, {"action": "configure", "source_id": wiki.pk, "kind": "confluence_api",
                             "base_url": confluence.url + "/wiki", "space_key": "ENG",
                             "account_email": "bot@acme.test", "token": "wrong", "enabled": "on"})
    assert kept.status_code == 302
    warned = admin.get(PAGE).content.decode()
    assert "Connector of “Acme wiki” saved, but the connection failed:" in warned and "401" in warned


def test_refusals_land_on_their_field_and_keep_what_was_typed(world, wiki, confluence):
    admin = _client(world.admin)
    connector_configure(authority=world.authority(world.admin), source=wiki, kind="confluence_api",
                        settings={"base_url": confluence.url + "/wiki", "space_key": "ENG"})
    before = Connector.objects.get(source=wiki).settings
    refused = admin.post(PAGE, {"action": "configure", "source_id": wiki.pk, "kind": "github_api",
                                "base_url": confluence.url, "repo": "not a repo", "token": "SECRET-1",
                                "content_interval": "15"})
    body = refused.content.decode()
    assert refused.status_code == 400
    assert f'<p id="repo-error-{wiki.pk}" class="intake-error field-error">settings.repo is required' in body
    assert f'id="repo-{wiki.pk}" name="repo" type="text" value="not a repo"' in body
    assert 'aria-invalid="true"' in body and "SECRET-1" not in body
    assert '<option value="github_api" selected>' in body and 'value="15"' in body  # what was typed stays
    assert Connector.objects.get(source=wiki).settings == before  # validated before saving: nothing changed

    lines = admin.post(PAGE, {"action": "configure", "source_id": wiki.pk, "kind": "jira_export",
                              "path": "jira", "project_access": "ACME: group:staff\nOPS"})
    assert lines.status_code == 400
    assert (f'<p id="project_access-error-{wiki.pk}" class="intake-error field-error">project_access: line 2 is '
            "not “KEY: group:staff”") in lines.content.decode()
    principal = admin.post(PAGE, {"action": "configure", "source_id": wiki.pk, "kind": "jira_export",
                                  "path": "jira", "project_access": "ACME: not a principal"})
    assert principal.status_code == 400 and f'id="project_access-error-{wiki.pk}"' in principal.content.decode()
    interval = admin.post(PAGE, {"action": "configure", "source_id": wiki.pk, "kind": "jira_export",
                                 "path": "jira", "content_interval": "hourly"})
    assert interval.status_code == 400
    assert (f'<p id="content-error-{wiki.pk}" class="intake-error field-error">Content interval must be a whole '
            "number of minutes") in interval.content.decode()
    assert Connector.objects.get(source=wiki).kind == "confluence_api"


def test_jira_lines_are_saved_as_settings_and_shown_back_as_lines(world, wiki, import_root):
    admin = _client(world.admin)
    saved = admin.post(PAGE, {"action": "configure", "source_id": wiki.pk, "kind": "jira_export", "path": "jira",
                              "project_access": "ACME: group:staff, group:eng\nOPS: group:ops",
                              "site_url": "https://acme.atlassian.test", "enabled": "on"})
    assert saved.status_code == 302
    assert Connector.objects.get(source=wiki).settings == {
        "path": "jira", "site_url": "https://acme.atlassian.test",
        "project_access": {"ACME": ["group:staff", "group:eng"], "OPS": ["group:ops"]}}
    page = admin.get(PAGE).content.decode()
    assert "ACME: group:staff, group:eng\nOPS: group:ops</textarea>" in page
    # No export at that path yet: saved, and the test on save says what is missing.
    assert "saved, but the connection failed" in page


def test_save_and_sync_now_goes_to_the_runs_progress_and_what_changed(world, handbook):
    admin = _client(world.admin)
    response = admin.post(PAGE, {"action": "configure", "source_id": handbook.pk, "kind": "folder",
                                 "path": "handbook", "enabled": "on", "then": "sync"})
    run = SyncRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/t/acme/manage/connectors/runs/{run.pk}/"
    waiting = admin.get(response["Location"]).content.decode()
    assert "Now: waiting for a worker" in waiting and 'http-equiv="refresh"' in waiting
    assert sync_run_execute(run_id=run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.phase == "done" and run.total is None and run.added == 2
    done = admin.get(response["Location"]).content.decode()
    welcome = Document.objects.get(source=handbook, external_id="welcome.md")
    assert "Done." in done and f'href="/t/acme/documents/{welcome.pk}/">Welcome</a>' in done
    assert 'http-equiv="refresh"' not in done
    # The member neither sees the form nor may post it.
    member = _client(world.member)
    assert member.get(PAGE).status_code == 403
    assert member.post(PAGE, {"action": "configure", "source_id": handbook.pk, "kind": "folder",
                              "path": "elsewhere"}).status_code == 403
    assert Connector.objects.get(source=handbook).settings == {"path": "handbook"}


def test_a_running_permission_run_shows_its_phase_and_how_far_it_is(world, handbook):
    authority = world.authority(world.admin)
    connector_configure(authority=authority, source=handbook, kind="folder", settings={"path": "handbook"})
    sync_run_execute(run_id=sync_run_start(authority=authority, source=handbook, mode="content").pk)
    run = sync_run_start(authority=authority, source=handbook, mode="permissions")
    SyncRun.objects.filter(pk=run.pk).update(status="running", phase="applying", total=2, seen=1)
    admin = _client(world.admin)
    page = admin.get(f"/t/acme/manage/connectors/runs/{run.pk}/").content.decode()
    assert "Now: re-sharing the stored documents — 1 of 2 documents" in page
    assert '<progress max="2" value="1"' in page
    api = world.client(world.admin).get(f"/api/v1/sync-runs/{run.pk}").json()
    assert (api["phase"], api["total"], api["seen"]) == ("applying", 2, 1)
    SyncRun.objects.filter(pk=run.pk).update(status="queued", phase="", total=None, seen=0)
    assert sync_run_execute(run_id=run.pk) == "succeeded"
    run.refresh_from_db()
    assert (run.phase, run.total, run.seen) == ("done", 2, 2)
    # Another tenant's admin finds no such run.
    assert world.client(world.outsider, world.globex).get(f"/api/v1/sync-runs/{run.pk}").status_code == 404
