"""A real local HTTP server speaking the OpenAI protocol, so model-client code runs for real in tests.

Only the model behind it is scripted: embeddings are deterministic pseudo-random unit vectors seeded
from the text, chat replies come from a queue the test fills. Every request is recorded.

    def test_x(fake_openai):
        fake_openai.script_chat("hello", {"verdict": "same"}, [ScriptedCall("search", {"q": "x"})])
        endpoint = ModelEndpoint(fake_openai.url)
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class ScriptedCall:
    """A tool call the fake model makes; `arguments` may be a dict (sent as JSON text) or raw text."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass
class Reply:
    """One scripted chat reply. Plain `str` (content), `dict` (JSON content) and `list[ScriptedCall]`
    are shorthands for it; a callable receives the request body and returns any of these."""

    content: str | None = None
    tool_calls: list[ScriptedCall] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any


ReplySpec = str | dict | list | Reply | Callable[[dict], Any]


def fake_vector(text: str, dimension: int) -> list[float]:
    """The unit vector the fake server returns for `text` (deterministic across runs and processes)."""
    rng = random.Random(hashlib.sha256(text.encode("utf-8")).digest())
    raw = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


def _normalise_reply(spec: Any, body: dict) -> Reply:
    if callable(spec) and not isinstance(spec, Reply):
        spec = spec(body)
    if isinstance(spec, Reply):
        return spec
    if isinstance(spec, str):
        return Reply(content=spec)
    if isinstance(spec, dict):
        return Reply(content=json.dumps(spec))
    if isinstance(spec, list) and all(isinstance(c, ScriptedCall) for c in spec):
        return Reply(tool_calls=spec)
    raise TypeError(f"cannot script a chat reply from {spec!r}")


def _words(value: Any) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_words(v.get("text", "") if isinstance(v, dict) else v) for v in value)
    return 0


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and hung up leaves the handler writing to a closed socket; that is
        # the scenario under test, not a failure worth a traceback.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class FakeOpenAI:
    def __init__(self) -> None:
        self.embedding_dim = 8
        self.embedding_mode = "ok"  # "ok" | "zero" (all-zero vectors) | "wrong_dim" (embedding_dim + 1)
        self.reject_json_schema = False  # answer json_schema response_format with HTTP 400
        self.require_api_key: str | None = None  # when set, other keys get a 401 that echoes them, like OpenAI
        self.stream_drop_after: int | None = None  # close a stream after this many chunks, without [DONE]
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Any] = deque()
        self._failures: deque[int] = deque()
        self._stalls: deque[float] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- scripting ---------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script_chat(self, *replies: ReplySpec) -> None:
        with self._lock:
            self._replies.extend(replies)

    def fail_next(self, n: int, status: int = 500) -> None:
        with self._lock:
            self._failures.extend([status] * n)

    def recover(self) -> None:
        """Forget scripted failures and stalls not yet served: the service is healthy again."""
        with self._lock:
            self._failures.clear()
            self._stalls.clear()

    def stall_next(self, n: int, seconds: float) -> None:
        """Delay the next n responses by `seconds` before any byte is sent (to trigger client timeouts)."""
        with self._lock:
            self._stalls.extend([seconds] * n)

    def requests_to(self, path_suffix: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith(path_suffix)]

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # --- behaviour (called from handler threads) ---------------------------------------------------
    def _take(self, queue: deque) -> Any:
        with self._lock:
            return queue.popleft() if queue else None

    def embeddings(self, body: dict) -> dict:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        dimension = self.embedding_dim + (1 if self.embedding_mode == "wrong_dim" else 0)
        data = []
        for index, text in enumerate(inputs):
            vector = [0.0] * dimension if self.embedding_mode == "zero" else fake_vector(text, dimension)
            data.append({"object": "embedding", "index": index, "embedding": vector})
        # Real servers do not promise list order; answering reversed makes clients honour `index`.
        data.reverse()
        tokens = sum(_words(t) for t in inputs)
        return {"object": "list", "model": body.get("model"), "data": data,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def chat_reply(self, body: dict) -> Reply | None:
        spec = self._take(self._replies)
        return None if spec is None else _normalise_reply(spec, body)

    def usage_for(self, body: dict, reply: Reply) -> dict:
        prompt = reply.prompt_tokens
        if prompt is None:
            prompt = sum(_words(m.get("content")) for m in body.get("messages", []))
        completion = reply.completion_tokens
        if completion is None:
            completion = _words(reply.content or "") + sum(len(_args(c)) // 4 for c in reply.tool_calls)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _args(call: ScriptedCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _call_id(call: ScriptedCall, index: int) -> str:
    return call.id or f"call_{index}"


def _finish(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start:start + size]


class _Handler(BaseHTTPRequestHandler):
    server_fake: FakeOpenAI

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    def _send_json(self, status: int, payload: dict) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _error(self, status: int, message: str, *, param: str | None = None) -> None:
        self._send_json(status, {"error": {"message": message, "type": "invalid_request_error", "param": param}})

    def do_POST(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler's naming
        fake = self.server_fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        fake.requests.append(RecordedRequest(path=self.path, headers=dict(self.headers.items()), body=body))

        stall = fake._take(fake._stalls)
        if stall:
            time.sleep(stall)
        failure = fake._take(fake._failures)
        if failure:
            message = "Rate limit reached, slow down" if failure == 429 else "The server had an error"
            self._error(failure, message)
            return
        if fake.require_api_key is not None:
            presented = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            if presented != fake.require_api_key:
                self._error(401, f"Incorrect API key provided: {presented}.")
                return
        if not isinstance(body, dict):
            self._error(400, "We could not parse the JSON body of your request.")
            return

        if self.path == "/v1/embeddings":
            self._send_json(200, fake.embeddings(body))
        elif self.path == "/v1/chat/completions":
            self._chat(body)
        else:
            self._error(404, f"Unknown path {self.path}")

    def _chat(self, body: dict) -> None:
        fake = self.server_fake
        response_format = body.get("response_format") or {}
        if fake.reject_json_schema and response_format.get("type") == "json_schema":
            self._error(400, "response_format of type 'json_schema' is not supported by this model",
                        param="response_format")
            return
        reply = fake.chat_reply(body)
        if reply is None:
            # 400 rather than 500 so the client fails at once with this message instead of retrying.
            self._error(400, "fake_openai: no scripted chat reply left")
            return
        if body.get("stream"):
            self._stream(body, reply)
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": _call_id(c, i), "type": "function", "function": {"name": c.name, "arguments": _args(c)}}
                for i, c in enumerate(reply.tool_calls)
            ]
        self._send_json(200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
            "usage": fake.usage_for(body, reply),
        })

    def _stream(self, body: dict, reply: Reply) -> None:
        fake = self.server_fake
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": body.get("model")}

        def chunk(delta: dict, finish: str | None = None) -> dict:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        chunks = [chunk({"role": "assistant", "content": ""})]
        chunks += [chunk({"content": piece}) for piece in _pieces(reply.content or "", 5)]
        for index, call in enumerate(reply.tool_calls):
            chunks.append(chunk({"tool_calls": [{
                "index": index, "id": _call_id(call, index), "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }]}))
            # Arguments arrive in small pieces keyed only by index, as real servers send them.
            chunks += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                       for piece in _pieces(_args(call), 7)]
        chunks.append(chunk({}, _finish(reply)))
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": fake.usage_for(body, reply)})

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(b": keep-alive comment\n\n")
        for sent, payload in enumerate(chunks):
            if fake.stream_drop_after is not None and sent >= fake.stream_drop_after:
                self.wfile.flush()
                return  # HTTP/1.0: closing the connection ends the body, without [DONE]
            self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def wrong_width_embedder(settings, fake: FakeOpenAI) -> Iterator[None]:
    """Semantic evidence required, and the configured embedder (this fake) answers 8-wide vectors while the active
    space is 384 wide: retrieval must be unavailable, not empty. The embedder is reset on the way out."""
    from knowledge.embedders import embedder_reset
    from knowledge.embedding import space_activate

    settings.RETRIEVAL_REQUIRE_SEMANTIC = True
    settings.EMBEDDER, settings.EMBEDDING_URL, settings.EMBEDDING_MODEL = "openai", fake.url, "m"
    settings.MODEL_EMBEDDING_DIM = None
    fake.embedding_dim = 8
    embedder_reset()
    space_activate(model_id="m", dimension=384)
    try:
        yield
    finally:
        embedder_reset()
