"""The chat page: login and membership required, strict CSP, no inline script or style."""

import re

import pytest
from django.test import Client

from tests.chat.conftest import ask_json

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_anonymous_is_sent_to_login(world):
    response = Client().get("/t/acme/chat/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_non_member_gets_403(world):
    assert _client(world.outsider).get("/t/acme/chat/").status_code == 403
    assert _client(world.member).get("/t/nope/chat/").status_code == 403


def test_page_has_strict_csp_and_no_inline_code(world, corpus):
    response = _client(world.member).get("/t/acme/chat/")
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "img-src 'self'" in csp and "unsafe-inline" not in csp
    html = response.content.decode()
    scripts = re.findall(r"<script[^>]*>", html)
    assert '<script src="/static/chat/chat.js" defer>' in scripts
    assert all(" src=" in tag for tag in scripts)  # no inline script anywhere on the page
    # The page's own markup (the shell around it is base.html's): no inline style, no handlers.
    own = html[html.index('<div id="chat"'):]
    assert "<style" not in own and " style=" not in own and not re.search(r"\son\w+=", own)
    assert "csrftoken" in response.cookies
    assert "corpus-empty" not in html


def test_empty_base_is_announced(world):
    from knowledge.models import Document

    Document.objects.filter(tenant=world.platform).delete()
    assert b'id="corpus-empty"' in _client(world.member).get("/t/acme/chat/").content


def test_history_lists_own_conversations_and_hides_others(world, corpus, no_cache):
    final = ask_json(world.client(world.member), "How long do laptop replacements take?").json()
    page = _client(world.member).get("/t/acme/chat/").content.decode()
    assert f'/t/acme/chat/{final["conversation_id"]}/' in page
    assert _client(world.member).get(f"/t/acme/chat/{final['conversation_id']}/").status_code == 200
    assert _client(world.admin).get(f"/t/acme/chat/{final['conversation_id']}/").status_code == 404
    # (The admin's suggested questions may name the readable "Laptop policy"; the member's question is not there.)
    assert "laptop replacements" not in _client(world.admin).get("/t/acme/chat/").content.decode().lower()


def test_session_post_needs_the_csrf_header(world, corpus, no_cache):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.member)
    client.get("/t/acme/chat/")
    denied = client.post("/t/acme/api/v1/answers", {"question": "laptops"}, content_type="application/json")
    assert denied.status_code == 403
    token = client.cookies["csrftoken"].value
    allowed = client.post("/t/acme/api/v1/answers", {"question": "laptop replacements"},
                          content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert allowed.status_code == 200 and allowed.json()["outcome"] == "answered"


def test_page_extends_the_shell_with_three_regions_and_a_labelled_input(world, corpus):
    html = _client(world.member).get("/t/acme/chat/").content.decode()
    assert "<title>Ask · Groundwork</title>" in html
    assert html.count('id="chat"') == 1 and "<!doctype html>" in html.lower()
    for region in ('id="history"', 'id="messages"', 'id="evidence"'):
        assert region in html
    assert '<label for="question">' in html and 'id="evidence-close" aria-label=' in html
    assert 'data-api="/t/acme/api/v1/"' in html and 'data-page="/t/acme/chat/"' in html
