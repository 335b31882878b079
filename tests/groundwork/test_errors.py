"""Branded error pages, the CSRF failure page and "never a debug page in production"."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client, RequestFactory, override_settings

from groundwork.pages import error_500

pytestmark = pytest.mark.django_db
ROOT = Path(settings.BASE_DIR)


@override_settings(DEBUG=False)
def test_branded_404_for_unknown_pages(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "We could not find that page" in html and '<a class="brand" href="/">Groundwork</a>' in html
    assert "Traceback" not in html and "URLconf" not in html


@override_settings(DEBUG=False)
def test_branded_403_for_a_tenant_the_user_is_not_in(client, world):
    client.force_login(world.outsider)
    response = client.get("/t/acme/manage/")
    assert response.status_code == 403 and "You are not a member of this workspace" in response.content.decode()
    assert "Acme" not in response.content.decode()  # the shell does not reveal the tenant either


@override_settings(DEBUG=False)
def test_branded_403(client, world):
    client.force_login(world.member)
    response = client.get("/t/acme/manage/")
    assert response.status_code == 403
    assert "You are not allowed to do that" in response.content.decode()


@override_settings(DEBUG=False, ROOT_URLCONF="tests.groundwork.urls_boom")
def test_branded_500_for_a_crash():
    client = Client(raise_request_exception=False)
    response = client.get("/boom/")
    assert response.status_code == 500
    html = response.content.decode()
    assert "Something went wrong on our side" in html and "boom" not in html and "Traceback" not in html


def test_the_500_page_needs_no_request_context_or_database(django_assert_num_queries):
    with django_assert_num_queries(0):
        response = error_500(RequestFactory().get("/"))
    assert response.status_code == 500 and "Something went wrong on our side" in response.content.decode()


@override_settings(DEBUG=False)
def test_branded_csrf_failure(world):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"username": "member", "password": "x"})
    assert response.status_code == 403
    html = response.content.decode()
    assert "This form has expired" in html and "CSRF verification failed" not in html


def test_production_refuses_debug():
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(DJANGO_ENV="production", DJANGO_SECRET_KEY="x7#Qp!" * 12, DJANGO_ALLOWED_HOSTS="gw.example.com",
               DJANGO_DEBUG="1")
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode != 0
    assert "DJANGO_DEBUG must be off when DJANGO_ENV=production" in done.stderr


def test_an_api_format_the_view_does_not_offer_is_a_406_naming_the_offered_ones(world):
    client = world.client(world.member)
    response = client.get("/api/v1/documents?format=xml")
    assert response.status_code == 406
    assert response.json()["detail"] == "format 'xml' is not offered here; use one of: api, json."
    assert client.get("/api/v1/documents?format=json").status_code == 200
    schema = client.get("/api/schema/?format=xml")  # the schema offers yaml and json
    assert schema.status_code == 406 and b"not offered here" in schema.content  # in its first format, YAML


@pytest.mark.parametrize("debug", [False, True])
def test_api_errors_are_json_with_debug_off_and_on(world, debug, settings):
    """404, 405 and 500 under the API's paths are JSON in every mode: with DEBUG on they were Django's HTML debug
    pages (the URL list, the traceback)."""
    settings.DEBUG = debug
    settings.ROOT_URLCONF = "tests.groundwork.urls_boom"
    client = Client(raise_request_exception=False)
    client.force_login(world.member)
    for path in ("/api/v1/no-such-thing", "/t/acme/api/v1/no-such-thing", "/api/v1/documents/987654"):
        response = client.get(path)
        assert (response.status_code, response["Content-Type"], response.json()) == (
            404, "application/json", {"detail": "Not found."}), path
    not_allowed = client.delete("/api/v1/search")
    assert not_allowed.status_code == 405 and not_allowed.json() == {"detail": 'Method "DELETE" not allowed.'}
    assert "POST" in not_allowed["Allow"]
    crash = client.get("/api/v1/boom")
    assert crash.status_code == 500 and crash.json() == {"detail": "Something went wrong on our side."}
    assert b"boom" not in crash.content and b"Traceback" not in crash.content
    # Pages keep their HTML; an API answer in a format it offers keeps its format.
    assert client.get("/no-such-page/")["Content-Type"].startswith("text/html")
    assert b"not offered here" in client.get("/api/schema/?format=xml").content
