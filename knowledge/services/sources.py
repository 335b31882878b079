"""Writes of sources: create, update (default access, which documents inheriting it follow), delete; who
may write and upload."""


from __future__ import annotations

import logging
from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import transaction

from groundwork.authority import Authority
from groundwork.models import Tenant
from groundwork.services import principal_parse

from ..hooks import DocumentChange, documents_changed_notify, source_deleting_notify
from ..models import Document, Source, SourceAcl, Visibility
from .grants import _documents_access_apply, _principal_ids, _require_writer

logger = logging.getLogger(__name__)







def _name_clean(name: str) -> str:
    """A source name as stored, or a ValidationError saying what the column cannot hold."""
    name = (name or "").strip()
    if not name:
        raise ValidationError("a source needs a name")
    if "\x00" in name:
        raise ValidationError("a source name may not contain a NUL character")
    limit = Source._meta.get_field("name").max_length
    if len(name) > limit:
        raise ValidationError(f"a source name is at most {limit} characters (got {len(name)})")
    return name


def _defaults_check(visibility: str, acl_given: bool, readers: Sequence) -> None:
    """Source defaults restricted to nobody are refused when a person sets them (API, Manage page, admin): every
    document that inherits them could be read by nobody, the editor included, until a platform operator undid
    it. A connector's permission sync may still mirror a source that grants nobody; it does not come here."""
    if visibility == Visibility.RESTRICTED and not readers:
        what = "default_acl" if acl_given else "default_acl (the source has no default readers now)"
        raise ValidationError(f"restricted source defaults need at least one reader in {what}, or the documents "
                              "that inherit them can be read by nobody")


def source_create(*, authority: Authority, kind: str, name: str, base_url: str = "",
                  default_visibility: str = Visibility.WORKSPACE, default_acl: Sequence[str] = (),
                  members_may_upload: bool = False) -> Source:
    _require_writer(authority, authority.tenant_id)
    if kind not in Source.Kind.values:
        raise ValidationError(f"unknown source kind {kind!r}; use one of {', '.join(Source.Kind.values)}")
    if default_visibility not in Visibility.values:
        raise ValidationError("default_visibility must be 'workspace' or 'restricted'")
    name = _name_clean(name)
    if Source.objects.filter(tenant_id=authority.tenant_id, name=name).exists():
        raise ValidationError(f"a source named {name!r} exists already")
    specs = [principal_parse(entry) for entry in default_acl]
    _defaults_check(default_visibility, True, specs)
    with transaction.atomic():
        tenant = Tenant.objects.get(pk=authority.tenant_id)
        source = Source.objects.create(tenant=tenant, kind=kind, name=name, base_url=base_url,
                                       default_visibility=default_visibility, members_may_upload=members_may_upload)
        SourceAcl.objects.bulk_create([SourceAcl(source=source, principal_id=i)
                                       for i in _principal_ids(tenant, specs, {})])
    return source


def source_update(*, authority: Authority, source: Source, default_visibility: str | None = None,
                  default_acl: Sequence[str] | None = None, members_may_upload: bool | None = None,
                  **fields) -> Source:
    """Change a source. A new default visibility or ACL is re-applied to every document of the source that
    still inherits it (through the same path as document_acl_set); documents with their own ACL keep it."""
    _require_writer(authority, source.tenant_id)
    allowed = {"name", "kind", "base_url"}
    changed = [k for k in fields if k in allowed]
    for key in changed:
        setattr(source, key, fields[key])
    if "kind" in changed and source.kind not in Source.Kind.values:
        raise ValidationError(f"unknown source kind {source.kind!r}")
    if "name" in changed:
        source.name = _name_clean(source.name)
        if Source.objects.filter(tenant_id=source.tenant_id, name=source.name).exclude(pk=source.pk).exists():
            raise ValidationError(f"a source named {source.name!r} exists already")
    if default_visibility is not None:
        if default_visibility not in Visibility.values:
            raise ValidationError("default_visibility must be 'workspace' or 'restricted'")
        source.default_visibility = default_visibility
        changed.append("default_visibility")
    if members_may_upload is not None:
        source.members_may_upload = bool(members_may_upload)
        changed.append("members_may_upload")
    specs = [principal_parse(entry) for entry in default_acl] if default_acl is not None else None
    with transaction.atomic():
        tenant = Tenant.objects.get(pk=source.tenant_id)
        # FOR UPDATE waits for ingests holding the source FOR SHARE (sql.source_defaults_share), so their new
        # documents are committed and re-applied below; ingests starting now read the new defaults.
        Source.objects.select_for_update().filter(pk=source.pk).first()
        before_ids = sorted(SourceAcl.objects.filter(source=source).values_list("principal_id", flat=True))
        before_visibility = Source.objects.filter(pk=source.pk).values_list("default_visibility", flat=True).first()
        if changed:
            source.save(update_fields=changed)
        acl_ids = before_ids
        if specs is not None:
            acl_ids = _principal_ids(tenant, specs, {})
        if default_visibility is not None or specs is not None:
            _defaults_check(source.default_visibility, specs is not None, acl_ids)
        if specs is not None:
            SourceAcl.objects.filter(source=source).exclude(principal_id__in=acl_ids).delete()
            SourceAcl.objects.bulk_create([SourceAcl(source=source, principal_id=i) for i in acl_ids],
                                          ignore_conflicts=True)
        if acl_ids != before_ids or source.default_visibility != before_visibility:
            inheriting = list(Document.objects.select_for_update().filter(source=source, acl_inherited=True)
                              .order_by("pk").values_list("pk", flat=True))
            _documents_access_apply(tenant_id=source.tenant_id, document_ids=inheriting,
                                    visibility=source.default_visibility, principal_ids=acl_ids, inherited=True)
    return source


def source_delete(*, authority: Authority, source: Source) -> int:
    _require_writer(authority, source.tenant_id)
    with transaction.atomic():
        ids = list(Document.objects.filter(source=source).values_list("pk", flat=True))
        documents_changed_notify([DocumentChange(i, source.tenant_id, "deleted") for i in ids])
        source_deleting_notify(source.pk)
        source.delete()
    return len(ids)
