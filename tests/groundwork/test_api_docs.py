"""API docs that work offline (Swagger UI and ReDoc from our own static files) and an OpenAPI schema in
which every endpoint explains itself."""

import re

import pytest
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db

ASSET = re.compile(r'(?:src|href)="([^"]+)"')


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_docs_load_nothing_from_the_internet(client, url):
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert not re.search(r"https?://", html), "the docs page references an outside URL"
    assets = [a for a in ASSET.findall(html) if a.startswith("/static/")]
    assert assets, "expected the docs to load their assets from /static/"
    for asset in assets:
        assert finders.find(asset.removeprefix("/static/")), f"{asset} is not one of our static files"


def test_swagger_ui_has_no_remote_validator(client):
    assert '"validatorUrl": null' in client.get("/api/docs/").content.decode()


def _operations(client):
    schema = client.get("/api/schema/?format=json").json()
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                yield path, method, operation


def test_every_operation_has_its_own_summary_and_description(client):
    operations = list(_operations(client))
    assert len(operations) > 20
    by_description: dict[str, set] = {}
    for path, method, operation in operations:
        where = f"{method.upper()} {path}"
        assert (operation.get("summary") or "").strip(), f"{where} has no summary"
        assert (operation.get("description") or "").strip(), f"{where} has no description"
        # The /t/<tenant>/ mount is the same endpoint; anything else must describe itself.
        endpoint = (method, path.replace("/t/{tenant_slug}", "", 1))
        by_description.setdefault(operation["description"], set()).add(endpoint)
    shared = {d[:60]: sorted(e) for d, e in by_description.items() if len(e) > 1}
    assert not shared, f"operations share a description: {shared}"


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/", "/api/schema/"])
def test_docs_open_to_every_signed_in_person(client, world, url):
    # The user menu links every signed-in person here: someone in several tenants, a platform operator (in
    # none) and a member alike, not only those an API call could resolve to one tenant (was 401 for the first two).
    from django.contrib.auth import get_user_model

    from groundwork.services import membership_set

    membership_set(user=world.member, tenant=world.globex, role="member")
    operator = get_user_model().objects.create_superuser("operator", "op@example.test", None)
    for person in (world.member, operator, world.analyst):
        client.force_login(person)
        assert client.get(url).status_code == 200, person.username


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_docs_pages_answer_options(client, url):
    # OPTIONS on Swagger UI rendered DRF's metadata through the page template and failed with a 500.
    response = client.options(url)
    assert response.status_code == 200
    assert "GET" in response["Allow"]
