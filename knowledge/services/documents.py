"""Writes of documents: ingestion (create / replace / unchanged), import in batches, resumption. Edits of one stored
document are in knowledge.services.edits; embedding happens after commit, in knowledge.embedding."""


from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import DatabaseError, transaction
from django.utils import timezone

from groundwork.authority import Authority
from groundwork.models import Tenant
from groundwork.services import principal_parse
from groundwork.task_queue import enqueue_on_commit

from ..access import access_q
from ..chunking import chunk_document
from ..hooks import DocumentChange, documents_changed_notify
from ..models import Chunk, Document, DocumentAcl, DocumentLink, Source, SourceAcl, Visibility
from ..parsing import ParseError
from ..record_links import LinkRef, links_extract, own_ticket_key
from ..sql import (
    chunks_copy,
    commit_async_local,
    documents_copy,
    source_defaults_share,
    wal_flush,
)
from ..sql.links import document_links_write
from ..structure import structure_dump, text_structure
from .grants import (
    _principal_ids,
    _require_writer,
    documents_granted_ids,
    source_upload_check,
)
from .records import DocumentInput, IngestResult, metadata_sanitise

logger = logging.getLogger(__name__)


@dataclass
class _Prepared:
    item: DocumentInput
    text: str
    chunks: list
    content_hash: str
    metadata: dict
    acl: list[tuple[str, str]]
    author: tuple[str, str] | None
    locations: list[str]
    links: list[LinkRef]
    # Each chunk's sentence, heading and list units, as the JSON stored in Chunk.structure: read when the chunks are
    # written (an unchanged document writes none), or ahead of time beside the writer (documents_import).
    structures: list[str] | None = None

    def chunk_structures(self) -> list[str]:
        if self.structures is None:
            self.structures = [json.dumps(structure_dump(text_structure(self.text[span.start:span.end])))
                               for span in self.chunks]
        return self.structures



def content_hash(title: str, text: str) -> str:
    return hashlib.sha256(f"{title}\x1f{text}".encode()).hexdigest()


def _prepare(item: DocumentInput) -> _Prepared:
    """Everything that can fail is checked here, before any write: a failed ingest changes nothing. The item's
    fields were checked when it was built (DocumentInput); what is left depends on its parsed text."""
    try:
        parsed = item.parsed
    except ParseError as exc:
        raise ValidationError(f"document {item.external_id!r}: {exc}") from exc
    if len(parsed.text.encode()) > settings.DOCUMENT_MAX_TEXT_BYTES:
        raise ValidationError(f"document {item.external_id!r}: its text is larger than the "
                              f"{settings.DOCUMENT_MAX_TEXT_BYTES:,}-byte limit (DOCUMENT_MAX_TEXT_BYTES)")
    title = item.title.strip()
    acl = [principal_parse(entry) for entry in (item.acl or ())]
    author = principal_parse(item.author) if item.author else None
    spans = chunk_document(parsed.text, parsed.headings, title=title[:200],
                           budget=settings.CHUNK_TOKEN_BUDGET, overlap=settings.CHUNK_TOKEN_OVERLAP)
    locations = [chunk_location(span.start, span.end, item.segments) for span in spans]
    # From the body as received: HTML parsing keeps the text of a link, not where it points.
    links = links_extract(item.body, own_ticket=own_ticket_key(title, item.external_id))
    metadata = metadata_sanitise(item.metadata, external_id=item.external_id)
    if item.segments:
        # Kept with the record so a citation of a sentence can name its own page ("page 4"), not its chunk's
        # "pages 3–4" (chunk_location over the sentence's span).
        metadata["segments"] = [[start, end, label] for start, end, label in item.segments]
    return _Prepared(item=item, text=parsed.text, chunks=spans, content_hash=content_hash(title, parsed.text),
                     metadata=metadata, acl=acl, author=author, locations=locations, links=links)


_NUMBERED = re.compile(r"^(\w+) (\d+)$")


def chunk_location(start: int, end: int, segments: Sequence[tuple[int, int, str]]) -> str:
    """Where a span sits in the original file, from the segments it overlaps: "page 3", "pages 3–4",
    "slides 2–3", "sheet Budget", "sheets Budget, Staff"."""
    labels = [label for s_start, s_end, label in segments if s_start < end and s_end > start]
    if len(labels) <= 1:
        return (labels[0] if labels else "")[:200]
    first, last = _NUMBERED.match(labels[0]), _NUMBERED.match(labels[-1])
    if first and last and first.group(1) == last.group(1):
        return f"{first.group(1)}s {first.group(2)}–{last.group(2)}"[:200]
    kind, _, _ = labels[0].partition(" ")
    if all(label.startswith(kind + " ") for label in labels):
        return (f"{kind}s " + ", ".join(label[len(kind) + 1:] for label in labels))[:200]
    return ", ".join(labels)[:200]




def _expiry_check(item: DocumentInput, created: datetime) -> None:
    """The table's check (expires_at > created_at) as a refusal naming the record, not an IntegrityError."""
    if item.expires_at is not None and item.expires_at <= created:
        raise ValidationError(f"record {item.external_id!r}: expires_at ({item.expires_at.isoformat()}) must "
                              f"be after the document's created_at ({created.isoformat()})")


def documents_ingest(*, authority: Authority, source: Source, items: Sequence[DocumentInput],
                     member_upload: bool = False) -> list[IngestResult]:
    """Create, replace or leave unchanged a batch of documents of one source, in one short transaction.

    Idempotent by content hash: the same title and text again writes no new rows. A changed text
    replaces the document's chunks atomically. Callers with many documents call this per batch
    (see documents_import) so no giant transaction is held.

    Items without visibility and ACL take the source's defaults (acl_inherited). Only admins write,
    except `member_upload=True` — the upload path — which lets a member or analyst add files to a source
    with members_may_upload: their documents always inherit the source's access, they may replace only an
    inheriting document they can read, and any other name becomes their own document (_member_upload_targets).
    """
    member = member_upload and not authority.is_admin
    if member:
        if any(not item.inherits_access for item in items):
            raise PermissionDenied("a member's upload takes the source's default access; it cannot set its own")
    else:
        _require_writer(authority, source.tenant_id)
    return _ingest_prepared(authority, source, _batch_prepare(items), member=member)


def _ingest_prepared(authority: Authority, source: Source, prepared: list[_Prepared], *,
                     member: bool, flushed: bool = True) -> list[IngestResult]:
    """The writes of `documents_ingest`, for a batch prepared already; its caller checked who may write.
    `flushed` False: the commit does not wait for the disk (documents_import, which flushes before it returns)."""
    with transaction.atomic():
        if not flushed:
            commit_async_local()
        batch = _batch_open(authority, source, prepared, member=member)
        for p in batch.prepared:
            current = batch.existing.get(p.item.external_id)
            if current is None:
                batch.to_create.append(p)
            else:
                _document_replace(batch, p, current)
        _documents_create(batch)
        _batch_close(batch)
    order = {p.item.external_id: i for i, p in enumerate(batch.prepared)}  # a member's upload may be renamed
    return sorted(batch.results, key=lambda r: order[r.external_id])


def _batch_prepare(items: Sequence[DocumentInput], *, beside_writer: bool = False) -> list[_Prepared]:
    """`beside_writer`: prepared in a thread beside one writing to the database (documents_import). That thread
    lets the GIL go after each document: a writer woken by its database reply otherwise waits out the whole switch
    interval (5 ms) for it, once per statement, which cost more than the overlap won."""
    prepared = []
    for item in items:
        prepared.append(_prepare(item))
        if beside_writer:
            prepared[-1].chunk_structures()  # off the writer's path: an import's documents are mostly new
            time.sleep(0)
    seen: set[str] = set()
    for p in prepared:
        if p.item.external_id in seen:
            raise ValidationError(f"external_id {p.item.external_id!r} appears twice in one batch")
        seen.add(p.item.external_id)
    return prepared


@dataclass
class _Batch:
    """One documents_ingest transaction: what it read under its locks, and the rows it gathers to write at once."""

    source: Source
    tenant: Tenant
    now: datetime
    prepared: list[_Prepared]
    existing: dict[str, Document]
    default_visibility: str
    default_acl_ids: list[int]
    # A document's `acl` holds its grants made in the app too (DocumentGrant): a re-ingest neither compares them
    # with the record's access nor removes them.
    granted: dict[int, set[int]]
    principals: dict = dataclasses.field(default_factory=dict)
    to_create: list[_Prepared] = dataclasses.field(default_factory=list)
    chunk_rows: list[tuple] = dataclasses.field(default_factory=list)
    link_rows: list[tuple] = dataclasses.field(default_factory=list)
    acl_plan: list[tuple[int, list[int]]] = dataclasses.field(default_factory=list)  # documents that existed
    acl_new: list[tuple[int, list[int]]] = dataclasses.field(default_factory=list)
    new_chunk_docs: list[int] = dataclasses.field(default_factory=list)
    changes: list[DocumentChange] = dataclasses.field(default_factory=list)
    results: list[IngestResult] = dataclasses.field(default_factory=list)


def _batch_open(authority: Authority, source: Source, prepared: list[_Prepared], *, member: bool) -> _Batch:
    """Lock what the batch writes: the source's defaults (FOR SHARE; see source_update), then its documents."""
    defaults = source_defaults_share(source.pk)
    if member:
        # Under the lock: an admin may have closed the source to members since the upload was recorded.
        source_upload_check(authority, source, members_may_upload=defaults[1] if defaults else None)
    if defaults is None:
        raise ValidationError("the source no longer exists")
    default_visibility = defaults[0]
    existing = {d.external_id: d for d in Document.objects.select_for_update().filter(
        source=source, external_id__in=[p.item.external_id for p in prepared])}
    if member:
        prepared, existing = _member_upload_targets(authority, source, prepared, existing)
    return _Batch(source=source, tenant=Tenant.objects.get(pk=source.tenant_id), now=timezone.now(),
                  prepared=prepared, existing=existing, default_visibility=default_visibility,
                  granted=documents_granted_ids([d.pk for d in existing.values()]),
                  default_acl_ids=sorted(SourceAcl.objects.filter(source_id=source.pk)
                                         .values_list("principal_id", flat=True)))


def _document_attrs(batch: _Batch, p: _Prepared) -> tuple[dict[str, Any], list[int]]:
    """The document's stored attributes and its ACL (principal ids) as this item gives them."""
    item = p.item
    inherits = item.inherits_access
    acl_ids = batch.default_acl_ids if inherits else _principal_ids(batch.tenant, p.acl, batch.principals)
    author_id = _principal_ids(batch.tenant, [p.author], batch.principals)[0] if p.author else None
    return {
        "title": item.title.strip()[:500], "record_url": item.record_url or "", "format": item.format,
        "metadata": p.metadata, "author_id": author_id, "expires_at": item.expires_at, "acl_inherited": inherits,
        "visibility": batch.default_visibility if inherits else (item.visibility or Visibility.WORKSPACE),
    }, acl_ids


def _document_replace(batch: _Batch, p: _Prepared, current: Document) -> None:
    """An existing document: new text replaces its chunks and links; new attributes or ACL only themselves."""
    item, now = p.item, batch.now
    attrs, acl_ids = _document_attrs(batch, p)
    _expiry_check(item, current.created_at)
    content_changed = current.content_hash != p.content_hash
    attr_changed = [k for k, v in attrs.items() if getattr(current, k) != v]
    acl_changed = sorted(set(current.acl) - batch.granted.get(current.pk, set())) != acl_ids
    if content_changed:
        Chunk.objects.filter(document=current).delete()
        DocumentLink.objects.filter(source=current).delete()
        current.text, current.content_hash = p.text, p.content_hash
        current.updated_at, current.observed_at = item.updated_at or now, item.observed_at or now
        for k, v in attrs.items():
            setattr(current, k, v)
        current.save(update_fields=["text", "content_hash", "updated_at", "observed_at", *attrs])
        _content_rows(batch, current.pk, p)
        batch.changes.append(DocumentChange(current.pk, current.tenant_id, "changed"))
        status = "updated"
    elif attr_changed or acl_changed:
        for k in attr_changed:
            setattr(current, k, attrs[k])
        if attr_changed:
            current.save(update_fields=attr_changed)
        access = acl_changed or "visibility" in attr_changed
        batch.changes.append(DocumentChange(current.pk, current.tenant_id, "access_changed" if access else "changed"))
        status = "metadata_updated"
    else:
        status = "unchanged"
    if acl_changed:
        batch.acl_plan.append((current.pk, acl_ids))
    batch.results.append(IngestResult(current.pk, item.external_id, status,
                                      len(p.chunks) if content_changed else current.chunks.count()))


def _content_rows(batch: _Batch, document_id: int, p: _Prepared) -> None:
    """The chunk and link rows of a document's new text, written with the batch's others."""
    structures = p.chunk_structures()
    batch.chunk_rows += [(document_id, i, p.text[span.start:span.end], span.start, span.end, span.heading_path,
                          span.token_count, p.locations[i], structures[i]) for i, span in enumerate(p.chunks)]
    batch.link_rows += [(document_id, ref.kind, ref.key, ref.anchor) for ref in p.links]
    batch.new_chunk_docs.append(document_id)


def _documents_create(batch: _Batch) -> None:
    """The batch's new documents, by COPY (knowledge.sql.documents_copy)."""
    created = []
    for p in batch.to_create:
        item = p.item
        attrs, acl_ids = _document_attrs(batch, p)
        when = item.created_at or batch.now
        _expiry_check(item, when)
        created.append((p, Document(
            tenant_id=batch.source.tenant_id, source=batch.source, external_id=item.external_id, text=p.text,
            content_hash=p.content_hash, created_at=when, updated_at=item.updated_at or when,
            observed_at=item.observed_at or batch.now, **attrs), acl_ids))
    if not created:
        return
    ingested = timezone.now()
    for _, doc, _ in created:
        doc.ingested_at = ingested  # auto_now: what save() would have set
    for (_, doc, _), document_id in zip(created, documents_copy([doc for _, doc, _ in created]), strict=True):
        doc.pk = document_id
        doc._state.adding = False
    for p, doc, acl_ids in created:
        _content_rows(batch, doc.pk, p)
        batch.acl_new.append((doc.pk, acl_ids))
        batch.changes.append(DocumentChange(doc.pk, doc.tenant_id, "created"))
        batch.results.append(IngestResult(doc.pk, p.item.external_id, "created", len(p.chunks)))


def _batch_close(batch: _Batch) -> None:
    """Write the gathered ACL, chunk and link rows; tell listeners; queue the embedding after commit."""
    # Only documents that existed can hold stale ACL rows: new ones skip this query each.
    for document_id, acl_ids in batch.acl_plan:
        DocumentAcl.objects.filter(document_id=document_id).exclude(principal_id__in=acl_ids).delete()
    DocumentAcl.objects.bulk_create(
        [DocumentAcl(document_id=d, principal_id=pid) for d, ids in batch.acl_plan + batch.acl_new for pid in ids],
        ignore_conflicts=True,
    )
    chunks_copy(batch.chunk_rows)
    document_links_write(batch.link_rows, documents=batch.new_chunk_docs, tenant_ids=[batch.source.tenant_id])
    documents_changed_notify(batch.changes)
    if batch.new_chunk_docs:
        enqueue_on_commit("knowledge.tasks.chunks_embed_task", list(batch.new_chunk_docs))


def member_upload_id(user_id: int | None, name: str) -> str:
    """The member's own name for an upload called `name` (see _member_upload_targets)."""
    return f"uploads/user-{user_id}/{name}"[:512]


def _member_upload_targets(authority: Authority, source: Source, prepared: list[_Prepared],
                           existing: dict[str, Document]) -> tuple[list[_Prepared], dict[str, Document]]:
    """Which document each file of a member's upload writes, with the rows it replaces (locked).

    A name whose document the member can read and that follows the source's access is replaced, as an admin's
    upload would; a readable one with access of its own is refused (only an admin replaces it). Every other name
    — a free one and one whose document the member cannot read alike — becomes the member's own document,
    `uploads/user-<id>/<name>`: the upload's outcome must not tell whether a document the member cannot read
    holds that name (an existence oracle for restricted documents)."""
    readable = set(Document.objects.filter(access_q(authority), pk__in=[d.pk for d in existing.values()])
                   .values_list("pk", flat=True)) if existing else set()
    targets: list[_Prepared] = []
    for p in prepared:
        doc = existing.get(p.item.external_id)
        if doc is not None and doc.pk in readable:
            if not doc.acl_inherited:
                raise PermissionDenied(f"{doc.external_id!r} exists already and only an admin may replace it")
            targets.append(p)
            continue
        own = member_upload_id(authority.user_id, p.item.external_id)
        targets.append(dataclasses.replace(p, item=dataclasses.replace(p.item, external_id=own)))
    ids = [p.item.external_id for p in targets]
    if len(set(ids)) != len(ids):
        raise ValidationError("two files of this upload would write the same document; rename one")
    kept = {external_id: doc for external_id, doc in existing.items() if external_id in ids}
    own_ids = [i for i in ids if i not in kept]
    own = {d.external_id: d for d in Document.objects.select_for_update().filter(source=source,
                                                                                 external_id__in=own_ids)}
    if own:
        # The member's own names: only their uploads (or an admin) wrote there.
        readable = set(Document.objects.filter(access_q(authority), pk__in=[d.pk for d in own.values()])
                       .values_list("pk", flat=True))
        for doc in own.values():
            if not doc.acl_inherited or doc.pk not in readable:
                raise PermissionDenied(f"{doc.external_id!r} exists already and only an admin may replace it")
    return targets, {**kept, **own}


def documents_resume(*, document_ids: Sequence[int]) -> None:
    """Queue again what follows a document write, for documents an earlier run of a re-delivered task wrote:
    a worker killed between that commit and its after-commit queueing would otherwise leave them unembedded
    and unextracted for good. The tasks skip what is done, so a needless resume costs two no-op tasks."""
    rows = list(Document.objects.filter(pk__in=list(document_ids)).values_list("pk", "tenant_id"))
    if not rows:
        return
    with transaction.atomic():
        documents_changed_notify([DocumentChange(pk, tenant_id, "resumed") for pk, tenant_id in rows])
        unembedded = sorted(set(Chunk.objects.filter(document_id__in=[pk for pk, _ in rows], embedding__isnull=True)
                                .values_list("document_id", flat=True)))
        if unembedded:
            enqueue_on_commit("knowledge.tasks.chunks_embed_task", unembedded)


def document_ingest(*, authority: Authority, source: Source, item: DocumentInput) -> IngestResult:
    return documents_ingest(authority=authority, source=source, items=[item])[0]


def documents_import(*, authority: Authority, source: Source, items: Iterable[DocumentInput], batch_size: int = 200,
                     progress=None) -> dict[str, int]:
    """Bulk import: one short transaction per batch, never one for the whole import. A bad record fails
    its batch only with a clear error; earlier batches stay committed.

    While one batch is written, the next is prepared (parsed, chunked, its structure and links read) in a
    second thread: preparing is pure Python and writing is mostly waiting on the database, so on two cores the
    two overlap instead of taking turns. Only the writing thread touches the database."""
    _require_writer(authority, source.tenant_id)
    counts = {"created": 0, "updated": 0, "metadata_updated": 0, "unchanged": 0, "chunks": 0}
    unflushed = _UnflushedCommits()
    # Every batch but the last commits without waiting for the disk; the last one's commit flushes them all. Inside a
    # caller's transaction the batches are savepoints, and its commit is the caller's to make.
    inside = transaction.get_connection().in_atomic_block

    def write(batch: list[DocumentInput], prepared: Future, *, last: bool) -> None:
        flushed = last or inside
        for result in _ingest_prepared(authority, source, prepared.result(), member=False, flushed=flushed):
            counts[result.status] += 1
            if result.status in ("created", "updated"):
                counts["chunks"] += result.chunk_count
        unflushed.pending = not flushed
        if progress is not None:
            progress(len(batch))

    with unflushed, ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-prepare") as preparer:
        pending: tuple[list[DocumentInput], Future] | None = None
        for batch in _batches(items, batch_size):
            following = (batch, preparer.submit(_batch_prepare, batch, beside_writer=True))
            if pending is not None:
                write(*pending, last=False)
            pending = following
        if pending is not None:
            write(*pending, last=True)
    if counts["created"] or counts["updated"]:
        # A bulk import moves the tenant's word statistics at once: count them now rather than at the first
        # question that notices (knowledge.retrieval.statistics), which would be answered on the old ones.
        enqueue_on_commit("knowledge.tasks.corpus_statistics_task", authority.tenant_id)
    return counts


class _UnflushedCommits:
    """Whether the last batch an import committed did not wait for the disk. Should the import then fail (a batch,
    or reading the items), one flushing transaction makes those batches durable before the error goes back."""

    pending = False

    def __enter__(self) -> _UnflushedCommits:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if kind is not None and self.pending:
            try:
                wal_flush()
            except DatabaseError:
                logger.exception("could not flush the import's committed batches to disk")


def _batches(items: Iterable[DocumentInput], size: int) -> Iterator[list[DocumentInput]]:
    batch: list[DocumentInput] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
