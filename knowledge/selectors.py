"""Reads of the knowledge app. Every tenant-scoped read starts from knowledge.access."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.postgres.search import SearchQuery
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet

from groundwork.authority import Authority
from groundwork.models import Principal

from .access import access_q, readable_chunks, readable_documents
from .models import Chunk, Document, DocumentLink, Source


def sources_list(authority: Authority) -> QuerySet[Source]:
    """The caller's own sources plus the platform corpus's (read-only to tenants)."""
    return Source.objects.filter(tenant_id__in=authority.corpus_tenant_ids).order_by("name")


def source_get(authority: Authority, source_id: int) -> Source | None:
    return sources_list(authority).filter(pk=source_id).first()


def source_writable(authority: Authority, source_id: int) -> Source | None:
    """A source the caller may write into: its own tenant's, and only for admins."""
    if not authority.is_admin:
        return None
    return Source.objects.filter(pk=source_id, tenant_id=authority.tenant_id).first()


def documents_list(
    authority: Authority, *, source_id: int | None = None, query: str | None = None,
    updated_after: datetime | None = None, updated_before: datetime | None = None,
) -> QuerySet[Document]:
    qs = readable_documents(authority).select_related("source", "author")
    if source_id is not None:
        qs = qs.filter(source_id=source_id)
    if query:
        qs = qs.filter(Q(title__icontains=query) | Q(external_id__icontains=query))
    if updated_after is not None:
        qs = qs.filter(updated_at__gte=updated_after)
    if updated_before is not None:
        qs = qs.filter(updated_at__lt=updated_before)
    qs = qs.annotate(
        chunk_count=Count("chunks", distinct=True),
        embedded_count=Count("chunks", filter=Q(chunks__embedding_space__isnull=False), distinct=True),
    )
    if authority.is_admin:
        qs = qs.prefetch_related(Prefetch("acl_principals", queryset=Principal.objects.order_by("kind", "key")))
    return qs.defer("text").order_by("-updated_at", "id")


def document_get(authority: Authority, document_id: int) -> Document | None:
    return documents_list(authority).filter(pk=document_id).first()


def document_text_get(authority: Authority, document_id: int) -> str | None:
    return readable_documents(authority).filter(pk=document_id).values_list("text", flat=True).first()


def document_writable(authority: Authority, document_id: int) -> Document | None:
    """Admins change documents of their own tenant that they can read; missing, foreign and unreadable
    all look the same."""
    if not authority.is_admin:
        return None
    return readable_documents(authority).filter(pk=document_id, tenant_id=authority.tenant_id).first()


def document_chunks(authority: Authority, document_id: int) -> QuerySet[Chunk] | None:
    if not readable_documents(authority).filter(pk=document_id).exists():
        return None
    return readable_chunks(authority).filter(document_id=document_id).order_by("ordinal").defer("embedding")


# --- the Documents page and the record viewer ---------------------------------------------------------------


@dataclass(frozen=True)
class DocumentFilters:
    text: str | None = None  # title, or the chunks' full text (websearch syntax)
    source_id: int | None = None
    kind: str | None = None  # the source's kind
    format: str | None = None
    updated_from: datetime | None = None  # inclusive
    updated_before: datetime | None = None  # exclusive

    @property
    def active(self) -> bool:
        return any(value is not None for value in vars(self).values())


def documents_browse(authority: Authority, filters: DocumentFilters | None = None) -> QuerySet[Document]:
    """Readable documents for the Documents page, newest first. The full-text match runs over readable
    chunks only, so a restricted chunk never decides whether a title is listed."""
    f = filters or DocumentFilters()
    qs = readable_documents(authority).select_related("source")
    if f.source_id is not None:
        qs = qs.filter(source_id=f.source_id)
    if f.kind:
        qs = qs.filter(source__kind=f.kind)
    if f.format:
        qs = qs.filter(format=f.format)
    if f.updated_from is not None:
        qs = qs.filter(updated_at__gte=f.updated_from)
    if f.updated_before is not None:
        qs = qs.filter(updated_at__lt=f.updated_before)
    if f.text:
        matching_chunks = readable_chunks(authority).filter(
            document_id=OuterRef("pk"), search=SearchQuery(f.text, search_type="websearch", config="english"))
        qs = qs.filter(Q(title__icontains=f.text) | Exists(matching_chunks))
    return qs.defer("text", "metadata").order_by("-updated_at", "-id")


def document_formats(authority: Authority) -> list[str]:
    """The formats present among readable documents (for the format filter)."""
    return sorted(readable_documents(authority).order_by().values_list("format", flat=True).distinct())


def documents_exist(authority: Authority) -> bool:
    return readable_documents(authority).exists()


@dataclass(frozen=True)
class DocumentView:
    document: Document
    chunks: list[Chunk]
    acl: list[Principal] | None  # the ACL principals for admins of the document's tenant; else None


def document_view(authority: Authority, document_id: int) -> DocumentView | None:
    """One readable document with its text, chunk spans and — for tenant admins — its ACL; None when
    missing or not readable (the same answer)."""
    document = (readable_documents(authority).select_related("source", "author", "author__user")
                .filter(pk=document_id).first())
    if document is None:
        return None
    chunks = list(readable_chunks(authority).filter(document_id=document.pk).order_by("ordinal")
                  .only("id", "ordinal", "start", "end", "location", "heading_path"))
    acl = None
    # Admins see who may read their own tenant's records; the platform corpus's ACL is not theirs to see.
    if authority.is_admin and document.tenant_id == authority.tenant_id:
        acl = list(document.acl_principals.select_related("user").order_by("kind", "key"))
    return DocumentView(document=document, chunks=chunks, acl=acl)


def document_links_readable(authority: Authority, document_ids: list[int], *, limit: int = 100
                            ) -> QuerySet[DocumentLink]:
    """Resolved record links out of or into these documents whose both ends the caller may read."""
    both = Q(access_q(authority, prefix="source__")) & Q(access_q(authority, prefix="target__"))
    return (DocumentLink.objects.filter(Q(source_id__in=document_ids) | Q(target_id__in=document_ids))
            .filter(target__isnull=False).filter(both).select_related("source", "target")
            .order_by("source_id", "target_id", "id")[:limit])
