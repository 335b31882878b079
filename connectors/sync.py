"""Running a sync run: content (records → documents, unchanged ones skipped by hash, deletions) or permissions
(access per scope → document ACLs, no content read). Every write goes through knowledge's services:
`SourceRecord.document_input` and `documents_ingest` for records, `documents_access_set` for access,
`document_delete` for deletions — so chunks, access classes, caches, hints and findings follow.

Failure model: one bad item is recorded on the run (bounded list) and the run goes on; a batch whose ingest fails
is retried item by item so only the bad item is lost. A source that cannot be read at all (ConnectorError) fails
the run before any deletion: existing documents are never taken away because a listing was incomplete.
Scopes the connector listed only in part (`partial_scopes()`) keep their unseen documents, and an incremental
listing (EVERY_SCOPE) deletes nothing.

Resuming: after each committed batch (or as many unchanged items) the connector's checkpoint is stored on the
connector, so a run that is killed or fails resumes where the last batch ended (connectors.sources.base). A resumed
run saw only the rest of the listing: its deletions come from the connector's slim listing of ids, or wait for the
next complete run when the kind has none.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import DataError
from django.utils import timezone

from groundwork.selectors import authority_for_service
from knowledge.models import Document
from knowledge.services import (
    DocumentInput,
    RecordInvalid,
    document_delete,
    documents_access_set,
    documents_ingest,
)

from .crypto import CredentialsUnreadable, credentials_decrypt
from .models import Connector, SyncRun
from .services import import_root
from .sources import ConnectorError, RecordError, connector_for
from .sources.base import EVERY_SCOPE, SCOPE_KEY
from .sources.checkpoint import CheckpointInvalid
from .sql import source_lock_release, source_lock_try

logger = logging.getLogger(__name__)

HASH_KEY = "connector_hash"
SERVICE_NAME = "connector-sync"
_STATUS = {"created": "added", "updated": "updated", "metadata_updated": "updated", "unchanged": "unchanged"}
# What one record can cause: refused input, or a value the database refuses (DataError: rolled back with the
# ingest's own transaction, so the connection stays usable).
_ITEM_ERRORS = (ValidationError, PermissionDenied, RecordInvalid, DataError)


@dataclass
class Tally:
    run_id: int
    counts: dict = field(default_factory=lambda: dict.fromkeys(
        ("seen", "added", "updated", "deleted", "unchanged", "failed"), 0))
    errors: list = field(default_factory=list)
    impl: object = None  # the connector, once built: its rate-limit waits go on the run

    def add(self, key: str, n: int = 1) -> None:
        self.counts[key] += n

    def fail(self, item: str, reason: str) -> None:
        self.counts["failed"] += 1
        if len(self.errors) < settings.CONNECTORS_MAX_RUN_ERRORS:
            self.errors.append({"item": str(item)[:300], "reason": str(reason)[:500]})

    def flush(self) -> None:
        """Progress while running: each flush commits on its own (outside any ingest transaction)."""
        SyncRun.objects.filter(pk=self.run_id).update(errors=self.errors, waited_s=self.waited_s, **self.counts)

    @property
    def waited_s(self) -> float:
        return round(float(getattr(self.impl, "waited_s", 0.0)), 3)


def _phase(run_id: int, phase: str, **fields) -> None:
    """Where the run is, for its page while it lasts (committed on its own, like the counts)."""
    SyncRun.objects.filter(pk=run_id).update(phase=phase, **fields)


def record_hash(record: dict) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()


def _messages(exc: Exception) -> str:
    return "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)


def _ingest(authority, source, batch: list[DocumentInput], tally: Tally) -> None:
    """Ingest a batch; a refused item is recorded on the run with its reason and the others go on, whether it
    came in a batch of many or alone (the last batch of a run, a batch size of 1)."""
    if not batch:
        return
    try:
        results = documents_ingest(authority=authority, source=source, items=batch)
    except _ITEM_ERRORS as exc:
        if len(batch) == 1:
            tally.fail(batch[0].external_id, _messages(exc))
            return
        # One bad item in the batch: the batch rolled back; ingest item by item so only that one is lost.
        for item in batch:
            _ingest(authority, source, [item], tally)
        return
    for result in results:
        tally.add(_STATUS[result.status])


def _checkpoint_save(connector: Connector, impl) -> None:
    """What is behind the listing's position is committed: a successor run resumes there."""
    Connector.objects.filter(pk=connector.pk).update(sync_checkpoint=impl.checkpoint().as_json())


def _resume(run: SyncRun, connector: Connector, impl) -> None:
    try:
        impl.resume(connector.sync_checkpoint)
    except CheckpointInvalid as exc:  # another version or settings: read everything again, lose nothing
        logger.info("sync run %s: checkpoint not used (%s)", run.pk, exc)


def content_sync(run: SyncRun, connector: Connector, impl, authority, tally: Tally) -> None:
    source = connector.source
    stored = dict(Document.objects.filter(source=source, metadata__has_key=HASH_KEY)
                  .values_list("external_id", f"metadata__{HASH_KEY}"))
    seen: set[str] = set()
    protected_scopes: set[str] = set()
    batch: list[DocumentInput] = []
    since_checkpoint = 0
    _resume(run, connector, impl)
    _phase(run.pk, SyncRun.Phase.LISTING)
    for item in impl.listing():
        tally.add("seen")
        since_checkpoint += 1
        if isinstance(item, RecordError):
            tally.fail(item.item, item.reason)
            seen.update([item.external_id] if item.external_id else [])
            protected_scopes.update([item.scope] if item.scope else [])
        elif item.external_id in seen:
            tally.fail(item.external_id, "the source holds this id twice; the first one was kept")
        else:
            seen.add(item.external_id)
            _record_add(item, stored, batch, tally)
        if len(batch) >= settings.CONNECTORS_BATCH_SIZE or since_checkpoint >= settings.CONNECTORS_BATCH_SIZE:
            _ingest(authority, source, batch, tally)
            batch, since_checkpoint = [], 0
            _checkpoint_save(connector, impl)
            tally.flush()
    _ingest(authority, source, batch, tally)
    tally.flush()
    if impl.resumed_after:
        SyncRun.objects.filter(pk=run.pk).update(resumed_after=impl.resumed_after)
    partial = impl.partial_scopes()
    if partial is not EVERY_SCOPE and impl.resumed_after:
        partial = _slim_apply(impl, seen, protected_scopes, partial)
    if partial is not EVERY_SCOPE:  # an incremental listing names only what changed: it proves no deletion
        _phase(run.pk, SyncRun.Phase.DELETING)
        _deletions_apply(source, authority, seen, protected_scopes | partial, tally)
    state = impl.state_after()
    # The listing got through: its checkpoint is spent. The state is kept only when the run got this far: a
    # failed run reads the same window again.
    Connector.objects.filter(pk=connector.pk).update(
        sync_checkpoint={}, **({"sync_state": state} if state is not None else {}))


def _record_add(item, stored: dict, batch: list[DocumentInput], tally: Tally) -> None:
    digest = record_hash(item.as_record())
    if stored.get(item.external_id) == digest:
        tally.add("unchanged")  # skipped by hash: nothing is parsed, chunked or written
        return
    try:
        batch.append(item.document_input(metadata={HASH_KEY: digest}))
    except RecordInvalid as exc:
        tally.fail(item.external_id, exc.problem)


def _slim_apply(impl, seen: set[str], protected_scopes: set[str], partial):
    """A resumed run's listing skipped what earlier runs committed: what the source still holds comes from the
    slim listing (into `seen` and `protected_scopes`). Returns the scopes listed in part — EVERY_SCOPE, deleting
    nothing, for a kind without a slim listing: its next complete run deletes."""
    slim = impl.slim_listing()
    if slim is None or slim.partial is EVERY_SCOPE:
        return EVERY_SCOPE
    seen.update(slim.ids)
    protected_scopes.update(slim.scopes)
    return partial | slim.partial


def _deletions_apply(source, authority, seen: set[str], protected_scopes: set[str], tally: Tally) -> None:
    """Documents this connector wrote that the complete listing no longer holds were deleted at the source."""
    gone = (Document.objects.filter(source=source, metadata__has_key=HASH_KEY).exclude(external_id__in=seen)
            .only("pk", "tenant_id", "metadata"))
    for document in gone.iterator(chunk_size=500):
        if document.metadata.get(SCOPE_KEY) in protected_scopes:
            continue  # its scope could not be read completely this time: keep it
        document_delete(authority=authority, document=document)
        tally.add("deleted")
    tally.flush()


def permissions_sync(run: SyncRun, connector: Connector, impl, authority, tally: Tally) -> None:
    """Re-read who may read each scope and re-share the stored documents accordingly; no content is read."""
    source = connector.source
    _phase(run.pk, SyncRun.Phase.ACCESS)
    snapshot = impl.permissions()
    rows = Document.objects.filter(source=source, metadata__has_key=SCOPE_KEY).order_by("pk").values_list(
        "pk", "metadata")
    _phase(run.pk, SyncRun.Phase.APPLYING, total=rows.count())
    changes = []
    for pk, metadata in rows.iterator(chunk_size=2000):
        tally.add("seen")
        access = snapshot.access_for(metadata)
        if access is None:
            tally.add("unchanged")
            continue
        changes.append((pk, access.visibility, list(access.acl) if access.acl is not None else None))
    for start in range(0, len(changes), 500):
        _access_apply(source, authority, changes[start:start + 500], tally)
        tally.flush()


def _access_apply(source, authority, changes: list, tally: Tally) -> None:
    try:
        changed = documents_access_set(authority=authority, source=source, changes=changes)
    except _ITEM_ERRORS as exc:
        if len(changes) == 1:
            tally.fail(f"document {changes[0][0]}", _messages(exc))
            return
        for change in changes:
            _access_apply(source, authority, [change], tally)
        return
    tally.add("updated", len(changed))
    tally.add("unchanged", len(changes) - len(changed))


def sync_run_execute(*, run_id: int) -> str:
    """Run a queued run (the task calls this). Safe to deliver twice: a finished run is left alone, and a run
    another worker is executing (the advisory lock) is skipped."""
    run = SyncRun.objects.select_related("connector__source", "tenant").filter(pk=run_id).first()
    if run is None or run.status not in SyncRun.ACTIVE:
        return "skipped"
    connector = run.connector
    if not source_lock_try(connector.source_id):
        return "busy"
    try:
        return _execute_locked(run, connector)
    finally:
        source_lock_release(connector.source_id)


def _execute_locked(run: SyncRun, connector: Connector) -> str:
    # A re-delivered run starts its counts over; ingestion by hash makes the repeat cheap and idempotent.
    SyncRun.objects.filter(pk=run.pk).update(status=SyncRun.Status.RUNNING, started_at=timezone.now(), errors=[],
                                             seen=0, added=0, updated=0, deleted=0, unchanged=0, failed=0,
                                             resumed_after=0, phase=SyncRun.Phase.WAITING, total=None)
    tally = Tally(run.pk)
    status, message = SyncRun.Status.SUCCEEDED, ""
    try:
        authority = authority_for_service(tenant=run.tenant, service_name=SERVICE_NAME, role="admin")
        impl = connector_for(connector.kind, root=import_root(run.tenant.slug), settings=connector.settings,
                             credentials=credentials_decrypt(connector.credentials_encrypted),
                             state=connector.sync_state)
        tally.impl = impl
        sync = content_sync if run.mode == SyncRun.Mode.CONTENT else permissions_sync
        sync(run, connector, impl, authority, tally)
    except (ConnectorError, CredentialsUnreadable) as exc:
        status, message = SyncRun.Status.FAILED, str(exc)
    except Exception as exc:  # never leave a run "running" forever; the log has the traceback
        logger.exception("sync run %s failed", run.pk)
        status, message = SyncRun.Status.FAILED, f"the sync stopped on an internal error ({type(exc).__name__})"
    SyncRun.objects.filter(pk=run.pk).update(status=status, message=message[:2000], finished_at=timezone.now(),
                                             **({"phase": SyncRun.Phase.DONE} if status == SyncRun.Status.SUCCEEDED
                                                else {}),
                                             errors=tally.errors, waited_s=tally.waited_s, **tally.counts)
    return status

