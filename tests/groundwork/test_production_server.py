"""The production server (gunicorn, one bounded connection pool per worker) serves the API; a saturated or
restarted database answers 503 with Retry-After, never 500, and the same processes recover by themselves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection, connections

from benchmarks.groundwork.production_server import database_url_of, production_server
from groundwork.services import api_key_issue_delegated

# Production servers hold real pools of connections: under pytest-xdist one worker runs these one after another,
# with the worker tests, so two never share the server's connection limit at once (scripts/run_suite.py).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("system")]


def _get(url: str, *, key: str | None = None, cookie: str | None = None, timeout: float = 30) -> tuple[int, dict, str]:
    request = urllib.request.Request(url)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    if cookie:
        request.add_header("Cookie", cookie)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def _app_name() -> str:
    return f"gw-test-{uuid.uuid4().hex[:8]}"


def _backends(app_name: str, *, waiting_on_lock: bool = False) -> int:
    with psycopg.connect(**_admin_params(), autocommit=True) as conn:
        query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
        if waiting_on_lock:
            query += " AND wait_event_type = 'Lock'"
        return conn.execute(query, [app_name]).fetchone()[0]


def _admin_params() -> dict:
    p = connection.settings_dict
    params = {"dbname": p["NAME"], "user": p["USER"] or None, "password": p["PASSWORD"] or None,
              "host": p["HOST"] or None, "port": p["PORT"] or None}
    return {k: v for k, v in params.items() if v}


def _wait_for(predicate, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_production_server_serves_the_api_with_bounded_connections(world):
    key = api_key_issue_delegated(tenant=world.acme, owner=world.member, name="prod").raw_key
    app_name = _app_name()
    url = database_url_of(connection.settings_dict, application_name=app_name)
    # Fewer pooled connections than request threads: requests queue for a connection instead of opening more.
    env = {"DATABASE_POOL_MAX_SIZE": "3", "DATABASE_POOL_TIMEOUT": "20", "EMBEDDER": "none"}
    with production_server(database_url=url, workers=2, threads=6, env=env) as server:
        status, headers, body = _get(f"{server.url}/api/v1/me", key=key)
        assert status == 200, body
        assert headers["Server"].startswith("gunicorn")
        assert json.loads(body)["tenant"] == "acme"
        # The pages' stylesheet comes from the server itself (WhiteNoise): no front proxy is needed.
        status, headers, body = _get(f"{server.url}/static/groundwork/app.css")
        assert status == 200 and headers["Content-Type"].startswith("text/css") and "{" in body

        peak = 0
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, _backends(app_name))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            with ThreadPoolExecutor(max_workers=24) as pool:
                results = list(pool.map(lambda _: _get(f"{server.url}/api/v1/documents", key=key)[0], range(120)))
        finally:
            stop.set()
            sampler.join()
        assert results == [200] * 120
        assert 0 < peak <= 2 * 3, f"{peak} connections for 2 workers × a pool of 3"


def test_saturated_pool_answers_503_with_retry_after_then_recovers(world):
    key = api_key_issue_delegated(tenant=world.acme, owner=world.member, name="prod").raw_key
    # A page for a signed-in browser: its session is read from the database.
    cookie = f"{settings.SESSION_COOKIE_NAME}={uuid.uuid4().hex}"
    app_name = _app_name()
    url = database_url_of(connection.settings_dict, application_name=app_name)
    env = {"DATABASE_POOL_MAX_SIZE": "1", "DATABASE_POOL_TIMEOUT": "1", "DATABASE_RETRY_AFTER": "7",
           "EMBEDDER": "none"}
    with production_server(database_url=url, workers=1, threads=4, env=env) as server:
        assert _get(f"{server.url}/api/v1/me", key=key)[0] == 200
        with ThreadPoolExecutor(max_workers=1) as pool, psycopg.connect(**_admin_params()) as blocker:
            # The one pooled connection is held by a request stuck behind a lock: the pool is exhausted.
            blocker.execute("LOCK TABLE platform_apikey IN ACCESS EXCLUSIVE MODE")
            stuck = pool.submit(_get, f"{server.url}/api/v1/me", key=key)
            _wait_for(lambda: _backends(app_name, waiting_on_lock=True) == 1, timeout=20,
                      what="a request holding the only connection")

            status, headers, body = _get(f"{server.url}/api/v1/documents", key=key)
            assert status == 503, body
            assert headers["Retry-After"] == "7"
            assert json.loads(body)["code"] == "database_unavailable"

            status, headers, body = _get(f"{server.url}/t/acme/chat/", cookie=cookie)
            assert status == 503, body
            assert headers["Retry-After"] == "7"
            assert headers["Content-Type"].startswith("text/html")
            assert "Groundwork is busy for a moment" in body

            blocker.rollback()  # the lock goes; the stuck request finishes and frees the connection
            assert stuck.result(timeout=30)[0] == 200
        assert _get(f"{server.url}/api/v1/documents", key=key)[0] == 200
        assert "Traceback" not in server.log()


def _embedded_server():
    """This process's handle on the embedded server, and the user pg_ctl runs as (`pgserver` under root)."""
    import pgserver

    return pgserver.get_server(Path(settings.VAR_DIR).resolve() / "postgres"), ("pgserver" if os.geteuid() == 0
                                                                                else None)


# Stopping the server every test database lives on: this runs alone, after the parallel part of the suite.
@pytest.mark.serial
@pytest.mark.skipif(not settings.EMBEDDED_DATABASE, reason="restarts the embedded PostgreSQL; DATABASE_URL is set")
def test_database_restart_gives_503_then_recovers_without_restarting_the_server(world):
    from pgserver._commands import pg_ctl

    key = api_key_issue_delegated(tenant=world.acme, owner=world.member, name="prod").raw_key
    url = database_url_of(connection.settings_dict)
    env = {"DATABASE_POOL_TIMEOUT": "2", "DATABASE_RETRY_AFTER": "3", "EMBEDDER": "none"}
    pg, user = _embedded_server()
    with production_server(database_url=url, workers=2, threads=4, env=env) as server:
        assert _get(f"{server.url}/api/v1/me", key=key)[0] == 200
        # Clients keep calling while the database goes down and comes back: every answer is a 200 or a 503.
        seen: Counter = Counter()
        lock, stop = threading.Lock(), threading.Event()

        def client() -> None:
            while not stop.is_set():
                status, headers, _ = _get(f"{server.url}/api/v1/documents", key=key)
                if status == 503 and headers.get("Retry-After") != "3":
                    status = "503 without Retry-After"
                with lock:
                    seen[status] += 1

        clients = [threading.Thread(target=client) for _ in range(6)]
        for thread in clients:
            thread.start()
        try:
            connections.close_all()  # ours would die with the server anyway
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pg.pgdata, user=user, timeout=60)
            try:
                for _ in range(4):
                    status, headers, body = _get(f"{server.url}/api/v1/me", key=key)
                    assert status == 503, body
                    assert headers["Retry-After"] == "3"
                status, headers, body = _get(f"{server.url}/healthz")
                assert (status, headers.get("Retry-After")) == (503, "3"), body
                assert json.loads(body)["database"]["ok"] is False
            finally:
                # Started again the way pgserver starts it (same socket directory), which also refreshes this
                # process's record of the postmaster, so the suite still stops the server when it ends.
                pg.ensure_postgres_running()
            deadline = time.monotonic() + 60
            while (status := _get(f"{server.url}/api/v1/me", key=key)[0]) != 200:
                assert status == 503, f"{status} while the database came back"
                assert time.monotonic() < deadline, "the server never recovered"
                time.sleep(0.5)
        finally:
            stop.set()
            for thread in clients:
                thread.join()
        assert set(seen) <= {200, 503} and seen[503] > 0, seen
        # Each gunicorn worker recovers on its own first request after the restart: /me answering 200 from one
        # worker says nothing of the other, so the documents list may still meet a stale pool once (a 503).
        deadline = time.monotonic() + 30
        while (status := _get(f"{server.url}/api/v1/documents", key=key)[0]) != 200:
            assert status == 503 and time.monotonic() < deadline, f"{status}: the documents list never recovered"
            time.sleep(0.5)
        assert server.process.poll() is None
        assert server.workers_booted() == 2, "recovered by restarting workers:\n" + server.log()
        assert "Traceback" not in server.log()


def test_server_refuses_to_start_when_the_budget_exceeds_max_connections(db):
    url = database_url_of(connection.settings_dict)
    # 30 workers × a pool of 12 (8 threads + 4 retrieval) cannot fit the default 100 connections.
    with pytest.raises(RuntimeError) as refused:
        with production_server(database_url=url, workers=30, threads=8, env={"EMBEDDER": "none"}):
            pass
    assert "exceeds the database's max_connections" in str(refused.value)
    assert "lower WEB_CONCURRENCY" in str(refused.value)


def test_embedded_database_is_started_once_by_the_master_and_shared_by_workers(tmp_path):
    var_dir = tmp_path / "var"
    pgdata = var_dir / "postgres"
    env = {"GROUNDWORK_VAR_DIR": str(var_dir), "EMBEDDER": "none"}
    # Migrated first, as `make serve-prod` does: the runtime role that row-level security switches to is made by
    # `migrate`, and without it every request is refused as misconfigured.
    child_env = {k: v for k, v in os.environ.items() if k not in ("GROUNDWORK_EMBEDDED_DATABASE_URL", "DATABASE_URL")}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=settings.BASE_DIR,
                   env={**child_env, **env}, check=True, timeout=300)
    with production_server(database_url=None, workers=2, threads=2, env=env) as server:
        status, _, body = _get(f"{server.url}/healthz")
        database = json.loads(body)["database"]
        assert database["ok"] and database["embedded"] and database["pgvector"].startswith("0.8"), (status, body)
        # One handle, the master's: workers connect through it and never start or stop the server themselves.
        assert json.loads((pgdata / ".handle_pids.json").read_text()) == [server.process.pid]
        assert server.workers_booted() == 2
    assert not (pgdata / "postmaster.pid").exists(), "the server must stop with the master"


def test_load_probe_counts_no_5xx_from_20_clients(tmp_path):
    from benchmarks.chat.security import load

    figures = load.measure(tmp_path, quick=True)
    assert figures["load_5xx"] == 0, figures
    assert figures["load_requests"] > 0 and figures["load_4xx"] == 0
    assert set(figures) >= {"load_5xx", "load_requests", "load_rps"}
    from groundwork.models import Tenant

    assert not Tenant.objects.filter(slug__startswith="bench-load-").exists()


def test_the_production_server_is_production_without_extra_variables(tmp_path):
    """`make serve-prod` with none of DJANGO_ENV, DJANGO_SECRET_KEY, DJANGO_ALLOWED_HOSTS, SECURE_SSL_REDIRECT:
    DEBUG off (an API 404 is JSON, no debug page), plain http redirected to https (the health check excepted), a
    secret key generated once into var/secret_key, readable by its owner only."""
    var_dir = tmp_path / "var"
    unset = dict.fromkeys(("DJANGO_ENV", "DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS", "SECURE_SSL_REDIRECT",
                           "DJANGO_DEBUG"))
    with production_server(database_url=database_url_of(connection.settings_dict), workers=2, threads=2,
                           env={**unset, "GROUNDWORK_VAR_DIR": str(var_dir), "EMBEDDER": "none"}) as server:
        status, _, _ = _get(f"{server.url}/healthz")
        assert status in (200, 503)
        request = urllib.request.Request(f"{server.url}/api/v1/no-such-thing", headers={"X-Forwarded-Proto": "https"})
        try:
            urllib.request.urlopen(request, timeout=30)
        except urllib.error.HTTPError as error:
            assert (error.code, json.loads(error.read())) == (404, {"detail": "Not found."})
        opener = urllib.request.build_opener(type("NoRedirect", (urllib.request.HTTPRedirectHandler,), {
            "redirect_request": lambda *args, **kwargs: None}))
        try:
            opener.open(f"{server.url}/accounts/login/", timeout=30)
            raise AssertionError("plain http was served")
        except urllib.error.HTTPError as error:
            assert error.code == 301 and error.headers["Location"].startswith("https://")
    key_file = var_dir / "secret_key"
    assert key_file.stat().st_mode & 0o777 == 0o600 and len(key_file.read_text()) >= 50
