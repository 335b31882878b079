"""A small simulated network for the egress tests and the security bench's SSRF probe, with no internet needed.

- `RecordingServer`: an HTTP server on a loopback address that records every request that reaches it (an internal
  service a connector must never reach), or answers with a redirect (a public source sending the connector on).
- `simulated_network(routes, names)`: while active, a connection the connectors open to a *public* address named
  in `routes` is carried to the loopback address it stands for (the public redirector is really on loopback),
  host names in `names` resolve to the scripted addresses (one answer per lookup, the last one repeated: a DNS
  answer that changes between lookups is DNS rebinding), and every connection opened is recorded. The egress
  checks themselves run unchanged: only the wire below them and the resolver's answers are scripted.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import urllib3.util.connection

from connectors.sources import egress

_URL_SAFE = ":/?#[]@!$&'()*+,;=%"


class _V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class RecordingServer:
    """Answers every GET with `status` and a small JSON body — or, with `redirect_to`, a 302 to it (a string, or
    {path: location} for the paths that redirect) — and records (path, Host header) of each request. `port` 0
    picks a free one."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, redirect_to: str | Mapping[str, str] | None = None,
                 status: int = 200, body: object = None) -> None:
        self.hits: list[tuple[str, str]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                recorder.hits.append((self.path, self.headers.get("Host", "")))
                location = redirect_to.get(self.path.split("?", 1)[0]) if isinstance(redirect_to, Mapping) \
                    else redirect_to
                if location is not None:
                    self.send_response(302)
                    # On the wire as a server would send it: what is not ASCII, percent-encoded.
                    self.send_header("Location", quote(location, safe=_URL_SAFE))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = json.dumps(body if body is not None else {"id": 1, "full_name": "acme/tools"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        server_class = _V6Server if ":" in host else ThreadingHTTPServer
        self.server = server_class((host, port), Handler)
        self.host, self.port = host, self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def reached(self) -> bool:
        return bool(self.hits)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> RecordingServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def ipv6_loopback_available() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


@dataclass
class Network:
    routes: Mapping[str, str]
    names: Mapping[str, Sequence[Sequence[str]]]
    connections: list[tuple[str, int]] = field(default_factory=list)  # (address, port) as the connector asked
    lookups: dict[str, int] = field(default_factory=dict)

    def resolve(self, name: str, port: int, real) -> list[str]:
        answers = self.names.get(name)
        if answers is None:
            return real(name, port)
        turn = self.lookups.get(name, 0)
        self.lookups[name] = turn + 1
        return list(answers[min(turn, len(answers) - 1)])


@contextmanager
def simulated_network(routes: Mapping[str, str] | None = None,
                      names: Mapping[str, Sequence[Sequence[str]]] | None = None) -> Iterator[Network]:
    """See the module's doc. `routes`: public address -> the loopback address that plays it (same port);
    `names`: host name -> the answers of its successive lookups."""
    network = Network(routes=dict(routes or {}), names=dict(names or {}))
    real_connect, real_resolve = urllib3.util.connection.create_connection, egress.addresses_of

    def connect(address, *args, **kwargs):
        host, port = address
        network.connections.append((host, port))
        return real_connect((network.routes.get(host, host), port), *args, **kwargs)

    urllib3.util.connection.create_connection = connect
    egress.addresses_of = lambda name, port: network.resolve(name, port, real_resolve)
    try:
        yield network
    finally:
        urllib3.util.connection.create_connection = real_connect
        egress.addresses_of = real_resolve
