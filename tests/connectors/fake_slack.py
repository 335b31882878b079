"""A fake Slack Web API on a loopback port (threaded http.server), serving the documented response shapes:
`{"ok": true, <items>, "response_metadata": {"next_cursor": ...}}`, cursor pagination over pages of `page_size`,
`oldest` on conversations.history, and HTTP 429 with Retry-After when a test asks for one. Tests change
`FakeSlack.users / channels / members / messages` between syncs and read `calls` to see what was asked."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

TOKEN = "xoxb-test-token"


class FakeSlack:
    def __init__(self, *, page_size: int = 2) -> None:
        self.page_size = page_size
        self.users: list[dict] = []
        self.channels: list[dict] = []
        self.members: dict[str, list[str]] = {}
        self.messages: dict[str, list[dict]] = {}  # channel → every message, replies included
        self.refuse: dict[str, str] = {}  # channel → error code its history answers with
        self.rate_limits: list[tuple[str, int]] = []  # (method, Retry-After) to answer once each, in order
        self.calls: list[tuple[str, dict]] = []
        self.lock = threading.Lock()

    def _page(self, items: list, params: dict, key: str) -> dict:
        start = int(params.get("cursor") or 0)
        end = start + self.page_size
        return {"ok": True, key: items[start:end],
                "response_metadata": {"next_cursor": str(end) if end < len(items) else ""}}

    def answer(self, method: str, params: dict) -> tuple[int, dict, dict]:
        with self.lock:
            self.calls.append((method, params))
            if self.rate_limits and self.rate_limits[0][0] == method:
                _, wait = self.rate_limits.pop(0)
                return 429, {"Retry-After": str(wait)}, {"ok": False, "error": "ratelimited"}
        channel = params.get("channel", "")
        if method == "users.list":
            return 200, {}, self._page(self.users, params, "members")
        if method == "conversations.list":
            wanted = set(params.get("types", "public_channel").split(","))
            shown = [c for c in self.channels if ("private_channel" if c.get("is_private") else "public_channel")
                     in wanted]
            return 200, {}, self._page(shown, params, "channels")
        if method == "conversations.members":
            return 200, {}, self._page(self.members.get(channel, []), params, "members")
        if method == "conversations.history":
            if channel in self.refuse:
                return 200, {}, {"ok": False, "error": self.refuse[channel]}
            oldest = float(params.get("oldest") or 0)
            # Newest first, top-level messages only (a reply shows in history only as its parent's reply_count).
            roots = [dict(m, reply_count=self._replies(channel, m["ts"])) if self._replies(channel, m["ts"]) else m
                     for m in self.messages.get(channel, [])
                     if float(m["ts"]) >= oldest and m.get("thread_ts", m["ts"]) == m["ts"]]
            return 200, {}, self._page(sorted(roots, key=lambda m: -float(m["ts"])), params, "messages")
        if method == "conversations.replies":
            thread = [m for m in self.messages.get(channel, []) if m.get("thread_ts") == params.get("ts")]
            return 200, {}, self._page(sorted(thread, key=lambda m: float(m["ts"])), params, "messages")
        return 200, {}, {"ok": False, "error": "unknown_method"}

    def _replies(self, channel: str, ts: str) -> int:
        return sum(1 for m in self.messages.get(channel, []) if m.get("thread_ts") == ts and m["ts"] != ts)

    def methods(self) -> list[str]:
        return [method for method, _ in self.calls]


def serve(fake: FakeSlack) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            url = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            params = {k: v[0] for k, v in {**parse_qs(url.query), **parse_qs(body)}.items()}
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                status, headers, payload = 200, {}, {"ok": False, "error": "invalid_auth"}
            else:
                status, headers, payload = fake.answer(url.path.rsplit("/", 1)[-1], params)
            data = json.dumps(payload).encode()
            self.send_response(status)
            for key, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST  # noqa: N815

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/api/"
