"""Slack live API mode against a local fake Web API: the export's records and access, cursor pagination over
several pages, one HTTP 429 Retry-After: 1 waited out and recorded, incremental sync by `oldest`, permission sync
reading members only, deletions, and who sees what across two tenants and an outsider."""

from __future__ import annotations

import pytest

from connectors.models import Connector
from connectors.services import connector_configure
from knowledge.models import Document, Source

from .conftest import T0, finds, slack_users, sync, ts
from .fake_slack import TOKEN, FakeSlack, serve

pytestmark = pytest.mark.django_db
THREAD = f"{T0 + 300}.000000"


def _seed(fake: FakeSlack) -> None:
    fake.users = slack_users()
    fake.channels = [{"id": "CGEN", "name": "general", "is_private": False, "is_channel": True},
                     {"id": "GSEC", "name": "secret", "is_private": True, "is_group": True}]
    fake.members = {"GSEC": ["UADMIN", "UMEMBER", "UBOT"], "CGEN": ["UADMIN", "UMEMBER", "UANALYST"]}
    fake.messages = {
        "CGEN": [
            {"type": "message", "user": "UADMIN", "text": "The ferry timetable zephyrgale changes on Monday.",
             "ts": ts(0)},
            {"type": "message", "user": "UMEMBER", "text": "Who owns the quokkaplan rollout?", "ts": ts(5),
             "thread_ts": ts(5)},
            {"type": "message", "user": "UANALYST", "text": "<@UADMIN> owns it until Friday.", "ts": ts(7),
             "thread_ts": ts(5)},
            {"type": "message", "subtype": "channel_join", "user": "UANALYST", "text": "joined", "ts": ts(8)},
            {"type": "message", "user": "UMEMBER", "text": "Thread reply a day later about quokkaplan.",
             "ts": ts(1500), "thread_ts": ts(5)},
            {"type": "message", "user": "UBOT", "text": "Deploy 42 finished.", "ts": ts(1510)},
        ],
        "GSEC": [{"type": "message", "user": "UADMIN", "text": "The merger codename is hushbadger.", "ts": ts(30)}],
    }


@pytest.fixture
def fake(settings):
    fake = FakeSlack(page_size=2)
    _seed(fake)
    server, url = serve(fake)
    settings.SLACK_API_BASE_URL = url
    settings.SLACK_API_TIMEOUT_S = 5
    yield fake
    server.shutdown()
    server.server_close()


@pytest.fixture
def live_source(world, fake) -> Source:
    source = Source.objects.create(tenant=world.acme, kind="chat", name="Acme Slack (live)")
    connector_configure(authority=world.authority(world.admin), source=source, kind="slack_api",
                        settings={"workspace_url": "https://acme.slack.test"}, credentials={"token": TOKEN})
    return source


def _ids(source) -> set[str]:
    return set(Document.objects.filter(source=source).values_list("external_id", flat=True))


def test_full_sync_paginates_waits_out_a_429_and_maps_records_like_the_export(world, fake, live_source):
    fake.rate_limits = [("conversations.history", 1)]
    run = sync(world, live_source)
    assert run.status == "succeeded", (run.message, run.errors)
    assert _ids(live_source) == {"CGEN/day/2026-11-02", "CGEN/day/2026-11-03", f"CGEN/thread/{THREAD}",
                                 "GSEC/day/2026-11-02"}
    assert (run.added, run.deleted, run.failed) == (4, 0, 0)
    assert run.waited_s >= 1.0  # the Retry-After: 1 was honoured and recorded on the run
    methods = fake.methods()
    # Pagination: 4 users on pages of 2, the private channel's 3 members over 2 pages, history over pages.
    assert methods.count("users.list") == 2 and methods.count("conversations.members") == 2
    assert methods.count("conversations.history") >= 3 and "conversations.replies" in methods
    assert not any(p.get("channel") == "CGEN" for m, p in fake.calls if m == "conversations.members")
    thread = Document.objects.get(source=live_source, external_id=f"CGEN/thread/{THREAD}")
    assert "a day later" in thread.text and "@admin owns it" in thread.text
    assert thread.record_url.startswith("https://acme.slack.test/archives/CGEN/p")
    secret = Document.objects.get(source=live_source, external_id="GSEC/day/2026-11-02")
    assert secret.visibility == "restricted"
    # The bot has no e-mail: left out (fail closed).
    assert sorted(p.key for p in secret.acl_principals.all()) == ["admin@example.test", "member@example.test"]
    state = Connector.objects.get(source=live_source).sync_state
    assert state["channels"] == {"CGEN": ts(1510), "GSEC": ts(30)}


def test_who_sees_what_two_tenants_and_outsider(world, fake, live_source):
    sync(world, live_source)
    assert finds(world, world.member, "hushbadger") and finds(world, world.admin, "hushbadger")
    assert not finds(world, world.analyst, "hushbadger")
    assert finds(world, world.analyst, "zephyrgale")
    assert not finds(world, world.outsider, "zephyrgale", world.globex)
    assert not finds(world, world.outsider, "hushbadger", world.globex)
    # A globex connector with a wrong token reads nothing and writes nothing.
    globex = Source.objects.create(tenant=world.globex, kind="chat", name="Globex Slack")
    connector_configure(authority=world.authority(world.outsider, world.globex), source=globex, kind="slack_api",
                        settings={}, credentials={"token": "xoxb-wrong"})
    run = sync(world, globex)
    assert run.status == "failed" and "invalid_auth" in run.message
    assert not Document.objects.filter(source=globex).exists()


def test_incremental_sync_reads_from_the_cursor_day_and_keeps_unseen_documents(world, fake, live_source):
    connector_configure(authority=world.authority(world.admin), source=live_source,
                        settings={"workspace_url": "https://acme.slack.test", "thread_lookback_days": 0})
    sync(world, live_source)
    fake.calls.clear()
    fake.messages["CGEN"].append({"type": "message", "user": "UADMIN", "text": "Day three: the lanternfish memo.",
                                  "ts": ts(2900)})
    run = sync(world, live_source)
    assert run.status == "succeeded", run.message
    day_start = (T0 + 1510 * 60) // 86400 * 86400
    oldest = {p["channel"]: p.get("oldest") for m, p in fake.calls if m == "conversations.history"}
    assert float(oldest["CGEN"]) == day_start and float(oldest["GSEC"]) == (T0 + 30 * 60) // 86400 * 86400
    # Only the new day is new; the 2026-11-02 records were not listed (partial) and are kept, not deleted.
    assert (run.added, run.deleted) == (1, 0)
    assert "CGEN/day/2026-11-02" in _ids(live_source) and "CGEN/day/2026-11-04" in _ids(live_source)
    # The day record of the cursor's day is whole (both its messages), not just what came after the cursor.
    assert run.unchanged >= 1
    assert Connector.objects.get(source=live_source).sync_state["channels"]["CGEN"] == ts(2900)


def test_permission_sync_rereads_members_only(world, fake, live_source):
    sync(world, live_source)
    assert finds(world, world.member, "hushbadger")
    fake.members["GSEC"] = ["UADMIN"]
    fake.calls.clear()
    run = sync(world, live_source, mode="permissions")
    assert run.status == "succeeded" and run.updated == 1, (run.message, run.errors)
    assert "conversations.history" not in fake.methods() and "conversations.replies" not in fake.methods()
    assert not finds(world, world.member, "hushbadger") and finds(world, world.admin, "hushbadger")


def test_unreadable_channel_keeps_its_documents_and_a_removed_channel_loses_them(world, fake, live_source):
    sync(world, live_source)
    fake.refuse["GSEC"] = "not_in_channel"
    run = sync(world, live_source)
    assert run.status == "succeeded" and run.failed == 1 and run.deleted == 0
    assert "not_in_channel" in run.errors[0]["reason"]
    assert "GSEC/day/2026-11-02" in _ids(live_source)
    fake.channels = [c for c in fake.channels if c["id"] != "GSEC"]
    run = sync(world, live_source)
    assert run.deleted == 1 and "GSEC/day/2026-11-02" not in _ids(live_source)


def test_a_retry_after_over_the_bound_fails_the_channel_not_the_data(world, fake, live_source, settings):
    sync(world, live_source)
    settings.SLACK_API_MAX_RETRY_AFTER_S = 1
    connector_configure(authority=world.authority(world.admin), source=live_source,
                        settings={"workspace_url": "https://acme.slack.test", "incremental": False})
    fake.rate_limits = [("conversations.history", 30)]
    run = sync(world, live_source)
    assert run.status == "succeeded" and run.failed == 1 and run.deleted == 0 and run.waited_s == 0
    assert "ratelimited" in run.errors[0]["reason"]
    assert len(_ids(live_source)) == 4


def test_missing_token_fails_the_run_clearly(world, fake, live_source):
    connector_configure(authority=world.authority(world.admin), source=live_source, credentials=None)
    run = sync(world, live_source)
    assert run.status == "failed" and "token" in run.message


def test_a_channel_the_bot_is_not_in_is_skipped_quietly(world, fake, live_source):
    fake.channels.append({"id": "CRANDOM", "name": "random", "is_private": False, "is_member": False})
    run = sync(world, live_source)
    assert run.status == "succeeded" and run.failed == 0
    assert not any(p.get("channel") == "CRANDOM" for m, p in fake.calls if m == "conversations.history")


def test_manage_page_configures_a_live_connector_without_path(world, fake, client):
    source = Source.objects.create(tenant=world.acme, kind="chat", name="Live via Manage")
    client.force_login(world.admin)
    response = client.post("/t/acme/manage/connectors/", {
        "action": "configure", "source_id": source.pk, "kind": "slack_api", "path": "",
        "workspace_url": "https://acme.slack.test", "token": TOKEN, "enabled": "on"})
    assert response.status_code == 302, response.content.decode()[:500]
    connector = Connector.objects.get(source=source)
    assert connector.kind == "slack_api" and connector.has_credentials and TOKEN not in connector.credentials_encrypted
    assert sync(world, source).status == "succeeded"
    page = client.get("/t/acme/manage/connectors/").content.decode()
    assert "Slack (live API)" in page and TOKEN not in page
    api = world.client(world.admin).get(f"/api/v1/sources/{source.pk}/connector")
    assert api.status_code == 200 and TOKEN not in api.content.decode() and api.json()["has_credentials"]
