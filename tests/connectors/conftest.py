"""Connector fixtures: a small Slack export generated per test in acme's import folder (under tmp_path), and
helpers to run a sync the way the worker does (the test transaction never commits, so on-commit queueing does
not fire: the run is executed directly)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connectors.models import SyncRun
from connectors.services import connector_configure, sync_run_start
from connectors.sync import sync_run_execute
from knowledge.models import Source
from knowledge.retrieval import hybrid_search

# 2026-11-02 09:00 UTC and on.
T0 = 1793610000


def ts(minutes: int, micro: int = 0) -> str:
    return f"{T0 + minutes * 60}.{micro:06d}"


def slack_users() -> list[dict]:
    return [
        {"id": "UADMIN", "name": "admin", "profile": {"email": "admin@example.test", "real_name": "Ada Admin"}},
        {"id": "UMEMBER", "name": "member", "profile": {"email": "member@example.test", "real_name": "Max Member"}},
        {"id": "UANALYST", "name": "analyst", "profile": {"email": "analyst@example.test", "real_name": "Ana Lyst"}},
        {"id": "UBOT", "name": "deploybot", "is_bot": True, "profile": {"real_name": "Deploy bot"}},
    ]


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def slack_export(root: Path, *, private_members=("UADMIN", "UMEMBER")) -> Path:
    """general (public): a day of chat and a thread; secret (private): one day with a marker."""
    write_json(root / "users.json", slack_users())
    write_json(root / "channels.json", [{"id": "CGEN", "name": "general", "members": ["UADMIN", "UMEMBER",
                                                                                      "UANALYST"]}])
    write_json(root / "groups.json", [{"id": "GSEC", "name": "secret", "members": list(private_members)}])
    write_json(root / "general" / "2026-11-02.json", [
        {"type": "message", "user": "UADMIN", "text": "The ferry timetable zephyrgale changes on Monday.",
         "ts": ts(0)},
        {"type": "message", "user": "UMEMBER", "text": "Who owns the quokkaplan rollout?", "ts": ts(5),
         "thread_ts": ts(5)},
        {"type": "message", "user": "UANALYST", "text": "<@UADMIN> owns it until Friday.", "ts": ts(7),
         "thread_ts": ts(5)},
        {"type": "message", "subtype": "channel_join", "user": "UANALYST", "text": "joined", "ts": ts(8)},
    ])
    write_json(root / "general" / "2026-11-03.json", [
        {"type": "message", "user": "UMEMBER", "text": "Thread reply a day later about quokkaplan.", "ts": ts(1500),
         "thread_ts": ts(5)},
        {"type": "message", "user": "UBOT", "text": "Deploy 42 finished.", "ts": ts(1510)},
    ])
    write_json(root / "secret" / "2026-11-02.json", [
        {"type": "message", "user": "UADMIN", "text": "The merger codename is hushbadger.", "ts": ts(30)},
    ])
    return root


@pytest.fixture
def import_root(settings, tmp_path) -> Path:
    settings.CONNECTORS_IMPORT_ROOT = tmp_path / "imports"
    return settings.CONNECTORS_IMPORT_ROOT


@pytest.fixture
def slack_source(world, import_root) -> Source:
    slack_export(import_root / "acme" / "slack")
    source = Source.objects.create(tenant=world.acme, kind="chat", name="Acme Slack")
    connector_configure(authority=world.authority(world.admin), source=source, kind="slack_export",
                        settings={"path": "slack", "workspace_url": "https://acme.slack.test"})
    return source


def sync(world, source: Source, mode: str = "content") -> SyncRun:
    run = sync_run_start(authority=world.authority(world.admin, source.tenant) if source.tenant == world.acme
                         else world.authority(world.outsider, world.globex), source=source, mode=mode)
    sync_run_execute(run_id=run.pk)
    run.refresh_from_db()
    return run


def finds(world, user, word: str, tenant=None) -> bool:
    hits = hybrid_search(world.authority(user, tenant), word, k=5, channels=("lexical",)).hits
    return any(word in hit.text for hit in hits)
