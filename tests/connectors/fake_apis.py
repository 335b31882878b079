"""Local fake Confluence Cloud and GitHub REST servers (a threaded http.server) serving the documented response
shapes: Confluence `content` pages with `_links.next`, CQL search by `lastmodified`, single content, attachment
downloads; GitHub repo, collaborators, teams, issues with `Link: rel="next"` and `since`, issue comments. Each
can answer one 429 (Retry-After) or one spent-limit 403 (X-RateLimit-Reset) on a chosen path."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit


class FakeApi:
    def __init__(self) -> None:
        self.requests: list[str] = []
        self.rate_limit_once: dict[str, dict] = {}  # path + query fragment -> headers of one refusal
        self.auth = ""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                fake.requests.append(self.path)
                if fake.auth and self.headers.get("Authorization") != fake.auth:
                    return self._send(401, {"message": "unauthorized"})
                for marker, headers in list(fake.rate_limit_once.items()):
                    if marker in self.path:
                        del fake.rate_limit_once[marker]
                        return self._send(headers.pop("status", 429), {"message": "slow down"}, headers)
                status, body, headers = fake.answer(urlsplit(self.path).path, parse_qs(urlsplit(self.path).query))
                self._send(status, body, headers)

            def _send(self, status, body, headers=None):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    # A callable is read as the refusal is sent (a reset time relative to that moment).
                    self.send_header(name, str(value() if callable(value) else value))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, path: str, query: dict) -> tuple[int, object, dict]:
        raise NotImplementedError

    def hits(self, fragment: str) -> int:
        return sum(1 for r in self.requests if fragment in r)


class FakeConfluence(FakeApi):
    PAGE_SIZE = 2

    def __init__(self, pages: list[dict], attachments: dict[str, bytes]) -> None:
        super().__init__()
        self.pages = {p["id"]: p for p in pages}
        self.attachments = attachments
        self.auth = "Basic " + base64.b64encode(b"bot@acme.test:tok").decode()

    def _listing(self, items: list, start: int, path: str, query: dict) -> dict:
        chunk = items[start:start + self.PAGE_SIZE]
        links = {"base": self.url + "/wiki"}
        if start + self.PAGE_SIZE < len(items):
            rest = {k: v[0] for k, v in query.items() if k not in ("start", "limit")}
            links["next"] = f"{path}?{urlencode({**rest, 'start': start + self.PAGE_SIZE, 'limit': self.PAGE_SIZE})}"
        return {"results": chunk, "start": start, "limit": self.PAGE_SIZE, "size": len(chunk), "_links": links}

    def answer(self, path, query):
        start = int(query.get("start", ["0"])[0])
        if path == "/wiki/rest/api/content":
            return 200, self._listing(list(self.pages.values()), start, "/rest/api/content", query), {}
        if path == "/wiki/rest/api/content/search":
            since = re.search(r'lastmodified >= "([^"]+)"', query["cql"][0]).group(1)
            floor = datetime.strptime(since, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
            when = {pid: p.get("version", {}).get("when", "2000-01-01T00:00:00Z") for pid, p in self.pages.items()}
            changed = [p for pid, p in self.pages.items()
                       if datetime.fromisoformat(when[pid].replace("Z", "+00:00")) >= floor]
            return 200, self._listing(changed, start, "/rest/api/content/search", query), {}
        match = re.match(r"^/wiki/rest/api/content/(\w+)$", path)
        if match and match.group(1) in self.pages:
            return 200, self.pages[match.group(1)], {}
        if path.startswith("/wiki/download/attachments/") and path in self.attachments:
            return 200, self.attachments[path], {}
        return 404, {"message": "not found"}, {}


class FakeGitHub(FakeApi):
    PAGE_SIZE = 2

    def __init__(self, issues: list[dict], comments: dict[int, list], collaborators: list[dict]) -> None:
        super().__init__()
        self.issues, self.comments, self.collaborators = issues, comments, collaborators
        self.auth = "Bearer ghp-test"

    def answer(self, path, query):
        if path == "/repos/acme/tools":
            return 200, {"full_name": "acme/tools", "private": True, "visibility": "private"}, {}
        if path == "/repos/acme/tools/collaborators":
            return 200, self.collaborators, {}
        if path == "/repos/acme/tools/teams":
            return 200, [{"slug": "tools-core"}], {}
        if path == "/repos/acme/tools/issues":
            items = self.issues
            if "since" in query:
                since = datetime.fromisoformat(query["since"][0].replace("Z", "+00:00"))
                items = [i for i in items if datetime.fromisoformat(i["updated_at"].replace("Z", "+00:00")) >= since]
            page = int(query.get("page", ["1"])[0])
            chunk = items[(page - 1) * self.PAGE_SIZE:page * self.PAGE_SIZE]
            headers = {}
            if page * self.PAGE_SIZE < len(items):
                rest = {k: v[0] for k, v in query.items() if k != "page"}
                headers["Link"] = f'<{self.url}{path}?{urlencode({**rest, "page": page + 1})}>; rel="next", ' \
                                  f'<{self.url}{path}?page=99>; rel="last"'
            return 200, chunk, headers
        match = re.match(r"^/repos/acme/tools/issues/(\d+)/comments$", path)
        if match:
            return 200, self.comments.get(int(match.group(1)), []), {}
        return 404, {"message": "Not Found"}, {}


def reset_in(seconds: int) -> str:
    return str(int(time.time()) + seconds)
