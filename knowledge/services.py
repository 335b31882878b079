"""Writes of the knowledge app: sources, document ingestion (create / replace / unchanged), ACLs and
deletion. Embedding happens after commit, in knowledge.embedding."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from groundwork.authority import Authority
from groundwork.models import Principal, Tenant
from groundwork.services import principal_ensure, principal_parse

from .chunking import chunk_document
from .hooks import DocumentChange, documents_changed_notify
from .models import Chunk, Document, DocumentAcl, Source, Visibility
from .parsing import ParseError, parse_body
from .sql import chunks_copy

logger = logging.getLogger(__name__)

# Keys a document may never use to re-scope itself. They are dropped and logged, never read.
RESERVED_METADATA_KEYS = {"tenant", "tenant_id", "tenant_slug", "tenantid", "workspace", "workspace_id", "org",
                          "org_id", "organization", "organisation"}


@dataclass(frozen=True)
class DocumentInput:
    external_id: str
    title: str
    body: str
    format: str = "text"
    record_url: str = ""
    author: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    observed_at: datetime | None = None
    expires_at: datetime | None = None
    metadata: dict = field(default_factory=dict)
    visibility: str = Visibility.WORKSPACE
    acl: Sequence[str] = ()


@dataclass(frozen=True)
class IngestResult:
    document_id: int
    external_id: str
    status: Literal["created", "updated", "metadata_updated", "unchanged"]
    chunk_count: int


@dataclass
class _Prepared:
    item: DocumentInput
    text: str
    chunks: list
    content_hash: str
    metadata: dict
    acl: list[tuple[str, str]]
    author: tuple[str, str] | None


def _require_writer(authority: Authority, tenant_id: int) -> None:
    if authority.tenant_id != tenant_id:
        raise PermissionDenied("records can only be written into the caller's own tenant")
    if not authority.is_admin:
        raise PermissionDenied("only a tenant admin (or an admin service key) may change sources and documents")


def metadata_sanitise(metadata: dict | None, *, external_id: str = "") -> dict:
    """Drop keys a document could use to re-scope itself; the tenant comes from the caller only."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise ValidationError("metadata must be a JSON object")
    clean = {}
    for key, value in metadata.items():
        if str(key).strip().lower().replace("-", "_") in RESERVED_METADATA_KEYS:
            logger.warning("dropped metadata key %r on document %r: the tenant comes from the caller's authority",
                           key, external_id)
            continue
        clean[str(key)] = value
    return clean


def source_create(*, authority: Authority, kind: str, name: str, base_url: str = "") -> Source:
    _require_writer(authority, authority.tenant_id)
    if kind not in Source.Kind.values:
        raise ValidationError(f"unknown source kind {kind!r}; use one of {', '.join(Source.Kind.values)}")
    if Source.objects.filter(tenant_id=authority.tenant_id, name=name).exists():
        raise ValidationError(f"a source named {name!r} exists already")
    return Source.objects.create(tenant_id=authority.tenant_id, kind=kind, name=name, base_url=base_url)


def source_update(*, authority: Authority, source: Source, **fields) -> Source:
    _require_writer(authority, source.tenant_id)
    allowed = {"name", "kind", "base_url"}
    changed = [k for k in fields if k in allowed]
    for key in changed:
        setattr(source, key, fields[key])
    if "kind" in changed and source.kind not in Source.Kind.values:
        raise ValidationError(f"unknown source kind {source.kind!r}")
    if changed:
        source.save(update_fields=changed)
    return source


def source_delete(*, authority: Authority, source: Source) -> int:
    _require_writer(authority, source.tenant_id)
    with transaction.atomic():
        ids = list(Document.objects.filter(source=source).values_list("pk", flat=True))
        documents_changed_notify([DocumentChange(i, source.tenant_id, "deleted") for i in ids])
        source.delete()
    return len(ids)


def content_hash(title: str, text: str) -> str:
    return hashlib.sha256(f"{title}\x1f{text}".encode()).hexdigest()


def _prepare(item: DocumentInput) -> _Prepared:
    """Everything that can fail is checked here, before any write: a failed ingest changes nothing."""
    if not item.external_id or len(item.external_id) > 512:
        raise ValidationError("external_id is required (at most 512 characters)")
    title = (item.title or "").strip()
    if not title:
        raise ValidationError(f"document {item.external_id!r} needs a title")
    if item.visibility not in Visibility.values:
        raise ValidationError(f"visibility must be 'workspace' or 'restricted', got {item.visibility!r}")
    try:
        parsed = parse_body(item.body, item.format)
    except ParseError as exc:
        raise ValidationError(f"document {item.external_id!r}: {exc}") from exc
    if len(parsed.text.encode()) > settings.MAX_UPLOAD_BYTES:
        raise ValidationError(
            f"document {item.external_id!r} is larger than the {settings.MAX_UPLOAD_BYTES}-byte limit"
        )
    acl = [principal_parse(entry) for entry in item.acl]
    author = principal_parse(item.author) if item.author else None
    spans = chunk_document(parsed.text, parsed.headings, title=title[:200],
                           budget=settings.CHUNK_TOKEN_BUDGET, overlap=settings.CHUNK_TOKEN_OVERLAP)
    return _Prepared(item=item, text=parsed.text, chunks=spans, content_hash=content_hash(title, parsed.text),
                     metadata=metadata_sanitise(item.metadata, external_id=item.external_id), acl=acl,
                     author=author)


def _principal_ids(tenant: Tenant, specs: Iterable[tuple[str, str]], cache: dict) -> list[int]:
    ids = []
    for kind, key in specs:
        if (kind, key) not in cache:
            if kind == Principal.Kind.USER:
                principal = Principal.objects.filter(tenant=tenant, kind=kind, key=key).first()
                if principal is None:
                    raise ValidationError(f"user:{key} is not a member of this tenant")
            else:
                principal = principal_ensure(tenant=tenant, kind=kind, raw=key)
            cache[(kind, key)] = principal.pk
        ids.append(cache[(kind, key)])
    return sorted(set(ids))


def documents_ingest(*, authority: Authority, source: Source, items: Sequence[DocumentInput]) -> list[IngestResult]:
    """Create, replace or leave unchanged a batch of documents of one source, in one short transaction.

    Idempotent by content hash: the same title and text again writes no new rows. A changed text
    replaces the document's chunks atomically. Callers with many documents call this per batch
    (see documents_import) so no giant transaction is held.
    """
    _require_writer(authority, source.tenant_id)
    prepared = [_prepare(item) for item in items]
    seen: set[str] = set()
    for p in prepared:
        if p.item.external_id in seen:
            raise ValidationError(f"external_id {p.item.external_id!r} appears twice in one batch")
        seen.add(p.item.external_id)
    now = timezone.now()
    results: list[IngestResult] = []
    changes: list[DocumentChange] = []
    new_chunk_docs: list[int] = []
    with transaction.atomic():
        tenant = Tenant.objects.get(pk=source.tenant_id)
        principal_cache: dict = {}
        existing = {
            d.external_id: d
            for d in Document.objects.select_for_update().filter(source=source, external_id__in=list(seen))
        }
        to_create, chunk_rows, acl_plan, acl_new = [], [], [], []
        for p in prepared:
            item = p.item
            acl_ids = _principal_ids(tenant, p.acl, principal_cache)
            author_id = _principal_ids(tenant, [p.author], principal_cache)[0] if p.author else None
            attrs = {
                "title": item.title.strip()[:500], "record_url": item.record_url or "", "format": item.format,
                "metadata": p.metadata, "visibility": item.visibility, "author_id": author_id,
                "expires_at": item.expires_at,
            }
            current = existing.get(item.external_id)
            if current is None:
                created = item.created_at or now
                doc = Document(tenant_id=source.tenant_id, source=source, external_id=item.external_id,
                               text=p.text, content_hash=p.content_hash, created_at=created,
                               updated_at=item.updated_at or created, observed_at=item.observed_at or now, **attrs)
                to_create.append((p, doc, acl_ids))
                continue
            content_changed = current.content_hash != p.content_hash
            attr_changed = [k for k, v in attrs.items() if getattr(current, k) != v]
            acl_changed = sorted(current.acl) != acl_ids
            if content_changed:
                Chunk.objects.filter(document=current).delete()
                current.text, current.content_hash = p.text, p.content_hash
                current.updated_at = item.updated_at or now
                current.observed_at = item.observed_at or now
                for k, v in attrs.items():
                    setattr(current, k, v)
                current.save(update_fields=["text", "content_hash", "updated_at", "observed_at", *attrs])
                chunk_rows += [_chunk_row(current.pk, i, span, p.text) for i, span in enumerate(p.chunks)]
                new_chunk_docs.append(current.pk)
                changes.append(DocumentChange(current.pk, current.tenant_id, "changed"))
                status = "updated"
            elif attr_changed or acl_changed:
                for k in attr_changed:
                    setattr(current, k, attrs[k])
                if attr_changed:
                    current.save(update_fields=attr_changed)
                access = acl_changed or "visibility" in attr_changed
                changes.append(DocumentChange(current.pk, current.tenant_id, "access_changed" if access else "changed"))
                status = "metadata_updated"
            else:
                status = "unchanged"
            if acl_changed:
                acl_plan.append((current.pk, acl_ids))
            results.append(IngestResult(current.pk, item.external_id, status,
                                        len(p.chunks) if content_changed else current.chunks.count()))
        if to_create:
            Document.objects.bulk_create([doc for _, doc, _ in to_create])
            for p, doc, acl_ids in to_create:
                chunk_rows += [_chunk_row(doc.pk, i, span, p.text) for i, span in enumerate(p.chunks)]
                acl_new.append((doc.pk, acl_ids))
                new_chunk_docs.append(doc.pk)
                changes.append(DocumentChange(doc.pk, doc.tenant_id, "created"))
                results.append(IngestResult(doc.pk, p.item.external_id, "created", len(p.chunks)))
        # Only documents that existed can hold stale ACL rows: new ones skip this query each.
        for document_id, acl_ids in acl_plan:
            DocumentAcl.objects.filter(document_id=document_id).exclude(principal_id__in=acl_ids).delete()
        DocumentAcl.objects.bulk_create(
            [DocumentAcl(document_id=d, principal_id=pid) for d, ids in acl_plan + acl_new for pid in ids],
            ignore_conflicts=True,
        )
        chunks_copy(chunk_rows)
        documents_changed_notify(changes)
        if new_chunk_docs:
            from .tasks import chunks_embed_task

            ids = list(new_chunk_docs)
            transaction.on_commit(lambda: chunks_embed_task.delay(ids))
    order = {item.external_id: i for i, item in enumerate(items)}
    return sorted(results, key=lambda r: order[r.external_id])


def _chunk_row(document_id: int, ordinal: int, span, text: str) -> tuple:
    """One row for `chunks_copy`, in its column order; the access columns come from the trigger."""
    return (document_id, ordinal, text[span.start:span.end], span.start, span.end, span.heading_path,
            span.token_count)


def document_ingest(*, authority: Authority, source: Source, item: DocumentInput) -> IngestResult:
    return documents_ingest(authority=authority, source=source, items=[item])[0]


def documents_import(*, authority: Authority, source: Source, items: Iterable[DocumentInput], batch_size: int = 200,
                     progress=None) -> dict[str, int]:
    """Bulk import: one short transaction per batch, never one for the whole import. A bad record fails
    its batch only with a clear error; earlier batches stay committed."""
    counts = {"created": 0, "updated": 0, "metadata_updated": 0, "unchanged": 0, "chunks": 0}
    batch: list[DocumentInput] = []

    def flush():
        for result in documents_ingest(authority=authority, source=source, items=batch):
            counts[result.status] += 1
            if result.status in ("created", "updated"):
                counts["chunks"] += result.chunk_count
        if progress is not None:
            progress(len(batch))
        batch.clear()

    for item in items:
        batch.append(item)
        if len(batch) >= batch_size:
            flush()
    if batch:
        flush()
    return counts


def document_acl_set(*, authority: Authority, document: Document, visibility: str, acl: Sequence[str]) -> Document:
    _require_writer(authority, document.tenant_id)
    if visibility not in Visibility.values:
        raise ValidationError("visibility must be 'workspace' or 'restricted'")
    specs = [principal_parse(entry) for entry in acl]
    with transaction.atomic():
        tenant = Tenant.objects.get(pk=document.tenant_id)
        ids = _principal_ids(tenant, specs, {})
        if document.visibility != visibility:
            document.visibility = visibility
            document.save(update_fields=["visibility"])
        DocumentAcl.objects.filter(document=document).exclude(principal_id__in=ids).delete()
        DocumentAcl.objects.bulk_create([DocumentAcl(document=document, principal_id=i) for i in ids],
                                        ignore_conflicts=True)
        documents_changed_notify([DocumentChange(document.pk, document.tenant_id, "access_changed")])
    document.refresh_from_db(fields=["acl", "visibility"])
    return document


def document_delete(*, authority: Authority, document: Document) -> None:
    """Delete a document and its chunks; listeners remove what was derived from it in the same
    transaction."""
    _require_writer(authority, document.tenant_id)
    with transaction.atomic():
        documents_changed_notify([DocumentChange(document.pk, document.tenant_id, "deleted")])
        Document.objects.filter(pk=document.pk).delete()
