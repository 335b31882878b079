"""Who may write, and how access is applied: shared by the source and the document writes (a source's
default access reaches the documents that inherit it)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from django.core.exceptions import PermissionDenied, ValidationError

from groundwork.authority import Authority
from groundwork.models import Principal, Tenant
from groundwork.services import principal_ensure

from ..hooks import DocumentChange, documents_changed_notify
from ..models import Document, DocumentAcl, Source

logger = logging.getLogger(__name__)


def _require_writer(authority: Authority, tenant_id: int) -> None:
    if authority.tenant_id != tenant_id:
        raise PermissionDenied("records can only be written into the caller's own tenant")
    if not authority.is_admin:
        raise PermissionDenied("only a tenant admin (or an admin service key) may change sources and documents")


def source_upload_allowed(authority: Authority, source: Source) -> bool:
    """Who may upload files into a source: its tenant's admins; members and analysts (signed-in users)
    only when the source allows member uploads. The one exception to "only admins write"."""
    if authority.tenant_id != source.tenant_id:
        return False
    return authority.is_admin or (source.members_may_upload and authority.kind == "user")


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


def _documents_access_apply(*, tenant_id: int, document_ids: Sequence[int], visibility: str,
                            principal_ids: Sequence[int], inherited: bool) -> None:
    """Give these documents this visibility and ACL, inside the caller's transaction. The one write path of
    document access: the triggers re-copy it onto chunks and access classes, and listeners (findings,
    answer caches) hear "access_changed"."""
    if not document_ids:
        return
    Document.objects.filter(pk__in=document_ids).exclude(visibility=visibility, acl_inherited=inherited).update(
        visibility=visibility, acl_inherited=inherited)
    DocumentAcl.objects.filter(document_id__in=document_ids).exclude(principal_id__in=principal_ids).delete()
    DocumentAcl.objects.bulk_create(
        [DocumentAcl(document_id=d, principal_id=i) for d in document_ids for i in principal_ids],
        ignore_conflicts=True,
    )
    documents_changed_notify([DocumentChange(d, tenant_id, "access_changed") for d in document_ids])
