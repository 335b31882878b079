"""The replicas area of `make bench`: reads from a streaming replica never serve a revoked grant
(groundwork/replicas.py), and what a replica costs or gives a search.

A real standby of the embedded server (groundwork/embedded_replica.py) serves a scratch tenant. Each probe
grants a reader a restricted document, waits until the standby has replayed the grant and serves the reader's
search (which must find the document: a probe that cannot see it proves nothing), then revokes the grant and
searches at once as the reader. A hit then is a stale read. Two modes, each PROBES probes:
- `paused`: the standby's replay is paused (pg_wal_replay_pause) before the revoke;
- `lagging`: the standby applies WAL 200 ms late (recovery_min_apply_delay), as a replica under load does.
`replica_held_revoked_grant` is the control: probes where the replica still held the revoked grant right after
the read (what it would have served without the fence; paused, every probe). `served_by_replica_after_revoke`
counts revoke-then-read searches a replica served (it may, once it has replayed the revoke: lagging, rarely;
paused, never).

Throughput: the same searches by a caller whose access did not change, one after another, with the replica
configured and without (same run, same machine: the replica shares its cores, so the ratio shows the routing's
cost — a fence read and a replay-position read per search — rather than added capacity).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from psycopg import sql

from benchmarks.knowledge.scratch import scratch_tenant_drop
from groundwork.embedded_replica import (
    StandbyUnavailable,
    embedded_standby_running,
    postgres_bin,
    standby_alias,
)
from groundwork.models import Tenant
from groundwork.replicas import replica_choose, replica_states_forget
from groundwork.selectors import authority_for_service, authority_for_user
from groundwork.services import membership_set
from knowledge.models import Document, DocumentGrant, Source
from knowledge.retrieval.search import hybrid_search
from knowledge.services import DocumentInput, document_grant_add, document_ingest, document_reader_remove

PROBES = 1000
QUERY = "quarterly robotics workforce plan"


def _finds(authority, document_id: int) -> bool:
    result = hybrid_search(authority, QUERY, k=5, channels=("lexical",))
    return any(hit.document_id == document_id for hit in result.hits)


def _set_apply_delay(standby, value: str) -> None:
    with standby.admin() as conn:
        conn.execute(sql.SQL("ALTER SYSTEM SET recovery_min_apply_delay = {}").format(sql.Literal(value)))
        conn.execute("SELECT pg_reload_conf()")


def _probe(standby, *, mode: str, admin, reader, reader_user, document) -> dict:
    """One grant-then-revoke-then-read. Returns what happened."""
    document_grant_add(admin, document=document, principal=f"user:{reader_user.pk}", reason="bench")
    for _ in range(200):  # the replica must serve the reader and see the grant before the revoke
        standby.catch_up()
        if replica_choose(reader) != "default":
            break
    served_before = replica_choose(reader) != "default"
    visible_before = _finds(reader, document.pk)
    grant = DocumentGrant.objects.get(document=document)
    if mode == "paused":
        standby.replay_pause()
    document_reader_remove(admin, document=document, principal_id=grant.principal_id)
    alias = replica_choose(reader)
    stale = _finds(reader, document.pk)
    with standby.admin() as held:  # the control: the replica still held the revoked grant when it was read
        unfenced_stale = bool(held.execute("SELECT count(*) FROM knowledge_documentgrant WHERE id = %s",
                                           [grant.pk]).fetchone()[0])
    if mode == "paused":
        standby.replay_resume()
    return {"served_before": served_before, "visible_before": visible_before, "stale": stale,
            "unfenced_stale": unfenced_stale, "replica_after": alias != "default"}


def _throughput(reader, *, searches: int) -> float:
    started = time.perf_counter()
    for _ in range(searches):
        hybrid_search(reader, QUERY, k=5, channels=("lexical",))
    return searches / (time.perf_counter() - started)


def run(out_dir: Path, quick: bool = False, *, probes: int | None = None) -> dict:
    probes = probes or (100 if quick else PROBES)
    result: dict = {"goals": {"stale_reads_after_revoke": 0}, "notes": []}
    if not settings.EMBEDDED_DATABASE or postgres_bin() is None:
        result["notes"].append("skipped: needs the embedded server and its pg_basebackup/pg_ctl binaries")
        return result
    tenant = Tenant.objects.create(slug=f"bench-replicas-{uuid.uuid4().hex[:6]}", name="Replica benchmark")
    reader_user = get_user_model().objects.create_user(username=f"bench-reader-{uuid.uuid4().hex[:6]}")
    try:
        membership_set(user=reader_user, tenant=tenant, role="member")
        admin = authority_for_service(tenant=tenant, service_name="bench", role="admin")
        source = Source.objects.create(tenant=tenant, kind="wiki", name="Replica bench")
        document_ingest(authority=admin, source=source, item=DocumentInput(
            external_id="open", format="text", title="Team calendar", body="Every team plans its quarter in March."))
        made = document_ingest(authority=admin, source=source, item=DocumentInput(
            external_id="plan", format="text", title="Quarterly robotics workforce plan",
            body="The quarterly workforce plan cuts the robotics team by four people.",
            visibility="restricted", acl=("group:bench-hr",)))  # the reader reads it through grants only
        document = Document.objects.get(pk=made.document_id)
        reader = authority_for_user(user=reader_user, tenant_slug=tenant.slug)
        with embedded_standby_running(settings.VAR_DIR) as standby, standby_alias(standby):
            replica_states_forget()
            for mode in ("paused", "lagging"):
                if mode == "lagging":
                    _set_apply_delay(standby, "200ms")
                outcomes = [_probe(standby, mode=mode, admin=admin, reader=reader, reader_user=reader_user,
                                   document=document) for _ in range(probes)]
                if mode == "lagging":
                    _set_apply_delay(standby, "0")
                result[f"{mode}_probes"] = len(outcomes)
                result[f"{mode}_stale_reads_after_revoke"] = sum(o["stale"] for o in outcomes)
                result[f"{mode}_replica_held_revoked_grant"] = sum(o["unfenced_stale"] for o in outcomes)
                result[f"{mode}_visible_before_revoke"] = sum(o["visible_before"] for o in outcomes)
                result[f"{mode}_served_by_replica_before_revoke"] = sum(o["served_before"] for o in outcomes)
                result[f"{mode}_served_by_replica_after_revoke"] = sum(o["replica_after"] for o in outcomes)
            result["stale_reads_after_revoke"] = (result["paused_stale_reads_after_revoke"]
                                                  + result["lagging_stale_reads_after_revoke"])
            result["probes"] = result["paused_probes"] + result["lagging_probes"]
            standby.catch_up()
            searches = 100 if quick else 500
            document_grant_add(admin, document=document, principal=f"user:{reader_user.pk}", reason="bench")
            standby.catch_up()
            replica_choose(reader)
            standby.catch_up()
            with_replica = _throughput(reader, searches=searches)
            served = replica_choose(reader) != "default"
        replica_states_forget()
        without = _throughput(reader, searches=searches)
        result.update({"searches_per_s_with_replica": round(with_replica, 1),
                       "searches_per_s_primary_only": round(without, 1),
                       "throughput_ratio_replica_vs_none": round(with_replica / without, 3),
                       "throughput_served_by_replica": served})
    except StandbyUnavailable as exc:
        result["notes"].append(f"skipped: {exc}")
    finally:
        scratch_tenant_drop(tenant)
        reader_user.delete()
    result["notes"].append("one standby on the same machine as the primary (loopback); searches are lexical only "
                           "(embedding off), one at a time")
    return result
