"""One small client for OpenAI-compatible model servers (OpenAI, vLLM, llama.cpp, Ollama, LiteLLM ...).

Embeddings, fact extraction, consolidation verdicts and chat answers all speak to their model through
these four calls, so retries, timeouts, error typing and key hygiene live in one place. Only the
standard library does HTTP: the protocol is a handful of JSON POSTs and one SSE stream, and a vendor
SDK would pin us to one vendor's quirks.

Retry policy: connection errors, timeouts, HTTP 429 and 5xx are retried up to
`ModelEndpoint.max_attempts` times with a short random exponential wait; every other 4xx is raised at
once, because sending the same request again cannot fix it. A `Retry-After` header is deliberately not
honoured: a server asking for minutes would stall a web request or a Celery task past its time limit,
and the caller's own task retry is the right place for long back-off.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

logger = logging.getLogger(__name__)

# Waits between attempts: random in [0, min(_WAIT_MAX, _WAIT_MULTIPLIER * 2**n)] seconds. Kept small
# on purpose (see the module docstring); a model server that is down for longer is the caller's problem.
_WAIT_MULTIPLIER = 0.2
_WAIT_MAX = 2.0
_ERROR_BODY_LIMIT = 500
_USER_AGENT = "groundwork-modelclient/1"


@dataclass(frozen=True)
class ModelEndpoint:
    """Where a model server lives.

    `base_url` is the API root, e.g. `http://127.0.0.1:8080/v1`. It may be given with or without the
    trailing `/v1`: when the path does not end in `/v1`, `/v1` is appended (so `http://host:8080` and
    `http://host:8080/v1/` both mean `http://host:8080/v1`).
    """

    base_url: str
    api_key: str | None = None
    timeout: float = 30.0
    max_attempts: int = 4

    def __post_init__(self) -> None:
        # urllib would happily open file:// or ftp:// URLs; a misconfigured setting must not read local files.
        if not re.match(r"^https?://[^/]", self.base_url):
            raise ValueError(f"model endpoint base_url must be an http(s) URL, got {self.base_url!r}")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")

    @property
    def api_root(self) -> str:
        root = self.base_url.rstrip("/")
        return root if root.endswith("/v1") else root + "/v1"

    def url(self, path: str) -> str:
        return self.api_root + "/" + path.lstrip("/")

    def __repr__(self) -> str:  # the key must not end up in logs or tracebacks through repr()
        key = "set" if self.api_key else "none"
        return f"ModelEndpoint(base_url={self.base_url!r}, api_key=<{key}>, timeout={self.timeout})"


class ModelError(Exception):
    """A model call failed. `status` is the HTTP status when the server answered, None otherwise;
    `retryable` says whether the same request could succeed later (it already was retried here)."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class ModelOutputInvalid(ModelError):
    """The server answered, but its output is malformed or does not match the requested shape."""

    def __init__(self, message: str, *, raw: str | None = None) -> None:
        super().__init__(message, status=None, retryable=False)
        self.raw = raw


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text exactly as the model produced it; the caller parses and validates


@dataclass(frozen=True)
class ChatResult:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class StreamEvent:
    """One event of `chat_stream`: `kind` is "content" for each text delta (in `content`), then exactly
    one "done" carrying the assembled `tool_calls`, `finish_reason` and `usage` (empty if not sent)."""

    kind: str
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


# --- transport -----------------------------------------------------------------------------------------


def _redact(text: str, endpoint: ModelEndpoint) -> str:
    # Some servers echo the presented key in their 401 body ("Incorrect API key provided: sk-...").
    if endpoint.api_key:
        text = text.replace(endpoint.api_key, "[redacted]")
    return text


def _headers(endpoint: ModelEndpoint, *, stream: bool) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "text/event-stream" if stream else "application/json",
        "User-Agent": _USER_AGENT,
    }
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    return headers


def _error_detail(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        payload = json.loads(text)
    except ValueError:
        return text[:_ERROR_BODY_LIMIT]
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:_ERROR_BODY_LIMIT]
        if isinstance(error, str):
            return error[:_ERROR_BODY_LIMIT]
    return text[:_ERROR_BODY_LIMIT]


def _open(endpoint: ModelEndpoint, path: str, body: dict[str, Any], *, stream: bool) -> http.client.HTTPResponse:
    """One attempt: send the request and return the response once its status line says 2xx."""
    url = endpoint.url(path)
    request = urllib.request.Request(
        url, data=json.dumps(body).encode("utf-8"), headers=_headers(endpoint, stream=stream), method="POST"
    )
    try:
        return urllib.request.urlopen(request, timeout=endpoint.timeout)  # noqa: S310 - scheme checked in ModelEndpoint
    except urllib.error.HTTPError as exc:
        try:
            detail = _error_detail(exc.read())
        except (OSError, http.client.HTTPException):
            detail = exc.reason or ""
        finally:
            exc.close()
        status = exc.code
        raise ModelError(
            _redact(f"POST {url} failed: HTTP {status}: {detail}", endpoint),
            status=status,
            retryable=status == 429 or status >= 500,
        ) from None
    except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise ModelError(
            _redact(f"POST {url} failed: {type(reason).__name__}: {reason}", endpoint), retryable=True
        ) from None


def _retrying(endpoint: ModelEndpoint) -> Retrying:
    return Retrying(
        stop=stop_after_attempt(endpoint.max_attempts),
        wait=wait_random_exponential(multiplier=_WAIT_MULTIPLIER, max=_WAIT_MAX),
        retry=retry_if_exception(lambda exc: isinstance(exc, ModelError) and exc.retryable),
        before_sleep=lambda state: logger.warning(
            "model call attempt %s failed, retrying: %s", state.attempt_number, state.outcome.exception()
        ),
        reraise=True,
    )


def _post_json(endpoint: ModelEndpoint, path: str, body: dict[str, Any]) -> dict[str, Any]:
    def attempt() -> dict[str, Any]:
        url = endpoint.url(path)
        try:
            with _open(endpoint, path, body, stream=False) as response:
                raw = response.read()
        except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            # The body read can fail after a good status line; that is as transient as a refused connect.
            raise ModelError(f"POST {url} failed while reading: {type(exc).__name__}", retryable=True) from None
        try:
            payload = json.loads(raw)
        except ValueError:
            raise ModelOutputInvalid(f"POST {url} answered with non-JSON", raw=raw[:_ERROR_BODY_LIMIT].decode(
                "utf-8", errors="replace")) from None
        if not isinstance(payload, dict):
            raise ModelOutputInvalid(f"POST {url} answered with JSON that is not an object")
        return payload

    for attempt_state in _retrying(endpoint):
        with attempt_state:
            return attempt()
    raise AssertionError("unreachable: tenacity reraises the last error")  # pragma: no cover


def _usage(raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    return {
        "prompt_tokens": int(raw.get("prompt_tokens") or 0),
        "completion_tokens": int(raw.get("completion_tokens") or 0),
    }


# --- embeddings ----------------------------------------------------------------------------------------


def embeddings_create(endpoint: ModelEndpoint, *, model: str, inputs: list[str]) -> list[list[float]]:
    """Embed `inputs` in one request; the vectors come back in the order of `inputs`. Batching is the
    caller's choice (servers limit the inputs per request differently)."""
    if not inputs:
        return []
    payload = _post_json(endpoint, "embeddings", {"model": model, "input": list(inputs)})
    data = payload.get("data")
    if not isinstance(data, list) or len(data) != len(inputs):
        got = len(data) if isinstance(data, list) else type(data).__name__
        raise ModelOutputInvalid(f"embeddings: expected {len(inputs)} vectors, got {got}")
    try:
        # Servers may answer out of order; `index` is the contract, not the list position.
        ordered = sorted(data, key=lambda item: int(item["index"]))
        vectors = [[float(x) for x in item["embedding"]] for item in ordered]
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelOutputInvalid(f"embeddings: malformed item ({type(exc).__name__}: {exc})") from None
    if [int(item["index"]) for item in ordered] != list(range(len(inputs))):
        raise ModelOutputInvalid("embeddings: indexes do not cover the inputs exactly once")
    return vectors


# --- chat ----------------------------------------------------------------------------------------------


def _chat_body(
    *,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    tool_choice: str | dict[str, Any] | None,
    response_format: dict[str, Any] | None,
    temperature: float,
    max_tokens: int | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
    # Optional fields are left out rather than sent as null: several servers reject explicit nulls.
    if tools:
        body["tools"] = tools
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    if response_format is not None:
        body["response_format"] = response_format
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body


def _tool_calls(raw: Any) -> list[ToolCall]:
    calls = []
    for item in raw or []:
        function = item.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):  # a few servers send an object instead of JSON text
            arguments = json.dumps(arguments if arguments is not None else {})
        calls.append(ToolCall(id=str(item.get("id") or ""), name=str(function.get("name") or ""), arguments=arguments))
    return calls


def chat_complete(
    endpoint: ModelEndpoint,
    *,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    tool_choice: str | dict[str, Any] | None = None,
    response_format: dict[str, Any] | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> ChatResult:
    body = _chat_body(
        model=model, messages=messages, tools=tools, tool_choice=tool_choice,
        response_format=response_format, temperature=temperature, max_tokens=max_tokens,
    )
    payload = _post_json(endpoint, "chat/completions", body)
    try:
        choice = payload["choices"][0]
        message = choice["message"]
        return ChatResult(
            content=message.get("content"),
            tool_calls=_tool_calls(message.get("tool_calls")),
            finish_reason=choice.get("finish_reason"),
            usage=_usage(payload.get("usage")),
        )
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ModelOutputInvalid(f"chat completion without a usable choice ({type(exc).__name__})") from None


# (root URL, model, schema name) combinations known to be rejected as json_schema structured output, so
# later calls go straight to JSON mode instead of paying a failed round trip every time. The schema name
# is part of the key because some rejections are about one schema (strict mode forbids some keywords),
# not about the server. Per process; a restart probes again.
_JSON_SCHEMA_UNSUPPORTED: set[tuple[str, str, str]] = set()
_JSON_SCHEMA_LOCK = threading.Lock()
_REJECTION_HINTS = ("response_format", "json_schema", "json schema", "structured output", "schema")


def _rejects_json_schema(error: ModelError) -> bool:
    if error.status not in (400, 422):
        return False
    text = str(error).lower()
    return any(hint in text for hint in _REJECTION_HINTS)


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def _parse_json_output(content: str | None, schema: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
    if content is None or not content.strip():
        raise ModelOutputInvalid("structured output: the model returned no content", raw=content)
    text = content.strip()
    fenced = _FENCE.match(text)  # JSON mode on small local models sometimes still wraps the object in a fence
    if fenced:
        text = fenced.group(1)
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        truncated = " (output was cut off at max_tokens)" if finish_reason == "length" else ""
        raise ModelOutputInvalid(f"structured output is not valid JSON: {exc}{truncated}", raw=content) from None
    if not isinstance(parsed, dict):
        raise ModelOutputInvalid("structured output is not a JSON object", raw=content)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(parsed))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise ModelOutputInvalid(f"structured output does not match the schema at {where}: {error.message}",
                                 raw=content)
    return parsed


def chat_complete_json(
    endpoint: ModelEndpoint,
    *,
    model: str,
    messages: list[dict[str, Any]],
    schema: dict[str, Any],
    schema_name: str,
) -> tuple[dict[str, Any], dict[str, int]]:
    """Ask for one JSON object matching `schema`; return (parsed object, usage).

    Uses strict json_schema structured output. A server that rejects it (HTTP 400/422 naming
    response_format or the schema) is asked again in plain JSON mode with the schema spelled out in a
    system message; either way the answer is validated here, so callers get a schema-valid dict or
    `ModelOutputInvalid`.
    """
    key = (endpoint.api_root, model, schema_name)
    with _JSON_SCHEMA_LOCK:
        use_schema = key not in _JSON_SCHEMA_UNSUPPORTED
    if use_schema:
        try:
            result = chat_complete(
                endpoint, model=model, messages=messages,
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": schema_name, "schema": schema, "strict": True},
                },
            )
            return _parse_json_output(result.content, schema, result.finish_reason), result.usage
        except ModelError as exc:
            if not _rejects_json_schema(exc):
                raise
            logger.info("%s rejected json_schema output for %s; using JSON mode", endpoint.api_root, model)
            with _JSON_SCHEMA_LOCK:
                _JSON_SCHEMA_UNSUPPORTED.add(key)
    # JSON mode knows no schema, and OpenAI's JSON mode requires the word "JSON" in the prompt.
    instruction = {
        "role": "system",
        "content": "Reply with exactly one JSON object and nothing else. It must conform to this JSON Schema "
        f"named {schema_name!r}:\n{json.dumps(schema, separators=(',', ':'))}",
    }
    result = chat_complete(
        endpoint, model=model, messages=[instruction, *messages], response_format={"type": "json_object"}
    )
    return _parse_json_output(result.content, schema, result.finish_reason), result.usage


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
