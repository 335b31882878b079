"""Writes and reads of the upload flow: a batch of files (zips expanded) becomes documents of one source.

`upload_batch_create` checks every limit *before* anything is parsed — file size, file count, batch bytes,
and for zips member count, uncompressed size and compression ratio (members are read with a byte cap; a
declared size is never trusted alone) — and records each file as an UploadItem: pending with its bytes, or
refused with the reason. Nothing is skipped silently. After commit `upload_batch_process_task` parses and
ingests the pending items one by one, each in its own short transaction, with the uploader's authority — off the
request: on a Celery worker, or without a broker on a background thread of the web process. Each file is read in a
child process under its parse budget (knowledge.isolation): one that runs past it is refused alone.
"""

from __future__ import annotations

import io
import logging
import stat
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from groundwork.authority import Authority
from groundwork.models import Membership, Tenant
from groundwork.selectors import AuthorityDenied, authority_for_service, authority_for_user
from groundwork.task_queue import enqueue_on_commit

from .files import FileRefused, file_kind, file_parse_isolated, file_size_check
from .models import Source, UploadBatch, UploadItem
from .services import DocumentInput, documents_ingest, documents_resume, source_upload_check

logger = logging.getLogger(__name__)

# Below this many uncompressed bytes a high ratio is harmless (a page of repeated lines compresses well).
_RATIO_FLOOR_BYTES = 256 * 1024


@dataclass
class _Planned:
    name: str
    size: int
    content: bytes | None = None
    reason: str = ""


class ZipRefused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _member_reason(info: zipfile.ZipInfo) -> str:
    """Why one zip member cannot become an item, or "" when it can."""
    name = info.filename
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "refused: an absolute path inside the zip"
    if ".." in parts:
        return "refused: a path that climbs out of the folder (\"..\")"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "refused: a symbolic link"
    if info.flag_bits & 0x1:
        return "refused: an encrypted zip member"
    if name.lower().endswith(".zip"):
        return "refused: a zip inside a zip"
    if file_kind(name) is None:
        return "unsupported file type"
    try:
        file_size_check(info.file_size)
    except FileRefused as refused:
        return refused.reason
    return ""


def zip_expand(name: str, data: bytes) -> list[_Planned]:
    """One planned item per file member of a zip. Raises ZipRefused when the zip as a whole is refused
    (corrupt, too many members, a zip bomb)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise ZipRefused("corrupt zip file") from exc
    with archive:
        members = [info for info in archive.infolist() if not info.is_dir()]
        if not members:
            raise ZipRefused("the zip holds no files")
        if len(members) > settings.UPLOAD_ZIP_MAX_MEMBERS:
            raise ZipRefused(f"the zip holds {len(members):,} files; the limit is {settings.UPLOAD_ZIP_MAX_MEMBERS:,}")
        total_limit = settings.UPLOAD_ZIP_MAX_UNCOMPRESSED_BYTES
        declared = sum(info.file_size for info in members)
        if declared > total_limit:
            raise ZipRefused(f"zip bomb: it expands to {declared:,} bytes; the limit is {total_limit:,}")
        planned, expanded = [], 0
        for info in members:
            reason = _member_reason(info)
            if reason:
                planned.append(_Planned(name=info.filename, size=info.file_size, reason=reason))
                continue
            if (info.file_size > _RATIO_FLOOR_BYTES
                    and info.file_size > settings.UPLOAD_ZIP_MAX_RATIO * max(info.compress_size, 1)):
                raise ZipRefused(f"zip bomb: {info.filename!r} compresses more than "
                                 f"{settings.UPLOAD_ZIP_MAX_RATIO}:1")
            # Read at most one byte past the declared size: a member that inflates beyond what its header
            # says is a bomb, whatever the header claims.
            cap = min(info.file_size, settings.UPLOAD_MAX_FILE_BYTES) + 1
            try:
                with archive.open(info) as handle:
                    content = handle.read(cap)
            except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
                planned.append(_Planned(name=info.filename, size=info.file_size,
                                        reason=f"corrupt zip member ({type(exc).__name__})"))
                continue
            if len(content) > info.file_size:
                raise ZipRefused(f"zip bomb: {info.filename!r} expands beyond its declared size")
            expanded += len(content)
            if expanded > total_limit:
                raise ZipRefused(f"zip bomb: it expands past {total_limit:,} bytes")
            planned.append(_Planned(name=info.filename, size=len(content), content=content))
    return planned


def uploaded_files_read(files) -> list[tuple[str, bytes, int]]:
    """(name, bytes, size) of Django UploadedFiles, reading no more than one byte past the file-size limit of
    any of them: an oversized file is refused by its size without being held in memory."""
    cap = settings.UPLOAD_MAX_FILE_BYTES + 1
    return [(f.name, f.read(cap), f.size) for f in files]


def _plan(files: Sequence[tuple]) -> list[_Planned]:
    planned: list[_Planned] = []
    for entry in files:
        raw_name, data = entry[0], entry[1]
        size = entry[2] if len(entry) > 2 else len(data)
        name = (raw_name or "").replace("\\", "/").rsplit("/", 1)[-1].strip() or "unnamed"
        size = max(size, len(data))
        try:
            file_size_check(size)
        except FileRefused as refused:
            planned.append(_Planned(name=name, size=size, reason=refused.reason))
            continue
        if name.lower().endswith(".zip"):
            try:
                planned += zip_expand(name, data)
            except ZipRefused as refused:
                planned.append(_Planned(name=name, size=len(data), reason=refused.reason))
        elif file_kind(name) is None:
            planned.append(_Planned(name=name, size=len(data), reason="unsupported file type"))
        else:
            planned.append(_Planned(name=name, size=len(data), content=data))
    accepted, total = 0, 0
    for item in planned:
        if item.content is None:
            continue
        if accepted >= settings.UPLOAD_MAX_FILES:
            item.content, item.reason = None, f"too many files in one upload (the limit is {settings.UPLOAD_MAX_FILES})"
            continue
        if total + item.size > settings.UPLOAD_MAX_BATCH_BYTES:
            item.content, item.reason = None, (
                f"the upload is over its {settings.UPLOAD_MAX_BATCH_BYTES:,}-byte limit")
            continue
        accepted += 1
        total += item.size
    return planned


def upload_batch_create(*, authority: Authority, source: Source, files: Sequence[tuple]) -> UploadBatch:
    """Record an upload and queue its processing after commit. `files`: (name, bytes) or (name, bytes, size)
    — see uploaded_files_read. Raises PermissionDenied when the caller may not upload into the source,
    ValidationError when no file was given."""
    with transaction.atomic():
        batch = upload_batch_record(authority=authority, source=source, files=files)
        enqueue_on_commit("knowledge.tasks.upload_batch_process_task", batch.pk, off_request=True)
    return batch


def upload_batch_record(*, authority: Authority, source: Source, files: Sequence[tuple]) -> UploadBatch:
    """Record an upload without queueing it (upload_batch_create queues it; the worker kill probe sends it to
    its own workers). Same checks and errors as upload_batch_create."""
    source_upload_check(authority, source)
    if not files:
        raise ValidationError("Choose at least one file.")
    planned = _plan(files)
    with transaction.atomic():
        batch = UploadBatch.objects.create(
            tenant_id=source.tenant_id, source=source, created_by_id=authority.user_id,
            service_name=(authority.service_name or "") if authority.user_id is None else "")
        UploadItem.objects.bulk_create([
            UploadItem(batch=batch, position=i, name=p.name[:512], size=p.size, content=p.content,
                       status=UploadItem.Status.PENDING if p.content is not None else UploadItem.Status.REFUSED,
                       reason=p.reason[:500])
            for i, p in enumerate(planned)
        ])
    return batch


def _uploader_authority(batch: UploadBatch) -> Authority:
    tenant = Tenant.objects.get(pk=batch.tenant_id)
    if batch.created_by_id is not None:
        return authority_for_user(user=batch.created_by, tenant_slug=tenant.slug)
    if batch.service_name:
        # Only an admin service key can start a batch (member uploads need a signed-in user).
        return authority_for_service(tenant=tenant, service_name=batch.service_name, role="admin")
    raise AuthorityDenied("the uploader no longer exists")


def _file_author(tenant_id: int, author: str | None) -> str | None:
    """A file's author as a principal, only where it names someone of the tenant. An e-mail's sender is a
    header anyone can write: an outside address would otherwise become a principal of the tenant, offered as a
    reader on every sharing panel. A member's address is that member (their user principal); any other stays
    in the document's metadata ("from") and names no principal."""
    if not author or not author.startswith("email:"):
        return author
    address = author.partition(":")[2].strip()
    user_id = (Membership.objects.filter(tenant_id=tenant_id, user__email__iexact=address, user__is_active=True)
               .order_by("user_id").values_list("user_id", flat=True).first())
    return f"user:{user_id}" if user_id is not None else None


def _document_inputs(parsed: list[DocumentInput], *, own_access: bool, tenant_id: int) -> list[DocumentInput]:
    inputs = []
    for doc in parsed:
        changes: dict = {}
        author = _file_author(tenant_id, doc.author)
        if author != doc.author:
            changes["author"] = author
        if not own_access:  # only an admin's JSON records may carry their own access; the rest inherit the source's
            changes.update(visibility=None, acl=None)
        inputs.append(doc.overridden(**changes) if changes else doc)
    return inputs


_OUTCOME = {"created": "added", "updated": "updated", "metadata_updated": "updated", "unchanged": "unchanged"}


def _item_finish(item_id: int, **fields) -> None:
    UploadItem.objects.filter(pk=item_id).update(content=None, **fields)


def upload_item_process(*, authority: Authority, source: Source, item_id: int) -> str:
    """Parse and ingest one item; its outcome and reason are stored on it. Returns the new status."""
    claimed = UploadItem.objects.filter(
        pk=item_id, status__in=[UploadItem.Status.PENDING, UploadItem.Status.PROCESSING]
    ).update(status=UploadItem.Status.PROCESSING)
    if not claimed:
        return "skipped"
    item = UploadItem.objects.get(pk=item_id)
    if item.content is None:
        _item_finish(item_id, status="failed", reason="the file's content was lost; upload it again")
        return "failed"
    try:
        parsed = file_parse_isolated(item.name, bytes(item.content))
        inputs = _document_inputs(parsed, own_access=authority.is_admin, tenant_id=source.tenant_id)
        with transaction.atomic():
            # A re-delivered task may run this item at the same time as the first delivery: the row lock makes
            # the second wait, then find the item finished and leave it (rather than fail on the new document).
            if not UploadItem.objects.select_for_update().filter(
                    pk=item_id, status=UploadItem.Status.PROCESSING).exists():
                return "skipped"
            results = documents_ingest(authority=authority, source=source, items=inputs, member_upload=True)
            statuses = [_OUTCOME[r.status] for r in results]
            status = next((s for s in ("added", "updated") if s in statuses), "unchanged")
            title = parsed[0].title if len(parsed) == 1 else f"{parsed[0].title} (+{len(parsed) - 1} more)"
            _item_finish(item_id, status=status, document_id=results[0].document_id, title=title[:500], reason="")
        return status
    except FileRefused as refused:
        _item_finish(item_id, status="refused", reason=refused.reason[:500])
        return "refused"
    except (ValidationError, PermissionDenied) as exc:
        message = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        _item_finish(item_id, status="refused", reason=(message or "refused")[:500])
        return "refused"
    except Exception as exc:  # one broken file must not stop the batch; the reason says what happened
        logger.exception("upload item %s failed", item_id)
        _item_finish(item_id, status="failed", reason=f"could not process the file ({type(exc).__name__})")
        return "failed"


def upload_batch_process(*, batch_id: int) -> dict[str, int]:
    """Process a batch's pending items one by one. Safe to run twice: finished items are left alone."""
    batch = UploadBatch.objects.select_related("created_by", "source").filter(pk=batch_id).first()
    if batch is None:
        logger.info("upload batch %s is gone", batch_id)
        return {}
    if batch.status == UploadBatch.Status.FINISHED:
        # Every item's follow-up work was queued before the batch was marked finished.
        return upload_counts(batch)
    if batch.status == UploadBatch.Status.PROCESSING:
        # A re-delivery: the run before died, perhaps between an item's commit and queueing its embedding and
        # extraction. Queue those again for the items it finished (the tasks skip what is done).
        finished = (batch.items.exclude(status__in=["pending", "processing"]).filter(document_id__isnull=False)
                    .values_list("document_id", flat=True))
        documents_resume(document_ids=list(finished))
    UploadBatch.objects.filter(pk=batch_id, status=UploadBatch.Status.PENDING).update(
        status=UploadBatch.Status.PROCESSING)
    try:
        authority = _uploader_authority(batch)
    except AuthorityDenied:
        authority = None
    pending = list(batch.items.filter(status__in=["pending", "processing"]).order_by("position")
                   .values_list("pk", flat=True))
    for item_id in pending:
        if authority is None:
            _item_finish(item_id, status="failed", reason="the uploader no longer has access to this tenant")
            continue
        upload_item_process(authority=authority, source=batch.source, item_id=item_id)
    UploadBatch.objects.filter(pk=batch_id).exclude(status=UploadBatch.Status.FINISHED).update(
        status=UploadBatch.Status.FINISHED, finished_at=timezone.now())
    return upload_counts(batch)


# --- reads ------------------------------------------------------------------------------------------------------

def upload_counts(batch: UploadBatch) -> dict[str, int]:
    counts = {status: 0 for status in UploadItem.Status.values}
    for row in batch.items.values("status").annotate(n=Count("pk")):
        counts[row["status"]] = row["n"]
    return counts


def upload_batch_get(authority: Authority, batch_id: int) -> UploadBatch | None:
    """A batch the caller may see: their own, or any of their tenant's for its admins. Missing and
    forbidden look the same."""
    qs = UploadBatch.objects.select_related("source").filter(pk=batch_id, tenant_id=authority.tenant_id)
    if not authority.is_admin:
        if authority.user_id is None:
            return None
        qs = qs.filter(created_by_id=authority.user_id)
    return qs.first()


def upload_items(batch: UploadBatch) -> QuerySet[UploadItem]:
    return batch.items.defer("content").order_by("position")


def sources_uploadable(authority: Authority) -> QuerySet[Source]:
    """Sources of the caller's own tenant they may upload into."""
    qs = Source.objects.filter(tenant_id=authority.tenant_id)
    if not authority.is_admin:
        if authority.kind != "user":
            return qs.none()
        qs = qs.filter(members_may_upload=True)
    return qs.order_by("name")


def source_for_upload(authority: Authority, source_id: int) -> Source | None:
    """The caller's own tenant's source (None for another tenant's or a missing one). Whether they may
    upload into it is source_upload_check's answer (a 403 with a reason, not a 404)."""
    return Source.objects.filter(pk=source_id, tenant_id=authority.tenant_id).first()


def sources_with_counts(authority: Authority) -> QuerySet[Source]:
    """The tenant's own sources with document counts, for the sources page (admins)."""
    return (Source.objects.filter(tenant_id=authority.tenant_id)
            .annotate(document_count=Count("documents", distinct=True),
                      inheriting_count=Count("documents", filter=Q(documents__acl_inherited=True), distinct=True))
            .prefetch_related("default_acl")
            .order_by("name"))
