"""Every page under /t/<tenant>/ resolves tenant and authority through groundwork.page_access.tenant_page, so every
one refuses the same way: not signed in -> sign-in page; not a member (or no such tenant) -> 403 with one message;
role too low -> 403 naming the role."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.conf import settings
from django.test import Client, override_settings

from groundwork.page_access import NOT_A_MEMBER, tenant_page


def _pages():
    for module in settings.GROUNDWORK_URL_MODULES:
        for pattern in getattr(import_module(module), "page_urlpatterns", []):
            yield pattern.name, pattern.callback


def test_every_tenant_page_declares_its_role_through_the_one_decorator():
    undeclared = [name for name, view in _pages() if getattr(view, "required_role", None) is None]
    assert not undeclared, f"page views without @tenant_page: {undeclared}"
    roles = dict(_pages())
    assert roles["manage"].required_role == roles["sources"].required_role == "admin"
    assert roles["documents"].required_role == roles["chat"].required_role == "member"


def test_an_unknown_role_is_refused_at_import():
    with pytest.raises(ValueError, match="unknown role"):
        tenant_page("owner")


def _client(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@override_settings(DEBUG=False)
@pytest.mark.parametrize("path", ["/t/acme/chat/", "/t/acme/documents/", "/t/acme/findings/", "/t/acme/upload/",
                                  "/t/acme/manage/", "/t/acme/manage/sources/", "/t/acme/manage/gaps/"])
def test_one_refusal_rule_on_every_page(world, path):
    anonymous = _client().get(path)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(f"/accounts/login/?next={path}")
    for response in (_client(world.outsider).get(path), _client(world.member).get(path.replace("acme", "nope"))):
        html = response.content.decode()
        assert response.status_code == 403 and NOT_A_MEMBER in html
        assert "Acme" not in html  # neither the page nor the shell says the workspace exists


@override_settings(DEBUG=False)
def test_a_role_below_the_page_is_403_naming_the_role(world):
    for path in ("/t/acme/manage/", "/t/acme/manage/sources/", "/t/acme/manage/access-requests/"):
        response = _client(world.analyst).get(path)
        assert response.status_code == 403
        assert "This page is for the workspace&#x27;s administrators." in response.content.decode()
    assert _client(world.admin).get("/t/acme/manage/sources/").status_code == 200
