"""Sign-in throttling (django-axes): the client address failures are counted against, and the lockout page; and
the password-reset throttle (reset_throttle_wait).

Behind N reverse proxies REMOTE_ADDR is the nearest proxy, so every visitor would share one address. With
TRUSTED_PROXY_COUNT=N the address is the one the outermost of our N proxies saw: the N-th entry from the
right of X-Forwarded-For. Entries further left are written by the client and are never trusted.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import re

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .sql import throttle_hit


def client_ip(request: HttpRequest) -> str | None:
    remote = request.META.get("REMOTE_ADDR")
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies <= 0:
        return remote
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    if len(hops) < proxies:  # the request skipped a proxy we expect: fall back to what we can see
        return remote
    # Only an address is counted: axes stores it in an inet column, where anything else failed the sign-in with a
    # 500 (a request that reached the app around its proxies can put any text there). Some proxies add the port.
    return _address(hops[-proxies]) or remote


def _address(hop: str) -> str | None:
    """The IP address of one X-Forwarded-For entry ("203.0.113.9", "203.0.113.9:4711", "[2001:db8::1]:443"),
    None when it is none."""
    with_port = _WITH_PORT.match(hop)
    try:
        return str(ipaddress.ip_address((with_port.group(1) or with_port.group(2)) if with_port else hop))
    except ValueError:
        return None


_WITH_PORT = re.compile(r"^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):\d{1,5}$")


# django-axes stores the username a sign-in tried in a 255-character column (AccessAttempt and AccessFailureLog);
# a longer one failed the insert with a DataError, a 500 for anyone posting the sign-in form (jazzband/django-axes
# #1381). No account's username is that long (150), so the cut merges no real user's attempts.
AXES_USERNAME_MAX = 255


def client_username(request: HttpRequest, credentials: dict | None = None) -> str | None:
    """The username failures are counted against (AXES_USERNAME_CALLABLE): axes' own choice, cut to its column."""
    field = settings.AXES_USERNAME_FORM_FIELD
    if credentials:
        username = credentials.get(field)
    else:
        username = getattr(request, "data", request.POST).get(field)
    return username[:AXES_USERNAME_MAX] if isinstance(username, str) else username


def lockout_response(request: HttpRequest, original_response=None, credentials: dict | None = None) -> HttpResponse:
    """The branded page for a locked-out username + address (django-axes' AXES_LOCKOUT_CALLABLE)."""
    from axes.helpers import get_client_username, get_cool_off

    cool_off = get_cool_off(request)
    minutes = math.ceil(cool_off.total_seconds() / 60) if cool_off else None
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes,
               "username": get_client_username(request, credentials) or ""}
    return render(request, "registration/lockout.html", context, status=429)


def _bucket_key(purpose: str, value: str) -> str:
    # Keyed: the table must not hold (or let anyone confirm) which addresses asked.
    return hmac.new(settings.SECRET_KEY.encode(), f"{purpose}\x1f{value}".encode(), hashlib.sha256).hexdigest()


def reset_throttle_wait(*, email: str, client: str | None) -> float:
    """Seconds until another password-reset e-mail may be asked for `email` or by `client`; 0.0 when it may be
    now. Counted per address (PASSWORD_RESET_PER_ADDRESS) and per client address (PASSWORD_RESET_PER_CLIENT) in
    PASSWORD_RESET_THROTTLE_WINDOW_S, every request alike: whether an account has the address changes nothing,
    so a refusal tells nothing about accounts."""
    window = settings.PASSWORD_RESET_THROTTLE_WINDOW_S
    waits = []
    for purpose, value, limit in (("reset-address", email.strip().lower(), settings.PASSWORD_RESET_PER_ADDRESS),
                                  ("reset-client", client or "-", settings.PASSWORD_RESET_PER_CLIENT)):
        hits, left = throttle_hit(key=_bucket_key(purpose, value), window_s=window)
        if hits > limit:
            waits.append(left)
    return max(waits, default=0.0)
