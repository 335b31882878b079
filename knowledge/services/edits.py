"""Edits of one stored document, by an admin or an admin service: its access, its fields, its deletion. A change of
content goes back through ingestion (knowledge.services.documents) under the document's external id."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from groundwork.authority import Authority
from groundwork.models import Tenant
from groundwork.services import principal_parse

from ..hooks import DocumentChange, documents_changed_notify
from ..models import Document, Visibility
from ..sql import source_defaults_share
from .documents import document_ingest
from .grants import _documents_access_apply, _principal_ids, _require_writer
from .records import DocumentInput, IngestResult


def document_acl_set(*, authority: Authority, document: Document, visibility: str, acl: Sequence[str]) -> Document:
    _require_writer(authority, document.tenant_id)
    if visibility not in Visibility.values:
        raise ValidationError("visibility must be 'workspace' or 'restricted'")
    specs = [principal_parse(entry) for entry in acl]
    with transaction.atomic():
        tenant = Tenant.objects.get(pk=document.tenant_id)
        ids = _principal_ids(tenant, specs, {})
        _documents_access_apply(tenant_id=document.tenant_id, document_ids=[document.pk], visibility=visibility,
                                principal_ids=ids, inherited=False)
    document.refresh_from_db(fields=["acl", "visibility", "acl_inherited"])
    return document


class _Keep:
    """The value of a `document_update` argument that was not given: the document keeps what it has."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()


def _document_record(document: Document) -> dict[str, Any]:
    """A stored document as a record for DocumentInput.from_record: what an update starts from."""
    return {
        "external_id": document.external_id, "title": document.title, "text": document.text,
        "format": document.format, "record_url": document.record_url,
        "author": f"{document.author.kind}:{document.author.key}" if document.author_id else None,
        "created_at": document.created_at, "observed_at": document.observed_at,
        "expires_at": document.expires_at, "metadata": document.metadata,
    }


def _readers_check(visibility: str, acl: Sequence[str]) -> None:
    """An edit that would leave a document restricted to nobody is refused, as the admin form refuses it: no caller
    could read it afterwards, the editor included, and only a platform operator could undo it. (A connector's
    permission sync may still mirror a source that grants nobody: it goes through the ingest and access paths.)"""
    if visibility == Visibility.RESTRICTED and not acl:
        raise ValidationError("a restricted document needs at least one reader in acl, or nobody can read it")


def document_update(*, authority: Authority, document: Document, title: str = KEEP, body: str = KEEP,
                    format: str = KEEP, record_url: str = KEEP, metadata: dict = KEEP,
                    expires_at: datetime | None = KEEP, visibility: str = KEEP,
                    acl: Sequence[str] = KEEP) -> IngestResult | None:
    """Change an existing document; arguments left out (KEEP) keep their stored value. The document is re-read
    by its id under a row lock, so two concurrent updates of different fields do not undo each other.

    A change of content or attributes (title, body, format, record_url, metadata, expires_at) re-ingests the
    document under its external id through the one record mapping, so it is validated like any new record
    and re-chunked when title or text changed. The document keeps its access unless visibility or acl are
    given: its own ACL, or its inheritance of the source's defaults. A change of only visibility and/or acl
    re-shares it without re-chunking (document_acl_set) and returns None.
    """
    _require_writer(authority, document.tenant_id)
    content = {key: value for key, value in (("title", title), ("text", body), ("format", format),
                                             ("record_url", record_url), ("metadata", metadata),
                                             ("expires_at", expires_at)) if value is not KEEP}
    with transaction.atomic():
        # Lock order as in source_update and documents_ingest: the source (FOR SHARE), then the document;
        # locking the document first could deadlock against a change of the source's defaults.
        if source_defaults_share(document.source_id) is None:
            raise ValidationError("the source no longer exists")
        current = (Document.objects.select_for_update(of=("self",)).select_related("author", "source")
                   .filter(pk=document.pk, tenant_id=document.tenant_id).first())
        if current is None:
            raise ValidationError("the document no longer exists")
        current_acl = [f"{p.kind}:{p.key}" for p in current.acl_principals.order_by("kind", "key")]
        access_given = visibility is not KEEP or acl is not KEEP
        new_access = {"visibility": current.visibility if visibility is KEEP else visibility,
                      "acl": current_acl if acl is KEEP else acl}
        if access_given:
            _readers_check(**new_access)
        if not content:
            if not access_given:
                return None
            document_acl_set(authority=authority, document=current, **new_access)
            return None
        access: dict[str, Any] = new_access if access_given or not current.acl_inherited else {}
        item = DocumentInput.from_record({**_document_record(current), **content, **access})
        return document_ingest(authority=authority, source=current.source, item=item)


def document_delete(*, authority: Authority, document: Document) -> None:
    """Delete a document and its chunks; listeners remove what was derived from it in the same
    transaction."""
    _require_writer(authority, document.tenant_id)
    with transaction.atomic():
        documents_changed_notify([DocumentChange(document.pk, document.tenant_id, "deleted")])
        Document.objects.filter(pk=document.pk).delete()
