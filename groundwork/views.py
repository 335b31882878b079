"""Unauthenticated endpoints: /healthz, which reports component status and never tenant data, the Swagger UI
page, and the throttled password-reset form."""

from __future__ import annotations

import logging
import math
import smtplib

from django.conf import settings
from django.contrib.auth.views import PasswordResetView
from django.db import connection
from django.http import HttpResponse, HttpResponseRedirect, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from drf_spectacular.views import SpectacularSwaggerView

from .hooks import health_checks
from .replicas import replica_aliases, replica_health
from .throttling import client_ip, reset_throttle_wait

logger = logging.getLogger(__name__)


def _database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        return {"ok": True, "pgvector": row[0] if row else None, "embedded": settings.EMBEDDED_DATABASE}
    except Exception as exc:  # health must report, not raise
        return {"ok": False, "error": type(exc).__name__}


def _broker() -> dict:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return {"ok": True, "mode": "inline"}
    from kombu import Connection

    try:
        with Connection(settings.CELERY_BROKER_URL, connect_timeout=1) as conn:
            conn.ensure_connection(max_retries=1, timeout=1)
        return {"ok": True, "mode": "workers"}
    except Exception as exc:
        return {"ok": False, "mode": "workers", "error": type(exc).__name__}


@never_cache
@require_safe  # GET and HEAD: monitors and load balancers probe with either
def healthz(request):
    components = {"database": _database(), "broker": _broker()}
    if replica_aliases():
        # Each replica's state; never degraded by them (the primary serves every read a replica cannot).
        try:
            components["replicas"] = replica_health()
        except Exception as exc:  # the primary is down: the database component already says so
            components["replicas"] = {"ok": True, "error": type(exc).__name__}
    for name, check in health_checks().items():
        try:
            components[name] = check()
        except Exception as exc:
            components[name] = {"ok": False, "error": type(exc).__name__}
    ok = all(component.get("ok") for component in components.values())
    response = JsonResponse({"status": "ok" if ok else "degraded", **components}, status=200 if ok else 503)
    if not components["database"]["ok"]:
        response["Retry-After"] = str(settings.DATABASE_RETRY_AFTER)
    return response


class SwaggerView(SpectacularSwaggerView):
    """Swagger UI. OPTIONS answers with the allowed methods alone: DRF's metadata response went through the
    page's HTML template, which cannot render it (a 500)."""

    def options(self, request, *args, **kwargs):
        response = HttpResponse()
        response["Allow"] = ", ".join(self.allowed_methods)
        return response


class ThrottledPasswordResetView(PasswordResetView):
    """Django's reset form, throttled per address and per client (reset_throttle_wait): one address was sent seven
    e-mails in a second. Over a limit the form answers 429 with when to try again; under it, the answer is the
    same whether or not an account has the address — also when the mail server fails, which is logged (a 500
    there, and only where an account exists, would tell which addresses have one)."""

    def form_valid(self, form):
        wait = reset_throttle_wait(email=form.cleaned_data["email"], client=client_ip(self.request))
        if wait:
            minutes = max(1, math.ceil(wait / 60))
            form.add_error(None, f"Too many reset requests for this address or from your network: try again in "
                                 f"{minutes} minute{'' if minutes == 1 else 's'}.")
            response = self.form_invalid(form)
            response.status_code = 429
            response["Retry-After"] = str(math.ceil(wait))
            return response
        try:
            return super().form_valid(form)
        except (OSError, smtplib.SMTPException):
            logger.exception("password reset e-mail could not be sent")
            return HttpResponseRedirect(self.get_success_url())
