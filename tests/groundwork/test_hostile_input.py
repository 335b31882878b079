"""Hostile input never gets a 5xx: deeply nested JSON, NUL characters, integers beyond bigint, oversized
JSON bodies, too many parameters and wrong content types get a clear 4xx on every API endpoint (the endpoints
are found by walking the URL patterns; the requests are benchmarks.groundwork.hostile_input's, which the security bench
sends too)."""

from __future__ import annotations

import json

import pytest

from benchmarks.groundwork.hostile_input import HUGE, api_schema, hostile_requests, hostile_send
from benchmarks.groundwork.routes import api_endpoints

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000
ENDPOINTS = api_endpoints()


def test_the_walk_finds_the_api():
    assert ("/api/v1/answers", "POST") in ENDPOINTS and ("/api/v1/findings", "GET") in ENDPOINTS
    assert len(ENDPOINTS) >= 15


@pytest.mark.parametrize(("path", "method"), ENDPOINTS, ids=[f"{m} {p}" for p, m in ENDPOINTS])
def test_every_endpoint_refuses_hostile_input_with_a_4xx(world, path, method):
    client = world.client(world.admin)
    failures = []
    for request in hostile_requests(path, method, schema=api_schema(), ids={"tenant_slug": "acme"}):
        response = hostile_send(client, request)
        if response.status_code >= 500:
            failures.append((request.label, response.status_code, response.content[:200]))
    assert failures == []


def test_deeply_nested_json_is_a_400_with_a_message(world):
    response = world.client(world.member).post("/api/v1/answers", data=DEEP, content_type="application/json")
    assert response.status_code == 400
    assert "nested" in response.json()["detail"]


def test_a_json_body_over_the_limit_is_a_413_with_a_message(world, settings):
    body = json.dumps({"question": "a" * (12 * 1024 * 1024)})
    response = world.client(world.member).post("/api/v1/answers", data=body, content_type="application/json")
    assert response.status_code == 413
    assert "too large" in response.json()["detail"]
    settings.API_MAX_JSON_BYTES = 1000
    response = world.client(world.admin).post("/api/v1/search", data=json.dumps({"query": "x" * 2000}),
                                              content_type="application/json")
    assert response.status_code == 413


def test_nul_and_huge_integers_are_a_400_or_404(world):
    client = world.client(world.admin)
    response = client.get("/api/v1/findings?q=a%00b")
    assert response.status_code == 400 and "NUL" in response.json()["detail"]
    assert client.get("/api/v1/findings?predicate=%00").status_code == 400
    response = client.get(f"/api/v1/findings?entity={HUGE}")
    assert response.status_code == 400 and "entity" in response.json()
    assert client.get(f"/api/v1/findings/{HUGE}").status_code == 404
    assert client.get(f"/api/v1/documents/{HUGE}/chunks").status_code == 404
    response = client.post("/api/v1/answers", data=json.dumps({"question": "why\x00"}),
                           content_type="application/json")
    assert response.status_code == 400 and "NUL" in json.dumps(response.json())
    response = client.post("/api/v1/search", data=json.dumps({"query": "laptop", "filters": {"source_ids": [HUGE]}}),
                           content_type="application/json")
    assert response.status_code == 400


def test_the_findings_page_shows_bad_filters_as_a_message(world):
    from django.test import Client

    client = Client()
    client.force_login(world.member)
    for query in ("q=a%00b", "predicate=%00", f"entity={HUGE}", "valid_at=garbage"):
        response = client.get(f"/t/acme/findings/?{query}")
        assert response.status_code == 400, query  # the page with its message, as the documents page answers
        assert any(words in response.content for words in (b"must not contain a NUL character", b"out of range",
                                                            b"valid_at"))


def test_too_many_query_parameters_is_a_400_with_a_message(world):
    too_many = "&".join(f"p{i}=1" for i in range(1100))
    response = world.client(world.member).get(f"/api/v1/documents?{too_many}")
    assert response.status_code == 400
    assert "Too many query parameters" in response.json()["detail"]
    from django.test import Client

    client = Client()
    client.force_login(world.member)
    response = client.get(f"/t/acme/documents/?{too_many}")
    assert response.status_code == 400 and b"Too many query parameters" in response.content


def test_a_form_body_with_too_many_fields_is_a_400_with_a_message(world):
    body = "&".join(f"f{i}=1" for i in range(1100))
    response = world.client(world.member).post("/api/v1/search", data=body,
                                               content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert "Too many form fields" in response.json()["detail"]


def test_an_integer_of_thousands_of_digits_is_a_400(world):
    client = world.client(world.admin)
    for query in ("limit", "source", "entity"):
        response = client.get(f"/api/v1/findings?{query}={'9' * 5000}")
        assert response.status_code == 400, query
    assert client.get(f"/api/v1/documents?limit={'9' * 5000}").status_code == 400
    assert client.get(f"/api/v1/documents?limit={'0' * 5000}1").status_code != 500
