"""The OpenAPI schema tells the truth: schemathesis, fed the schema the app serves, sends valid and invalid
requests to every operation as tenant acme's admin and member (WSGI, no network) over data seeded in acme and
globex. No 5xx, no undocumented status, content type, body or header, and nothing of globex answers 2xx."""

import pytest

from benchmarks.chat.security.schema import ID_PARAMETERS, schema_conformance_run

pytestmark = pytest.mark.django_db


def test_seed_names_an_object_of_both_tenants_for_every_path_id(schema_world):
    for name in ID_PARAMETERS:
        assert schema_world.own_ids[name] and schema_world.other_ids[name], name


def test_schemathesis_finds_no_5xx_no_schema_violation_and_no_cross_tenant_read(schema_world):
    run = schema_conformance_run(schema_world, examples=4)
    assert run.operations >= 50 and run.cases > run.operations * 10
    assert run.server_errors == []
    assert run.foreign_reads == []
    assert sorted(run.violations) == [], "\n".join(sorted(run.violations))


def test_schema_documents_pages_the_event_stream_and_every_refusal(client):
    schema = client.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    for path in ("/api/v1/documents", "/api/v1/findings", "/api/v1/entities"):
        listed = paths[path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        page = schema["components"]["schemas"][listed.rsplit("/", 1)[1]]
        assert {"count", "next", "previous", "results"} <= set(page["properties"]), path
    stream = paths["/api/v1/answers"]["post"]["responses"]["200"]["content"]["text/event-stream"]["schema"]
    assert stream["properties"]["event"]["enum"] == ["sources", "token", "final", "error"]
    assert stream["properties"]["data"]["contentMediaType"] == "application/json"
    gaps = paths["/api/v1/gaps"]["get"]["responses"]
    assert gaps["403"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOutput")
    for path, item in paths.items():
        for method, operation in item.items():
            codes = set(operation["responses"])
            assert {"400", "401", "503"} <= codes, f"{method} {path}"
            assert "404" in codes or "{" not in path, f"{method} {path}"
            assert "413" in codes or method not in ("post", "patch"), f"{method} {path}"
            for code, response in operation["responses"].items():
                assert code < "400" or response.get("content"), f"{method} {path} {code} has no error body"


def test_the_schema_is_valid_openapi(client):
    from drf_spectacular.validation import validate_schema

    schema = client.get("/api/schema/?format=json").json()
    # 3.1: its schema objects are JSON Schema, so the stream's `contentMediaType`/`contentSchema` are valid.
    assert schema["openapi"] == "3.1.0"
    validate_schema(schema)
