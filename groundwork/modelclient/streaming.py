"""Streaming chat completions over Server-Sent Events, with tool-call deltas assembled."""

from __future__ import annotations

import http.client
import json
import logging
from collections.abc import Iterator
from typing import Any

from .chat import _chat_body, _tool_calls  # noqa: F401
from .transport import (
    _ERROR_BODY_LIMIT,
    ModelEndpoint,
    ModelError,
    ModelOutputInvalid,
    StreamEvent,
    ToolCall,
    _error_detail,
    _open,
    _redact,
    _retrying,
    _usage,
)

logger = logging.getLogger(__name__)


# --- streaming -----------------------------------------------------------------------------------------


def _sse_data(response: http.client.HTTPResponse, first_line: bytes) -> Iterator[str]:
    """The `data` payloads of a Server-Sent Events stream, multi-line data joined with newlines."""
    lines: list[str] = []
    pending = first_line
    while True:
        raw = pending if pending is not None else response.readline()
        pending = None
        if not raw:
            if lines:
                yield "\n".join(lines)
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if lines:
                yield "\n".join(lines)
                lines = []
        elif line.startswith("data:"):
            lines.append(line[5:].removeprefix(" "))
        # comments (":" keep-alives), "event:", "id:" and "retry:" lines carry nothing we use


class _ToolCallParts:
    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []

    def add(self, delta: dict[str, Any]) -> None:
        if delta.get("id") and not self.id:
            self.id = str(delta["id"])
        function = delta.get("function") or {}
        name = function.get("name")
        # OpenAI sends the name once; some servers repeat it in every delta, a few split it.
        if name and name != self.name:
            self.name = name if not self.name else self.name + name
        if function.get("arguments"):
            self.arguments.append(str(function["arguments"]))


def chat_stream(
    endpoint: ModelEndpoint,
    *,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    tool_choice: str | dict[str, Any] | None = None,
    temperature: float = 0.0,
) -> Iterator[StreamEvent]:
    """Stream a chat completion: a "content" event per text delta as it arrives, then one "done" event.

    The request is retried like any other until the first byte of the body arrives; after that a
    failure raises `ModelError` (not retryable here), because the caller has already shown part of the
    answer and a silent restart would duplicate it.
    """
    body = _chat_body(
        model=model, messages=messages, tools=tools, tool_choice=tool_choice,
        response_format=None, temperature=temperature, max_tokens=None,
    )
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    url = endpoint.url("chat/completions")

    def attempt() -> tuple[http.client.HTTPResponse, bytes]:
        response = _open(endpoint, "chat/completions", body, stream=True)
        try:
            first = response.readline()
        except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            response.close()
            raise ModelError(f"POST {url} failed before the first byte: {type(exc).__name__}",
                             retryable=True) from None
        return response, first

    response, first = None, b""
    for attempt_state in _retrying(endpoint):
        with attempt_state:
            response, first = attempt()
    assert response is not None

    content_seen = False
    finish_reason: str | None = None
    usage: dict[str, int] = {}
    calls: dict[int, _ToolCallParts] = {}
    done = False
    try:
        with response:
            for data in _sse_data(response, first):
                if data.strip() == "[DONE]":
                    done = True
                    break
                try:
                    chunk = json.loads(data)
                except ValueError:
                    raise ModelOutputInvalid("stream chunk is not JSON", raw=data[:_ERROR_BODY_LIMIT]) from None
                if isinstance(chunk, dict) and chunk.get("error"):
                    raise ModelError(_redact(f"stream error: {_error_detail(json.dumps(chunk).encode())}",
                                             endpoint))
                if chunk.get("usage"):
                    usage = _usage(chunk["usage"])
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        content_seen = True
                        yield StreamEvent(kind="content", content=delta["content"])
                    for part in delta.get("tool_calls") or []:
                        calls.setdefault(int(part.get("index", 0)), _ToolCallParts()).add(part)
                    if choice.get("finish_reason"):
                        finish_reason = choice["finish_reason"]
    except (TimeoutError, ConnectionError, http.client.HTTPException, UnicodeDecodeError) as exc:
        raise ModelError(f"stream from {url} interrupted: {type(exc).__name__}", retryable=False) from None
    if not done and finish_reason is None:
        # Without [DONE] or a finish_reason we cannot tell a complete answer from a dropped connection.
        state = "after partial content" if content_seen else "before any content"
        raise ModelError(f"stream from {url} ended {state} without finishing", retryable=False)
    yield StreamEvent(
        kind="done",
        tool_calls=[ToolCall(id=p.id, name=p.name, arguments="".join(p.arguments)) for _, p in sorted(calls.items())],
        finish_reason=finish_reason,
        usage=usage,
    )

