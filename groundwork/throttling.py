"""The client address that sign-in throttling (django-axes) counts failures against.

Behind N reverse proxies REMOTE_ADDR is the nearest proxy, so every visitor would share one address. With
TRUSTED_PROXY_COUNT=N the address is the one the outermost of our N proxies saw: the N-th entry from the
right of X-Forwarded-For. Entries further left are written by the client and are never trusted.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str | None:
    remote = request.META.get("REMOTE_ADDR")
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies <= 0:
        return remote
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    if len(hops) < proxies:  # the request skipped a proxy we expect: fall back to what we can see
        return remote
    return hops[-proxies]
