"""Postgres-specific SQL of the connectors app: the advisory lock a worker holds while it runs a source's sync.

Why an advisory lock on top of the partial unique index on active runs: the index stops a second run from being
*queued*; the lock stops two workers from *executing* the same run (a re-delivered task while the first
delivery is still alive). Session-level, so it spans the run's many short transactions; released in `finally`
and, if the worker dies, by Postgres when its connection closes.
"""

from __future__ import annotations

from django.db import connection
from psycopg import sql

# The first key of the two-int form names this lock family ("GWCN"), so it never meets another app's locks.
_FAMILY = 0x4757434E

TRY_LOCK = sql.SQL("SELECT pg_try_advisory_lock({family}, %(source_id)s)").format(family=sql.Literal(_FAMILY))
UNLOCK = sql.SQL("SELECT pg_advisory_unlock({family}, %(source_id)s)").format(family=sql.Literal(_FAMILY))


def _key(source_id: int) -> int:
    return int(source_id) & 0x7FFFFFFF


def source_lock_try(source_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(TRY_LOCK, {"source_id": _key(source_id)})
        return bool(cursor.fetchone()[0])


def source_lock_release(source_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(UNLOCK, {"source_id": _key(source_id)})
