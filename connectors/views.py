"""Manage pages of the connectors (tenant admins): each source's connector, its schedule and runs, and a button
to sync now. Server-rendered plain forms; thin views calling one service or selector each."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.csrf import ensure_csrf_cookie

from groundwork.authority import Authority
from groundwork.page_access import page_found, tenant_page

from . import forms, selectors, services
from .forms import FormInvalid
from .models import Connector, SyncRun


def _int_or_none(raw: str, name: str, label: str) -> int | None:
    raw = (raw or "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise FormInvalid({name: [f"{label} must be a whole number of minutes"]})
    return int(raw)


def _source(authority: Authority, raw_id: str):
    try:
        return page_found(selectors.source_own(authority, int(raw_id)))
    except ValueError as exc:
        raise Http404 from exc


def _configure(request, authority: Authority, source) -> str:
    """Save the source's connector from its form, then test the connection with what was saved: the notice says
    whether the source could be read (a save whose test fails is kept — the site may be down this minute — and
    says why, so the admin is not left to find out from the first run)."""
    kind = request.POST.get("kind", "")
    settings, credentials = forms.posted_read(kind, request.POST)
    fields = {"kind": kind, "settings": settings,
              "content_interval_minutes": _int_or_none(request.POST.get("content_interval", ""),
                                                       "content_interval", "Content interval"),
              "permissions_interval_minutes": _int_or_none(request.POST.get("permissions_interval", ""),
                                                           "permissions_interval", "Permission interval"),
              "enabled": request.POST.get("enabled") == "on"}
    if credentials is not None:  # left empty: the stored credentials stay (they are never shown back)
        fields["credentials"] = credentials
    try:
        services.connector_configure(authority=authority, source=source, **fields)
    except ValidationError as exc:
        raise FormInvalid(forms.errors_by_field(exc)) from exc
    try:
        tested = services.connector_test(authority=authority, source=source)
    except ValidationError as exc:
        messages.warning(request, f"Connector of “{source.name}” saved, but {'; '.join(exc.messages)}.")
        return ""
    return f"Connector of “{source.name}” saved. {tested}"


@tenant_page("admin")
@ensure_csrf_cookie
def connectors_page(request, authority: Authority):
    error, status, invalid = "", 200, None
    if request.method == "POST":
        try:
            if request.POST.get("action") == "configure":
                source = _source(authority, request.POST.get("source_id", ""))
                try:
                    notice = _configure(request, authority, source)
                except FormInvalid as exc:
                    invalid = (source.pk, exc.errors)
                    raise ValidationError(exc.errors.get("", []) or "The connector was not saved: see the "
                                          "fields marked below.") from exc
                if request.POST.get("then") == "sync":  # "Save and sync now": straight to the run's progress
                    run = services.sync_run_start(authority=authority, source=source, mode=SyncRun.Mode.CONTENT)
                    if notice:
                        messages.success(request, notice)
                    return redirect("pages:sync-run", tenant_slug=authority.tenant_slug, run_id=run.pk)
            elif request.POST.get("action") == "upload_export":
                # An export uploaded from the browser: saved, checked, the connector pointed at it, synced now.
                source = _source(authority, request.POST.get("source_id", ""))
                upload = request.FILES.get("export")
                if upload is None:
                    raise ValidationError("Choose the export archive to upload.")
                services.connector_export_upload(authority=authority, source=source,
                                                 kind=request.POST.get("export_kind", ""), name=upload.name,
                                                 chunks=upload.chunks())
                run = services.sync_run_start(authority=authority, source=source, mode=SyncRun.Mode.CONTENT)
                messages.success(request, f"Export of “{source.name}” uploaded; its sync is queued (run {run.pk}).")
                return redirect("pages:sync-run", tenant_slug=authority.tenant_slug, run_id=run.pk)
            elif request.POST.get("action") == "test":
                source = _source(authority, request.POST.get("source_id", ""))
                notice = services.connector_test(authority=authority, source=source)
            elif request.POST.get("action") == "sync":
                source = _source(authority, request.POST.get("source_id", ""))
                run = services.sync_run_start(authority=authority, source=source,
                                              mode=request.POST.get("mode", SyncRun.Mode.CONTENT))
                notice = f"{run.get_mode_display()} sync of “{source.name}” queued (run {run.pk})."
            else:
                raise ValidationError("Unknown action.")
        except ValidationError as exc:
            error, status = "; ".join(exc.messages), 400
        except services.SyncBusy:
            error, status = "A sync of this source is already queued or running; wait for it to finish.", 409
        else:
            if notice:
                messages.success(request, notice)
            return redirect("pages:connectors", tenant_slug=authority.tenant_slug)
    rows = []
    for s, c, r in selectors.sources_with_connectors(authority):
        refused = invalid is not None and invalid[0] == s.pk  # the form that was refused keeps what was typed
        rows.append({"source": s, "connector": c, "latest": r,
                     "kind": request.POST.get("kind", "") if refused else (c.kind if c else ""),
                     "fields": forms.form_fields(c, posted=request.POST if refused else None,
                                                 errors=invalid[1] if refused else None),
                     "interval_errors": {k: v for k, v in (invalid[1] if refused else {}).items()
                                         if k.endswith("_interval")},
                     "values": request.POST if refused else None,
                     "runs": list(selectors.runs_of_source(authority, s)[:5]) if c else []})
    return render(request, "connectors/connectors.html", {
        "export_kinds": [(k, label) for k, label in Connector.Kind.choices if k in services.EXPORT_KINDS],
        "import_folder": services.import_root(authority.tenant_slug),
        "tenant_slug": authority.tenant_slug, "rows": rows, "kinds": Connector.Kind.choices,
        "modes": SyncRun.Mode.choices, "error": error}, status=status)


@tenant_page("admin")
def run_page(request, authority: Authority, run_id: int):
    run = page_found(selectors.run_get(authority, run_id))
    return render(request, "connectors/run.html", {"tenant_slug": authority.tenant_slug, "run": run,
                                                   "running": run.status in SyncRun.ACTIVE,
                                                   "changed": selectors.run_documents(authority, run)})
