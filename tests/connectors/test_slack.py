"""The Slack export connector end to end: records per thread and per channel-day, private channels readable by
their members only, permission sync apart from content, deletions, one bad item, hash skips."""

from __future__ import annotations

import json

import pytest

from connectors.models import SyncRun
from knowledge.models import Document, Source

from .conftest import finds, slack_export, sync, write_json

pytestmark = pytest.mark.django_db


def _docs(source) -> dict[str, Document]:
    return {d.external_id: d for d in Document.objects.filter(source=source)}


def test_content_sync_maps_threads_days_and_private_channels(world, slack_source):
    run = sync(world, slack_source)
    assert run.status == "succeeded", run.message
    docs = _docs(slack_source)
    assert set(docs) == {"CGEN/day/2026-11-02", "CGEN/day/2026-11-03", f"CGEN/thread/{1793610000 + 300}.000000",
                         "GSEC/day/2026-11-02"}
    assert (run.added, run.updated, run.deleted, run.failed) == (4, 0, 0, 0)
    thread = docs[f"CGEN/thread/{1793610000 + 300}.000000"]
    # A thread is one record across days, mentions resolved, joins left out.
    assert "quokkaplan rollout" in thread.text and "a day later" in thread.text and "@admin owns it" in thread.text
    assert thread.record_url.startswith("https://acme.slack.test/archives/CGEN/p")
    assert "joined" not in docs["CGEN/day/2026-11-02"].text
    secret = docs["GSEC/day/2026-11-02"]
    assert secret.visibility == "restricted" and not secret.acl_inherited
    assert sorted(p.key for p in secret.acl_principals.all()) == ["admin@example.test", "member@example.test"]
    assert docs["CGEN/day/2026-11-02"].acl_inherited  # public: the source's defaults (workspace)


def test_who_sees_what_two_tenants_platform_and_outsider(world, slack_source, import_root):
    sync(world, slack_source)
    assert finds(world, world.member, "hushbadger") and finds(world, world.admin, "hushbadger")
    assert not finds(world, world.analyst, "hushbadger")  # a tenant member, not a channel member
    assert finds(world, world.analyst, "zephyrgale")  # public channel: the whole workspace
    assert not finds(world, world.outsider, "zephyrgale", world.globex)
    assert not finds(world, world.outsider, "hushbadger", world.globex)
    # globex's connector with the same relative path reads globex's own import folder, not acme's.
    globex = Source.objects.create(tenant=world.globex, kind="chat", name="Globex Slack")
    from connectors.services import connector_configure
    connector_configure(authority=world.authority(world.outsider, world.globex), source=globex,
                        kind="slack_export", settings={"path": "slack"})
    run = sync(world, globex)
    assert run.status == "failed" and "does not exist" in run.message
    assert not Document.objects.filter(source=globex).exists()
    # The platform corpus stays readable beside the connector's records.
    platform = Source.objects.create(tenant=world.platform, kind="wiki", name="Reference")
    from tests.knowledge.conftest import ingest
    ingest(world, platform, external_id="p1", title="Guide", body="The platform glossary mentions zephyrgale too.")
    assert finds(world, world.outsider, "zephyrgale", world.globex)  # the platform copy only
    hits = __import__("knowledge.retrieval", fromlist=["hybrid_search"]).hybrid_search(
        world.authority(world.outsider, world.globex), "zephyrgale", k=5, channels=("lexical",)).hits
    assert {Document.objects.get(pk=h.document_id).source_id for h in hits} == {platform.pk}


def test_permission_sync_removes_and_grants_access_without_reading_content(world, slack_source, import_root):
    sync(world, slack_source)
    assert finds(world, world.member, "hushbadger")
    export = import_root / "acme" / "slack"
    write_json(export / "groups.json", [{"id": "GSEC", "name": "secret", "members": ["UADMIN", "UANALYST"]}])
    # Content is not read by a permission sync: remove every message file to prove it.
    for day in export.glob("*/*.json"):
        day.unlink()
    run = sync(world, slack_source, mode="permissions")
    assert run.status == "succeeded", run.message
    assert (run.updated, run.failed, run.deleted) == (1, 0, 0)
    assert not finds(world, world.member, "hushbadger")  # right after the sync, through retrieval
    assert finds(world, world.analyst, "hushbadger")
    assert Document.objects.filter(source=slack_source).count() == 4  # nothing deleted, nothing re-read


def test_resync_skips_unchanged_by_hash_and_deletion_removes_documents(world, slack_source, import_root):
    sync(world, slack_source)
    again = sync(world, slack_source)
    assert (again.added, again.updated, again.unchanged, again.deleted) == (0, 0, 4, 0)
    (import_root / "acme" / "slack" / "secret" / "2026-11-02.json").unlink()
    third = sync(world, slack_source)
    assert third.deleted == 1 and "GSEC/day/2026-11-02" not in _docs(slack_source)
    assert not finds(world, world.admin, "hushbadger")


def test_one_bad_item_never_aborts_the_run_or_loses_data(world, slack_source, import_root):
    sync(world, slack_source)
    export = import_root / "acme" / "slack"
    (export / "general" / "2026-11-03.json").write_text("{not json")
    write_json(export / "secret" / "2026-11-04.json", [
        {"type": "message", "user": "UMEMBER", "text": "New plan: velvetcrane.", "ts": "1793800000.000000"},
        {"type": "message", "user": "UMEMBER", "text": None, "ts": "1793800001.000000"},
    ])
    run = sync(world, slack_source)
    assert run.status == "succeeded" and run.failed == 2 and run.added == 1
    assert {e["item"] for e in run.errors} == {"general/2026-11-03.json", "secret/2026-11-04.json"}
    docs = _docs(slack_source)
    # The unreadable day's record (and the thread that continues into it) are kept, not taken for deleted.
    assert "CGEN/day/2026-11-03" in docs and run.deleted == 0
    assert finds(world, world.member, "velvetcrane")


def test_an_unreadable_export_fails_the_run_and_deletes_nothing(world, slack_source, import_root):
    sync(world, slack_source)
    (import_root / "acme" / "slack" / "users.json").write_text("[broken")
    run = sync(world, slack_source)
    assert run.status == "failed" and "users.json" in run.message
    assert Document.objects.filter(source=slack_source).count() == 4


def test_zip_export_reads_like_the_folder(world, import_root):
    from connectors.services import connector_configure
    from connectors.sources.folder import zip_bytes

    folder = slack_export(import_root / "tmp-export")
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.json")}
    (import_root / "acme").mkdir(parents=True, exist_ok=True)
    (import_root / "acme" / "export.zip").write_bytes(zip_bytes(files))
    source = Source.objects.create(tenant=world.acme, kind="chat", name="Zipped Slack")
    connector_configure(authority=world.authority(world.admin), source=source, kind="slack_export",
                        settings={"path": "export.zip"})
    run = sync(world, source)
    assert run.status == "succeeded" and run.added == 4, (run.message, run.errors)


def test_runs_record_progress_fields(world, slack_source):
    run = sync(world, slack_source)
    assert run.seen == 4 and run.started_at and run.finished_at and run.finished_at >= run.started_at
    assert SyncRun.objects.filter(connector__source=slack_source, status__in=SyncRun.ACTIVE).count() == 0
    assert json.dumps(run.errors) == "[]"


def test_a_channel_name_cannot_lead_outside_the_export(world, slack_source, import_root):
    export = import_root / "acme" / "slack"
    (import_root / "acme" / "outside").mkdir(parents=True)
    write_json(import_root / "acme" / "outside" / "2026-11-02.json",
               [{"type": "message", "user": "UADMIN", "text": "Outside the export: basaltmoth.", "ts": "1793610000.1"}])
    write_json(export / "channels.json", [
        {"id": "CGEN", "name": "general", "members": []},
        {"id": "CEVIL", "name": "../outside", "members": []},
        {"id": "../outside", "name": "x", "members": []},
    ])
    run = sync(world, slack_source)
    assert run.status == "succeeded" and run.failed == 1 and "not a plain name" in run.errors[0]["reason"]
    assert not finds(world, world.admin, "basaltmoth")


def test_a_member_deactivated_in_slack_loses_access_at_the_next_permission_sync(world, slack_source, import_root):
    from .conftest import slack_users

    sync(world, slack_source)
    users = slack_users()
    for user in users:
        if user["id"] == "UMEMBER":
            user["deleted"] = True
    write_json(import_root / "acme" / "slack" / "users.json", users)
    assert sync(world, slack_source, mode="permissions").updated == 1
    assert not finds(world, world.member, "hushbadger") and finds(world, world.admin, "hushbadger")


def test_the_manage_page_lists_connectors(world, slack_source):
    from django.test import Client

    client = Client()
    client.force_login(world.admin)
    page = client.get("/t/acme/manage/")
    assert page.status_code == 200 and "/t/acme/manage/connectors/" in page.content.decode()


def test_public_channels_follow_the_sources_default_acl(world, slack_source):
    from knowledge.services import source_update

    sync(world, slack_source)
    source_update(authority=world.authority(world.admin), source=slack_source, default_visibility="restricted",
                  default_acl=["group:leadership"])
    assert finds(world, world.analyst, "zephyrgale") and not finds(world, world.member, "zephyrgale")
    assert finds(world, world.member, "hushbadger")  # a private channel keeps its members
    again = sync(world, slack_source)
    assert again.unchanged == 4 and not finds(world, world.member, "zephyrgale")
