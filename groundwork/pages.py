"""The platform layer's pages: the landing page, a tenant admin's Manage hub, and the branded error pages."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import redirect, render
from django.template import loader
from django.urls import NoReverseMatch, reverse

from .authority import Authority
from .database_unavailable import database_unavailable, database_unavailable_response
from .hooks import manage_sections
from .page_access import tenant_page
from .scim import ScimInvalid, scim_import
from .selectors import memberships_of_user, tenant_for_authority

# API paths (`/api/v1/…`, `/t/<tenant>/api/v1/…`) answer errors in JSON even when no API view was reached.
_API_PATH = re.compile(r"^/(?:t/[^/]+/)?api/")


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """One workspace: straight to its Ask page. Several: a picker. None: say so kindly."""
    memberships = memberships_of_user(request.user)
    if len(memberships) == 1:
        return redirect("pages:chat", tenant_slug=memberships[0].tenant.slug)
    return render(request, "home.html", {"memberships": memberships})


@dataclass(frozen=True)
class ManageCard:
    title: str
    description: str
    url: str


# The platform layer's own cards: its models are managed in the (tenant-scoped) Django admin.
PLATFORM_CARDS: tuple[tuple[str, str, str], ...] = (
    ("Members and roles", "Who belongs to this workspace and what each person may do.",
     "admin:platform_membership_changelist"),
    ("Groups", "Groups and other principals that document access lists can name.",
     "admin:platform_principal_changelist"),
    ("API keys", "Keys that let other systems call the API on behalf of a person or a job.",
     "admin:platform_apikey_changelist"),
)


def _scim_upload(request: HttpRequest, authority: Authority):
    upload = request.FILES.get("file")
    if upload is None:
        raise ScimInvalid("choose a SCIM groups file (JSON) to import")
    if upload.size > settings.UPLOAD_MAX_FILE_BYTES:
        raise ScimInvalid(f"the file is over {settings.UPLOAD_MAX_FILE_BYTES:,} bytes")
    return scim_import(tenant=tenant_for_authority(authority), raw=upload.read(),
                       provider=(request.POST.get("provider") or settings.OIDC_PROVIDER_KEY).strip().lower(),
                       prune=request.POST.get("prune") == "on")


@tenant_page("admin")
def groups_import(request: HttpRequest, authority: Authority) -> HttpResponse:
    """Tenant admins: upload a SCIM 2.0 Groups file; memberships of this tenant's provider groups follow it."""
    report, error, status = None, "", 200
    if request.method == "POST":
        try:
            report = _scim_upload(request, authority)
        except ScimInvalid as exc:
            error, status = f"{exc}. Nothing was imported.", 400
    return render(request, "groundwork/groups_import.html", {
        "tenant_slug": authority.tenant_slug, "report": report, "error": error,
        "provider": settings.OIDC_PROVIDER_KEY}, status=status)


@tenant_page("admin")
def manage(request: HttpRequest, authority: Authority) -> HttpResponse:
    cards: list[ManageCard] = []
    for section in manage_sections():
        if not authority.has_role(section.role):
            continue
        try:
            url = reverse(section.url_name, kwargs={"tenant_slug": authority.tenant_slug})
        except NoReverseMatch:
            continue
        cards.append(ManageCard(title=section.title, description=section.description, url=url))
    for title, description, url_name in PLATFORM_CARDS:
        try:
            cards.append(ManageCard(title=title, description=description, url=reverse(url_name)))
        except NoReverseMatch:
            continue
    return render(request, "groundwork/manage.html", {"cards": cards, "tenant_slug": authority.tenant_slug})


# --- Error pages (handler403 / handler404 / handler500 / CSRF_FAILURE_VIEW) -------------------------------

def error_404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _API_PATH.match(request.path):  # e.g. /api/v1/documents/-1: no route, still an API caller
        return JsonResponse({"detail": "Not found."}, status=404)
    return render(request, "404.html", status=404)


def error_403(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    # The message of a PermissionDenied we raised is meant for people; anything else stays generic.
    message = str(exception) if isinstance(exception, PermissionDenied) and str(exception) else ""
    return render(request, "403.html", {"message": message}, status=403)


def error_500(request: HttpRequest) -> HttpResponse:
    # A database failure raised outside any view (in a middleware) lands here: still a 503, not a bug.
    exc = sys.exc_info()[1]
    if database_unavailable(exc):
        return database_unavailable_response(request, exc)
    if _API_PATH.match(request.path):
        return JsonResponse({"detail": "Something went wrong on our side."}, status=500)
    # No request context: context processors may need the database, which may be what failed.
    return HttpResponseServerError(loader.get_template("500.html").render())


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    return render(request, "403_csrf.html", status=403)
