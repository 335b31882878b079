"""Connectors benchmark (`var/bench/connectors.json`).

A seeded generated Slack export (50,000 messages; 5,000 under --quick) in a scratch tenant:
1. `slack_messages_per_s`: a full content sync (records → documents through knowledge's ingest), embeddings and
   later layers' listeners off, as in the ingest and intake benches: the number is the sync path's own.
2. `resync_unchanged_s`: a second content sync of the unchanged export (every record skipped by its hash).
3. `perm_sync_s`: a permission sync after 1,000 membership changes in the private channels (half removals, half
   additions), listeners on (answer caches and findings hear every "access_changed").
4. `stale_reads_after_perm_sync`: right after that sync, one removed member per private channel, signed in as a
   real user of the tenant, searches for the word only their old channel holds through knowledge's retrieval
   (the one access path); every hit is a stale read. Goal 0.
5. `confluence_pages_per_s`: a full content sync of a seeded generated Confluence space export (2,000 pages in
   an 8-ary tree, one in ten restricted, two page links each, a Markdown attachment on one in twenty; 300 pages
   under --quick), embeddings and listeners off like the Slack figure: storage markup → Markdown, restrictions
   with inheritance, links, ingest.
6. `slack_api_messages_per_s`: the same export served by a loopback Slack Web API (benchmarks/connectors/slack_api.py)
   and read by the live connector (pagination at 200 per page, replies per thread), embeddings and listeners
   off; `slack_api_incremental_s`: a second live sync with nothing new (history from each channel's cursor day
   only: thread_lookback_days 0), and the calls each made.
Everything lives in a scratch tenant and a temporary import folder, removed at the end.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path

from django.contrib.auth import get_user_model
from django.test import override_settings

from benchmarks.knowledge.ingest import embedding_off
from benchmarks.knowledge.scratch import scratch_tenant_drop
from connectors.models import SyncRun
from connectors.services import connector_configure, sync_run_start
from connectors.sync import sync_run_execute
from groundwork.models import Tenant
from groundwork.selectors import authority_for_service, authority_for_user
from groundwork.services import membership_set
from knowledge.hooks import listeners_paused
from knowledge.models import Source
from knowledge.retrieval import hybrid_search

from .confluence_space import confluence_space_generate
from .confluence_xml_space import confluence_xml_space_generate
from .slack_api import BENCH_TOKEN, ExportWebApi, serve
from .slack_export import membership_changes, slack_export_generate

CEILINGS = {"stale_reads_after_perm_sync": 0, "perm_sync_s": 30.0}
GOALS = {"slack_messages_per_s": 1000.0, "confluence_pages_per_s": 100.0}
PERMISSION_CHANGES = 1000
MESSAGES, QUICK_MESSAGES = 50_000, 5000
PAGES, QUICK_PAGES = 2000, 300


def _sync(authority, source, mode: str) -> tuple[SyncRun, float]:
    started = time.perf_counter()
    run = sync_run_start(authority=authority, source=source, mode=mode, trigger="bench")
    sync_run_execute(run_id=run.pk)  # a no-op when the inline (eager) queue already ran it
    seconds = time.perf_counter() - started
    run.refresh_from_db()
    if run.status != SyncRun.Status.SUCCEEDED:
        raise RuntimeError(f"{mode} sync failed: {run.message} {run.errors[:3]}")
    return run, seconds


def _probe_users(tenant: Tenant, export, removed: dict[str, list[str]]) -> list[tuple[object, str]]:
    """One real user per private channel, with the e-mail of a member the changes will remove."""
    users = []
    for channel, gone in removed.items():
        email = export.email(gone[0])
        user = get_user_model().objects.create_user(username=f"bench-{uuid.uuid4().hex[:10]}", email=email,
                                                    password=None)
        membership_set(user=user, tenant=tenant, role="member")
        users.append((user, export.markers[channel]))
    return users


def _reads(tenant: Tenant, probes) -> int:
    hits = 0
    for user, marker in probes:
        authority = authority_for_user(user=user, tenant_slug=tenant.slug)
        found = hybrid_search(authority, marker, k=5, channels=("lexical",)).hits
        hits += sum(1 for hit in found if marker in hit.text)
    return hits


def _confluence(tenant: Tenant, authority, root: Path, pages: int) -> dict:
    """The Confluence content sync figure (the caller holds embeddings off)."""
    generated = confluence_space_generate(root / tenant.slug / "confluence", pages=pages)
    source = Source.objects.create(tenant=tenant, kind="wiki", name="Bench Confluence")
    connector_configure(authority=authority, source=source, kind="confluence_export", settings={"path": "confluence"})
    with listeners_paused():
        run, seconds = _sync(authority, source, "content")
    if run.added != generated["pages"] + generated["attachments"]:
        raise RuntimeError(f"the Confluence sync wrote {run.added} documents, not {generated}: {run.errors[:3]}")
    figures = {"confluence_pages": pages, "confluence_attachments": generated["attachments"],
               "confluence_sync_s": round(seconds, 2), "confluence_pages_per_s": round(pages / seconds, 1)}
    # The same space as Confluence's own XML export (entities.xml, streamed twice: access, then bodies).
    generated = confluence_xml_space_generate(root / tenant.slug / "confluence-xml.zip", pages=pages)
    source = Source.objects.create(tenant=tenant, kind="wiki", name="Bench Confluence (XML export)")
    connector_configure(authority=authority, source=source, kind="confluence_export",
                        settings={"path": "confluence-xml.zip"})
    with listeners_paused():
        run, seconds = _sync(authority, source, "content")
    if run.added != generated["pages"] + generated["attachments"]:
        raise RuntimeError(f"the Confluence XML sync wrote {run.added} documents, not {generated}: {run.errors[:3]}")
    return {**figures, "confluence_xml_sync_s": round(seconds, 2),
            "confluence_xml_pages_per_s": round(pages / seconds, 1)}


def _live(authority, tenant: Tenant, export_root: Path, messages: int) -> dict:
    """Content syncs of the live connector against the loopback Web API serving the same export."""
    api = ExportWebApi(export_root)
    server, url = serve(api)
    try:
        with override_settings(SLACK_API_BASE_URL=url):
            source = Source.objects.create(tenant=tenant, kind="chat", name="Bench Slack (live)")
            connector_configure(authority=authority, source=source, kind="slack_api",
                                settings={"thread_lookback_days": 0}, credentials={"token": BENCH_TOKEN})
            first, seconds = _sync(authority, source, "content")
            full_calls, api.calls = api.calls, 0
            again, incremental_seconds = _sync(authority, source, "content")
    finally:
        server.shutdown()
        server.server_close()
    return {"slack_api_messages_per_s": round(messages / seconds, 1), "slack_api_records": first.added,
            "slack_api_sync_s": round(seconds, 2), "slack_api_calls": full_calls,
            "slack_api_incremental_s": round(incremental_seconds, 2), "slack_api_incremental_calls": api.calls,
            "slack_api_incremental_added": again.added}


def run(out_dir: Path, quick: bool = False) -> dict:
    messages = QUICK_MESSAGES if quick else MESSAGES
    result: dict = {"quick": quick, "notes": [], "ceilings": dict(CEILINGS), "goals": dict(GOALS)}
    tenant = Tenant.objects.create(slug=f"bench-{uuid.uuid4().hex[:12]}", name="Connectors benchmark (scratch)")
    probes: list = []
    try:
        with tempfile.TemporaryDirectory() as tmp, override_settings(CONNECTORS_IMPORT_ROOT=Path(tmp)):
            export = slack_export_generate(Path(tmp) / tenant.slug / "slack", messages=messages)
            removed = {c: [] for c in export.private}
            authority = authority_for_service(tenant=tenant, service_name="bench-connectors", role="admin")
            source = Source.objects.create(tenant=tenant, kind="chat", name="Bench Slack")
            connector_configure(authority=authority, source=source, kind="slack_export", settings={"path": "slack"})
            with embedding_off():
                with listeners_paused():
                    first, seconds = _sync(authority, source, "content")
                    again, resync_seconds = _sync(authority, source, "content")
                removed = membership_changes(export, PERMISSION_CHANGES)
                probes = _probe_users(tenant, export, removed)
                visible_before = _reads(tenant, probes)
                perm, perm_seconds = _sync(authority, source, "permissions")
                stale = _reads(tenant, probes)
                confluence = _confluence(tenant, authority, Path(tmp), QUICK_PAGES if quick else PAGES)
                with listeners_paused():  # after the probe: the live source holds the same private channels
                    result.update(_live(authority, tenant, export.root, messages))
        result.update(
            slack_messages=messages, slack_records=first.added, slack_messages_per_s=round(messages / seconds, 1),
            slack_records_per_s=round(first.added / seconds, 1), content_sync_s=round(seconds, 2),
            resync_unchanged_s=round(resync_seconds, 2), resync_unchanged_records=again.unchanged,
            permission_changes=PERMISSION_CHANGES, perm_sync_s=round(perm_seconds, 2),
            perm_sync_documents_reshared=perm.updated, probe_members=len(probes),
            probe_reads_before_perm_sync=visible_before, stale_reads_after_perm_sync=stale, **confluence)
        if visible_before < len(probes):
            result["notes"].append(f"only {visible_before} of {len(probes)} probes found their channel before the "
                                   "permission sync: the stale-read probe is weaker than it should be")
        result["notes"].append(
            f"{messages:,} messages → {first.added:,} records (one per thread, one per channel-day); content sync "
            f"{seconds:.1f} s with embeddings and listeners off; unchanged re-sync {resync_seconds:.2f} s "
            f"({again.unchanged:,} records skipped by hash); {PERMISSION_CHANGES:,} membership changes re-shared "
            f"{perm.updated:,} documents in {perm_seconds:.2f} s; stale reads after: {stale}")
        result["notes"].append(
            f"Confluence: {result['confluence_pages']:,} pages + {result['confluence_attachments']} attachments in "
            f"{result['confluence_sync_s']:.1f} s (embeddings and listeners off); the same space as Confluence's XML "
            f"export (entities.xml) in {result['confluence_xml_sync_s']:.1f} s")
    finally:
        for user, _ in probes:
            user.delete()
        scratch_tenant_drop(tenant)
    print(f"connectors: {result.get('confluence_pages_per_s')} Confluence pages/s, "
          f"{result.get('slack_messages_per_s')} Slack messages/s ({result.get('slack_api_messages_per_s')} live "
          f"API), re-sync unchanged "
          f"{result.get('resync_unchanged_s')} s, perm sync {result.get('perm_sync_s')} s, "
          f"stale reads {result.get('stale_reads_after_perm_sync')}")
    return result
