"""Postgres-specific SQL of the entity graph: query entity linking, 1-hop expansion, node names and the graph's
record links — each under the caller's access predicate.

The graph's ACL rule: an entity exists for a caller only while it is *grounded* for them — the subject or object
of a claim with at least one evidence chunk they may read (knowledge.access.chunk_access_sql, the one access
predicate; nothing here re-states it). Every statement applies it at its own step: a name matches only when the
entity carrying that name is grounded; an edge counts only through a claim with readable evidence (which grounds
both its ends); a node's name comes from a grounded member; a record link joins two readable chunks.

A node is `coalesce(entity.merged_into_id, entity.id)`: merges are one level deep (migration 0007's trigger), so
a node's members are the entity itself and the entities merged into it — two index probes, no recursion.

Why raw SQL: lateral joins with per-row limits (a hub's edges are capped *after* the access filter), unnest'ed
arrays of phrases and frontier nodes, and pg_trgm's `%` operator, none of which the ORM composes in one trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection
from psycopg import sql

from knowledge.access import chunk_access_sql

# A member entity `{entity}` is grounded: some claim about it has evidence in a chunk the caller may read.
_GROUNDED = """(EXISTS (SELECT 1 FROM findings_claim gc JOIN findings_claim_evidence ge ON ge.claim_id = gc.id
                          JOIN knowledge_chunk c ON c.id = ge.chunk_id
                         WHERE gc.subject_id = {entity} AND {access})
             OR EXISTS (SELECT 1 FROM findings_claim gc JOIN findings_claim_evidence ge ON ge.claim_id = gc.id
                          JOIN knowledge_chunk c ON c.id = ge.chunk_id
                         WHERE gc.object_entity_id = {entity} AND {access}))"""


def _grounded(entity: str) -> sql.Composed:
    return sql.SQL(_GROUNDED).format(entity=sql.SQL(entity), access=chunk_access_sql("c"))


GRAPH_PRESENT = sql.SQL(
    "SELECT EXISTS (SELECT 1 FROM findings_claim cl WHERE cl.tenant_id = ANY(%(tenant_ids)s::bigint[]) "
    "AND cl.object_entity_id IS NOT NULL AND upper_inf(cl.recorded))"
)

# Phrases are entity keys of the question's candidate names. Exact key, alias key (the name a merge brought in
# belongs to the merged entity, so *its* grounding decides), then trigrams for phrases the caller allows fuzzily.
# `%%` is pg_trgm's similarity operator (index-backed at its default threshold); the stricter floor follows.
ENTITY_LINK = sql.SQL(
    """
    WITH phrases AS (SELECT p.phrase, p.fuzzy FROM unnest(%(phrases)s::text[], %(fuzzy)s::bool[]) AS p(phrase, fuzzy)),
    named AS (
        SELECT p.phrase, e.id AS member, 'exact' AS method, 1.0::float8 AS score
          FROM phrases p JOIN findings_entity e ON e.key = p.phrase AND e.tenant_id = ANY(%(tenant_ids)s::bigint[])
        UNION ALL
        SELECT p.phrase, coalesce(m.merged_id, a.entity_id), 'alias', 0.95
          FROM phrases p
          JOIN findings_entity_alias a ON a.key = p.phrase AND a.tenant_id = ANY(%(tenant_ids)s::bigint[])
          LEFT JOIN findings_entity_merge m ON m.id = a.merge_id
        UNION ALL
        SELECT p.phrase, e.id, 'trigram', similarity(e.key, p.phrase)
          FROM phrases p JOIN findings_entity e ON e.key %% p.phrase AND e.tenant_id = ANY(%(tenant_ids)s::bigint[])
         WHERE p.fuzzy AND similarity(e.key, p.phrase) >= %(min_similarity)s
        UNION ALL
        SELECT p.phrase, coalesce(m.merged_id, a.entity_id), 'trigram', similarity(a.key, p.phrase)
          FROM phrases p
          JOIN findings_entity_alias a ON a.key %% p.phrase AND a.tenant_id = ANY(%(tenant_ids)s::bigint[])
          LEFT JOIN findings_entity_merge m ON m.id = a.merge_id
         WHERE p.fuzzy AND similarity(a.key, p.phrase) >= %(min_similarity)s
    )
    SELECT n.phrase, coalesce(e.merged_into_id, e.id) AS node, n.method, n.score
      FROM named n JOIN findings_entity e ON e.id = n.member
     WHERE {grounded}
     ORDER BY n.score DESC, length(n.phrase) DESC, node
     LIMIT %(limit)s
    """
).format(grounded=_grounded("n.member"))

# One hop from each frontier node: its members' current claims with an entity object, in both directions, each
# with its first readable evidence chunk (under the user's filters too). Capped per node after the access
# filter, so a hub costs at most `per_node` rows. `degree` is that capped count: the damping's input.
GRAPH_HOP = sql.SQL(
    """
    WITH frontier AS (SELECT f.node FROM unnest(%(nodes)s::bigint[]) AS f(node)),
    members AS (
        SELECT f.node, e.id AS member FROM frontier f JOIN findings_entity e ON e.id = f.node
        UNION
        SELECT f.node, e.id FROM frontier f JOIN findings_entity e ON e.merged_into_id = f.node
    )
    SELECT x.node, x.claim_id, x.predicate, x.outgoing, coalesce(o.merged_into_id, o.id) AS other, x.chunk_id,
           x.document_id, count(*) OVER (PARTITION BY x.node) AS degree
      FROM frontier fr
      CROSS JOIN LATERAL (
        SELECT m.node, t.claim_id, t.predicate, t.outgoing, t.other, ev.chunk_id, ev.document_id
          FROM members m
          CROSS JOIN LATERAL (
                SELECT cl.id AS claim_id, cl.predicate_id AS predicate, true AS outgoing, cl.object_entity_id AS other
                  FROM findings_claim cl
                 WHERE cl.subject_id = m.member AND cl.object_entity_id IS NOT NULL AND upper_inf(cl.recorded)
                UNION ALL
                SELECT cl.id, cl.predicate_id, false, cl.subject_id
                  FROM findings_claim cl
                 WHERE cl.object_entity_id = m.member AND upper_inf(cl.recorded)
          ) t
          CROSS JOIN LATERAL (
                SELECT ce.chunk_id, ce.document_id
                  FROM findings_claim_evidence ce JOIN knowledge_chunk c ON c.id = ce.chunk_id
                 WHERE ce.claim_id = t.claim_id AND {access}{filters}
                 ORDER BY ce.id LIMIT 1
          ) ev
         WHERE m.node = fr.node
         LIMIT %(per_node)s
      ) x
      JOIN findings_entity o ON o.id = x.other
    """
)

# A node's name as the caller may see it: the canonical entity's own when it is grounded for them, otherwise the
# name of a grounded entity merged into it. A node with no grounded member has no row (it does not exist).
NODE_NAMES = sql.SQL(
    """
    SELECT n.node, named.name, named.kind
      FROM unnest(%(nodes)s::bigint[]) AS n(node)
      CROSS JOIN LATERAL (
        SELECT e.name, e.kind FROM findings_entity e
         WHERE (e.id = n.node OR e.merged_into_id = n.node) AND e.tenant_id = ANY(%(tenant_ids)s::bigint[])
           AND {grounded}
         ORDER BY (e.id = n.node) DESC, e.id
         LIMIT 1
      ) named
    """
).format(grounded=_grounded("e.id"))

RELATION_NAMES = sql.SQL("SELECT id, name FROM findings_relation_type WHERE id = ANY(%(ids)s::bigint[])")


@dataclass(frozen=True)
class LinkedNode:
    phrase: str
    node: int
    method: str
    score: float


@dataclass(frozen=True)
class HopEdge:
    node: int
    claim_id: int
    predicate_id: int
    outgoing: bool
    other: int
    chunk_id: int
    document_id: int
    degree: int


def graph_present(access_params: dict) -> bool:
    """Whether any of the caller's corpus tenants has an entity-to-entity claim at all (the channel's on switch).
    Says nothing about what the caller may read, and nothing of it leaves this process."""
    with connection.cursor() as cursor:
        cursor.execute(GRAPH_PRESENT, access_params)
        return bool(cursor.fetchone()[0])


def entities_link(phrases: Sequence[str], fuzzy: Sequence[bool], access_params: dict, *, min_similarity: float,
                  limit: int) -> list[LinkedNode]:
    if not phrases:
        return []
    params = {**access_params, "phrases": list(phrases), "fuzzy": list(fuzzy), "min_similarity": min_similarity,
              "limit": limit}
    with connection.cursor() as cursor:
        cursor.execute(ENTITY_LINK, params)
        return [LinkedNode(p, node, method, float(score)) for p, node, method, score in cursor.fetchall()]


_NO_FILTERS = sql.SQL("")


def graph_hop(nodes: Sequence[int], access_params: dict, *, per_node: int,
              filters_clause: sql.Composable = _NO_FILTERS, filter_params: dict | None = None) -> list[HopEdge]:
    if not nodes:
        return []
    statement = GRAPH_HOP.format(access=chunk_access_sql("c"), filters=filters_clause)
    params = {**access_params, **(filter_params or {}), "nodes": list(nodes), "per_node": per_node}
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return [HopEdge(*row) for row in cursor.fetchall()]


def node_names(nodes: Sequence[int], access_params: dict) -> dict[int, tuple[str, str]]:
    """node → (name, kind) for the nodes grounded for the caller; the others are absent."""
    if not nodes:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(NODE_NAMES, {**access_params, "nodes": sorted(set(nodes))})
        return {node: (name, kind) for node, name, kind in cursor.fetchall()}


def relation_names(ids: Sequence[int]) -> dict[int, str]:
    if not ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(RELATION_NAMES, {"ids": sorted(set(ids))})
        return dict(cursor.fetchall())


ENTITIES_GROUNDED = sql.SQL(
    "SELECT e.id FROM findings_entity e WHERE e.id = ANY(%(ids)s::bigint[]) "
    "AND e.tenant_id = ANY(%(tenant_ids)s::bigint[]) AND {grounded}"
).format(grounded=_grounded("e.id"))


def entities_grounded(ids: Sequence[int], access_params: dict) -> set[int]:
    """The entities among `ids` that exist for the caller (grounded in a record they may read)."""
    if not ids:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(ENTITIES_GROUNDED, {**access_params, "ids": sorted(set(ids))})
        return {row[0] for row in cursor.fetchall()}
