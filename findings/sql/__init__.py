"""Postgres-specific SQL of the findings writer.

Why raw SQL: the consolidation cascade joins a whole batch of candidates laterally against live claims
(`matching.claims_match`; every read of what a candidate meets is in `findings.sql.matching`), revises
superseded claims in one statement with range arithmetic (`claims_revise`), takes advisory locks in a fixed
order (`slots_lock`) and inserts with ON CONFLICT DO NOTHING against partial unique/exclusion constraints
(`claims_insert`). The ORM can express none of these in one round trip.
Batches travel as typed arrays through `unnest`, so a statement's text never depends on the data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from psycopg import sql

from groundwork.sql import bound_cursor


def slot_lock_key(tenant_id: int, subject_id: int, predicate_id: int, perspective: str, scope: str) -> int:
    """A signed 64-bit advisory-lock key for one consolidation slot. blake2b rather than Python's `hash()`:
    every process (and every worker host) must derive the same key for the same slot."""
    material = f"{tenant_id}\x1f{subject_id}\x1f{predicate_id}\x1f{perspective}\x1f{scope}".encode()
    return int.from_bytes(hashlib.blake2b(material, digest_size=8).digest(), "big", signed=True)


_LOCK = sql.SQL(
    # The inner ORDER BY fixes the acquisition order; pg_advisory_xact_lock is volatile, so Postgres evaluates
    # it per row after the sort. Sorted acquisition is what keeps two writers on overlapping slots from
    # deadlocking on each other.
    "SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT DISTINCT k FROM unnest(%(keys)s::bigint[]) AS k "
    "ORDER BY k) AS sorted"
)


def slots_lock(keys: Sequence[int]) -> None:
    """Take one transaction-scoped advisory lock per slot key, in ascending order. Call inside a transaction."""
    with bound_cursor() as cursor:
        cursor.execute(_LOCK, {"keys": sorted(set(keys))})


_RELATIONS = sql.SQL("SELECT name, id, policy FROM {relation}").format(
    relation=sql.Identifier("findings_relation_type"))


def relation_policies() -> dict[str, tuple[int, str]]:
    """Relation name → (id, policy), for the writer (one plain read: the ORM's per-query cost counts there)."""
    with bound_cursor() as cursor:
        cursor.execute(_RELATIONS)
        return {name: (pk, policy) for name, pk, policy in cursor.fetchall()}


_ENTITIES_ENSURE = sql.SQL(
    """
    WITH named AS (
        SELECT * FROM unnest(%(key)s::text[], %(name)s::text[], %(kind)s::text[]) AS n(key, name, kind)
    ), added AS (
        INSERT INTO {entity} (tenant_id, key, name, kind, created_at)
        SELECT %(tenant_id)s, key, name, kind, now() FROM named ORDER BY key
        ON CONFLICT (tenant_id, key) DO NOTHING
        RETURNING key, id
    )
    SELECT key, id FROM added
     UNION ALL
    SELECT e.key, e.id FROM {entity} e JOIN named n ON n.key = e.key WHERE e.tenant_id = %(tenant_id)s
    """
).format(entity=sql.Identifier("findings_entity"))

_ENTITIES_GET = sql.SQL("SELECT key, id FROM {entity} WHERE tenant_id = %(tenant_id)s AND key = ANY(%(key)s::text[])"
                        ).format(entity=sql.Identifier("findings_entity"))


def entities_ensure(tenant_id: int, named: dict[str, tuple[str, str]]) -> dict[str, int]:
    """key → entity id for `named` (key → (name, kind)), adding the missing ones in one statement, in key order
    (two writers adding overlapping entities wait on each other in the same order, never crosswise).

    The statement's read sees the table as it was when the statement began, so an entity another writer added
    meanwhile (its insert here did nothing) comes from a second read, which sees it committed."""
    if not named:
        return {}
    params = {"tenant_id": tenant_id, "key": list(named), "name": [name[:300] for name, _ in named.values()],
              "kind": [kind[:64] for _, kind in named.values()]}
    with bound_cursor() as cursor:
        cursor.execute(_ENTITIES_ENSURE, params)
        found = dict(cursor.fetchall())
        missing = [key for key in named if key not in found]
        if missing:
            cursor.execute(_ENTITIES_GET, {"tenant_id": tenant_id, "key": missing})
            found.update(cursor.fetchall())
    return found


_TRIM = sql.SQL(
    """
    WITH plan AS (
        -- one claim cut by two candidates of a round ends at the earlier start (equal starts: the lower new id)
        SELECT DISTINCT ON (target_id) *
          FROM unnest(%(target)s::bigint[], %(new)s::bigint[], %(vfrom)s::timestamptz[]) AS p(target_id, new_id, vfrom)
         ORDER BY target_id, vfrom, new_id
    )
    UPDATE {claim} c
       SET valid = tstzrange(lower(c.valid), p.vfrom, '[)'), superseded_by_id = p.new_id
      FROM plan p
     WHERE c.id = p.target_id AND NOT upper_inf(c.recorded) AND lower(c.valid) < p.vfrom AND upper(c.valid) > p.vfrom
    RETURNING c.id
    """
).format(claim=sql.Identifier("findings_claim"))


def claims_trim(trims: Sequence[tuple[int, int, datetime]]) -> int:
    """End replaced versions where a late fact begins: (claim id, new claim id, its valid_from) each; the new claim
    becomes the version's `superseded_by`. Its recorded range stays as it was: the version was closed already.
    Returns how many distinct claims were cut (fewer than asked: one moved since planning)."""
    if not trims:
        return 0
    params = {"target": [t[0] for t in trims], "new": [t[1] for t in trims], "vfrom": [t[2] for t in trims]}
    with bound_cursor() as cursor:
        cursor.execute(_TRIM, params)
        return len(cursor.fetchall())


def claim_dimension_get() -> int:
    """The width of the claim statement vectors (pgvector keeps it as the column's atttypmod)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT atttypmod FROM pg_attribute WHERE attrelid = 'findings_claim'::regclass "
                       "AND attname = 'embedding'")
        return int(cursor.fetchone()[0])


def write_clock() -> datetime:
    """The recorded-time instant of a write, read *after* the slot locks are held.

    Not now(): that is the transaction's start, and a writer that started earlier but got the lock later would
    close a claim "before" it was recorded (a range whose upper is below its lower). Under the slot lock every
    earlier writer of the slot has committed, so clock_timestamp() here orders recorded time per slot.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


_NEW_IDS = sql.SQL(
    "SELECT array(SELECT nextval(pg_get_serial_sequence({table}, 'id')) FROM generate_series(1, %(n)s)), "
    "clock_timestamp()"
).format(table=sql.Literal("findings_claim"))


def claim_ids_reserve(n: int) -> tuple[list[int], datetime]:
    """Ids for claims about to be inserted (so a revision can point `superseded_by` at them first), and the
    write's recorded-time instant (`write_clock`), in one round trip. Call under the slot locks."""
    with bound_cursor() as cursor:
        cursor.execute(_NEW_IDS, {"n": max(0, n)})
        ids, at = cursor.fetchone()
        return list(ids), at


_REVISE = sql.SQL(
    """
    WITH plan AS (
        SELECT * FROM unnest(%(target)s::bigint[], %(new)s::bigint[], %(vfrom)s::timestamptz[], %(refute)s::bool[])
                 AS p(target_id, new_id, vfrom, refute)
    ), targets AS (
        SELECT p.*, lower(c.valid) AS lo
          FROM plan p JOIN {claim} c ON c.id = p.target_id AND upper_inf(c.recorded)
           FOR UPDATE OF c
    ), closing AS (
        -- One claim can be replaced twice in one round: "Marcus Lee took over as Head of Support from Priya Nair.
        -- Priya Nair became Director of Customer Success" revises Priya's Head of Support claim from her own slot
        -- and, as a named predecessor, from Marcus's. An UPDATE joined to two rows applies one of them, which one
        -- unspecified. The first replacement in valid time ends it; equal starts go to the lower new id.
        SELECT DISTINCT ON (target_id) * FROM targets
         WHERE refute OR lo <= vfrom
         ORDER BY target_id, vfrom, new_id
    ), closed AS (
        UPDATE {claim} c
           SET valid = CASE WHEN t.refute THEN c.valid
                            ELSE tstzrange(lower(c.valid), least(upper(c.valid), greatest(t.vfrom, lower(c.valid))),
                                           '[)') END,
               recorded = tstzrange(lower(c.recorded), greatest(%(at)s, lower(c.recorded)), '[)'),
               status = 'closed',
               refuted = t.refute,
               superseded_by_id = t.new_id
          FROM closing t
         WHERE c.id = t.target_id
     RETURNING c.id
    )
    SELECT p.new_id,
           min(t.lo) FILTER (WHERE NOT t.refute AND t.lo > t.vfrom) AS cap,
           count(t.target_id) AS live_targets,
           (SELECT count(*) FROM closed) AS closed_total
      FROM plan p LEFT JOIN targets t ON t.new_id = p.new_id AND t.target_id = p.target_id
     GROUP BY p.new_id
    """
).format(claim=sql.Identifier("findings_claim"))


@dataclass(frozen=True)
class Revision:
    target_id: int
    new_id: int
    valid_from: datetime
    refute: bool = False


def claims_revise(revisions: Sequence[Revision], *, at: datetime) -> dict[int, tuple[datetime | None, int]]:
    """Apply every correction of a batch in one statement; returns new claim id → (cap, live targets).

    Ordinary case (the new fact starts at or after the old claim): the old claim's valid range ends at
    greatest(new valid_from, old lower) — never later than it already ended — and its recorded range ends at
    `at` (`write_clock`). Backdated case (the new fact starts before the old claim did): the old claim is left
    alone and `cap` is its lower bound, where the new claim's valid range must end so history stays a partition.
    A REFUTE closes only the recorded range and marks the claim `refuted`: it was never true, so its valid range
    is not rewritten, and "valid at" must not read it as a version that held for its period.
    `live targets` < number of targets means a target stopped being current since planning.
    """
    if not revisions:
        return {}
    params = {
        "target": [r.target_id for r in revisions], "new": [r.new_id for r in revisions],
        "vfrom": [r.valid_from for r in revisions], "refute": [r.refute for r in revisions], "at": at,
    }
    with bound_cursor() as cursor:
        cursor.execute(_REVISE, params)
        return {new_id: (cap, live) for new_id, cap, live, _closed in cursor.fetchall()}


_INSERT = sql.SQL(
    """
    INSERT INTO {claim} (id, tenant_id, identity, subject_id, predicate_id, policy, object_entity_id, object_value,
                         object_key, statement, perspective, scope, valid, recorded, status, embedding,
                         needs_review, created_at)
    SELECT r.id, %(tenant_id)s, r.identity, r.subject_id, r.predicate_id, r.policy, r.object_entity_id,
           r.object_value, r.object_key, r.statement, r.perspective, r.scope, tstzrange(r.vfrom, r.vto, '[)'),
           tstzrange(%(at)s, NULL, '[)'), 'open', r.embedding::vector, r.needs_review, now()
      FROM unnest(%(id)s::bigint[], %(identity)s::uuid[], %(subject)s::bigint[], %(predicate)s::bigint[],
                  %(policy)s::text[], %(object_entity)s::bigint[], %(object_value)s::text[], %(object_key)s::text[],
                  %(statement)s::text[], %(perspective)s::text[], %(scope)s::text[], %(vfrom)s::timestamptz[],
                  %(vto)s::timestamptz[], %(embedding)s::text[], %(needs_review)s::bool[])
           AS r(id, identity, subject_id, predicate_id, policy, object_entity_id, object_value, object_key,
                statement, perspective, scope, vfrom, vto, embedding, needs_review)
    -- no conflict target: the arbiters are the partial unique index on current identities AND the state
    -- exclusion constraint, so a racing writer that got there first wins and this row is skipped
    ON CONFLICT DO NOTHING
    RETURNING id
    """
).format(claim=sql.Identifier("findings_claim"))

_INSERT_COLUMNS = ("id", "identity", "subject", "predicate", "policy", "object_entity", "object_value",
                   "object_key", "statement", "perspective", "scope", "vfrom", "vto", "embedding", "needs_review")


def claims_insert(tenant_id: int, rows: Sequence[dict[str, Any]], *, at: datetime) -> set[int]:
    """Insert new current claims (dicts keyed like `_INSERT_COLUMNS`), recorded from `at`; returns the ids
    actually inserted."""
    if not rows:
        return set()
    params: dict[str, Any] = {"tenant_id": tenant_id, "at": at}
    for column in _INSERT_COLUMNS:
        values = [row[column] for row in rows]
        params[column] = [str(v) for v in values] if column == "identity" else values
    with bound_cursor() as cursor:
        cursor.execute(_INSERT, params)
        return {row[0] for row in cursor.fetchall()}


_EVIDENCE = sql.SQL(
    """
    INSERT INTO {evidence} (claim_id, document_id, chunk_id, quote, quote_start, quote_end, extractor, created_at)
    SELECT * , now() FROM unnest(%(claim)s::bigint[], %(document)s::bigint[], %(chunk)s::bigint[], %(quote)s::text[],
                                %(start)s::int[], %(end)s::int[], %(extractor)s::text[])
    ON CONFLICT (claim_id, chunk_id, quote_start) DO NOTHING
    """
).format(evidence=sql.Identifier("findings_claim_evidence"))


def evidence_insert(rows: Sequence[tuple[int, int, int, str, int, int, str]]) -> int:
    """(claim, document, chunk, quote, start, end, extractor version) rows; a repeat of the same quote in the same
    chunk is a no-op (it keeps the version that found it first)."""
    if not rows:
        return 0
    claim, document, chunk, quote, start, end, extractor = (list(column) for column in zip(*rows, strict=True))
    with bound_cursor() as cursor:
        cursor.execute(_EVIDENCE, {"claim": claim, "document": document, "chunk": chunk, "quote": quote,
                                   "start": start, "end": end, "extractor": extractor})
        return cursor.rowcount


_WIDEN = sql.SQL(
    """
    UPDATE {claim} c
       SET valid = tstzrange(w.vfrom, upper(c.valid), '[)')
      FROM (SELECT id, min(vfrom) AS vfrom FROM unnest(%(id)s::bigint[], %(vfrom)s::timestamptz[]) AS w(id, vfrom)
             GROUP BY id) w
     WHERE c.id = w.id AND c.policy = 'set' AND upper_inf(c.recorded) AND lower(c.valid) > w.vfrom
       AND (upper_inf(c.valid) OR upper(c.valid) > w.vfrom)
    """
).format(claim=sql.Identifier("findings_claim"))


def set_claims_widen(starts: Sequence[tuple[int, datetime]]) -> int:
    """Start current set claims earlier where a repeat of the same value (a NOOP) is dated before them: (claim id,
    the repeat's valid_from) each. A set holds many values at once, so no other claim's range is in the way; what
    the records say held since 2025-07-08 must not answer "valid at" only from a later record's date."""
    if not starts:
        return 0
    with bound_cursor() as cursor:
        cursor.execute(_WIDEN, {"id": [s[0] for s in starts], "vfrom": [s[1] for s in starts]})
        return cursor.rowcount


_CLOSE_ORPHANS = sql.SQL(
    """
    UPDATE {claim} c
       SET recorded = tstzrange(lower(c.recorded), greatest(clock_timestamp(), lower(c.recorded)), '[)'),
           status = 'closed'
     WHERE c.tenant_id = ANY(%(tenant_ids)s::bigint[]) AND upper_inf(c.recorded)
       AND NOT EXISTS (SELECT 1 FROM {evidence} e WHERE e.claim_id = c.id)
    """
).format(claim=sql.Identifier("findings_claim"), evidence=sql.Identifier("findings_claim_evidence"))


def orphan_claims_close(tenant_ids: Sequence[int]) -> int:
    """Close (recorded upper = the clock now) every current claim of these tenants left without any evidence.

    Tenant-wide rather than per document: when a document's chunks are replaced, their evidence is gone by
    cascade before any listener runs, so which claims lost it is no longer known — but "no evidence left" is.
    """
    with connection.cursor() as cursor:
        cursor.execute(_CLOSE_ORPHANS, {"tenant_ids": list(tenant_ids)})
        return cursor.rowcount


_DUPLICATES = sql.SQL(
    "SELECT count(*) FROM (SELECT 1 FROM {claim} WHERE tenant_id = %(tenant_id)s AND upper_inf(recorded) "
    "GROUP BY identity, scope, perspective HAVING count(*) > 1) AS d"
).format(claim=sql.Identifier("findings_claim"))
_OVERLAPS = sql.SQL(
    """
    SELECT count(*) FROM {claim} a JOIN {claim} b
        ON a.id < b.id AND b.tenant_id = a.tenant_id AND a.subject_id = b.subject_id
       AND a.predicate_id = b.predicate_id AND a.perspective = b.perspective AND a.scope = b.scope
       AND a.policy = 'state' AND upper_inf(a.recorded) AND upper_inf(b.recorded) AND a.valid && b.valid
     WHERE a.tenant_id = %(tenant_id)s
    """
).format(claim=sql.Identifier("findings_claim"))
_EVIDENCED = sql.SQL(
    "SELECT DISTINCT e.chunk_id, e.quote_start FROM {evidence} e JOIN {claim} c ON c.id = e.claim_id "
    "WHERE c.tenant_id = %(tenant_id)s"
).format(claim=sql.Identifier("findings_claim"), evidence=sql.Identifier("findings_claim_evidence"))


def claim_anomalies(tenant_id: int) -> tuple[int, int, set[tuple[int, int]]]:
    """For the benchmark's audit after concurrent writes: duplicate current identities, overlapping current
    state validity (both should be impossible by constraint), and the (chunk, quote start) pairs that are
    evidence of some claim (to find lost writes)."""
    with connection.cursor() as cursor:
        cursor.execute(_DUPLICATES, {"tenant_id": tenant_id})
        duplicates = cursor.fetchone()[0]
        cursor.execute(_OVERLAPS, {"tenant_id": tenant_id})
        overlaps = cursor.fetchone()[0]
        cursor.execute(_EVIDENCED, {"tenant_id": tenant_id})
        return duplicates, overlaps, set(cursor.fetchall())


def claims_analyze() -> None:
    """Refresh planner statistics after a bulk load (the bench's crowded slots); autovacuum would, later."""
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL("ANALYZE {}").format(sql.Identifier("findings_claim")))
