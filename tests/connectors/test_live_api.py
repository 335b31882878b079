"""Live Confluence Cloud and GitHub REST modes against local fake servers: pagination (`_links.next`, `Link:
rel="next"`) over 3 pages, a 429 with Retry-After and a spent-limit 403 waited out and recorded on the run,
the incremental cursor (CQL lastmodified, since=) fetching only the changed item, permission sync, deletions on a
full listing only, credentials from the encrypted store, bad items recorded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from connectors.models import Connector
from connectors.services import connector_configure
from knowledge.models import Document, Source

from .confluence_fixtures import restriction, space_pages
from .conftest import finds, sync
from .fake_apis import FakeConfluence, FakeGitHub, reset_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def live(settings):
    settings.CONNECTORS_API_ALLOW_HTTP = True
    settings.CONNECTOR_ALLOWED_HOSTS = ["127.0.0.1"]  # the fakes are loopback servers (on-premises, as it were)
    fakes = []
    yield fakes
    for fake in fakes:
        fake.close()


def _pages():
    pages = space_pages()
    pages[2]["children"] = {"attachment": {"results": [
        {"id": "att1", "title": "pay.md", "_links": {"download": "/download/attachments/300/pay.md"}},
        {"id": "att2", "title": "logo.png", "_links": {"download": "/download/attachments/300/logo.png"}}]}}
    return pages


@pytest.fixture
def confluence(world, live):
    fake = FakeConfluence(_pages(), {"/wiki/download/attachments/300/pay.md": b"# Pay\n\nThe attachmarker grid."})
    live.append(fake)
    source = Source.objects.create(tenant=world.acme, kind="wiki", name="Live Confluence")
    connector_configure(authority=world.authority(world.admin), source=source, kind="confluence_api",
                        settings={"base_url": fake.url + "/wiki", "space_key": "ENG", "space_name": "Engineering",
                                  "user_emails": {"acc-analyst": "analyst@example.test"}},
                        credentials={"email": "bot@acme.test", "api_token": "tok"})
    return fake, source


def test_confluence_live_paginates_waits_out_429_and_maps_restrictions(world, confluence):
    fake, source = confluence
    fake.rate_limit_once["start=2"] = {"Retry-After": "1"}
    run = sync(world, source)
    assert run.status == "succeeded", run.message
    assert fake.hits("/wiki/rest/api/content?") == 4  # pages 1, 2 (refused once, then served) and 3
    assert run.waited_s >= 1.0
    docs = {d.external_id: d for d in Document.objects.filter(source=source)}
    assert set(docs) == {"100", "200", "300", "400", "300/attachments/pay.md"} and run.failed == 1
    assert finds(world, world.analyst, "inheritword") and finds(world, world.admin, "attachmarker")
    assert not finds(world, world.member, "hushpage") and not finds(world, world.outsider, "hushpage", world.globex)
    assert Connector.objects.get(source=source).sync_state["since"]
    assert "bot@acme.test" not in str(Connector.objects.get(source=source).credentials_encrypted)


def test_confluence_incremental_sync_fetches_only_the_changed_page(world, confluence):
    fake, source = confluence
    sync(world, source)
    fake.requests.clear()
    changed = fake.pages["300"]
    changed["body"]["storage"]["value"] = "<p>Bands: inheritword and the newword row.</p>"
    changed["version"] = {"number": 2, "when": (datetime.now(UTC) + timedelta(minutes=1)).isoformat()}
    run = sync(world, source)
    assert run.status == "succeeded", run.message
    assert fake.hits("/content/search?") == 1 and fake.hits("/wiki/rest/api/content?") == 0
    # Its ancestors' restrictions are fetched (not in the incremental listing), so the ACL stays right.
    assert fake.hits("/wiki/rest/api/content/200?") == 1
    assert (run.seen, run.updated, run.deleted) == (2, 1, 0)  # the page and its attachment (unchanged)
    assert finds(world, world.admin, "newword") and not finds(world, world.member, "newword")


def test_confluence_live_permission_sync_reads_no_bodies(world, confluence):
    fake, source = confluence
    sync(world, source)
    fake.requests.clear()
    fake.pages["200"]["restrictions"] = restriction(groups=["engineering"])
    run = sync(world, source, mode="permissions")
    assert run.status == "succeeded" and run.updated == 4, (run.message, run.errors)
    assert all("body.storage" not in r for r in fake.requests)
    assert finds(world, world.member, "inheritword") and not finds(world, world.admin, "hushpage")


def test_confluence_rate_limit_past_the_bound_fails_and_deletes_nothing(world, confluence, settings):
    fake, source = confluence
    sync(world, source)
    Connector.objects.filter(source=source).update(sync_state={})
    settings.CONNECTORS_API_MAX_WAIT_S = 5
    fake.rate_limit_once["/content?"] = {"Retry-After": "3600"}
    run = sync(world, source)
    assert run.status == "failed" and "rate limited" in run.message
    assert Document.objects.filter(source=source).count() == 5


def _issue(number, title, updated="2026-11-02T09:00:00Z", comments=0):
    return {"url": f"https://api.github.test/repos/acme/tools/issues/{number}", "number": number, "title": title,
            "html_url": f"https://github.test/acme/tools/issues/{number}", "state": "open", "comments": comments,
            "body": f"Issue body {title.lower().replace(' ', '')} text.", "updated_at": updated,
            "created_at": "2026-11-01T09:00:00Z"}


@pytest.fixture
def github(world, live):
    issues = [_issue(1, "Alpha gitone", comments=1), _issue(2, "Beta gittwo"), _issue(3, "Gamma gitthree"),
              {"number": 4, "title": None, "updated_at": "2026-11-02T09:00:00Z"}, _issue(5, "Epsilon gitfive")]
    fake = FakeGitHub(issues, {1: [{"user": {"login": "ana"}, "body": "Comment gitcomment.",
                                    "created_at": "2026-11-02T10:00:00Z"}]},
                      collaborators=[{"login": "maxm"}, {"login": "ada"}])
    live.append(fake)
    source = Source.objects.create(tenant=world.acme, kind="tickets", name="Live GitHub")
    connector_configure(authority=world.authority(world.admin), source=source, kind="github_api",
                        settings={"base_url": fake.url, "repo": "acme/tools",
                                  "login_emails": {"maxm": "member@example.test", "ada": "admin@example.test"}},
                        credentials={"token": "ghp-test"})
    return fake, source


def test_github_live_pages_over_link_next_and_waits_out_a_spent_limit(world, github):
    fake, source = github
    fake.rate_limit_once["page=2"] = {"status": 403, "X-RateLimit-Remaining": "0",
                                      "X-RateLimit-Reset": lambda: reset_in(1)}
    run = sync(world, source)
    assert run.status == "succeeded", run.message
    assert fake.hits("/repos/acme/tools/issues?") == 4 and run.waited_s > 0  # 3 pages + 1 refused
    assert run.added == 4 and run.failed == 1 and run.errors[0]["item"] == "acme/tools#4"
    one = Document.objects.get(source=source, external_id="acme/tools#1")
    assert "gitcomment" in one.text and one.title == "acme/tools#1: Alpha gitone"
    assert sorted(p.key for p in one.acl_principals.all()) == ["admin@example.test", "github:tools-core",
                                                               "member@example.test"]
    assert finds(world, world.member, "gitone") and not finds(world, world.analyst, "gitone")
    assert not finds(world, world.outsider, "gitone", world.globex)


def test_github_incremental_since_then_permission_sync(world, github):
    fake, source = github
    sync(world, source)
    since = Connector.objects.get(source=source).sync_state["since"]
    fake.requests.clear()
    fake.issues[1] = {**_issue(2, "Beta gittwo"), "body": "Now about gitchanged.",
                      "updated_at": (datetime.now(UTC) + timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    run = sync(world, source)
    assert f"since={since.replace(':', '%3A')}" in next(r for r in fake.requests if "/issues?" in r)
    assert (run.seen, run.updated, run.deleted) == (1, 1, 0)
    assert finds(world, world.member, "gitchanged")
    fake.collaborators[:] = [{"login": "ada"}]
    perms = sync(world, source, mode="permissions")
    assert perms.updated == 4 and not finds(world, world.member, "gitone") and finds(world, world.admin, "gitone")


def test_deletions_only_on_a_full_listing(world, github):
    fake, source = github
    sync(world, source)
    del fake.issues[2]  # issue 3 is gone at the source
    incremental = sync(world, source)
    assert incremental.deleted == 0 and Document.objects.filter(source=source, external_id="acme/tools#3").exists()
    connector = Connector.objects.get(source=source)
    connector.sync_state = {**connector.sync_state, "full_at": "2026-01-01T00:00:00+00:00"}  # the full listing is due
    connector.save(update_fields=["sync_state"])
    full = sync(world, source)
    assert full.deleted == 1 and not Document.objects.filter(source=source, external_id="acme/tools#3").exists()
    assert not finds(world, world.member, "gitthree")


def test_one_state_field_and_one_wait_field_through_the_api(world, github):
    """Connector.sync_state holds the {"since", "full_at"} of a live GitHub connector (as it holds live Slack's
    channel cursors); a settings change clears it, so the next run lists everything and may delete; the API
    shows the run's rate-limit wait as `waited_s`."""
    fake, source = github
    fake.rate_limit_once["page=2"] = {"Retry-After": "1"}
    first = sync(world, source)
    got = world.client(world.admin).get(reverse("api:sync-run", kwargs={"run_id": first.pk})).json()
    assert got["waited_s"] >= 1.0 and "rate_limit_wait_s" not in got
    assert set(Connector.objects.get(source=source).sync_state) == {"since", "full_at"}
    del fake.issues[2]
    connector_configure(authority=world.authority(world.admin), source=source,
                        settings={"base_url": fake.url, "repo": "acme/tools", "repo_acl": ["group:staff"]})
    assert Connector.objects.get(source=source).sync_state == {}
    full = sync(world, source)
    assert full.deleted == 1 and not Document.objects.filter(source=source, external_id="acme/tools#3").exists()
