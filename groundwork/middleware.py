"""Middlewares: a query string too big to parse is refused before anything reads it, every error under the API's
paths is JSON (ApiErrorsJsonMiddleware), and every HTML page the product renders gets a strict
Content-Security-Policy.

The pages load scripts and styles only from our own static files (no inline <script>, <style> or style=""),
so the policy can forbid everything else: a hostile record shown in a page cannot run code, load a remote
resource or post a form elsewhere. The Django admin and the API docs (Swagger UI / ReDoc, which need inline
script) are left out. A response that already carries a policy (chat's `with_csp`) keeps its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core.exceptions import TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

CSP_DIRECTIVES: tuple[tuple[str, str], ...] = (
    ("default-src", "'self'"),
    ("img-src", "'self'"),
    ("script-src", "'self'"),
    ("style-src", "'self'"),
    ("object-src", "'none'"),
    ("base-uri", "'none'"),
    ("frame-ancestors", "'none'"),
    ("form-action", "'self'"),
    ("connect-src", "'self'"),
)
API_PATH = re.compile(r"^/(?:t/[^/]+/)?api/")
# Paths whose pages are not ours to restrict.
EXEMPT_PREFIXES = ("/admin/", "/api/docs", "/api/redoc")


def content_security_policy() -> str:
    return "; ".join(f"{name} {value}" for name, value in CSP_DIRECTIVES)


class ContentSecurityPolicyMiddleware:
    # Both modes, so streamed answers under ASGI are not pushed through a thread.
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response
        self.policy = content_security_policy()
        if iscoroutinefunction(self.get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest):
        if iscoroutinefunction(self):
            return self._acall(request)
        return self._apply(request, self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return self._apply(request, await self.get_response(request))

    def _apply(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if request.path.startswith(EXEMPT_PREFIXES):
            return response
        if response.get("Content-Type", "").startswith("text/html") and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response


class _SyncAndAsyncMiddleware:
    """A middleware that serves both sync and async stacks: it becomes a coroutine function when the next
    handler is one (Django's adaptation rule), and subclasses branch on that in `__call__`."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response
        if iscoroutinefunction(self.get_response):
            markcoroutinefunction(self)


# What an API error says when the answer was not the API's own (an unrouted path, another view's refusal, Django's
# DEBUG pages): the words DRF and groundwork.pages use for the same statuses.
_API_ERROR_DETAIL = {400: "Bad request.", 401: "Authentication credentials were not provided.",
                     403: "You do not have permission to perform this action.", 404: "Not found.",
                     413: "Request body too large.", 500: "Something went wrong on our side."}
# Headers an error answer needs to be acted on; kept when its body is replaced.
_KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate", "Vary")


class ApiErrorsJsonMiddleware(_SyncAndAsyncMiddleware):
    """Every error answer under the API's paths is JSON `{"detail": …}`, with DEBUG on as with it off: Django's
    debug pages (the URL list of a 404, the traceback of a 500) and the HTML refusals of views that are not the
    API's reached API clients as HTML — and a production server started with DEBUG on showed them tracebacks."""

    def __call__(self, request: HttpRequest):
        if iscoroutinefunction(self):
            return self._acall(request)
        return self._apply(request, self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return self._apply(request, await self.get_response(request))

    @staticmethod
    def _apply(request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if response.status_code < 400 or getattr(response, "streaming", False) or not API_PATH.match(request.path):
            return response
        # Pages and plain text only: an API answer in another format it offers (the schema's YAML) is the API's.
        content_type = response.get("Content-Type", "")
        if content_type and not content_type.startswith(("text/html", "text/plain")):
            return response
        status = response.status_code
        detail = f'Method "{request.method}" not allowed.' if status == 405 else _API_ERROR_DETAIL.get(
            status, f"{response.reason_phrase}.")
        replaced = JsonResponse({"detail": detail}, status=status)
        for name in _KEPT_HEADERS:
            if name in response:
                replaced[name] = response[name]
        return replaced


class QueryStringLimitMiddleware(_SyncAndAsyncMiddleware):
    """More query parameters than DATA_UPLOAD_MAX_NUMBER_FIELDS: a 400 with a message, before anything reads
    `request.GET`. Django raises TooManyFieldsSent on every read of it, and everything after the first read
    reads it again — DRF's content negotiation inside its own error handling, the DEBUG error page — so the
    request ended in a 500 (issue #11: a 5xx on hostile input is a bug)."""

    def __call__(self, request: HttpRequest):
        refusal = self._refusal(request)
        if iscoroutinefunction(self):
            return self._acall(request, refusal)
        return refusal or self.get_response(request)

    async def _acall(self, request: HttpRequest, refusal: HttpResponse | None) -> HttpResponse:
        return refusal or await self.get_response(request)

    @staticmethod
    def _refusal(request: HttpRequest) -> HttpResponse | None:
        try:
            request.GET  # noqa: B018 — parsing is the check; the result is cached on the request
        except TooManyFieldsSent:
            message = f"Too many query parameters: the limit is {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS}."
            if API_PATH.match(request.path):
                return JsonResponse({"detail": message}, status=400)
            return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
        return None


class DatabaseScopeMiddleware(_SyncAndAsyncMiddleware):
    """Each request starts with no database scope — its queries see no tenant rows — until authentication binds
    the caller's (groundwork/rls.py). A streamed body is produced after the view returns, so its iterator runs
    under the scope the view ended with."""

    def __call__(self, request: HttpRequest):
        if iscoroutinefunction(self):
            return self._acall(request)
        from .rls import current_scope, request_scope_enter, scope_reset

        tokens = request_scope_enter()
        try:
            response = self.get_response(request)
            scope = current_scope()
        finally:
            scope_reset(tokens)
        return _streamed_in_scope(response, scope)

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        from .rls import current_scope, request_scope_enter, scope_reset

        tokens = request_scope_enter()
        try:
            response = await self.get_response(request)
            scope = current_scope()
        finally:
            scope_reset(tokens)
        return _streamed_in_scope(response, scope)


def _streamed_in_scope(response: HttpResponse, scope):
    if not getattr(response, "streaming", False):
        return response
    from .rls import scope_reset, scope_set

    # Read before the assignment below: the property would otherwise hand back our own generator.
    original = response.streaming_content
    if response.is_async:
        async def content():
            iterator = aiter(original)
            while True:
                tokens = scope_set(scope)
                try:
                    chunk = await anext(iterator)
                except StopAsyncIteration:
                    return
                finally:
                    scope_reset(tokens)
                yield chunk
    else:
        def content():
            iterator = iter(original)
            while True:
                tokens = scope_set(scope)
                try:
                    chunk = next(iterator)
                except StopIteration:
                    return
                finally:
                    scope_reset(tokens)
                yield chunk
    response.streaming_content = content()
    return response
