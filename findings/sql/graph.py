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

from psycopg import sql

from groundwork.sql import prepared_cursor
from knowledge.access import chunk_access_sql

# A member entity `{entity}` is grounded: some claim about it has evidence in a chunk the caller may read.
# One EXISTS over both roles (a BitmapOr of the subject and object indexes): half the relations of two EXISTS,
# and planning, not execution, is what these statements mostly cost.
_GROUNDED = """EXISTS (SELECT 1 FROM findings_claim gc JOIN findings_claim_evidence ge ON ge.claim_id = gc.id
                         JOIN knowledge_chunk c ON c.id = ge.chunk_id
                        WHERE (gc.subject_id = {entity} OR gc.object_entity_id = {entity}) AND {access})"""


def _grounded(entity: str) -> sql.Composed:
    return sql.SQL(_GROUNDED).format(entity=sql.SQL(entity), access=chunk_access_sql("c"))


# Phrases are entity keys of the question's candidate names: exact key, or alias key (the name a merge brought in
# belongs to the merged entity, so *its* grounding decides). The row names the matched *member* and its name:
# the one the caller's records ground.
ENTITY_LINK = sql.SQL(
    """
    WITH phrases AS (SELECT p.phrase FROM unnest(%(phrases)s::text[]) AS p(phrase)),
    named AS (
        SELECT p.phrase, e.id AS member, 'exact' AS method, 1.0::float8 AS score
          FROM phrases p JOIN findings_entity e ON e.key = p.phrase AND e.tenant_id = ANY(%(tenant_ids)s::bigint[])
        UNION ALL
        SELECT p.phrase, coalesce(m.merged_id, a.entity_id), 'alias', 0.95
          FROM phrases p
          JOIN findings_entity_alias a ON a.key = p.phrase AND a.tenant_id = ANY(%(tenant_ids)s::bigint[])
          LEFT JOIN findings_entity_merge m ON m.id = a.merge_id
    )
    SELECT n.phrase, coalesce(e.merged_into_id, e.id) AS node, n.method, n.score, e.name
      FROM named n JOIN findings_entity e ON e.id = n.member
     WHERE {grounded}
     ORDER BY n.score DESC, length(n.phrase) DESC, node
     LIMIT %(limit)s
    """
).format(grounded=_grounded("n.member"))

# Trigrams, for one phrase that matched nothing exactly: `%%` is pg_trgm's similarity operator, answered from the
# GIN indexes at its default threshold (the phrase is a statement constant, so the planner can use them); the
# stricter floor follows.
ENTITY_LINK_FUZZY = sql.SQL(
    """
    WITH named AS (
        SELECT e.id AS member, similarity(e.key, %(phrase)s) AS score FROM findings_entity e
         WHERE e.key %% %(phrase)s AND e.tenant_id = ANY(%(tenant_ids)s::bigint[])
        UNION ALL
        SELECT coalesce(m.merged_id, a.entity_id), similarity(a.key, %(phrase)s) FROM findings_entity_alias a
          LEFT JOIN findings_entity_merge m ON m.id = a.merge_id
         WHERE a.key %% %(phrase)s AND a.tenant_id = ANY(%(tenant_ids)s::bigint[])
    )
    SELECT %(phrase)s, coalesce(e.merged_into_id, e.id) AS node, 'trigram', n.score, e.name
      FROM named n JOIN findings_entity e ON e.id = n.member
     WHERE n.score >= %(min_similarity)s AND {grounded}
     ORDER BY n.score DESC, node
     LIMIT %(limit)s
    """
).format(grounded=_grounded("n.member"))

# The relations a question's words point at ("manager" → reports_to, whose description says "line manager";
# "working" → works_on): the question's lexemes ORed against each relation's name, phrasings and description —
# less the words naming entity kinds ("project", "team"), which half the descriptions share and so point nowhere.
_RELATION_CUES = sql.SQL(
    """
    SELECT r.id FROM findings_relation_type r
     WHERE (to_tsvector('english', replace(r.name, '_', ' ') || ' ' || r.phrasings::text)
            || ts_delete(to_tsvector('english', r.description),
                         (SELECT array_agg(k.lexeme) FROM findings_relation_type r2,
                                 unnest(to_tsvector('english', r2.subject_kinds::text || ' ' || r2.object_kinds::text)
                                 ) k)))
           @@ replace(plainto_tsquery('english', %(query)s)::text, ' & ', ' | ')::tsquery
    """
)


# One hop from each frontier node: its members' current claims with an entity object, in both directions, each
# with its first readable evidence chunk (under the user's filters too). Per node, at most %(scan_cap)s claims are
# looked at (those whose relation the question's words point at first: `cued`), and after the access filter at
# most %(per_node)s edges kept: cued ones first, then those of the rarest (relation, direction) around the node —
# the one owner of a project before one of its forty tickets. `degree` (readable edges kept per node) and
# `group_size` (readable edges of the same relation and direction) are the damping's inputs; both count only
# what the caller may read. The other end comes with the name of the member entity the claim names — grounded
# for the caller by this very claim.
GRAPH_HOP = sql.SQL(
    """
    WITH frontier AS (SELECT f.node FROM unnest(%(nodes)s::bigint[]) AS f(node)),
    cued AS MATERIALIZED ({cues}),
    members AS (
        SELECT f.node, e.id AS member FROM frontier f JOIN findings_entity e ON e.id = f.node
        UNION
        SELECT f.node, e.id FROM frontier f JOIN findings_entity e ON e.merged_into_id = f.node
    )
    SELECT x.node, x.claim_id, r.name, x.outgoing, coalesce(o.merged_into_id, o.id) AS other, o.name, x.chunk_id,
           x.document_id, count(*) OVER (PARTITION BY x.node) AS degree, x.cued, x.group_size
      FROM frontier fr
      CROSS JOIN LATERAL (
        SELECT g.* FROM (
            SELECT m.node, t.claim_id, t.predicate, t.outgoing, t.other, t.cued, ev.chunk_id, ev.document_id,
                   count(*) OVER (PARTITION BY t.predicate, t.outgoing) AS group_size
              FROM members m
              CROSS JOIN LATERAL (
                    SELECT u.*, u.predicate IN (SELECT id FROM cued) AS cued FROM (
                        SELECT cl.id AS claim_id, cl.predicate_id AS predicate, true AS outgoing,
                               cl.object_entity_id AS other
                          FROM findings_claim cl
                         WHERE cl.subject_id = m.member AND cl.object_entity_id IS NOT NULL AND upper_inf(cl.recorded)
                        UNION ALL
                        SELECT cl.id, cl.predicate_id, false, cl.subject_id
                          FROM findings_claim cl
                         WHERE cl.object_entity_id = m.member AND upper_inf(cl.recorded)
                    ) u
                    ORDER BY u.predicate IN (SELECT id FROM cued) DESC, u.claim_id
                    LIMIT %(scan_cap)s
              ) t
              CROSS JOIN LATERAL (
                    SELECT ce.chunk_id, ce.document_id
                      FROM findings_claim_evidence ce JOIN knowledge_chunk c ON c.id = ce.chunk_id
                     WHERE ce.claim_id = t.claim_id AND {access}{filters}
                     ORDER BY ce.id LIMIT 1
              ) ev
             WHERE m.node = fr.node
        ) g
         ORDER BY g.cued DESC, g.group_size, g.outgoing DESC, g.claim_id
         LIMIT %(per_node)s
      ) x
      JOIN findings_entity o ON o.id = x.other
      JOIN findings_relation_type r ON r.id = x.predicate
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


@dataclass(frozen=True)
class LinkedNode:
    phrase: str
    node: int
    method: str
    score: float
    name: str  # the matched member's name (grounded for the caller)


@dataclass(frozen=True)
class HopEdge:
    node: int
    claim_id: int
    predicate: str
    outgoing: bool
    other: int
    other_name: str
    chunk_id: int
    document_id: int
    degree: int
    cued: bool
    group_size: int


def entities_link(phrases: Sequence[str], fuzzy: Sequence[bool], access_params: dict, *, min_similarity: float,
                  limit: int) -> list[LinkedNode]:
    """Exact and alias matches of every phrase in one statement; then trigram matches, one statement per phrase
    allowed to match fuzzily that matched nothing exactly (rare: most questions name things as they are)."""
    if not phrases:
        return []
    with prepared_cursor() as cursor:
        cursor.execute(ENTITY_LINK, {**access_params, "phrases": list(phrases), "limit": limit})
        found = [LinkedNode(p, node, method, float(score), name) for p, node, method, score, name in cursor.fetchall()]
        matched = {row.phrase for row in found}
        for phrase in [p for p, f in zip(phrases, fuzzy, strict=True) if f and p not in matched]:
            cursor.execute(ENTITY_LINK_FUZZY, {**access_params, "phrase": phrase, "min_similarity": min_similarity,
                                               "limit": limit})
            found += [LinkedNode(p, node, method, float(score), name)
                      for p, node, method, score, name in cursor.fetchall()]
    return found


_NO_FILTERS = sql.SQL("")
SCAN_CAP = 200  # claims looked at per node and hop, before the access filter: bounds a hub's cost


def graph_hop(nodes: Sequence[int], access_params: dict, *, per_node: int, query: str = "",
              filters_clause: sql.Composable = _NO_FILTERS, filter_params: dict | None = None) -> list[HopEdge]:
    if not nodes:
        return []
    statement = GRAPH_HOP.format(access=chunk_access_sql("c"), filters=filters_clause, cues=_RELATION_CUES)
    params = {**access_params, **(filter_params or {}), "nodes": list(nodes), "per_node": per_node,
              "scan_cap": SCAN_CAP, "query": query}
    with prepared_cursor() as cursor:
        cursor.execute(statement, params)
        return [HopEdge(*row) for row in cursor.fetchall()]


def node_names(nodes: Sequence[int], access_params: dict) -> dict[int, tuple[str, str]]:
    """node → (name, kind) for the nodes grounded for the caller; the others are absent."""
    if not nodes:
        return {}
    with prepared_cursor() as cursor:
        cursor.execute(NODE_NAMES, {**access_params, "nodes": sorted(set(nodes))})
        return {node: (name, kind) for node, name, kind in cursor.fetchall()}


ENTITIES_GROUNDED = sql.SQL(
    "SELECT e.id FROM findings_entity e WHERE e.id = ANY(%(ids)s::bigint[]) "
    "AND e.tenant_id = ANY(%(tenant_ids)s::bigint[]) AND {grounded}"
).format(grounded=_grounded("e.id"))


def entities_grounded(ids: Sequence[int], access_params: dict) -> set[int]:
    """The entities among `ids` that exist for the caller (grounded in a record they may read)."""
    if not ids:
        return set()
    with prepared_cursor() as cursor:
        cursor.execute(ENTITIES_GROUNDED, {**access_params, "ids": sorted(set(ids))})
        return {row[0] for row in cursor.fetchall()}
