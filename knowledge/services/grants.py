"""Who may write, and how access is applied: shared by the source and the document writes (a source's
default access reaches the documents that inherit it)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from groundwork.authority import Authority
from groundwork.models import Membership, Principal, Tenant
from groundwork.services import principal_ensure, principal_parse

from ..hooks import DocumentChange, access_upstream, documents_changed_notify
from ..models import Document, DocumentAcl, DocumentGrant, Source, SourceAcl, Visibility
from ..sql import source_defaults_share

logger = logging.getLogger(__name__)


def _require_writer(authority: Authority, tenant_id: int) -> None:
    if authority.tenant_id != tenant_id:
        raise PermissionDenied("records can only be written into the caller's own tenant")
    if not authority.is_admin:
        raise PermissionDenied("only a tenant admin (or an admin service key) may change sources and documents")


def source_upload_check(authority: Authority, source: Source, *, members_may_upload: bool | None = None) -> None:
    """The one rule of who may upload files into a source, the one exception to "only admins write": its tenant's
    admins; members and analysts (signed-in users) only when the source takes member uploads. Raises
    PermissionDenied. Applied when an upload is recorded (upload_batch_record: the request's 403) and again when
    its files are written (documents_ingest, with `members_may_upload` as read under the source's lock), since
    an admin may close the source in between."""
    if authority.tenant_id != source.tenant_id:
        raise PermissionDenied("you may not upload into this source")
    allowed = source.members_may_upload if members_may_upload is None else members_may_upload
    if not (authority.is_admin or (allowed and authority.kind == "user")):
        raise PermissionDenied("this source does not take uploads from members; ask a tenant admin")


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
    # Insert only the missing rows: re-sharing many documents whose ACLs mostly stay (a permission sync after a
    # few membership changes) would otherwise send every row again for ON CONFLICT to throw away.
    present = set(DocumentAcl.objects.filter(document_id__in=document_ids, principal_id__in=principal_ids)
                  .values_list("document_id", "principal_id"))
    DocumentAcl.objects.bulk_create(
        [DocumentAcl(document_id=d, principal_id=i) for d in document_ids for i in principal_ids
         if (d, i) not in present],
        ignore_conflicts=True,
    )
    documents_changed_notify([DocumentChange(d, tenant_id, "access_changed") for d in document_ids])


def documents_access_set(*, authority: Authority, source: Source,
                         changes: Sequence[tuple[int, str | None, Sequence[str] | None]]) -> list[int]:
    """Re-share many documents of one source at once: `changes` holds (document id, visibility, principal specs),
    both None meaning "inherit the source's defaults". For connectors' permission sync: documents whose access is
    already that are left alone; the rest go, grouped by their new access, through the one write path
    (_documents_access_apply: triggers re-copy onto chunks and access classes; findings and answer caches hear
    "access_changed"). One transaction; returns the ids whose access changed. Documents of other sources are
    ignored."""
    _require_writer(authority, source.tenant_id)
    specs = {}
    for _, visibility, acl in changes:
        if visibility is not None and visibility not in ("workspace", "restricted"):
            raise ValidationError("visibility must be 'workspace' or 'restricted'")
        for entry in acl or ():
            if entry not in specs:
                specs[entry] = principal_parse(entry)
    changed: list[int] = []
    with transaction.atomic():
        # Lock order as in source_update / documents_ingest: the source (FOR SHARE), then its documents.
        if source_defaults_share(source.pk) is None:
            raise ValidationError("the source no longer exists")
        tenant = Tenant.objects.get(pk=source.tenant_id)
        default_ids = sorted(SourceAcl.objects.filter(source_id=source.pk).values_list("principal_id", flat=True))
        default_visibility = Source.objects.filter(pk=source.pk).values_list("default_visibility", flat=True)[0]
        wanted = {document_id: (visibility, acl) for document_id, visibility, acl in changes}
        current = list(Document.objects.select_for_update().filter(source_id=source.pk, pk__in=list(wanted))
                       .order_by("pk").values_list("pk", "visibility", "acl", "acl_inherited"))
        # `acl` holds the grants made in the app too (DocumentGrant); they are not the sync's to compare or undo.
        granted = documents_granted_ids([row[0] for row in current])
        cache: dict = {}
        groups: dict[tuple, list[int]] = {}
        for pk, visibility, acl, inherited in current:
            acl = sorted(set(acl) - granted.get(pk, set())) if pk in granted else acl
            new_visibility, specs_wanted = wanted[pk]
            inherit = new_visibility is None and specs_wanted is None
            if inherit:
                target = (default_visibility, tuple(default_ids), True)
            else:
                ids = _principal_ids(tenant, [specs[s] for s in specs_wanted or ()], cache)
                target = (new_visibility or "workspace", tuple(ids), False)
            if (visibility, tuple(sorted(acl)), inherited) != target:
                groups.setdefault(target, []).append(pk)
        for (visibility, ids, inherited), document_ids in groups.items():
            _documents_access_apply(tenant_id=source.tenant_id, document_ids=document_ids, visibility=visibility,
                                    principal_ids=list(ids), inherited=inherited)
            changed += document_ids
    return sorted(changed)


# --- Grants: readers added in the app on top of a document's own access -------------------------------------

def documents_granted_ids(document_ids: Sequence[int]) -> dict[int, set[int]]:
    """{document id: principal ids granted in the app} for those of `document_ids` that have grants."""
    granted: dict[int, set[int]] = {}
    if document_ids:
        for document_id, principal_id in DocumentGrant.objects.filter(document_id__in=list(document_ids)) \
                .values_list("document_id", "principal_id"):
            granted.setdefault(document_id, set()).add(principal_id)
    return granted


def _grant_principal(tenant: Tenant, spec: str) -> Principal:
    """The principal a grant names. A person must be a member of the tenant: a grant never reaches outside it."""
    kind, key = principal_parse(spec)
    if kind == Principal.Kind.USER:
        if not Membership.objects.filter(tenant=tenant, user_id=int(key), user__is_active=True).exists():
            raise ValidationError(f"user:{key} is not a member of this tenant")
    if kind == Principal.Kind.SERVICE:
        raise ValidationError("a service is not a reader to share a document with")
    return principal_ensure(tenant=tenant, kind=kind, raw=key)


def document_grant_add(authority: Authority, *, document: Document, principal: str,
                       reason: str) -> tuple[DocumentGrant, bool]:
    """Let `principal` (a spec: user:<id>, group:…, email:…) read `document`, as a grant kept apart from the
    document's own ACL, so a re-ingest or a connector's permission sync does not undo it; the document's
    effective ACL (and its chunks', and its access class) follows by trigger. Tenant admins only. Returns
    (grant, created); granting a reader already granted returns the existing grant."""
    _require_writer(authority, document.tenant_id)
    with transaction.atomic():
        tenant = Tenant.objects.get(pk=document.tenant_id)
        target = _grant_principal(tenant, principal)
        grant, created = DocumentGrant.objects.get_or_create(
            document_id=document.pk, principal=target,
            defaults={"granted_by_id": authority.user_id, "reason": reason[:200]})
        if created:
            documents_changed_notify([DocumentChange(document.pk, document.tenant_id, "access_changed")])
    return grant, created


def document_reader_remove(authority: Authority, *, document: Document, principal_id: int) -> str:
    """Stop `principal_id` reading `document` from here, where that is the app's to change. A grant made in
    the app is removed (what the source gave stays). A reader the document's own access names is removed
    only when that access was set on the document in the app; one that comes from the source's defaults, or
    from a connector's permission sync, is refused with the place to change it — removing it here would be
    undone by the next sync. Returns what was removed ("grant" or "acl")."""
    _require_writer(authority, document.tenant_id)
    with transaction.atomic():
        locked = Document.objects.select_for_update().filter(pk=document.pk).first()
        if locked is None:
            raise ValidationError("the document no longer exists")
        if DocumentGrant.objects.filter(document_id=locked.pk, principal_id=principal_id).delete()[0]:
            documents_changed_notify([DocumentChange(locked.pk, locked.tenant_id, "access_changed")])
            return "grant"
        own = list(DocumentAcl.objects.filter(document_id=locked.pk).values_list("principal_id", flat=True))
        if principal_id not in own:
            raise ValidationError("this principal is not a reader of the document")
        if locked.acl_inherited:
            raise ValidationError("this reader comes from the source's default access; change it on the "
                                  "Sources page (it applies to every document of the source that follows it)")
        upstream = access_upstream(locked.source_id)
        if upstream:
            raise ValidationError(f"this reader comes from {upstream}; change it there (a removal here would be "
                                  f"undone by the next permission sync)")
        remaining = [pk for pk in own if pk != principal_id]
        granted = documents_granted_ids([locked.pk]).get(locked.pk, set())
        if locked.visibility == Visibility.RESTRICTED and not (remaining or granted):
            raise ValidationError("a restricted document needs at least one reader, or nobody can read it")
        _documents_access_apply(tenant_id=locked.tenant_id, document_ids=[locked.pk], visibility=locked.visibility,
                                principal_ids=remaining, inherited=False)
    return "acl"
