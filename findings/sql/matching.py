"""What each candidate of the consolidation cascade meets, read in one statement per batch before any write.

- `live_identities`: current claims with the same fact identity (tier one);
- `claims_match`: the similar current claims of the candidate's slot (tier two), laterally, top 5 (every one
  that meets a state candidate's window);
- `claims_succession`: current claims of a predecessor the candidate's quote names, holding its object;
- `claims_replaced`: the replaced versions a late state fact starts inside: one it corroborates (same slot, same
  value) or ones it overtakes (another value, or a named predecessor; `sql.claims_trim` cuts them).

Similarity: 1 - cosine distance (`<=>`) when both the candidate and the claim carry a statement embedding;
otherwise pg_trgm's `similarity()` on the statements (trigram overlap in [0, 1]) — cruder, but it keeps the
cascade working on a machine without an embedder (EMBEDDER=none) and for claims written before one existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from psycopg import sql

from groundwork.sql import bound_cursor

TOP_K = 5


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
    object_key: str = ""


@dataclass(frozen=True)
class MatchRow:
    index: int
    claim_id: int
    object_key: str
    statement: str
    similarity: float
    unembedded: bool = False  # the claim carries no statement vector (written into an empty slot, or before one)


_MATCH = sql.SQL(
    """
    SELECT b.idx, m.id, m.object_key, m.statement, m.similarity, m.unembedded
      FROM unnest(%(idx)s::int[], %(subject)s::bigint[], %(predicate)s::bigint[], %(policy)s::text[],
                  %(scope)s::text[], %(perspective)s::text[], %(statement)s::text[], %(embedding)s::text[],
                  %(vfrom)s::timestamptz[], %(vto)s::timestamptz[], %(object_key)s::text[])
           AS b(idx, subject_id, predicate_id, policy, scope, perspective, statement, embedding, vfrom, vto,
                object_key)
     CROSS JOIN LATERAL (
           SELECT c.id, c.object_key, c.statement, c.embedding IS NULL AS unembedded,
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
            -- exact ordering, no HNSW: the slot filter leaves a handful of rows per candidate. A claim of the same
            -- object comes first whatever its wording: for a set relation it is the same fact (consolidation.decide)
            ORDER BY c.object_key = b.object_key DESC, similarity DESC, c.id
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
        "object_key": [r.object_key for r in rows],
    }
    with bound_cursor() as cursor:
        cursor.execute(_MATCH, params)
        for idx, claim_id, object_key, statement, similarity, unembedded in cursor.fetchall():
            found[idx].append(MatchRow(idx, claim_id, object_key, statement, float(similarity), unembedded))
    return found


@dataclass(frozen=True)
class StateRow:
    """A state candidate as the queries about its slot's other holders and versions see it."""

    index: int
    object_entity_id: int | None
    quote: str
    subject_id: int
    predicate_id: int
    scope: str
    perspective: str
    valid_from: datetime
    valid_to: datetime | None
    object_key: str


def _state_params(tenant_id: int, rows: Sequence[StateRow]) -> dict[str, Any]:
    """A batch of state candidates as the typed arrays `unnest` reads (a query takes the ones it names)."""
    return {
        "tenant_id": tenant_id, "idx": [r.index for r in rows], "subject": [r.subject_id for r in rows],
        "predicate": [r.predicate_id for r in rows], "object_entity": [r.object_entity_id for r in rows],
        "object_key": [r.object_key for r in rows], "scope": [r.scope for r in rows],
        "perspective": [r.perspective for r in rows], "quote": [r.quote for r in rows],
        "vfrom": [r.valid_from for r in rows], "vto": [r.valid_to for r in rows],
    }


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


def claims_succession(tenant_id: int, rows: Sequence[StateRow]) -> dict[int, list[tuple[int, int]]]:
    """Named predecessors: for a state fact about an entity object ("Marcus took over as Head of Support from
    Priya"), the current claims of *other* subjects with the same predicate and object whose subject is named
    in the new fact's quote. index → [(claim id, subject id)]. The subject slot alone cannot see them."""
    found: dict[int, list[tuple[int, int]]] = {}
    if not rows:
        return found
    with bound_cursor() as cursor:
        cursor.execute(_SUCCESSION, _state_params(tenant_id, rows))
        for idx, claim_id, subject_id in cursor.fetchall():
            found.setdefault(idx, []).append((claim_id, subject_id))
    return found


_REPLACED = sql.SQL(
    """
    WITH b AS (
        SELECT * FROM unnest(%(idx)s::int[], %(subject)s::bigint[], %(predicate)s::bigint[],
                             %(object_entity)s::bigint[], %(scope)s::text[], %(perspective)s::text[],
                             %(quote)s::text[], %(vfrom)s::timestamptz[])
                   AS b(idx, subject_id, predicate_id, object_entity_id, scope, perspective, quote, vfrom)
    ), versions AS (
        -- Two branches, not one OR, so that each reads its own index (subject, object entity) rather than every
        -- closed claim of the tenant. The candidate's own slot ...
        SELECT b.idx, b.vfrom, c.id, c.subject_id, c.object_key, c.valid, c.superseded_by_id
          FROM b JOIN {claim} c
            ON c.subject_id = b.subject_id AND c.predicate_id = b.predicate_id AND c.scope = b.scope
           AND c.perspective = b.perspective AND c.tenant_id = %(tenant_id)s AND c.policy = 'state'
           AND NOT upper_inf(c.recorded)
        UNION ALL
        -- ... and the candidate's object held by a predecessor the candidate's quote names.
        SELECT b.idx, b.vfrom, c.id, c.subject_id, c.object_key, c.valid, c.superseded_by_id
          FROM b JOIN {claim} c
            ON c.object_entity_id = b.object_entity_id AND c.subject_id <> b.subject_id
           AND c.predicate_id = b.predicate_id AND c.scope = b.scope AND c.perspective = b.perspective
           AND c.tenant_id = %(tenant_id)s AND c.policy = 'state' AND NOT upper_inf(c.recorded)
          JOIN {entity} e ON e.id = c.subject_id AND strpos(lower(b.quote), lower(e.name)) > 0
    )
    SELECT v.idx, v.id, v.subject_id, v.object_key, lower(v.valid), upper(v.valid)
      FROM versions v
      -- replaced, not refuted: a revision cut its valid range exactly where its successor began
      JOIN {claim} s ON s.id = v.superseded_by_id AND upper(v.valid) = lower(s.valid)
     -- the version held the candidate's start
     WHERE v.valid @> v.vfrom
     ORDER BY v.idx, v.id
    """
).format(claim=sql.Identifier("findings_claim"), entity=sql.Identifier("findings_entity"))


@dataclass(frozen=True)
class Overtaken:
    claim_id: int
    subject_id: int
    ended: datetime  # where the version ended before: its old successor's start


@dataclass
class Replaced:
    """The replaced versions state candidates start inside, by candidate index, sorted into what they mean."""

    corroborated: dict[int, int] = field(default_factory=dict)  # the same value: the late fact is its evidence
    overtaken: dict[int, list[Overtaken]] = field(default_factory=dict)  # another value: the late fact cuts it


def claims_replaced(tenant_id: int, rows: Sequence[StateRow]) -> Replaced:
    """Late word about a slot's past, read in one statement: the closed, superseded versions whose valid range holds
    a state candidate's start — of its own slot, or of a predecessor it names holding its object.

    Matching (`claims_match`) and succession see current claims only, and facts arrive in any order:
    - "welcome Priya, our Head of Support", filed after Marcus took the role over from her, is the *same value* as
      her replaced version: it corroborates it (when it names no end past it), instead of opening a second
      endless Priya claim beside Marcus;
    - "Marcus Lee took over as Head of Support from Priya Nair" (09-01), filed after her new role (09-01 08:05)
      had already ended her version, starts strictly inside it with *another holder*: it overtakes it, and
      `sql.claims_trim` ends the version there, so the role never has two holders at once. Another value of her
      own slot overtakes it the same way.
    """
    found = Replaced()
    if not rows:
        return found
    by_index = {r.index: r for r in rows}
    with bound_cursor() as cursor:
        cursor.execute(_REPLACED, _state_params(tenant_id, rows))
        for idx, claim_id, subject_id, object_key, lower, upper in cursor.fetchall():
            row = by_index[idx]
            if subject_id == row.subject_id and object_key == row.object_key:
                if row.valid_to is None or row.valid_to <= upper:
                    found.corroborated.setdefault(idx, claim_id)
            elif lower is not None and lower < row.valid_from:
                found.overtaken.setdefault(idx, []).append(Overtaken(claim_id, subject_id, upper))
    return found


_SLOTS_UNEMBEDDED = sql.SQL(
    """
    SELECT s.idx, u.id, u.statement
      FROM unnest(%(idx)s::int[], %(subject)s::bigint[], %(predicate)s::bigint[], %(scope)s::text[],
                  %(perspective)s::text[]) AS s(idx, subject_id, predicate_id, scope, perspective)
     CROSS JOIN LATERAL (
           -- one row that says the slot holds a current claim at all ...
           (SELECT c.id, NULL::text AS statement
              FROM {claim} c
             WHERE c.tenant_id = %(tenant_id)s AND c.subject_id = s.subject_id AND c.predicate_id = s.predicate_id
               AND c.scope = s.scope AND c.perspective = s.perspective AND upper_inf(c.recorded)
             LIMIT 1)
           UNION ALL
           -- ... and each current claim of it that carries no statement vector yet
           (SELECT c.id, c.statement
              FROM {claim} c
             WHERE c.tenant_id = %(tenant_id)s AND c.subject_id = s.subject_id AND c.predicate_id = s.predicate_id
               AND c.scope = s.scope AND c.perspective = s.perspective AND upper_inf(c.recorded)
               AND c.embedding IS NULL)
     ) AS u
    """
).format(claim=sql.Identifier("findings_claim"))


def slots_unembedded(tenant_id: int, slots: Sequence[tuple[int, int, int, str, str]]) -> dict[int, dict[int, str]]:
    """For (index, subject, predicate, perspective, scope) slots: index → {claim id: statement} of the slot's
    current claims without a statement vector, for the slots that hold any current claim (an empty dict when
    every one is embedded); an empty slot is left out. The writer embeds a statement only where tier two will
    compare it with something (findings/README.md, "Embedded when compared")."""
    found: dict[int, dict[int, str]] = {}
    if not slots:
        return found
    params = {"tenant_id": tenant_id, "idx": [s[0] for s in slots], "subject": [s[1] for s in slots],
              "predicate": [s[2] for s in slots], "perspective": [s[3] for s in slots],
              "scope": [s[4] for s in slots]}
    with bound_cursor() as cursor:
        cursor.execute(_SLOTS_UNEMBEDDED, params)
        for idx, claim_id, statement in cursor.fetchall():
            held = found.setdefault(idx, {})
            if statement is not None:
                held[claim_id] = statement
    return found


_EMBEDDING_FILL = sql.SQL(
    """
    UPDATE {claim} c SET embedding = f.embedding::vector
      FROM unnest(%(id)s::bigint[], %(embedding)s::text[]) AS f(id, embedding)
     WHERE c.id = f.id AND c.embedding IS NULL
    """
).format(claim=sql.Identifier("findings_claim"))


def claims_embedding_fill(vectors: dict[int, str]) -> int:
    """Give claims their statement vectors (pgvector literals) where they have none. A vector is derived from
    the statement, which never changes, so this needs no slot lock and two writers filling one claim agree."""
    if not vectors:
        return 0
    with bound_cursor() as cursor:
        cursor.execute(_EMBEDDING_FILL, {"id": list(vectors), "embedding": list(vectors.values())})
        return cursor.rowcount


_LIVE_IDENTITIES = sql.SQL(
    "SELECT identity, scope, perspective, id FROM {claim} "
    "WHERE tenant_id = %(tenant_id)s AND identity = ANY(%(identities)s::uuid[]) AND upper_inf(recorded)"
).format(claim=sql.Identifier("findings_claim"))


def live_identities(tenant_id: int, identities: Sequence[Any]) -> dict[tuple[str, str, str], int]:
    """Current claims with one of these identities: (identity, scope, perspective) → claim id."""
    if not identities:
        return {}
    with bound_cursor() as cursor:
        cursor.execute(_LIVE_IDENTITIES, {"tenant_id": tenant_id, "identities": [str(i) for i in identities]})
        return {(str(i), s, p): cid for i, s, p, cid in cursor.fetchall()}
