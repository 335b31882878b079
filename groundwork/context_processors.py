"""What the app shell (templates/base.html) needs on a tenant page: the navigation, the caller's role and
the tenant switcher.

It reads the `tenant_slug` kwarg of the resolved URL and the signed-in user's memberships in one query;
anonymous callers and pages outside /t/<tenant>/ cost nothing. Navigation items are URL names reversed with
the tenant slug; a name no app defines (yet) is skipped, so the shell never breaks a page.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from .authority import ROLE_RANK
from .selectors import memberships_of_user

# (url name, label, least role, URL names that belong to the item although not under its path)
NAV_ITEMS: tuple[tuple[str, str, str, frozenset[str]], ...] = (
    ("pages:chat", "Ask", "member", frozenset()),
    ("pages:documents", "Documents", "member", frozenset({"pages:upload", "pages:upload-batch", "pages:document"})),
    ("pages:findings", "Findings", "member", frozenset()),
    ("pages:manage", "Manage", "admin", frozenset()),
)



@dataclass(frozen=True)
class NavItem:
    name: str
    label: str
    url: str
    current: bool


@dataclass(frozen=True)
class TenantLink:
    slug: str
    name: str
    url: str


def _url(name: str, slug: str) -> str | None:
    try:
        return reverse(name, kwargs={"tenant_slug": slug})
    except NoReverseMatch:
        return None


def _is_current(request: HttpRequest, name: str, url: str, also: frozenset[str]) -> bool:
    view_name = request.resolver_match.view_name if request.resolver_match else ""
    return request.path.startswith(url) or view_name == name or view_name in also


def shell(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    match = getattr(request, "resolver_match", None)
    slug = match.kwargs.get("tenant_slug") if match is not None else None
    if user is None or not user.is_authenticated or not slug:
        return {}
    memberships = memberships_of_user(user)
    current = next((m for m in memberships if m.tenant.slug == slug), None)
    if current is None:  # not a member: the page itself answers 404; the shell shows no tenant
        return {}
    rank = ROLE_RANK.get(current.role, 0)
    nav: list[NavItem] = []
    section = "pages:chat"
    for name, label, role, also in NAV_ITEMS:
        if rank < ROLE_RANK[role]:
            continue
        url = _url(name, slug)
        if url is None:
            continue
        is_current = _is_current(request, name, url, also)
        if is_current:
            section = name
        nav.append(NavItem(name=name, label=label, url=url, current=is_current))
    others: list[TenantLink] = []
    for membership in memberships:
        if membership.tenant.slug == slug:
            continue
        # The same section in the other tenant (Manage only where the user is an admin there too).
        target = section if (section != "pages:manage" or membership.role == "admin") else "pages:chat"
        url = _url(target, membership.tenant.slug) or _url("pages:chat", membership.tenant.slug)
        if url:
            others.append(TenantLink(slug=membership.tenant.slug, name=membership.tenant.name, url=url))
    return {
        "shell": {
            "tenant_slug": slug,
            "tenant_name": current.tenant.name,
            "role": current.role,
            "is_admin": current.role == "admin",
            "nav": nav,
            "other_tenants": others,
        }
    }


def sign_in(request: HttpRequest) -> dict:
    """The sign-in page's single sign-on button, when OpenID Connect is configured."""
    return {"oidc_provider_name": settings.OIDC_PROVIDER_NAME if settings.OIDC_ENABLED else ""}
