"""Hostile input never gets a 5xx: deeply nested JSON, NUL characters, integers beyond bigint and oversized
JSON bodies get a clear 4xx on every API endpoint (the endpoints are found by walking the URL patterns)."""

from __future__ import annotations

import json
import re

import pytest
from drf_spectacular.generators import EndpointEnumerator, SchemaGenerator

pytestmark = pytest.mark.django_db

HUGE = 2**70  # beyond Postgres' bigint
HUGE_TEXT = str(HUGE)
NUL = "x\x00y"
DEEP = "[" * 100_000 + "]" * 100_000
# query parameters every endpoint gets, on top of the ones its OpenAPI description names
COMMON_PARAMS = ("q", "predicate", "entity", "source", "document", "kind", "status", "valid_at", "known_at",
                 "limit", "offset", "conversation", "stream")


def _endpoints() -> list[tuple[str, str]]:
    return sorted({(path, method) for path, _regex, method, _view in EndpointEnumerator().get_api_endpoints()
                   if path.startswith("/api/v1/")})


def _schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def _operation(schema: dict, path: str, method: str) -> dict:
    return schema["paths"].get(path, {}).get(method.lower(), {})


def _body_fields(schema: dict, operation: dict) -> list[str]:
    content = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
    ref = content.get("schema", {}).get("$ref", "")
    component = schema.get("components", {}).get("schemas", {}).get(ref.rsplit("/", 1)[-1], {}) if ref else {}
    return sorted(component.get("properties", {})) or ["question", "query", "name", "title", "body"]


def _query_params(operation: dict) -> list[str]:
    return sorted({p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"} | set(COMMON_PARAMS))


def _fill(path: str, integer: str) -> str:
    return re.sub(r"\{tenant_slug\}", "acme", re.sub(r"\{\w+_id\}", integer, path))


ENDPOINTS = _endpoints()


def test_the_walk_finds_the_api():
    assert ("/api/v1/answers", "POST") in ENDPOINTS and ("/api/v1/findings", "GET") in ENDPOINTS
    assert len(ENDPOINTS) >= 15


@pytest.mark.parametrize(("path", "method"), ENDPOINTS, ids=[f"{m} {p}" for p, m in ENDPOINTS])
def test_every_endpoint_refuses_hostile_input_with_a_4xx(world, path, method):
    schema = _schema()
    operation = _operation(schema, path, method)
    client = world.client(world.admin)
    send = getattr(client, method.lower())
    failures = []

    def check(label: str, response) -> None:
        if response.status_code >= 500:
            failures.append((label, response.status_code, response.content[:200]))

    # integers beyond bigint in the path
    if "{" in path.replace("{tenant_slug}", ""):
        check("huge path id", send(_fill(path, HUGE_TEXT)))
    url = _fill(path, "1")
    # NUL and huge integers in every query parameter
    for name in _query_params(operation):
        for value in (NUL, HUGE_TEXT):
            check(f"query {name}={value!r}", send(url + "?" + f"{name}={value.replace(chr(0), '%00')}"))
    if method in ("POST", "PUT", "PATCH"):
        check("nested JSON", send(url, data=DEEP, content_type="application/json"))
        check("nested object", send(url, data='{"a":' * 50_000 + "1" + "}" * 50_000, content_type="application/json"))
        fields = _body_fields(schema, operation)
        for value in (NUL, HUGE, [NUL], {"k": NUL}, [HUGE]):
            check(f"body {value!r}", send(url, data=json.dumps({f: value for f in fields}),
                                         content_type="application/json"))
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
    for query in ("q=a%00b", "predicate=%00", f"entity={HUGE}"):
        response = client.get(f"/t/acme/findings/?{query}")
        assert response.status_code == 200, query
        assert b"must not contain a NUL character" in response.content or b"out of range" in response.content
