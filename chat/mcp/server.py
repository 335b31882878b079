"""The SDK's low-level MCP server, built for one caller.

The caller's Authority is resolved before the server exists (from the API key: `/mcp`'s authentication or
`mcp_stdio`'s environment) and closed over by the handlers: nothing in a request's headers, body or tool
arguments can name another. The low-level server, not MCPServer: MCPServer calls `logging.basicConfig` when built
and validates arguments with pydantic's wording; here the REST endpoints' serializers validate, so a tool refuses
exactly what its endpoint refuses, in the same words.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.core.exceptions import ValidationError as DjangoValidationError
from mcp import MCPError
from mcp.server.lowlevel import Server
from mcp_types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)
from pydantic import ValidationError as PydanticValidationError
from rest_framework.exceptions import ValidationError

from groundwork.authority import Authority
from groundwork.database_unavailable import DETAIL as DATABASE_UNAVAILABLE
from groundwork.database_unavailable import database_unavailable
from groundwork.rls import tenant_scope
from groundwork.selectors import AuthorityDenied

from .tools import TOOLS, ToolInputError, ToolUnavailable, errors_text

logger = logging.getLogger(__name__)

SERVER_NAME = "groundwork"
INSTRUCTIONS = ("Groundwork answers only from the records this API key may read. kb_search returns citable chunks, "
                "findings_query dated claims with their evidence, answer a grounded answer with citations. Cite "
                "records by their viewer_url or record_url.")


def tools_list() -> list[Tool]:
    return [Tool(name=t.name, title=t.title, description=t.description, input_schema=t.input_schema,
                 annotations=ToolAnnotations(read_only_hint=t.read_only, open_world_hint=False))
            for t in TOOLS.values()]


def tool_error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def tool_call(resolve: Callable[[], Authority], name: str, arguments: dict) -> CallToolResult:
    """Run one tool as the caller `resolve` names now (a revoked key or a removed owner stops the next call, as
    it stops the next REST request), under the caller's database scope: row-level security's scope is set here,
    at the tool boundary, for every transport (stdio has no request to bind it)."""
    tool = TOOLS.get(name)
    if tool is None:
        return tool_error(f"unknown tool {name!r}; the tools are: {', '.join(TOOLS)}")
    try:
        authority = resolve()
        with tenant_scope(authority):
            payload = tool.run(authority, arguments)
    except AuthorityDenied as exc:
        return tool_error(f"API key refused: {exc}")
    except ToolInputError as exc:
        return tool_error(f"invalid arguments for {name}: {exc}")
    except ValidationError as exc:  # a service's own refusal (DRF)
        return tool_error(f"{name} refused: {errors_text(exc.detail)}")
    except DjangoValidationError as exc:
        return tool_error(f"{name} refused: {' '.join(exc.messages)}")
    except ToolUnavailable as exc:
        return tool_error(str(exc))
    except Exception as exc:
        # The SDK would send `str(exc)` to the client (SQL, paths, values); like the REST API's 503 and 500 pages,
        # the client learns only that it failed, and the log keeps the rest.
        if database_unavailable(exc):
            logger.warning("mcp tool %s: database unavailable: %s", name, type(exc).__name__)
            return tool_error(DATABASE_UNAVAILABLE)
        logger.exception("mcp tool %s failed", name)
        return tool_error(f"{name} failed with an internal error (logged); nothing more is known to the caller")
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload))], structured_content=payload)


@contextmanager
def event_loop_detached() -> Iterator[None]:
    """The tool runs inline, on the thread that runs the event loop and owns the database connection.

    Django refuses ORM calls on a thread with a running event loop, because they would block every other coroutine
    of a shared loop. This loop is not shared: `/mcp` runs one per request on the request's own thread, and stdio
    one for its single client; while a tool runs there is nothing else for it to do. So the loop is set aside for
    the call instead of handing it to another thread (asgiref's sync_to_async): each hand-off between threads cost
    a millisecond or more under load, and the GIL contention slowed the search itself (benchmarks/chat/mcp.py).
    """
    loop = asyncio.get_running_loop()
    asyncio._set_running_loop(None)
    try:
        yield
    finally:
        asyncio._set_running_loop(loop)


def params_refusal_text(method: str, exc: PydanticValidationError) -> str:
    """A malformed request's params in words: each field and what it must be ("tools/call: arguments: Input
    should be a valid dictionary"), never the values sent."""
    problems = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in error.get("loc", ()) if part not in ("params",))
        problems.append(f"{where}: {error['msg']}" if where else error["msg"])
    return f"invalid params for {method}: " + "; ".join(dict.fromkeys(problems))


async def params_errors_named(ctx, call_next):
    """Server middleware: the SDK answers malformed params with -32602 and an empty message (it keeps pydantic's
    text off the wire); this names the fields at fault instead, in the same error."""
    try:
        return await call_next(ctx)
    except PydanticValidationError as exc:
        raise MCPError(code=INVALID_PARAMS, message=params_refusal_text(ctx.method, exc)) from None


def mcp_server_build(resolve: Callable[[], Authority]) -> Server:
    """A server whose tools act as the caller `resolve` returns, and nobody else. `/mcp` resolves the caller once
    per request (before the server exists); stdio re-reads its key on every call. The server must run on an
    event loop of its own (`anyio.run` on the thread whose database connection the tools use)."""

    async def on_list_tools(ctx, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=tools_list())

    async def on_call_tool(ctx, params: CallToolRequestParams) -> CallToolResult:
        with event_loop_detached():
            return tool_call(resolve, params.name, params.arguments or {})

    server = Server(SERVER_NAME, instructions=INSTRUCTIONS, on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    # The SDK's only default middleware is OpenTelemetry (a span per message); nothing here exports traces, and it
    # was a tenth of the SDK's time per request. Emptying the list is the SDK's documented opt-out.
    server.middleware.clear()
    server.middleware.append(params_errors_named)
    return server
