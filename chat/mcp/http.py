"""`/mcp`: the SDK's Streamable HTTP transport, driven from a Django view.

Stateless and JSON-response mode: every POST is one complete exchange (no session to keep between requests or
across worker processes, no open SSE stream holding a worker), which is what lets a synchronous Django view serve
it. The view has authenticated the caller already (the REST API's key authentication); the SDK sees the request
without its credentials and answers through a server built for that caller alone (chat/mcp/server.py).
"""

from __future__ import annotations

import functools

import anyio
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from groundwork.api import AuthorityAPIView
from groundwork.authentication import ApiKeyAuthentication

from .server import mcp_server_build

# The largest tool call is an answer's 4,000-character question; a body past this is a 413 from the SDK (its own
# default is 4 MiB) before anything parses it.
MAX_BODY_BYTES = 1024 * 1024
# Never handed to the SDK: the key was read by authentication; cookies mean nothing here.
_WITHHELD_HEADERS = frozenset({b"authorization", b"cookie"})


async def mcp_exchange(server: Server, *, method: str, headers: list[tuple[bytes, bytes]],
                       body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """One HTTP request through the SDK's session manager (a fresh one per request: stateless mode keeps nothing
    between requests, and a manager runs only once). Returns (status, headers, body)."""
    manager = StreamableHTTPSessionManager(app=server, stateless=True, json_response=True,
                                           max_request_body_size=MAX_BODY_BYTES)
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "root_path": "", "query_string": b"",
             "headers": [(k, v) for k, v in headers if k not in _WITHHELD_HEADERS], "client": None, "server": None}
    delivered = False
    response: dict = {"status": 500, "headers": [], "body": []}

    async def receive() -> dict:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()  # the client stays connected until the response is complete
        raise AssertionError("unreachable")

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            response["status"], response["headers"] = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            response["body"].append(message.get("body", b""))

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return response["status"], response["headers"], b"".join(response["body"])


def request_headers(request) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.items()]


class McpApi(AuthorityAPIView):
    # API keys only: no session cookie (so no CSRF surface); 401 with a JSON body without a valid key, exactly as
    # the REST API answers. The schema leaves it out: it speaks JSON-RPC, not REST.
    authentication_classes = [ApiKeyAuthentication]

    @extend_schema(exclude=True)
    def post(self, request, **kwargs):
        authority = self.authority
        server = mcp_server_build(lambda: authority)
        # The request's own event loop, on this thread (see chat/mcp/server.py, event_loop_detached).
        status, headers, body = anyio.run(functools.partial(
            mcp_exchange, server, method="POST", headers=request_headers(request), body=request.body))
        response = HttpResponse(body, status=status)
        for name, value in headers:
            if name.lower() != b"content-length":
                response[name.decode("latin-1")] = value.decode("latin-1")
        return response
