"""Reads from streaming replicas that never serve a revoked access.

DATABASE_REPLICA_URLS adds one Django database alias per replica (`replica_1`, `replica_2`, ...). The read paths
that carry the load — hybrid search (answers, Findings and the search API and pages all retrieve through it) —
enter `replica_reads(authority)`, which picks the alias their statements use (`read_connection()` for raw SQL,
`ReplicaRouter` for the ORM). Everything else, writes and any read inside a write transaction above all, stays
on the primary: the router sends writes to `default`, and a block entered while the primary connection is
inside `atomic` keeps to the primary (its snapshot holds the transaction's own uncommitted rows).

Access freshness. Every change to who may read what (a document's ACL, visibility or deletion, a grant, group
membership, a membership, an API key's revocation, a user's deactivation) marks the tenant's row in
`platform_access_fence` pending, by trigger, inside the writing transaction (groundwork/sql.py FENCE_*). The
position of that transaction's commit record is not known there, so a pending fence sends the tenant's reads
to the primary. The first reader that sees the committed mark records the primary's WAL insert position —
taken after it saw the commit, so past the commit record — and clears the mark (FENCE_RESOLVE, guarded by the
row's generation so a newer change stays pending). A replica then serves a read scope (the caller's tenant and
the platform corpus, and the all-tenants row 0) only when `pg_last_wal_replay_lsn()` is at or past the highest
fence of the scope; otherwise the read goes to the primary. The fence is always read on the primary.

A replica that cannot be reached is skipped for REPLICA_DOWN_RETRY_S; one whose last replayed transaction is
more than REPLICA_MAX_LAG_S behind (while the primary has written past it) is skipped too. /healthz lists
each replica's state (`replica_health`).
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, connections
from django.db.utils import DEFAULT_DB_ALIAS

from .authority import Authority
from .dburl import REPLICA_ALIAS_PREFIX

logger = logging.getLogger(__name__)

# Seconds a replica that failed to answer is left out before it is tried again: a down replica must not cost
# every read a connection attempt.
REPLICA_DOWN_RETRY_S = 5.0


def replica_aliases() -> list[str]:
    return [alias for alias in connections.settings if alias.startswith(REPLICA_ALIAS_PREFIX)]


# --- Which alias a read uses ----------------------------------------------------------------------------------
_read_alias: contextvars.ContextVar[str] = contextvars.ContextVar("groundwork_read_alias", default=DEFAULT_DB_ALIAS)


def read_alias() -> str:
    return _read_alias.get()


def read_connection():
    """The connection the current read block uses (the primary outside one)."""
    return connections[_read_alias.get()]


class ReplicaRouter:
    """ORM reads inside `replica_reads` go to its replica; writes and migrations only ever to the primary."""

    def db_for_read(self, model, **hints):
        alias = _read_alias.get()
        if alias == DEFAULT_DB_ALIAS or connections[DEFAULT_DB_ALIAS].in_atomic_block:
            return None  # inside a transaction opened in the block (a channel's savepoint): its snapshot
        return alias

    def db_for_write(self, model, **hints):
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints):
        return True  # every alias holds the same database

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == DEFAULT_DB_ALIAS


# --- Replica state ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReplicaState:
    alias: str
    state: str  # "ok", "lagging", "down", "not_standby"
    replay_lsn: int | None = None
    lag_s: float | None = None

    def as_health(self) -> dict:
        return {"alias": self.alias, "state": self.state,
                "lag_s": None if self.lag_s is None else round(self.lag_s, 3)}


_down_until: dict[str, float] = {}
_down_lock = threading.Lock()


def replica_states_forget() -> None:
    """Forget which replicas were found down (tests, after changing the aliases)."""
    with _down_lock:
        _down_until.clear()


def replica_failed(alias: str) -> None:
    """`alias` failed a connection or a query: left out for REPLICA_DOWN_RETRY_S, its connection dropped."""
    try:
        connections[alias].close()
    except DatabaseError:
        pass  # already broken: closing is all that was asked
    with _down_lock:
        _down_until[alias] = time.monotonic() + REPLICA_DOWN_RETRY_S


def _replica_position(alias: str) -> tuple[int | None, float | None]:
    from .sql import REPLICA_POSITION

    with connections[alias].cursor() as cursor:
        cursor.execute(REPLICA_POSITION)
        return cursor.fetchone()


def replica_state(alias: str, *, primary_lsn: int, probe_down: bool = False) -> ReplicaState:
    """`alias`'s state against the primary's WAL write position. A replica marked down is not tried again
    before REPLICA_DOWN_RETRY_S unless `probe_down` (health)."""
    now = time.monotonic()
    if not probe_down and _down_until.get(alias, 0.0) > now:
        return ReplicaState(alias, "down")
    try:
        replay_lsn, since_replay_s = _replica_position(alias)
    except DatabaseError as exc:
        logger.warning("replica %s unreachable (%s): reads go to the primary", alias, type(exc).__name__)
        replica_failed(alias)
        return ReplicaState(alias, "down")
    with _down_lock:
        _down_until.pop(alias, None)
    if replay_lsn is None:
        return ReplicaState(alias, "not_standby")
    # Caught up with everything the primary has written: no lag, however long ago its last commit was (the
    # replay timestamp alone would call an idle primary's replica lagging).
    lag_s = 0.0 if replay_lsn >= primary_lsn else max(0.0, since_replay_s or 0.0)
    if lag_s > settings.REPLICA_MAX_LAG_S:
        return ReplicaState(alias, "lagging", replay_lsn, lag_s)
    return ReplicaState(alias, "ok", replay_lsn, lag_s)


def _primary_lsn() -> int:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint")
        return cursor.fetchone()[0]


def replica_health() -> dict:
    """/healthz: each replica's state. Never degraded: with every replica gone the primary serves all reads."""
    aliases = replica_aliases()
    if not aliases:
        return {"ok": True, "configured": 0}
    primary_lsn = _primary_lsn()
    states = [replica_state(alias, primary_lsn=primary_lsn, probe_down=True) for alias in aliases]
    return {"ok": True, "configured": len(states), "serving": sum(s.state == "ok" for s in states),
            "replicas": [s.as_health() for s in states]}


# --- The access fence -------------------------------------------------------------------------------------------
def fence_for(tenant_ids: tuple[int, ...], *, resolve: bool) -> tuple[int, int | None]:
    """(the primary's WAL write position, the lowest replay position a replica needs to serve `tenant_ids`),
    None when a fence is pending and could not be resolved here (the read goes to the primary)."""
    from .sql import FENCE_READ, FENCE_RESOLVE

    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(FENCE_READ, {"tenant_ids": list(tenant_ids)})
        primary_lsn, needed, pending_tenants, generations = cursor.fetchone()
        for tenant_id, generation in zip(pending_tenants, generations, strict=True):
            if not resolve:
                return primary_lsn, None
            # The mark we saw is committed; the position taken now lies past its commit record.
            cursor.execute(FENCE_RESOLVE, {"tenant_id": tenant_id, "generation": generation})
            row = cursor.fetchone()
            if row is None:  # a newer change marked it meanwhile (or holds it): primary
                return primary_lsn, None
            needed = max(needed, row[0])
    return primary_lsn, needed


_next = 0


def replica_choose(authority: Authority) -> str:
    """The alias that may serve `authority`'s reads now: a replica fresh enough for its scope, else the primary."""
    global _next
    aliases = replica_aliases()
    primary = connections[DEFAULT_DB_ALIAS]
    if not aliases or primary.in_atomic_block:
        return DEFAULT_DB_ALIAS
    primary_lsn, needed = fence_for(tuple(authority.corpus_tenant_ids), resolve=True)
    if needed is None:
        return DEFAULT_DB_ALIAS
    start, _next = _next, _next + 1  # spread reads over the replicas (a race here only skews the spread)
    for offset in range(len(aliases)):
        alias = aliases[(start + offset) % len(aliases)]
        state = replica_state(alias, primary_lsn=primary_lsn)
        if state.state == "ok" and state.replay_lsn >= needed:
            return alias
    return DEFAULT_DB_ALIAS


@contextmanager
def replica_reads(authority: Authority) -> Iterator[str]:
    """Run the block's reads on a replica fresh enough for `authority`, or on the primary. Yields the alias."""
    alias = replica_choose(authority)
    token = _read_alias.set(alias)
    try:
        yield alias
    finally:
        _read_alias.reset(token)

