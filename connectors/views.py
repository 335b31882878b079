"""Manage pages of the connectors (tenant admins): each source's connector, its schedule and runs, and a button
to sync now. Server-rendered plain forms; thin views calling one service or selector each."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.csrf import ensure_csrf_cookie

from groundwork.authority import Authority
from groundwork.page_access import page_found, tenant_page

from . import selectors, services
from .models import Connector, SyncRun


def _int_or_none(raw: str, name: str) -> int | None:
    raw = (raw or "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise ValidationError(f"{name} must be a whole number of minutes")
    return int(raw)


def _source(authority: Authority, raw_id: str):
    try:
        return page_found(selectors.source_own(authority, int(raw_id)))
    except ValueError as exc:
        raise Http404 from exc


def _extra_settings(raw: str) -> dict:
    """The form's "more settings" box: a JSON object (base_url, space_key, repo, project_access, …)."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser's stack
        raise ValidationError("More settings must be a JSON object, e.g. {\"base_url\": \"https://…\"}") from None
    if not isinstance(value, dict):
        raise ValidationError("More settings must be a JSON object, e.g. {\"base_url\": \"https://…\"}")
    return value


def _extra_shown(connector) -> str:
    """The settings beyond path and workspace address, for the "more settings" box (settings hold no secrets)."""
    extra = {k: v for k, v in (connector.settings if connector else {}).items()
             if k not in ("path", "workspace_url", "base_url", "space_key", "repo")}
    return json.dumps(extra) if extra else ""


def _configure(request, authority: Authority) -> str:
    source = _source(authority, request.POST.get("source_id", ""))
    settings = _extra_settings(request.POST.get("extra_settings", ""))
    if request.POST.get("path", "").strip():
        settings["path"] = request.POST["path"]
    if request.POST.get("workspace_url", "").strip():
        settings["workspace_url"] = request.POST["workspace_url"].strip()
    # The live kinds' own fields, so the common case needs no JSON (the "more settings" box keeps the rest).
    for name in ("base_url", "space_key", "repo"):
        if request.POST.get(name, "").strip():
            settings[name] = request.POST[name].strip()
    fields = {"kind": request.POST.get("kind", ""), "settings": settings,
              "content_interval_minutes": _int_or_none(request.POST.get("content_interval", ""), "Content interval"),
              "permissions_interval_minutes": _int_or_none(request.POST.get("permissions_interval", ""),
                                                           "Permission interval"),
              "enabled": request.POST.get("enabled") == "on"}
    token, account = request.POST.get("token", ""), request.POST.get("account_email", "").strip()
    if token:  # left empty: the stored credentials stay (they are never shown back)
        # Confluence Cloud signs in with an account e-mail and an API token; the others with a token alone.
        fields["credentials"] = {"email": account, "api_token": token} if account else {"token": token}
    services.connector_configure(authority=authority, source=source, **fields)
    return f"Connector of “{source.name}” saved."


@tenant_page("admin")
@ensure_csrf_cookie
def connectors_page(request, authority: Authority):
    error, status = "", 200
    if request.method == "POST":
        try:
            if request.POST.get("action") == "configure":
                notice = _configure(request, authority)
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
            messages.success(request, notice)
            return redirect("pages:connectors", tenant_slug=authority.tenant_slug)
    rows = [{"source": s, "connector": c, "latest": r, "extra_settings": _extra_shown(c),
             "runs": list(selectors.runs_of_source(authority, s)[:5]) if c else []}
            for s, c, r in selectors.sources_with_connectors(authority)]
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
