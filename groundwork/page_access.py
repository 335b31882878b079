"""The pages' one refusal rule: every page under `/t/<tenant>/` resolves the caller's tenant and authority here,
once, and hands the authority to the view (the API's rule is in groundwork/permissions.py).

1. Not signed in -> the sign-in page, coming back here afterwards.
2. Not a member of the tenant the URL names -> 403 with a message; a tenant that does not exist gets the same
   page, so the answer never tells whether a workspace exists.
3. A role below what the page declares -> 403 with a message naming the role.

Objects inside the page that the caller may not read stay 404 (the selectors' job), as in the API.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TypeVar

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse

from .authority import ROLE_RANK, Authority
from .selectors import AuthorityDenied, authority_for_user

NOT_A_MEMBER = "You are not a member of this workspace, or it does not exist."
_ROLE_HOLDERS = {"member": "members", "analyst": "analysts and administrators", "admin": "administrators"}

PageView = Callable[..., HttpResponse]
Found = TypeVar("Found")


def tenant_page(role: str = "member") -> Callable[[PageView], PageView]:
    """Decorate a page routed with `<tenant_slug>`: the view is called as `view(request, authority, **rest)`,
    with the caller's authority in that tenant, only once the rule above admits the caller."""
    if role not in ROLE_RANK:
        raise ValueError(f"unknown role {role!r}; one of {', '.join(ROLE_RANK)}")

    def decorate(view: PageView) -> PageView:
        @wraps(view)
        def page(request: HttpRequest, tenant_slug: str, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            authority = page_authority(request, tenant_slug, role=role)
            return view(request, authority, **kwargs)

        page.required_role = role  # type: ignore[attr-defined]
        return page

    return decorate


def page_authority(request: HttpRequest, tenant_slug: str, *, role: str = "member") -> Authority:
    """The signed-in caller's authority in `tenant_slug`, or PermissionDenied with the message the 403 page shows."""
    try:
        authority = authority_for_user(user=request.user, tenant_slug=tenant_slug)
    except AuthorityDenied as denied:
        raise PermissionDenied(NOT_A_MEMBER) from denied
    if not authority.has_role(role):
        raise PermissionDenied(f"This page is for the workspace's {_ROLE_HOLDERS[role]}.")
    return authority


def page_found(value: Found | None) -> Found:
    """`value` from a selector, or the 404 page: an object missing and one the caller may not read look the same."""
    if value is None:
        raise Http404
    return value
