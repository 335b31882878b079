"""Record links' SQL (knowledge.record_links, knowledge.services.links): writing a batch's links and resolving the
dangling ones that involve it."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection as default_connection
from psycopg import sql

# --- Record links -------------------------------------------------------------------------------------------
# Why raw SQL: links of a whole ingest batch travel as typed arrays through unnest (one statement whatever the
# batch size), and resolution is an UPDATE … FROM over the keys a record answers to (its URL without the
# fragment, its casefolded title, the ticket key at the start of its title: generated columns, migration 0014),
# with DISTINCT ON and correlated probes the ORM cannot express.

DOCUMENT_LINKS_INSERT = sql.SQL(
    """
    INSERT INTO knowledge_document_link (tenant_id, source_id, kind, key, anchor)
    SELECT d.tenant_id, l.source_id, l.kind, l.key, l.anchor
      FROM unnest(%(source)s::bigint[], %(kind)s::text[], %(key)s::text[], %(anchor)s::text[])
           AS l(source_id, kind, key, anchor)
      JOIN knowledge_document d ON d.id = l.source_id
    ON CONFLICT (source_id, kind, key) DO NOTHING
    """
)

# One statement per kind and direction, each matching by equality. A reference names one record: when several
# records of the tenant share a key, the oldest wins, so the answer does not depend on the plan. Only links
# touching the batch are considered, so an import's cost grows with its own links, not with the tenant's records:
# - out: links out of its records (any record of the tenant may be the target); skipped when it has none;
# - in: dangling links elsewhere whose key one of its records now carries (only its records are candidates: an
#   older match would have resolved them already); walks the batch's records by id and probes the partial index
#   of dangling links, and is skipped for a kind the tenant has no dangling link of.
_RESOLVE_IN = """
    UPDATE knowledge_document_link l
       SET target_id = m.target_id
      FROM (
        SELECT DISTINCT ON (c.link_id) c.link_id, c.target_id
          FROM ({arms}) c
         ORDER BY c.link_id, c.target_id
      ) m
     WHERE l.id = m.link_id
"""
# Links out of the batch: each link probes the tenant's records once per way its key may match (the oldest
# match of each, the oldest of those wins) through the key columns' indexes, never a scan of every record.
_RESOLVE_OUT = """
    UPDATE knowledge_document_link l
       SET target_id = m.target_id
      FROM (
        SELECT l2.id AS link_id, LEAST({probes}) AS target_id
          FROM knowledge_document_link l2
         WHERE l2.target_id IS NULL AND l2.kind = {kind} AND l2.source_id = ANY(%(documents)s::bigint[])
      ) m
     WHERE l.id = m.link_id AND m.target_id IS NOT NULL
"""
_PROBE = ("(SELECT min(d.id) FROM knowledge_document d"
          " WHERE d.tenant_id = l2.tenant_id AND d.id <> l2.source_id AND {match})")
# Links into the batch: one arm per way a key may match, each an equality the planner probes the partial index
# of dangling links with, from the batch's records by id.
_ARM_IN = """
    SELECT l2.id AS link_id, d.id AS target_id
      FROM knowledge_document d
      JOIN knowledge_document_link l2 ON l2.tenant_id = d.tenant_id AND l2.target_id IS NULL
           AND l2.kind = {kind} AND l2.source_id <> d.id AND {match}
     WHERE d.id = ANY(%(documents)s::bigint[]) AND d.tenant_id = ANY(%(tenant_ids)s::bigint[])
"""
DANGLING_KINDS = sql.SQL(
    """
    SELECT k FROM unnest(%(kinds)s::text[]) AS k
     WHERE EXISTS (SELECT 1 FROM knowledge_document_link
                    WHERE tenant_id = ANY(%(tenant_ids)s::bigint[]) AND kind = k AND target_id IS NULL)
    """
)
# How a link's key matches a record: against the record's generated key columns (migration 0014: one column and
# one index per way), a plain equality the planner may use an index for under row-level security.
_LINK_MATCH = {
    "url": ("d.link_url_key = lower(l2.key)",),
    "doc": ("l2.key = d.id::text",),
    "wiki": ("d.link_wiki_key = l2.key",),
    # a ticket key names the record whose title starts with it, or whose upstream id it is
    "ticket": ("d.link_ticket_key = l2.key", "d.link_external_key = l2.key"),
}
# Probing by a link's key: a record id as a number, so the primary key finds it.
_LINK_MATCH_OUT = {**_LINK_MATCH, "doc": ("d.id = CASE WHEN l2.key ~ '^[0-9]{1,18}$' THEN l2.key::bigint END",)}


def _resolve_in(kind: str) -> sql.Composed:
    arms = sql.SQL(" UNION ALL ").join(sql.SQL(_ARM_IN).format(match=sql.SQL(match), kind=sql.Literal(kind))
                                       for match in _LINK_MATCH[kind])
    return sql.SQL(_RESOLVE_IN).format(arms=arms)


def _resolve_out(kind: str) -> sql.Composed:
    probes = sql.SQL(", ").join(sql.SQL(_PROBE).format(match=sql.SQL(match)) for match in _LINK_MATCH_OUT[kind])
    return sql.SQL(_RESOLVE_OUT).format(probes=probes, kind=sql.Literal(kind))


DOCUMENT_LINKS_RESOLVE_OUT = {kind: _resolve_out(kind) for kind in _LINK_MATCH}
DOCUMENT_LINKS_RESOLVE_IN = {kind: _resolve_in(kind) for kind in _LINK_MATCH}


def document_links_write(rows: Sequence[tuple[int, str, str, str]], *, documents: Sequence[int],
                         tenant_ids: Sequence[int]) -> None:
    """Insert (source document, kind, key, anchor) link rows, then resolve every dangling link that involves
    `documents` (links out of them, and links elsewhere in their tenants to their keys). Inside the caller's
    transaction."""
    params = {"documents": list(documents), "tenant_ids": list(tenant_ids)}
    with default_connection.cursor() as cursor:
        if rows:
            source, kind, key, anchor = (list(column) for column in zip(*rows, strict=True))
            cursor.execute(DOCUMENT_LINKS_INSERT, {"source": source, "kind": kind, "key": key, "anchor": anchor})
            for link_kind in sorted(set(kind)):
                cursor.execute(DOCUMENT_LINKS_RESOLVE_OUT[link_kind], params)
        if documents:
            cursor.execute(DANGLING_KINDS, {"kinds": list(_LINK_MATCH), "tenant_ids": list(tenant_ids)})
            for (link_kind,) in cursor.fetchall():
                cursor.execute(DOCUMENT_LINKS_RESOLVE_IN[link_kind], params)
