"""Endpoint, typed errors, result types and the retrying HTTP transport shared by every call."""

from __future__ import annotations

import http.client
import json
import logging
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

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


