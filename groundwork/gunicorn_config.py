"""The production server: `gunicorn -c python:groundwork.gunicorn_config groundwork.wsgi` (`make serve-prod`).

Threaded workers (gthread): `WEB_CONCURRENCY` processes × `WEB_THREADS` request threads, so a streamed answer
holds a thread, not a process. Each process gets one bounded psycopg pool (DATABASE_POOL, sized in
groundwork/connection_budget.py), and the master refuses to start when the budget of every process does not fit
the database's max_connections.

With DATABASE_URL unset the master starts (or attaches to) the embedded PostgreSQL once, before forking, and
hands its URL to the workers through GROUNDWORK_EMBEDDED_DATABASE_URL: workers come and go (a crash, a
`max_requests` recycle) without ever starting or stopping the server; it stops when the master exits, if no
other process still uses it. The app is not preloaded in the master: every worker builds its own connection
pool, ONNX session and thread pools after the fork.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from groundwork.connection_budget import connection_budget
from groundwork.env import env_int, env_str

logger = logging.getLogger("groundwork.gunicorn")

# Process bootstrap: gunicorn reads this file before Django exists, so it reads the environment through the env
# helpers, and sets what the workers' settings will read after the fork: the pool is on unless the operator said
# otherwise.
os.environ.setdefault("DATABASE_POOL", "true")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groundwork.settings")
# The production server is production unless told otherwise (DJANGO_ENV=development): DEBUG off (no tracebacks,
# API errors as JSON), secure cookies, HTTPS redirect and HSTS, no default secret key in code.
os.environ.setdefault("DJANGO_ENV", "production")

_budget = connection_budget()

wsgi_app = "groundwork.wsgi:application"
bind = [env_str("WEB_BIND", "127.0.0.1:8000")]
worker_class = "gthread"
workers = _budget.web_workers
threads = _budget.web_threads
# A worker whose main loop is silent this long is restarted; streamed answers run on threads, so the main loop
# keeps beating while they stream.
timeout = env_int("WEB_TIMEOUT", 60, minimum=5)
graceful_timeout = env_int("WEB_GRACEFUL_TIMEOUT", 30, minimum=1)
keepalive = 5
# Recycling bounds slow memory growth (tokenizer caches, fragmentation); the jitter keeps workers from
# restarting together.
max_requests = env_int("WEB_MAX_REQUESTS", 5000, minimum=0)
max_requests_jitter = max_requests // 10
accesslog = env_str("WEB_ACCESS_LOG", "-")
errorlog = "-"
# gunicorn's control socket sits at one fixed path per user: a second server on the machine (a test, a bench, a
# staging copy) would take it over. We do not use it; signals control the server.
control_socket_disable = True


def _var_dir() -> Path:
    return Path(env_str("GROUNDWORK_VAR_DIR", str(Path(__file__).resolve().parent.parent / "var")))


def _max_connections(url: str) -> int | None:
    """The server's max_connections, or None when it cannot be asked now (the workers then answer 503 until it
    is back; a database that is down at start must not keep the server from starting)."""
    import psycopg

    from groundwork.dburl import database_config

    config = database_config(url)
    params = {"dbname": config["NAME"], "user": config["USER"] or None, "password": config["PASSWORD"] or None,
              "host": config["HOST"] or None, "port": config["PORT"] or None, "connect_timeout": 5,
              **{k: v for k, v in config["OPTIONS"].items() if k not in ("connect_timeout", "pool")}}
    try:
        with psycopg.connect(**{k: v for k, v in params.items() if v is not None}) as conn:
            return int(conn.execute("SHOW max_connections").fetchone()[0])
    except psycopg.Error as exc:
        logger.warning("could not read max_connections (%s); starting anyway", exc)
        return None


def on_starting(server) -> None:
    from groundwork.embedded_db import INHERITED_URL_ENV, embedded_database_url

    url = env_str("DATABASE_URL")
    if not url:
        url = embedded_database_url(_var_dir())
        os.environ[INHERITED_URL_ENV] = url
    max_connections = _max_connections(url)
    if max_connections is not None:
        problem = _budget.problem(max_connections)
        if problem:
            raise SystemExit(f"groundwork: {problem}")
        server.log.info("connection budget: %s ≤ max_connections %d", _budget.formula(), max_connections)
