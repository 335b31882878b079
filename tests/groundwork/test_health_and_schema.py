import pytest

pytestmark = pytest.mark.django_db


def test_healthz_reports_components_without_tenant_data(client, world):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] is True and body["database"]["pgvector"].startswith("0.8")
    assert body["broker"] == {"ok": True, "mode": "inline"}
    text = response.content.decode()
    for secret in ("acme", "globex", "admin@", "outsider"):
        assert secret not in text


def test_healthz_is_503_when_a_component_fails(client, monkeypatch):
    from groundwork import hooks

    monkeypatch.setitem(hooks._health_checks, "broken", lambda: {"ok": False, "why": "test"})
    response = client.get("/healthz")
    assert response.status_code == 503 and response.json()["status"] == "degraded"


def test_openapi_schema_and_docs_are_served(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200 and b"/api/v1/me" in schema.content
    assert client.get("/api/docs/").status_code == 200


def test_healthz_answers_head_like_get(client, monkeypatch):
    # Uptime monitors and load balancers probe with HEAD; it answered 405, which reads as "down".
    assert client.head("/healthz").status_code == 200
    from groundwork import hooks

    monkeypatch.setitem(hooks._health_checks, "broken", lambda: {"ok": False, "why": "test"})
    assert client.head("/healthz").status_code == 503
