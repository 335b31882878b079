"""Intake pages: upload files into a source, follow a batch, and manage sources (admins).

Thin views: the caller's authority comes from groundwork.page_access (its one refusal rule); each view calls
one service or selector and renders. Without JavaScript every page works with plain forms; upload.js
only sends the files with fetch and polls the batch API for progress.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import ensure_csrf_cookie

from groundwork.authority import Authority
from groundwork.page_access import page_found, tenant_page

from . import services, uploads
from .files import supported_types
from .models import Source, UploadBatch, Visibility


def _limits() -> dict:
    return {"max_file_mb": settings.UPLOAD_MAX_FILE_BYTES // (1024 * 1024), "max_files": settings.UPLOAD_MAX_FILES,
            "max_batch_mb": settings.UPLOAD_MAX_BATCH_BYTES // (1024 * 1024), "types": supported_types()}


@tenant_page()
@ensure_csrf_cookie
def upload_page(request, authority: Authority):
    sources = list(uploads.sources_uploadable(authority))
    if not sources and not authority.is_admin:
        raise PermissionDenied("No source of this workspace takes uploads from members. Ask a tenant admin.")
    context = {"tenant_slug": authority.tenant_slug, "sources": sources, "limits": _limits(), "error": "",
               "is_admin": authority.is_admin, "selected": None}
    if request.method == "POST":
        try:
            source_id = int(request.POST.get("source", ""))
        except ValueError:
            source_id = None
        source = uploads.source_for_upload(authority, source_id) if source_id is not None else None
        files = request.FILES.getlist("files")
        context["selected"] = source_id
        if source is None:
            context["error"] = "Choose a source to upload into."
        else:
            try:  # who may upload is the service's one check (source_upload_check): PermissionDenied is a 403
                batch = uploads.upload_batch_create(authority=authority, source=source,
                                                    files=uploads.uploaded_files_read(files))
            except ValidationError as exc:
                context["error"] = "; ".join(exc.messages)
            else:
                return redirect("pages:upload-batch", tenant_slug=authority.tenant_slug, batch_id=batch.pk)
        return render(request, "knowledge/upload.html", context, status=400)
    try:
        context["selected"] = int(request.GET.get("source", ""))
    except ValueError:
        pass
    return render(request, "knowledge/upload.html", context)


@tenant_page()
@ensure_csrf_cookie
def upload_batch_page(request, authority: Authority, batch_id: int):
    batch = page_found(uploads.upload_batch_get(authority, batch_id))
    counts = uploads.upload_counts(batch)
    total = sum(counts.values())
    done = sum(counts[s] for s in ("added", "updated", "unchanged", "refused", "failed"))
    return render(request, "knowledge/upload_batch.html", {
        "tenant_slug": authority.tenant_slug, "batch": batch, "items": uploads.upload_items(batch),
        "counts": counts, "total": total, "done": done,
        "finished": batch.status == UploadBatch.Status.FINISHED,
        "api_url": reverse("tenant-api:upload", kwargs={"tenant_slug": authority.tenant_slug, "upload_id": batch.pk}),
    })


_ACL_SPLIT = re.compile(r"[,\n;]+")


def acl_specs_read(raw: str) -> list[str]:
    """Principal specs typed by a person, one per line or comma-separated; each checked, with a message
    naming the entry that is wrong."""
    from groundwork.services import principal_parse

    specs = [part.strip() for part in _ACL_SPLIT.split(raw or "") if part.strip()]
    for spec in specs:
        try:
            principal_parse(spec)
        except ValidationError as exc:
            raise ValidationError(
                f"“{spec}” is not a principal: write group:NAME, email:ADDRESS, user:ID or provider:GROUP"
            ) from exc
    return specs


@tenant_page("admin")
@ensure_csrf_cookie
def sources_page(request, authority: Authority):
    error, errors_for, status = "", None, 200
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            acl = acl_specs_read(request.POST.get("default_acl", ""))
            visibility = request.POST.get("default_visibility", Visibility.WORKSPACE)
            members = request.POST.get("members_may_upload") == "on"
            if action == "create":
                source = services.source_create(
                    authority=authority, kind=request.POST.get("kind", Source.Kind.UPLOAD),
                    name=request.POST.get("name", ""), default_visibility=visibility, default_acl=acl,
                    members_may_upload=members)
                notice = f"Source “{source.name}” created."
            elif action == "update":
                try:
                    source_id = int(request.POST.get("source_id", ""))
                except ValueError as exc:
                    raise Http404 from exc
                source = page_found(uploads.source_for_upload(authority, source_id))
                errors_for = source.pk
                services.source_update(authority=authority, source=source, default_visibility=visibility,
                                       default_acl=acl, members_may_upload=members)
                notice = f"Source “{source.name}” saved; documents that inherit its access follow it."
            else:
                raise ValidationError("Unknown action.")
        except ValidationError as exc:
            error, status = "; ".join(exc.messages), 400
            if action == "create":
                errors_for = "new"
        else:
            messages.success(request, notice)
            return redirect("pages:sources", tenant_slug=authority.tenant_slug)
    sources = [
        {"source": s, "acl_text": "\n".join(f"{p.kind}:{p.key}" for p in s.default_acl.all()),
         "acl_labels": [p.label for p in s.default_acl.all()]}
        for s in uploads.sources_with_counts(authority)
    ]
    return render(request, "knowledge/sources.html", {
        "tenant_slug": authority.tenant_slug, "sources": sources, "error": error, "errors_for": errors_for,
        "kinds": Source.Kind.choices, "visibilities": Visibility.choices, "posted": request.POST if status == 400
        else None,
    }, status=status)
