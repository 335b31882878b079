"""One refusal rule for the whole API (groundwork.permissions): 401 without credentials; 404 for a tenant or an
object the caller may not read (the same as missing); 403 naming the role when the caller's role is below what
the operation needs — decided before any lookup; 403 with a reason for a readable object the caller may not
change. The table runs every operation of the URL conf (not a hand-picked list) for every kind of caller."""

from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

from groundwork.api import AuthorityAPIView
from groundwork.authority import ROLE_RANK
from groundwork.permissions import CallerHasRole, handler_role
from groundwork.services import api_key_issue_service
from groundwork.urls import api_patterns
from knowledge.models import Source

pytestmark = pytest.mark.django_db

MISSING_ID = 2_000_000_000
# What the product promises: the operations that need more than the member role. A new admin-only endpoint
# belongs here (and in docs/security.md's table); everything else is open to every member of the tenant.
ADMIN_ONLY = {
    ("POST", "sources"), ("PATCH", "sources/<int:source_id>"), ("DELETE", "sources/<int:source_id>"),
    ("POST", "sources/<int:source_id>/import"), ("POST", "documents"), ("PATCH", "documents/<int:document_id>"),
    ("DELETE", "documents/<int:document_id>"), ("GET", "gaps"), ("GET", "gaps/unhelpful-answers"),
    # connectors: configuration, credentials and sync runs are the tenant admin's
    ("GET", "sources/<int:source_id>/connector"), ("PUT", "sources/<int:source_id>/connector"),
    ("POST", "sources/<int:source_id>/sync-runs"), ("GET", "sources/<int:source_id>/sync-runs"),
    ("GET", "sync-runs/<int:run_id>"),
    # sharing: who reads a document, adding and removing readers, and the principal search
    ("GET", "documents/<int:document_id>/readers"), ("POST", "documents/<int:document_id>/readers"),
    ("DELETE", "documents/<int:document_id>/readers/<int:principal_id>"), ("GET", "principals"),
}
_PARAM = re.compile(r"<int:(\w+)>")


def api_operations() -> list[tuple[str, str, type]]:
    """(METHOD, route, view class) for every handler of every API URL pattern."""
    operations = []
    for pattern in api_patterns:
        view = pattern.callback.view_class
        for method in view.http_method_names:
            if method in ("options", "head") or not hasattr(view, method):
                continue
            operations.append((method.upper(), str(pattern.pattern), view))
    return operations


def _path(route: str, ids: dict[str, int] | None = None) -> str:
    return _PARAM.sub(lambda m: str((ids or {}).get(m.group(1), MISSING_ID)), route)


def _call(client: APIClient, method: str, url: str):
    if method in ("POST", "PATCH", "PUT"):
        return getattr(client, method.lower())(url, {}, format="json")
    return getattr(client, method.lower())(url)


def _key_client(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client


@pytest.fixture
def callers(world):
    """Every kind of caller of tenant acme, with its role: delegated keys of each role, service keys of the
    lowest and highest role, and a signed-in member (who names the tenant with /t/acme/)."""
    session_member = APIClient()
    session_member.force_login(world.member)
    return {
        "member key": ("member", world.client(world.member), "/api/v1/"),
        "analyst key": ("analyst", world.client(world.analyst), "/api/v1/"),
        "admin key": ("admin", world.client(world.admin), "/api/v1/"),
        "service key (member)": ("member", _key_client(
            api_key_issue_service(tenant=world.acme, name="probe-member", role="member").raw_key), "/api/v1/"),
        "service key (admin)": ("admin", _key_client(
            api_key_issue_service(tenant=world.acme, name="probe-admin", role="admin").raw_key), "/api/v1/"),
        "member session": ("member", session_member, "/t/acme/api/v1/"),
    }


def test_the_url_conf_has_api_operations_and_every_one_enforces_the_rule():
    operations = api_operations()
    assert len(operations) >= 25
    for method, route, view in operations:
        assert issubclass(view, AuthorityAPIView), f"{method} {route}"
        assert view.permission_classes == [CallerHasRole], f"{method} {route} replaced the refusal rule"


def test_declared_roles_are_the_documented_ones():
    declared = {(m, r) for m, r, view in api_operations() if handler_role(view, m) != "member"}
    assert declared == ADMIN_ONLY


def test_role_table_over_every_operation_and_caller(callers):
    failures = []
    for method, route, view in api_operations():
        required = handler_role(view, method)
        for name, (role, client, prefix) in callers.items():
            response = _call(client, method, prefix + _path(route))
            where = f"{name}: {method} {prefix}{route} -> {response.status_code}"
            if ROLE_RANK[role] < ROLE_RANK[required]:
                body = response.json()
                if response.status_code != 403 or body.get("required_role") != required or \
                        f"needs the {required} role" not in body.get("detail", ""):
                    failures.append(f"{where}, expected 403 naming {required}: {body}")
            elif "<" in route:
                if response.status_code != 404:
                    failures.append(f"{where}, expected 404 for a missing id")
            elif method == "GET":
                if response.status_code != 200:
                    failures.append(f"{where}, expected 200")
            elif response.status_code != 400:  # an empty body: invalid input
                failures.append(f"{where}, expected 400 for an empty body")
    assert failures == []


def test_anonymous_callers_get_401_and_outsiders_404_everywhere(world):
    outsider_session = APIClient()
    outsider_session.force_login(world.outsider)
    outsider_key = world.client(world.outsider, world.globex)
    failures = []
    for method, route, _view in api_operations():
        for prefix in ("/api/v1/", "/t/acme/api/v1/"):
            status = _call(APIClient(), method, prefix + _path(route)).status_code
            if status != 401:
                failures.append(f"anonymous {method} {prefix}{route} -> {status}")
        for name, client in (("outsider session", outsider_session), ("outsider key", outsider_key)):
            status = _call(client, method, "/t/acme/api/v1/" + _path(route)).status_code
            if status != 404:
                failures.append(f"{name} {method} /t/acme/api/v1/{route} -> {status}")
    assert failures == []


def test_the_other_tenants_objects_are_404_for_every_caller_who_passes_the_role_check(schema_world, callers):
    failures = []
    for method, route, view in api_operations():
        params = _PARAM.findall(route)
        if not params:
            continue
        foreign = _path(route, {p: schema_world.other_ids[p][0] for p in params})
        for name, (role, client, prefix) in callers.items():
            if ROLE_RANK[role] < ROLE_RANK[handler_role(view, method)]:
                continue
            status = _call(client, method, prefix + foreign).status_code
            if status != 404:
                failures.append(f"{name} {method} {prefix}{foreign} -> {status}")
    assert failures == []


def test_a_readable_object_the_caller_may_not_change_is_403_with_the_reason(world):
    platform_source = Source.objects.create(tenant=world.platform, kind="wiki", name="Reference")
    admin = world.client(world.admin)
    response = admin.patch(f"/api/v1/sources/{platform_source.pk}", {"name": "Mine now"}, format="json")
    assert response.status_code == 403 and "read-only" in response.json()["detail"]
    assert admin.delete(f"/api/v1/sources/{platform_source.pk}").status_code == 403
    acme_source = Source.objects.create(tenant=world.acme, kind="wiki", name="Admins only")
    refused = world.client(world.member).post(f"/api/v1/sources/{acme_source.pk}/uploads",
                                              {"files": []}, format="multipart")
    assert refused.status_code == 403 and "uploads from members" in refused.json()["detail"]
    # Missing stays 404 for the same callers.
    assert admin.patch(f"/api/v1/sources/{MISSING_ID}", {"name": "x"}, format="json").status_code == 404


def test_the_order_holds_for_hostile_ids_and_parameters(world):
    huge = 2**70
    assert APIClient().get(f"/api/v1/documents/{huge}").status_code == 401
    refused = world.client(world.member).patch(f"/api/v1/documents/{huge}", {}, format="json")
    assert refused.status_code == 403 and refused.json()["required_role"] == "admin"
    assert world.client(world.admin).patch(f"/api/v1/documents/{huge}", {}, format="json").status_code == 404
    assert world.client(world.member).get("/api/v1/findings?q=a%00b").status_code == 400
