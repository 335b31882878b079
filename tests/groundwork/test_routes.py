"""The URL-conf walk the security probes and the hostile-input tests rely on finds pages and API routes,
with their parameters, so an endpoint added later is probed without editing a list."""

from benchmarks.groundwork.routes import api_endpoints, route_fill, url_routes


def test_the_walk_finds_pages_and_api_routes_with_their_parameters():
    routes = {route.template: route for route in url_routes()}
    page = routes["/t/{tenant_slug}/documents/{document_id}/"]
    assert (page.params, page.name) == (("tenant_slug", "document_id"), "pages:document")
    assert routes["/api/v1/findings/{claim_id}"].name == "api:finding"
    assert routes["/t/{tenant_slug}/api/v1/answers"].name == "tenant-api:answers"
    assert not any(t.startswith("/admin/") for t in {r.template for r in url_routes(exclude_prefixes=("/admin/",))})


def test_api_endpoints_carry_their_methods():
    endpoints = set(api_endpoints())
    assert {("/api/v1/answers", "POST"), ("/api/v1/documents/{document_id}", "DELETE")} <= endpoints
    assert all(path.startswith("/api/v1/") for path, _ in endpoints)


def test_route_fill():
    assert route_fill("/t/{tenant_slug}/findings/{claim_id}/", {"tenant_slug": "acme", "claim_id": 7}) == (
        "/t/acme/findings/7/")
