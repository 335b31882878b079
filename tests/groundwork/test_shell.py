"""The app shell: navigation by role, the tenant switcher, the home page, the Manage hub and the page CSP."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.test import RequestFactory
from django.urls import resolve

from groundwork import hooks
from groundwork.context_processors import shell
from groundwork.middleware import content_security_policy
from groundwork.services import membership_set

pytestmark = pytest.mark.django_db


def _request(path, user):
    request = RequestFactory().get(path)
    request.user = user
    request.resolver_match = resolve(path)
    return request


def _nav(html):
    wide = re.search(r'<nav class="nav-wide" aria-label="Main">(.*?)</nav>', html, re.S)
    return wide.group(1) if wide else ""


def test_the_context_processor_costs_one_query_and_nothing_off_tenant_pages(world, django_assert_num_queries):
    with django_assert_num_queries(1):
        context = shell(_request("/t/acme/manage/", world.admin))
    assert context["shell"]["tenant_slug"] == "acme" and context["shell"]["tenant_name"] == "Acme Corp"
    with django_assert_num_queries(0):
        assert shell(_request("/t/acme/manage/", AnonymousUser())) == {}
        assert shell(_request("/", world.admin)) == {}


def test_nav_marks_the_current_item_and_shows_manage_only_to_admins(world):
    admin = shell(_request("/t/acme/manage/", world.admin))["shell"]
    labels = [item.label for item in admin["nav"]]
    assert "Ask" in labels and "Findings" in labels and labels[-1] == "Manage"
    assert [item.label for item in admin["nav"] if item.current] == ["Manage"]
    assert {item.url for item in admin["nav"]} >= {"/t/acme/chat/", "/t/acme/findings/", "/t/acme/manage/"}
    for user in (world.member, world.analyst):
        nav = shell(_request("/t/acme/chat/", user))["shell"]["nav"]
        assert "Manage" not in [item.label for item in nav]
        assert [item.label for item in nav if item.current] == ["Ask"]


def test_nav_skips_url_names_no_app_defines(world, monkeypatch):
    from groundwork import context_processors

    monkeypatch.setattr(context_processors, "NAV_ITEMS", (
        ("pages:chat", "Ask", "member", frozenset()),
        ("pages:no-such-page", "Ghost", "member", frozenset()),
    ))
    nav = shell(_request("/t/acme/chat/", world.member))["shell"]["nav"]
    assert [item.label for item in nav] == ["Ask"]


def test_a_non_member_gets_no_tenant_shell(world):
    assert shell(_request("/t/acme/chat/", world.outsider)) == {}


def test_the_rendered_shell_for_an_admin(client, world):
    client.force_login(world.admin)
    response = client.get("/t/acme/manage/")
    html = response.content.decode()
    assert response.status_code == 200
    nav = _nav(html)
    assert re.search(r'<a href="/t/acme/manage/" aria-current="page" data-nav="pages:manage">Manage</a>', nav)
    assert '<a href="/t/acme/chat/" data-nav="pages:chat">Ask</a>' in nav
    assert '<a class="skip-link" href="#content">Skip to content</a>' in html
    assert '<main id="content"' in html
    assert '<details class="nav-narrow menu">' in html  # the small-screen menu, no JavaScript
    assert "Switch workspace" not in html  # admin belongs to acme only
    assert "<style" not in html and " style=" not in html and "<script>" not in html
    assert 'href="/static/groundwork/app.css"' in html


def test_the_rendered_shell_for_a_member_has_no_manage(client, world):
    client.force_login(world.member)
    html = client.get("/t/acme/manage/").content.decode()  # the branded 403 still carries the shell
    nav = _nav(html)
    assert "Ask" in nav and "Manage" not in nav and "/t/acme/manage/" not in nav


def test_the_tenant_switcher_appears_only_for_users_in_several_tenants(client, world):
    membership_set(user=world.admin, tenant=world.globex, role="member")
    client.force_login(world.admin)
    html = client.get("/t/acme/manage/").content.decode()
    assert "Switch workspace" in html
    # Manage is not theirs in globex, so the switcher goes to its Ask page.
    assert '<a href="/t/globex/chat/" data-tenant="globex">Globex Inc</a>' in html
    client.force_login(world.member)
    assert "Switch workspace" not in client.get("/t/acme/manage/").content.decode()


def test_the_tenant_switcher_keeps_the_section(world):
    membership_set(user=world.admin, tenant=world.globex, role="admin")
    context = shell(_request("/t/acme/findings/", world.admin))["shell"]
    assert [(o.slug, o.url) for o in context["other_tenants"]] == [("globex", "/t/globex/findings/")]
    context = shell(_request("/t/acme/manage/", world.admin))["shell"]
    assert [o.url for o in context["other_tenants"]] == ["/t/globex/manage/"]


# --- Home -------------------------------------------------------------------------------------------

def test_home_sends_anonymous_visitors_to_sign_in(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=/"


def test_home_takes_a_one_tenant_user_to_ask(client, world):
    client.force_login(world.member)
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/t/acme/chat/"


def test_home_lets_a_multi_tenant_user_pick(client, world):
    membership_set(user=world.member, tenant=world.globex, role="analyst")
    client.force_login(world.member)
    response = client.get("/")
    html = response.content.decode()
    assert response.status_code == 200 and "Choose a workspace" in html
    assert 'href="/t/acme/chat/"' in html and 'href="/t/globex/chat/"' in html


def test_home_is_kind_to_a_user_in_no_workspace(client, world):
    loner = get_user_model().objects.create_user(username="loner", password=None)
    client.force_login(loner)
    response = client.get("/")
    html = response.content.decode()
    assert response.status_code == 200 and "You belong to no workspace yet" in html
    assert "acme" not in html and "globex" not in html


# --- Manage hub -----------------------------------------------------------------------------------------

@pytest.fixture
def sections(monkeypatch):
    monkeypatch.setattr(hooks, "_manage_sections", {})
    hooks.manage_section_register(key="findings", title="Findings review", description="Check what was learnt.",
                                  url_name="pages:findings", order=10)
    hooks.manage_section_register(key="ghost", title="Ghost section", description="Not built yet.",
                                  url_name="pages:not-built", order=20)


def test_manage_hub_shows_sections_and_platform_cards_to_admins(client, world, sections):
    client.force_login(world.admin)
    response = client.get("/t/acme/manage/")
    html = response.content.decode()
    assert response.status_code == 200
    assert '<a href="/t/acme/findings/">Findings review</a>' in html
    assert "Ghost section" not in html  # its URL name does not resolve: skipped, not a crash
    for title, url in (("Members and roles", "/admin/platform/membership/"), ("Groups", "/admin/platform/principal/"),
                       ("API keys", "/admin/platform/apikey/")):
        assert f'<a href="{url}">{title}</a>' in html


@pytest.mark.parametrize("who", ["member", "analyst"])
def test_manage_hub_is_403_below_admin(client, world, who, sections):
    client.force_login(getattr(world, who))
    response = client.get("/t/acme/manage/")
    assert response.status_code == 403
    html = response.content.decode()
    assert "You are not allowed to do that" in html and "This page is for the workspace&#x27;s administrators." in html
    assert "Findings review" not in html


def test_manage_hub_is_the_same_403_for_outsiders_and_unknown_tenants(client, world):
    client.force_login(world.outsider)
    assert client.get("/t/acme/manage/").status_code == 403
    assert client.get("/t/nope/manage/").status_code == 403
    assert client.get("/t/globex/manage/").status_code == 200  # their own tenant


def test_manage_hub_needs_sign_in(client, world):
    response = client.get("/t/acme/manage/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=/t/acme/manage/"


# --- Content-Security-Policy -------------------------------------------------------------------------------

def test_shell_pages_carry_the_csp_but_admin_and_api_docs_do_not(client, world):
    client.force_login(world.admin)
    policy = content_security_policy()
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert client.get("/t/acme/manage/")["Content-Security-Policy"] == policy
    assert client.get("/accounts/login/")["Content-Security-Policy"] == policy
    assert "Content-Security-Policy" not in client.get("/admin/login/").headers
    assert "Content-Security-Policy" not in client.get("/api/docs/").headers
    assert "Content-Security-Policy" not in client.get("/healthz").headers  # JSON, not a page
    assert client.get("/t/acme/chat/")["Content-Security-Policy"] == policy  # chat's own decorator, same policy


def test_home_links_an_operator_to_the_platform_admin(client, world):
    operator = get_user_model().objects.create_user(username="op", password=None, is_staff=True, is_superuser=True)
    client.force_login(operator)
    html = client.get("/").content.decode()
    assert 'id="platform-admin-link"' in html and 'href="/admin/"' in html
    assert "You belong to no workspace yet" not in html
    # A plain user in no workspace gets no such link (the admin would refuse them anyway).
    loner = get_user_model().objects.create_user(username="loner", password=None)
    client.force_login(loner)
    assert "platform-admin-link" not in client.get("/").content.decode()
