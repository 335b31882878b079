"""Resumable content syncs: a sync killed with SIGKILL halfway, run again, fetches nothing the killed run had
committed and loses nothing; deletions after a resumed listing come from the slim listing of ids."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.urls import reverse

from connectors import sync as sync_module
from connectors.models import Connector, SyncRun
from connectors.services import connector_configure
from connectors.sources.checkpoint import Checkpoint, CheckpointInvalid, config_digest
from knowledge.models import Document, Source

from .confluence_fixtures import confluence_export
from .conftest import slack_export, sync

# Fixtures of the kinds' own tests, used here by name.
from .test_confluence_xml import xml_source  # noqa: F401
from .test_jira_github import github_source, jira_export  # noqa: F401
from .test_live_api import confluence, github, live  # noqa: F401
from .test_slack_api import fake, live_source  # noqa: F401

FILES = 40
BATCH = 4

# The child: the worker's own entry point under a task's database scope, with every file read of the import
# folder logged (the fetch count) and slowed a little, so the parent can kill it halfway.
CHILD = """
import os, pathlib, sys, time, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groundwork.settings")
django.setup()
from connectors.sync import sync_run_execute
from groundwork.rls import system_scope

root, log = os.environ["CONNECTORS_IMPORT_ROOT"], os.environ["FETCH_LOG"]
real_read = pathlib.Path.read_bytes

def counted_read(path):
    if str(path).startswith(root):
        with open(log, "a") as out:
            out.write(path.name + "\\n")
        time.sleep(float(os.environ["FETCH_DELAY_S"]))
    return real_read(path)

pathlib.Path.read_bytes = counted_read
with system_scope("task:connectors.tasks.sync_run_task"):
    print(sync_run_execute(run_id=int(sys.argv[1])))
"""


def _database_url() -> str:
    p = connection.settings_dict
    if p["HOST"].startswith("/"):
        return f"postgresql://{p['USER']}:{p['PASSWORD']}@/{p['NAME']}?host={p['HOST']}"
    return f"postgresql://{p['USER']}:{p['PASSWORD']}@{p['HOST']}:{p['PORT'] or 5432}/{p['NAME']}"


def _child(run_id: int, log: Path, delay_s: float) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": _database_url(),
           "CONNECTORS_IMPORT_ROOT": str(settings.CONNECTORS_IMPORT_ROOT), "CONNECTORS_BATCH_SIZE": str(BATCH),
           "FETCH_LOG": str(log), "FETCH_DELAY_S": str(delay_s)}
    return subprocess.Popen([sys.executable, "-c", CHILD, str(run_id)], cwd=Path(settings.BASE_DIR), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _fetched(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def _note(i: int) -> str:
    return f"note-{i:02d}.md"


@pytest.mark.django_db(transaction=True)
def test_a_sync_killed_halfway_resumes_without_fetching_twice_or_losing(world, import_root, tmp_path):
    folder = import_root / "acme" / "notes"
    folder.mkdir(parents=True)
    for i in range(FILES):
        (folder / _note(i)).write_text(f"# Note {i}\n\nThe resumable marker word resume{i:02d}word.\n")
    source = Source.objects.create(tenant=world.acme, kind="notes", name="Acme notes")
    connector = connector_configure(authority=world.authority(world.admin), source=source, kind="folder",
                                    settings={"path": "notes"})
    # Queued as the service does, without its on-commit task (which would run the sync inline here).
    run = SyncRun.objects.create(tenant=world.acme, connector=connector, mode="content", trigger="manual")

    first_log = tmp_path / "first.log"
    child = _child(run.pk, first_log, delay_s=0.15)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            checkpoint = Connector.objects.get(pk=connector.pk).sync_checkpoint
            if checkpoint.get("unit", 0) >= FILES // 2:
                break
            assert child.poll() is None, f"the sync ended before it was killed: {child.communicate()}"
            time.sleep(0.05)
        else:
            pytest.fail("the sync never reached half of the folder")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=30)
    checkpoint = Connector.objects.get(pk=connector.pk).sync_checkpoint
    committed = checkpoint["unit"]  # one file, one document, one unit
    first = _fetched(first_log)
    assert FILES // 2 <= committed < FILES
    assert first[:committed] == [_note(i) for i in range(committed)]
    assert Document.objects.filter(source=source).count() >= committed
    assert SyncRun.objects.get(pk=run.pk).status == "running"  # what a killed worker leaves

    # Upstream changes while the sync is down: a committed file is removed.
    (folder / _note(3)).unlink()

    # Run it again, as the requeue does once the run is stale; the lock goes when the dead session does.
    second_log = tmp_path / "second.log"
    for _attempt in range(50):
        out, err = _child(run.pk, second_log, delay_s=0).communicate(timeout=300)
        if out.strip() != "busy":
            break
        time.sleep(0.2)
    assert out.strip() == "succeeded", err[-3000:]
    second = _fetched(second_log)

    fetched_twice = set(first) & set(second)
    assert fetched_twice <= {_note(i) for i in range(committed, FILES)}  # only what the last batch had not committed
    assert not fetched_twice & {_note(i) for i in range(committed)}
    assert second == [_note(i) for i in range(committed, FILES)]  # each remaining file once, none skipped
    expected = {_note(i) for i in range(FILES)} - {_note(3)}
    assert set(Document.objects.filter(source=source).values_list("external_id", flat=True)) == expected
    run.refresh_from_db()
    assert (run.resumed_after, run.deleted, run.failed) == (committed, 1, 0)
    assert Connector.objects.get(pk=connector.pk).sync_checkpoint == {}
    print(json.dumps({"committed_at_kill": committed, "fetched_first": len(first), "fetched_second": len(second),
                      "fetched_twice": len(fetched_twice)}))


# --- Every kind: a run that fails after a committed batch resumes from its checkpoint ----------------------


def _export_source(world, import_root, kind: str, build) -> Source:
    build(import_root / "acme" / kind)
    source = Source.objects.create(tenant=world.acme, kind="notes", name=f"Acme {kind}")
    connector_configure(authority=world.authority(world.admin), source=source, kind=kind,
                        settings={"path": kind, "workspace_url": "https://acme.slack.test"})
    return source


def _folder(root: Path) -> None:
    root.mkdir(parents=True)
    for i in range(6):
        (root / f"doc-{i}.md").write_text(f"# Doc {i}\n\nFolder resume text {i}.\n")


KIND_SOURCES = {
    "folder": lambda request, world, root: _export_source(world, root, "folder", _folder),
    "slack_export": lambda request, world, root: _export_source(world, root, "slack_export", slack_export),
    "jira_export": lambda request, world, root: _export_source(world, root, "jira_export", jira_export),
    "github_export": lambda request, world, root: request.getfixturevalue("github_source"),
    "confluence_export": lambda request, world, root: _export_source(world, root, "confluence_export",
                                                                     confluence_export),
    "confluence_export_xml": lambda request, world, root: request.getfixturevalue("xml_source"),
    "confluence_api": lambda request, world, root: request.getfixturevalue("confluence")[1],
    "github_api": lambda request, world, root: request.getfixturevalue("github")[1],
    "slack_api": lambda request, world, root: request.getfixturevalue("live_source"),
}


def _state(source: Source) -> set[tuple[str, str]]:
    return set(Document.objects.filter(source=source).values_list("external_id", "content_hash"))


class _Crash(Exception):
    pass


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(KIND_SOURCES))
def test_every_kind_resumes_a_failed_run_from_its_checkpoint(kind, request, world, import_root, settings,
                                                             monkeypatch):
    settings.CONNECTORS_BATCH_SIZE = 1
    source = KIND_SOURCES[kind](request, world, import_root)
    clean = sync(world, source)  # what a complete run stores, for comparison
    assert clean.status == "succeeded", clean.message
    expected = _state(source)
    Document.objects.filter(source=source).delete()
    Connector.objects.filter(source=source).update(sync_state={})

    saves, real_save = [], sync_module._checkpoint_save

    def crash_after_two(connector, impl):
        real_save(connector, impl)
        saves.append(impl.checkpoint())
        if len(saves) == 2:
            raise _Crash("the worker died")

    monkeypatch.setattr(sync_module, "_checkpoint_save", crash_after_two)
    failed = sync(world, source)
    assert failed.status == "failed"
    stored = Connector.objects.get(source=source).sync_checkpoint
    assert stored == saves[-1].as_json() and stored["unit"] >= 1

    monkeypatch.setattr(sync_module, "_checkpoint_save", real_save)
    resumed = sync(world, source)
    assert resumed.status == "succeeded", resumed.message
    assert resumed.resumed_after == stored["unit"]
    assert resumed.seen < clean.seen  # what the failed run committed was not listed again
    assert _state(source) == expected  # nothing lost, nothing different
    assert Connector.objects.get(source=source).sync_checkpoint == {}
    # The admin reads it back in the API and on the run's page; another tenant's admin reads nothing.
    admin = world.client(world.admin)
    assert admin.get(reverse("api:sync-run", kwargs={"run_id": resumed.pk})).json()["resumed_after"] == \
        stored["unit"]
    assert admin.get(reverse("api:sync-run", kwargs={"run_id": clean.pk})).json()["resumed_after"] == 0
    browser = Client()
    browser.force_login(world.admin)
    assert f"resumed after {stored['unit']} already-synced" in browser.get(
        f"/t/acme/manage/connectors/runs/{resumed.pk}/").content.decode()
    outsider = world.client(world.outsider, world.globex)
    assert outsider.get(reverse("api:sync-run", kwargs={"run_id": resumed.pk})).status_code == 404


# --- Validation: a checkpoint the connector did not write for these settings is not resumed from -----------
GOOD = {"version": 1, "config": "", "unit": 2, "key": "channel CGEN", "item": 1, "done": False, "window": {},
        "order": None}


@pytest.mark.parametrize("change", [
    {"version": 2}, {"config": "another"}, {"unit": -1}, {"item": "3"}, {"unit": True}, {"key": None},
    {"window": []}, {"done": "yes"}, {"order": "a/b"}, {"order": [1]},
])
def test_a_malformed_or_foreign_checkpoint_is_refused(change):
    config = config_digest("folder", {"path": "notes"})
    assert Checkpoint.parse({**GOOD, "config": config}, config=config).unit == 2
    with pytest.raises(CheckpointInvalid):
        Checkpoint.parse({**GOOD, "config": config, **change}, config=config)


@pytest.mark.django_db
def test_a_refused_checkpoint_means_a_complete_listing(world, slack_source):
    config = config_digest("slack_export", Connector.objects.get(source=slack_source).settings)
    Connector.objects.filter(source=slack_source).update(sync_checkpoint={**GOOD, "config": config,
                                                                          "window": {"since": "x"}})
    run = sync(world, slack_source)
    assert run.status == "succeeded" and run.resumed_after == 0 and run.added == 4  # every record
    assert Connector.objects.get(source=slack_source).sync_checkpoint == {}


@pytest.mark.django_db
def test_a_source_changed_under_the_checkpoint_restarts_the_listing_and_loses_nothing(world, import_root,
                                                                                     settings, monkeypatch):
    settings.CONNECTORS_BATCH_SIZE = 1
    source = _export_source(world, import_root, "jira_export", jira_export)
    real_save = sync_module._checkpoint_save

    def crash(connector, impl):
        real_save(connector, impl)
        raise _Crash("the worker died")

    monkeypatch.setattr(sync_module, "_checkpoint_save", crash)
    assert sync(world, source).status == "failed"
    assert Connector.objects.get(source=source).sync_checkpoint["key"] == "file search-0.json"
    monkeypatch.setattr(sync_module, "_checkpoint_save", real_save)
    # A file sorted before the checkpoint's: its unit is no longer the first, so the listing starts over.
    (import_root / "acme" / "jira_export" / "early.json").write_text(
        (import_root / "acme" / "jira_export" / "search-3.json").read_text().replace("OPS-", "NEW-"))
    run = sync(world, source)
    assert run.status == "succeeded" and run.resumed_after == 0
    keys = set(Document.objects.filter(source=source).values_list("external_id", flat=True))
    assert {"ACME-1", "ACME-2", "ACME-3", "OPS-1", "NEW-1"} <= keys
