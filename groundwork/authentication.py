"""DRF authentication that yields (user, Authority). The tenant is named only by the key itself or by
the `/t/<tenant>/` URL prefix, which must agree with what the caller may use."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication, get_authorization_header

from .selectors import AuthorityDenied, authority_for_api_key, authority_for_user
from .task_queue import enqueue_on_commit

# Usage is recorded at most this often per key, so authentication adds no write to most requests.
USE_RECORD_INTERVAL = timedelta(minutes=5)


class ServiceCaller:
    """Stands in for `request.user` when a service key calls: authenticated, not a Django user."""

    is_authenticated = True
    is_active = True
    is_anonymous = False
    is_staff = False
    pk = None

    def __init__(self, name: str) -> None:
        self.username = f"service:{name}"

    def __str__(self) -> str:
        return self.username


def url_tenant_slug(request) -> str | None:
    match = getattr(request._request, "resolver_match", None) if hasattr(request, "_request") else None
    if match is None:
        match = getattr(request, "resolver_match", None)
    return match.kwargs.get("tenant_slug") if match is not None else None


def _raise(denied: AuthorityDenied):
    if denied.not_found:
        raise exceptions.NotFound("Not found.")
    raise exceptions.AuthenticationFailed(str(denied))


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer gw_…` (or `Api-Key gw_…`)."""

    keywords = (b"bearer", b"api-key")

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in self.keywords:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Authorization header must be: Bearer <api key>")
        try:
            raw = parts[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("invalid API key") from exc
        try:
            authority, key = authority_for_api_key(raw_key=raw, tenant_slug=url_tenant_slug(request))
        except AuthorityDenied as denied:
            _raise(denied)
        now = timezone.now()
        if key.last_used_at is None or now - key.last_used_at > USE_RECORD_INTERVAL:
            enqueue_on_commit("groundwork.tasks.api_key_use_record_task", key.pk, str(uuid.uuid4()), now.isoformat())
        user = key.owner if key.owner_id else ServiceCaller(authority.service_name or "service")
        return user, authority

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'


class SessionAuthorityAuthentication(SessionAuthentication):
    def authenticate(self, request):
        result = super().authenticate(request)
        if result is None:
            return None
        user, _ = result
        try:
            authority = authority_for_user(user=user, tenant_slug=url_tenant_slug(request))
        except AuthorityDenied as denied:
            _raise(denied)
        return user, authority
