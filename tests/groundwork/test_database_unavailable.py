"""A connection-level database failure is a 503 with Retry-After wherever it surfaces (an API view, a page view,
a middleware), and the connection budget is computed and checked from the environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.test import Client, override_settings
from django.urls import path
from rest_framework.views import APIView

from groundwork.connection_budget import connection_budget
from groundwork.urls import urlpatterns as real_urlpatterns

ROOT = Path(settings.BASE_DIR)


class GoneApi(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    def get(self, request):
        raise OperationalError('connection failed: FATAL:  sorry, too many clients already')


def gone_page(request):
    raise InterfaceError("connection already closed")


urlpatterns = [path("api/v1/gone", GoneApi.as_view()), path("t/acme/gone/", gone_page), *real_urlpatterns]


class DatabaseGoneMiddleware:
    """Fails outside any view, as SessionMiddleware does when it cannot save a session."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        raise OperationalError("terminating connection due to administrator command")


@override_settings(ROOT_URLCONF=__name__, DEBUG=False, DATABASE_RETRY_AFTER=9)
def test_api_view_failure_is_503_json_with_retry_after():
    response = Client(raise_request_exception=False).get("/api/v1/gone")
    assert response.status_code == 503
    assert response["Retry-After"] == "9"
    body = response.json()
    assert body["code"] == "database_unavailable" and "Try again shortly" in body["detail"]
    assert "too many clients" not in response.content.decode()  # the server's message is not the caller's


@override_settings(ROOT_URLCONF=__name__, DEBUG=False, DATABASE_RETRY_AFTER=9)
def test_page_view_failure_is_the_branded_503_page():
    response = Client(raise_request_exception=False).get("/t/acme/gone/")
    assert response.status_code == 503
    assert response["Retry-After"] == "9"
    assert "Groundwork is busy for a moment" in response.content.decode()


@pytest.mark.parametrize(("url", "json_body"), [("/api/v1/me", True), ("/accounts/login/", False)])
def test_middleware_failure_is_503_too(url, json_body):
    middleware = [*settings.MIDDLEWARE, f"{__name__}.DatabaseGoneMiddleware"]
    with override_settings(MIDDLEWARE=middleware, DEBUG=False, DATABASE_RETRY_AFTER=4):
        response = Client(raise_request_exception=False).get(url)
    assert response.status_code == 503
    assert response["Retry-After"] == "4"
    if json_body:
        assert response.json()["code"] == "database_unavailable"
    else:
        assert "Groundwork is busy for a moment" in response.content.decode()


@override_settings(ROOT_URLCONF="tests.groundwork.urls_boom", DEBUG=False)
def test_other_errors_stay_500():
    response = Client(raise_request_exception=False).get("/boom/")
    assert response.status_code == 500 and "Retry-After" not in response


def test_connection_budget_formula(monkeypatch):
    for name in ("WEB_CONCURRENCY", "WEB_THREADS", "RETRIEVAL_PARALLEL_WORKERS", "DATABASE_POOL_MAX_SIZE",
                 "CELERY_WORKER_CONCURRENCY", "DATABASE_CONNECTION_RESERVE"):
        monkeypatch.delenv(name, raising=False)
    budget = connection_budget()
    assert (budget.web_workers, budget.pool_max_size, budget.celery_processes, budget.reserve) == (2, 12, 2, 10)
    assert budget.total == 2 * 12 + 2 * 2 + 10
    assert budget.problem(100) is None
    monkeypatch.setenv("WEB_CONCURRENCY", "8")
    problem = connection_budget().problem(100)
    assert problem and "8 web workers × 12 pooled" in problem and "max_connections (100)" in problem


def test_settings_bound_each_process_with_a_pool():
    script = ("import json, django; from django.conf import settings; django.setup(); "
              "d = settings.DATABASES['default']; print(json.dumps([d['CONN_MAX_AGE'], d['OPTIONS']]))")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "groundwork.settings", "DATABASE_POOL": "true",
           "WEB_THREADS": "5", "RETRIEVAL_PARALLEL_WORKERS": "3", "DATABASE_POOL_TIMEOUT": "2.5"}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    conn_max_age, options = json.loads(done.stdout.strip().splitlines()[-1])
    assert conn_max_age == 0  # pooled connections go back to the pool at the end of each request
    assert options["pool"] == {"min_size": 1, "max_size": 8, "timeout": 2.5}
    assert options["connect_timeout"] == 5
