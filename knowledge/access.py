"""The knowledge access path: the single home of the tenant-scope and ACL predicate.

A caller may read a document (or chunk) when
  - it belongs to the caller's tenant or to the platform corpus — never another tenant; and
  - it is workspace-visible, or it is restricted and shares at least one principal with the caller.
Anything else fails closed: an unknown visibility, an empty ACL or an empty principal set reads nothing.

Retrieval, findings and answers all start from here, in SQL, before any ranking. The ORM form
(`readable_documents`, `readable_chunks`) and the SQL form (`chunk_access_sql`) express the same rule
over the same trigger-maintained columns; tests hold them equal.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from psycopg import sql

from groundwork.authority import Authority

from .models import Chunk, Document, Visibility


def access_q(authority: Authority, *, prefix: str = "") -> Q:
    principals = sorted(authority.principal_ids)
    visible = Q(**{f"{prefix}visibility": Visibility.WORKSPACE})
    if principals:
        visible |= Q(**{f"{prefix}visibility": Visibility.RESTRICTED, f"{prefix}acl__overlap": principals})
    return Q(**{f"{prefix}tenant_id__in": list(authority.corpus_tenant_ids)}) & visible


def readable_documents(authority: Authority) -> QuerySet[Document]:
    return Document.objects.filter(access_q(authority))


def readable_chunks(authority: Authority) -> QuerySet[Chunk]:
    return Chunk.objects.filter(access_q(authority))


def document_access(authority: Authority, document_id: int) -> Document | None:
    """One readable document, or None — missing and forbidden are the same answer."""
    return readable_documents(authority).select_related("source", "author").filter(pk=document_id).first()


def chunk_access_sql(alias: str = "c") -> sql.Composed:
    """The predicate for raw SQL over knowledge_chunk (alias `alias`). Parameters: %(tenant_ids)s
    (bigint[]) and %(principal_ids)s (bigint[]), from `chunk_access_params`."""
    a = sql.Identifier(alias)
    return sql.SQL(
        "({a}.tenant_id = ANY(%(tenant_ids)s::bigint[]) AND ({a}.visibility = 'workspace' "
        "OR ({a}.visibility = 'restricted' AND {a}.acl && %(principal_ids)s::bigint[])))"
    ).format(a=a)


def chunk_access_params(authority: Authority) -> dict:
    return {"tenant_ids": list(authority.corpus_tenant_ids), "principal_ids": sorted(authority.principal_ids),
            "own_tenant_id": authority.tenant_id}


def tenant_has_corpus(authority: Authority) -> bool:
    """Whether anything at all is searchable for this caller (an empty base means no grounding mode)."""
    return readable_chunks(authority).exists()
