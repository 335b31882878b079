"""A loopback Slack Web API that serves a generated export (benchmarks/connectors/slack_export.py), for the live-API
part of the connectors bench: the documented response shapes, cursor pagination at Slack's usual page size of
200, history newest first with thread roots only (`reply_count`), replies per thread. Loopback only; the server
stops when the bench is done."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

BENCH_TOKEN = "xoxb-bench"
PAGE = 200


class ExportWebApi:
    def __init__(self, root: Path) -> None:
        self.users = json.loads((root / "users.json").read_text())
        public = json.loads((root / "channels.json").read_text())
        private = json.loads((root / "groups.json").read_text())
        self.channels = [{"id": c["id"], "name": c["name"], "is_private": False, "is_member": True} for c in public] \
            + [{"id": c["id"], "name": c["name"], "is_private": True, "is_member": True} for c in private]
        self.members = {c["id"]: c["members"] for c in private}
        self.roots: dict[str, list[dict]] = {}
        self.threads: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for channel in self.channels:
            messages = [m for day in sorted((root / channel["name"]).glob("*.json"))
                        for m in json.loads(day.read_text())]
            for message in messages:
                if message.get("thread_ts"):
                    self.threads[(channel["id"], message["thread_ts"])].append(message)
            counts = {key[1]: len(v) - 1 for key, v in self.threads.items() if key[0] == channel["id"]}
            self.roots[channel["id"]] = sorted(
                ({**m, "reply_count": counts[m["ts"]]} if counts.get(m["ts"]) else m for m in messages
                 if m.get("thread_ts", m["ts"]) == m["ts"]), key=lambda m: -float(m["ts"]))
        for thread in self.threads.values():
            thread.sort(key=lambda m: float(m["ts"]))
        self.calls = 0

    @staticmethod
    def _page(items: list, params: dict, key: str) -> dict:
        start = int(params.get("cursor") or 0)
        end = start + int(params.get("limit") or PAGE)
        return {"ok": True, key: items[start:end],
                "response_metadata": {"next_cursor": str(end) if end < len(items) else ""}}

    def answer(self, method: str, params: dict) -> dict:
        self.calls += 1
        channel = params.get("channel", "")
        if method == "users.list":
            return self._page(self.users, params, "members")
        if method == "conversations.list":
            return self._page(self.channels, params, "channels")
        if method == "conversations.members":
            return self._page(self.members.get(channel, []), params, "members")
        if method == "conversations.history":
            oldest = float(params.get("oldest") or 0)
            roots = [m for m in self.roots.get(channel, []) if float(m["ts"]) >= oldest]
            return self._page(roots, params, "messages")
        if method == "conversations.replies":
            return self._page(self.threads.get((channel, params.get("ts", "")), []), params, "messages")
        return {"ok": False, "error": "unknown_method"}


def serve(api: ExportWebApi) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            url = urlparse(self.path)
            params = {k: v[0] for k, v in {**parse_qs(url.query),
                                           **parse_qs(self.rfile.read(length).decode())}.items()}
            payload = api.answer(url.path.rsplit("/", 1)[-1], params) \
                if self.headers.get("Authorization") == f"Bearer {BENCH_TOKEN}" else {"ok": False,
                                                                                     "error": "invalid_auth"}
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/api/"
