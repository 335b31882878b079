"""The API's one refusal rule, in the order it is applied:

1. 401 — no credentials, or an invalid, revoked or expired key (authentication).
2. 404 — a `/t/<tenant>/` prefix naming a tenant the caller may not use, exactly like a missing one (authentication).
3. 403 — the operation needs a higher role than the caller's. Each handler declares its least role with
   `@role_required(...)` (default: member); `CallerHasRole` checks it *before* any object is looked up, so a
   403 never says whether an id exists. The body names the role: `{"detail": ..., "required_role": "admin"}`.
4. 404 — an object in the path the caller may not read: missing, another tenant's or restricted from them all
   look the same (the selectors' job).
5. 403 — an object the caller can read but may not change this way (the platform corpus is read-only; a source
   that takes no uploads from members); the message says why (`change_refused`).

The OpenAPI schema (`groundwork.schema`) documents each operation's refusals from the same declarations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import BasePermission

from .authority import ROLE_RANK, Authority

Handler = TypeVar("Handler", bound=Callable)
DEFAULT_ROLE = "member"


def role_required(role: str) -> Callable[[Handler], Handler]:
    """Declare the least tenant role an API handler (`get`, `post`, ...) needs."""
    if role not in ROLE_RANK:
        raise ValueError(f"unknown role {role!r}; one of {', '.join(ROLE_RANK)}")

    def mark(handler: Handler) -> Handler:
        handler.required_role = role  # type: ignore[attr-defined]
        return handler

    return mark


def handler_role(view, method: str) -> str:
    """The least role the view's handler for `method` declares (member when it declares none)."""
    handler = getattr(view, method.lower(), None)
    return getattr(handler, "required_role", DEFAULT_ROLE)


class RoleRefused(PermissionDenied):
    def __init__(self, *, required: str, authority: Authority) -> None:
        super().__init__(detail={
            "detail": f"This needs the {required} role in {authority.tenant_slug}; this caller's role is "
                      f"{authority.role}.",
            "required_role": required,
        })


class CallerHasRole(BasePermission):
    """An authority (else 401) whose role reaches what the handler declares (else 403 naming the role)."""

    def has_permission(self, request, view) -> bool:
        authority = request.auth
        if not isinstance(authority, Authority):
            return False  # DRF answers 401: no authenticator succeeded
        required = handler_role(view, request.method)
        if not authority.has_role(required):
            raise RoleRefused(required=required, authority=authority)
        return True


class ChangeRefused(PermissionDenied):
    """Rule 5: the caller can read the object but may not make this change to it."""


def change_target(target, *, readable: Callable[[], bool], refusal: str):
    """The object a change applies to: `target` when the caller may change it; else 404 when they cannot even
    read it (same as missing) and 403 with `refusal` when they can."""
    if target is not None:
        return target
    if readable():
        raise ChangeRefused(refusal)
    raise NotFound()
