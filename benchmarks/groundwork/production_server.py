"""Run the production server (gunicorn with groundwork.gunicorn_config) as a child process on a free loopback
port, against a given database: the load bench and the tests drive it exactly as it runs in production
(DJANGO_ENV=production, DEBUG off, bounded pools), only without TLS in front of it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

from django.conf import settings


@dataclass
class RunningServer:
    process: subprocess.Popen
    url: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def workers_booted(self) -> int:
        """How many worker processes the master has started (more than it was asked for: some died)."""
        return self.log().count("Booting worker with pid")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url_of(settings_dict: Mapping, **options: str) -> str:
    """A DATABASE_URL naming the database of a Django connection (e.g. the test database), plus options."""
    user = quote(settings_dict["USER"] or "", safe="")
    password = quote(settings_dict["PASSWORD"] or "", safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = settings_dict["HOST"] or ""
    query = dict(options)
    if host.startswith("/"):
        query["host"] = host
        location = ""
    else:
        location = f"{host}:{settings_dict['PORT'] or 5432}"
    suffix = f"?{urlencode(query)}" if query else ""
    return f"postgresql://{auth}{location}/{quote(settings_dict['NAME'], safe='')}{suffix}"


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=5):
            return True
    except urllib.error.HTTPError:
        return True  # it answered (503 "degraded" is still an answer)
    except OSError:
        return False


@contextmanager
def production_server(*, database_url: str | None, workers: int = 2, threads: int = 8,
                      env: Mapping[str, str] | None = None, ready_timeout: float = 90.0) -> Iterator[RunningServer]:
    """Start the server, wait until it answers, yield it; stop it (SIGTERM, then SIGKILL) on the way out.
    `database_url` None: the embedded database under GROUNDWORK_VAR_DIR (from `env`, else the project's var/).
    A None value in `env` leaves that variable unset: the server's own default applies."""
    port = free_port()
    child_env = {k: v for k, v in os.environ.items()
                 if k not in ("GROUNDWORK_EMBEDDED_DATABASE_URL", "DATABASE_URL")}
    if database_url:
        child_env["DATABASE_URL"] = database_url
    child_env.update({
        "DJANGO_ENV": "production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",  # plain HTTP on loopback: no TLS proxy in front here
        "WEB_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": str(workers),
        "WEB_THREADS": str(threads),
        **(env or {}),
    })
    child_env = {k: v for k, v in child_env.items() if v is not None}
    log_dir = Path(tempfile.mkdtemp(prefix="groundwork-server-"))
    log_path = log_dir / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "python:groundwork.gunicorn_config"],
            cwd=Path(settings.BASE_DIR), env=child_env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        )
    server = RunningServer(process=process, url=f"http://127.0.0.1:{port}", log_path=log_path)
    try:
        deadline = time.monotonic() + ready_timeout
        while not _ready(server.url):
            if process.poll() is not None:
                raise RuntimeError(f"the production server exited with {process.returncode}:\n{server.log()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the production server did not answer in {ready_timeout:.0f} s:\n{server.log()}")
            time.sleep(0.3)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        shutil.rmtree(log_dir, ignore_errors=True)
