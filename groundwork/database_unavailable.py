"""A saturated or unreachable database answers 503 with `Retry-After`, never 500.

Connection-level failures reach us as Django's OperationalError: no pooled connection free within
DATABASE_POOL_TIMEOUT (psycopg_pool.PoolTimeout), "sorry, too many clients", the server restarting or shutting
down, a refused or dropped connection; InterfaceError is a connection that was already closed under us. The
other OperationalErrors (a statement timeout, a lock or serialization conflict) are just as transient. None of
them says anything about the request: the same request works once the database is back, so the caller is told
to retry rather than shown a bug. The process recovers by itself: the pool (or, without one, Django's
CONN_HEALTH_CHECKS) replaces a broken connection on the next request.

Three places apply the rule, so it holds wherever the failure surfaces: DRF's exception handler (API views,
groundwork.api), `DatabaseUnavailableMiddleware.process_exception` (page views), and the 500 handler
(groundwork.pages.error_500: a failure inside a middleware, outside any view).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from rest_framework.exceptions import APIException

logger = logging.getLogger(__name__)

DETAIL = "The database is unavailable or at capacity right now; nothing was changed. Try again shortly."


def database_unavailable(exc: BaseException | None) -> bool:
    return isinstance(exc, OperationalError | InterfaceError)


class DatabaseUnavailable(APIException):
    """DRF's form of the failure: its exception handler turns `wait` into the Retry-After header."""

    status_code = 503
    default_detail = DETAIL
    default_code = "database_unavailable"

    def __init__(self) -> None:
        super().__init__()
        self.wait = settings.DATABASE_RETRY_AFTER


def _is_api(request: HttpRequest) -> bool:
    path = request.path
    return path.startswith("/api/") or (path.startswith("/t/") and "/api/" in path)


def database_unavailable_response(request: HttpRequest, exc: BaseException) -> HttpResponse:
    """503 JSON for the API, the branded 503 page for people; both with Retry-After."""
    logger.warning("database unavailable on %s %s: %s: %s", request.method, request.path, type(exc).__name__,
                   str(exc).strip().splitlines()[0] if str(exc).strip() else "")
    if _is_api(request):
        response: HttpResponse = JsonResponse({"detail": DETAIL, "code": "database_unavailable"}, status=503)
    else:
        # No request context: context processors read the session and the user, i.e. the database.
        response = HttpResponse(loader.get_template("503.html").render(), status=503)
    response["Retry-After"] = str(settings.DATABASE_RETRY_AFTER)
    return response


class DatabaseUnavailableMiddleware:
    """Maps a connection-level database failure raised by a view to the 503 response."""

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if database_unavailable(exception):
            return database_unavailable_response(request, exception)
        return None
