"""Postgres-specific SQL of the findings writer.

Why raw SQL: the consolidation cascade joins a whole batch of candidates laterally against live claims
(`claims_match`), revises superseded claims in one statement with range arithmetic (`claims_revise`), takes
advisory locks in a fixed order (`slots_lock`) and inserts with ON CONFLICT DO NOTHING against partial
unique/exclusion constraints (`claims_insert`). The ORM can express none of these in one round trip.
Batches travel as typed arrays through `unnest`, so a statement's text never depends on the data.

Similarity: 1 - cosine distance (`<=>`) when both the candidate and the claim carry a statement embedding;
otherwise pg_trgm's `similarity()` on the statements (trigram overlap in [0, 1]) — cruder, but it keeps the
cascade working on a machine without an embedder (EMBEDDER=none) and for claims written before one existed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from psycopg import sql

TOP_K = 5


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
    with connection.cursor() as cursor:
        cursor.execute(_LOCK, {"keys": sorted(set(keys))})


@dataclass(frozen=True)
class CandidateRow:
    """One candidate as the match query sees it."""

    index: int
    subject_id: int
    predicate_id: int
    policy: str
    scope: str
    perspective: str
    statement: str
    embedding: str | None  # pgvector text literal
    valid_from: datetime
    valid_to: datetime | None
    object_key: str = ""  # read by `claims_history` only


@dataclass(frozen=True)
class MatchRow:
    index: int
    claim_id: int
    object_key: str
    statement: str
    similarity: float


_MATCH = sql.SQL(
    """
    SELECT b.idx, m.id, m.object_key, m.statement, m.similarity
      FROM unnest(%(idx)s::int[], %(subject)s::bigint[], %(predicate)s::bigint[], %(policy)s::text[],
                  %(scope)s::text[], %(perspective)s::text[], %(statement)s::text[], %(embedding)s::text[],
                  %(vfrom)s::timestamptz[], %(vto)s::timestamptz[])
           AS b(idx, subject_id, predicate_id, policy, scope, perspective, statement, embedding, vfrom, vto)
     CROSS JOIN LATERAL (
           SELECT c.id, c.object_key, c.statement,
                  CASE WHEN c.embedding IS NOT NULL AND b.embedding IS NOT NULL
                       THEN 1 - (c.embedding <=> b.embedding::vector)
                       ELSE similarity(c.statement, b.statement) END AS similarity
             FROM {claim} c
            WHERE c.tenant_id = %(tenant_id)s
              AND c.subject_id = b.subject_id AND c.predicate_id = b.predicate_id
              AND c.scope = b.scope AND c.perspective = b.perspective
              AND upper_inf(c.recorded)
              -- a state slot is one value per validity window: only claims whose window meets the new one
              AND (b.policy <> 'state' OR c.valid && tstzrange(b.vfrom, b.vto, '[)'))
            -- exact ordering, no HNSW: the slot filter leaves a handful of rows per candidate
            ORDER BY similarity DESC, c.id
            -- a state candidate needs every current claim its window meets (each one is revised, or the
            -- exclusion constraint refuses the insert); the others only need the nearest few
            LIMIT CASE WHEN b.policy = 'state' THEN NULL ELSE %(top_k)s END
     ) AS m
     ORDER BY b.idx, m.similarity DESC, m.id
    """
).format(claim=sql.Identifier("findings_claim"))


def claims_match(tenant_id: int, rows: Sequence[CandidateRow], top_k: int = TOP_K) -> dict[int, list[MatchRow]]:
    """Tier two of the cascade in one query: for every candidate, its `top_k` most similar current claims of
    the same subject, predicate, scope and perspective, similarity = 1 - cosine distance (see module doc)."""
    found: dict[int, list[MatchRow]] = {row.index: [] for row in rows}
    if not rows:
        return found
    params: dict[str, Any] = {
        "tenant_id": tenant_id, "top_k": top_k,
        "idx": [r.index for r in rows], "subject": [r.subject_id for r in rows],
        "predicate": [r.predicate_id for r in rows], "policy": [r.policy for r in rows],
        "scope": [r.scope for r in rows], "perspective": [r.perspective for r in rows],
        "statement": [r.statement for r in rows], "embedding": [r.embedding for r in rows],
        "vfrom": [r.valid_from for r in rows], "vto": [r.valid_to for r in rows],
    }
    with connection.cursor() as cursor:
        cursor.execute(_MATCH, params)
        for idx, claim_id, object_key, statement, similarity in cursor.fetchall():
            found[idx].append(MatchRow(idx, claim_id, object_key, statement, float(similarity)))
    return found


_HISTORY = sql.SQL(
    """
    SELECT DISTINCT ON (b.idx) b.idx, c.id
      FROM unnest(%(idx)s::int[], %(subject)s::bigint[], %(predicate)s::bigint[], %(scope)s::text[],
                  %(perspective)s::text[], %(object_key)s::text[], %(vfrom)s::timestamptz[], %(vto)s::timestamptz[])
           AS b(idx, subject_id, predicate_id, scope, perspective, object_key, vfrom, vto)
      JOIN {claim} c
        ON c.tenant_id = %(tenant_id)s AND c.subject_id = b.subject_id AND c.predicate_id = b.predicate_id
       AND c.scope = b.scope AND c.perspective = b.perspective AND c.object_key = b.object_key
       AND c.policy = 'state' AND NOT upper_inf(c.recorded)
       -- the value held when the fact says it began; a fact that names an end must not outlast the claim
       -- (an open end says nothing about when the value stopped, so it does not contradict the successor)
       AND c.valid @> b.vfrom AND (b.vto IS NULL OR b.vto <= upper(c.valid))
      -- replaced, not refuted: a revision cut its valid range exactly where its successor began
      JOIN {claim} s ON s.id = c.superseded_by_id AND upper(c.valid) = lower(s.valid)
     ORDER BY b.idx, c.id
    """
).format(claim=sql.Identifier("findings_claim"))


def claims_history(tenant_id: int, rows: Sequence[CandidateRow]) -> dict[int, int]:
    """Late word of a value already replaced: for each state candidate, the closed claim of its own slot with
    the same object whose valid range holds the candidate's start (and its end, when it names one).
    index → claim id.

    Matching (`claims_match`) sees current claims only. Without this, "welcome Priya, our Head of Support",
    filed after Marcus took the role over from her, would find nothing current in Priya's slot and open a second
    Priya claim with no end, and the role would read as held by two people.
    """
    if not rows:
        return {}
    params: dict[str, Any] = {
        "tenant_id": tenant_id, "idx": [r.index for r in rows], "subject": [r.subject_id for r in rows],
        "predicate": [r.predicate_id for r in rows], "scope": [r.scope for r in rows],
        "perspective": [r.perspective for r in rows], "object_key": [r.object_key for r in rows],
        "vfrom": [r.valid_from for r in rows], "vto": [r.valid_to for r in rows],
    }
    with connection.cursor() as cursor:
        cursor.execute(_HISTORY, params)
        return dict(cursor.fetchall())


_SUCCESSION = sql.SQL(
    """
    SELECT b.idx, c.id, c.subject_id
      FROM unnest(%(idx)s::int[], %(subject)s::bigint[], %(predicate)s::bigint[], %(object_entity)s::bigint[],
                  %(scope)s::text[], %(perspective)s::text[], %(quote)s::text[], %(vfrom)s::timestamptz[],
                  %(vto)s::timestamptz[])
           AS b(idx, subject_id, predicate_id, object_entity_id, scope, perspective, quote, vfrom, vto)
      JOIN {claim} c
        ON c.tenant_id = %(tenant_id)s AND c.predicate_id = b.predicate_id AND c.object_entity_id = b.object_entity_id
       AND c.subject_id <> b.subject_id AND c.scope = b.scope AND c.perspective = b.perspective
       AND c.policy = 'state' AND upper_inf(c.recorded) AND c.valid && tstzrange(b.vfrom, b.vto, '[)')
      JOIN {entity} e ON e.id = c.subject_id AND strpos(lower(b.quote), lower(e.name)) > 0
     ORDER BY b.idx, c.id
    """
).format(claim=sql.Identifier("findings_claim"), entity=sql.Identifier("findings_entity"))


@dataclass(frozen=True)
class SuccessionRow:
    index: int
    object_entity_id: int | None
    quote: str
    subject_id: int
    predicate_id: int
    scope: str
    perspective: str
    valid_from: datetime
    valid_to: datetime | None
    object_key: str = ""  # read by `claims_overtaken` only


def _state_params(tenant_id: int, rows: Sequence[SuccessionRow]) -> dict[str, Any]:
    """A batch of state candidates as the typed arrays `unnest` reads (a query takes the ones it names)."""
    return {
        "tenant_id": tenant_id, "idx": [r.index for r in rows], "subject": [r.subject_id for r in rows],
        "predicate": [r.predicate_id for r in rows], "object_entity": [r.object_entity_id for r in rows],
        "object_key": [r.object_key for r in rows], "scope": [r.scope for r in rows],
        "perspective": [r.perspective for r in rows], "quote": [r.quote for r in rows],
        "vfrom": [r.valid_from for r in rows], "vto": [r.valid_to for r in rows],
    }


def claims_succession(tenant_id: int, rows: Sequence[SuccessionRow]) -> dict[int, list[tuple[int, int]]]:
    """Named predecessors: for a state fact about an entity object ("Marcus took over as Head of Support from
    Priya"), the current claims of *other* subjects with the same predicate and object whose subject is named
    in the new fact's quote. index → [(claim id, subject id)]. The subject slot alone cannot see them."""
    found: dict[int, list[tuple[int, int]]] = {}
    if not rows:
        return found
    with connection.cursor() as cursor:
        cursor.execute(_SUCCESSION, _state_params(tenant_id, rows))
        for idx, claim_id, subject_id in cursor.fetchall():
            found.setdefault(idx, []).append((claim_id, subject_id))
    return found


_OVERTAKEN = sql.SQL(
    """
    WITH b AS (
        SELECT * FROM unnest(%(idx)s::int[], %(subject)s::bigint[], %(predicate)s::bigint[], %(object_key)s::text[],
                             %(object_entity)s::bigint[], %(scope)s::text[], %(perspective)s::text[],
                             %(quote)s::text[], %(vfrom)s::timestamptz[])
                   AS b(idx, subject_id, predicate_id, object_key, object_entity_id, scope, perspective, quote, vfrom)
    ), versions AS (
        -- Two branches, not one OR, so that each reads its own index (subject, object entity) rather than every
        -- closed claim of the tenant. Another value of the candidate's own slot ...
        SELECT b.idx, b.vfrom, c.id, c.subject_id, c.valid, c.superseded_by_id
          FROM b JOIN {claim} c
            ON c.subject_id = b.subject_id AND c.object_key <> b.object_key AND c.predicate_id = b.predicate_id
           AND c.scope = b.scope AND c.perspective = b.perspective AND c.tenant_id = %(tenant_id)s
           AND c.policy = 'state' AND NOT upper_inf(c.recorded)
        UNION ALL
        -- ... or the candidate's object held by a predecessor the candidate's quote names.
        SELECT b.idx, b.vfrom, c.id, c.subject_id, c.valid, c.superseded_by_id
          FROM b JOIN {claim} c
            ON c.object_entity_id = b.object_entity_id AND c.subject_id <> b.subject_id
           AND c.predicate_id = b.predicate_id AND c.scope = b.scope AND c.perspective = b.perspective
           AND c.tenant_id = %(tenant_id)s AND c.policy = 'state' AND NOT upper_inf(c.recorded)
          JOIN {entity} e ON e.id = c.subject_id AND strpos(lower(b.quote), lower(e.name)) > 0
    )
    SELECT v.idx, v.id, v.subject_id, upper(v.valid)
      FROM versions v
      -- replaced, not refuted: a revision cut its valid range exactly where its successor began
      JOIN {claim} s ON s.id = v.superseded_by_id AND upper(v.valid) = lower(s.valid)
     -- the new value starts strictly inside the replaced version's window
     WHERE lower(v.valid) < v.vfrom AND upper(v.valid) > v.vfrom
     ORDER BY v.idx, v.id
    """
).format(claim=sql.Identifier("findings_claim"), entity=sql.Identifier("findings_entity"))


@dataclass(frozen=True)
class Overtaken:
    claim_id: int
    subject_id: int
    ended: datetime  # where the version ended before: its old successor's start


def claims_overtaken(tenant_id: int, rows: Sequence[SuccessionRow]) -> dict[int, list[Overtaken]]:
    """Replaced versions a late state fact cuts short: for each candidate, the closed, superseded claims of its
    slot with another value — or of a predecessor it names, with its object — whose valid range holds the
    candidate's start strictly inside. index → versions.

    Facts arrive in any order. "Priya Nair became Director of Customer Success" filed before "Marcus Lee took
    over as Head of Support from Priya Nair" (a day earlier) closed her Head of Support claim at her new role;
    matching and succession see current claims only, so the handover would leave her holding the role beside
    Marcus until then. `claims_trim` ends such a version where the late fact begins."""
    found: dict[int, list[Overtaken]] = {}
    if not rows:
        return found
    with connection.cursor() as cursor:
        cursor.execute(_OVERTAKEN, _state_params(tenant_id, rows))
        for idx, claim_id, subject_id, ended in cursor.fetchall():
            found.setdefault(idx, []).append(Overtaken(claim_id, subject_id, ended))
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
    with connection.cursor() as cursor:
        cursor.execute(_TRIM, params)
        return len(cursor.fetchall())


_LIVE_IDENTITIES = sql.SQL(
    "SELECT identity, scope, perspective, id FROM {claim} "
    "WHERE tenant_id = %(tenant_id)s AND identity = ANY(%(identities)s::uuid[]) AND upper_inf(recorded)"
).format(claim=sql.Identifier("findings_claim"))


def live_identities(tenant_id: int, identities: Sequence[Any]) -> dict[tuple[str, str, str], int]:
    """Current claims with one of these identities: (identity, scope, perspective) → claim id."""
    if not identities:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_LIVE_IDENTITIES, {"tenant_id": tenant_id, "identities": [str(i) for i in identities]})
        return {(str(i), s, p): cid for i, s, p, cid in cursor.fetchall()}


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


_NEW_IDS = sql.SQL("SELECT nextval(pg_get_serial_sequence({table}, 'id')) FROM generate_series(1, %(n)s)").format(
    table=sql.Literal("findings_claim")
)


def claim_ids_reserve(n: int) -> list[int]:
    """Ids for claims about to be inserted, so a revision can point `superseded_by` at them first."""
    if n <= 0:
        return []
    with connection.cursor() as cursor:
        cursor.execute(_NEW_IDS, {"n": n})
        return [row[0] for row in cursor.fetchall()]


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
    A REFUTE closes only the recorded range: the refuted claim was never true, so its valid range is not
    rewritten.
    `live targets` < number of targets means a target stopped being current since planning.
    """
    if not revisions:
        return {}
    params = {
        "target": [r.target_id for r in revisions], "new": [r.new_id for r in revisions],
        "vfrom": [r.valid_from for r in revisions], "refute": [r.refute for r in revisions], "at": at,
    }
    with connection.cursor() as cursor:
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
    with connection.cursor() as cursor:
        cursor.execute(_INSERT, params)
        return {row[0] for row in cursor.fetchall()}


_EVIDENCE = sql.SQL(
    """
    INSERT INTO {evidence} (claim_id, document_id, chunk_id, quote, quote_start, quote_end, created_at)
    SELECT * , now() FROM unnest(%(claim)s::bigint[], %(document)s::bigint[], %(chunk)s::bigint[], %(quote)s::text[],
                                %(start)s::int[], %(end)s::int[])
    ON CONFLICT (claim_id, chunk_id, quote_start) DO NOTHING
    """
).format(evidence=sql.Identifier("findings_claim_evidence"))


def evidence_insert(rows: Sequence[tuple[int, int, int, str, int, int]]) -> int:
    """(claim, document, chunk, quote, start, end) rows; a repeat of the same quote in the same chunk is a no-op."""
    if not rows:
        return 0
    claim, document, chunk, quote, start, end = (list(column) for column in zip(*rows, strict=True))
    with connection.cursor() as cursor:
        cursor.execute(_EVIDENCE, {"claim": claim, "document": document, "chunk": chunk, "quote": quote,
                                   "start": start, "end": end})
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
