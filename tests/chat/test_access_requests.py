"""Request access: a member told that a hidden record exists asks for it; the tenant's admins see who asked,
the question and which records, are e-mailed, and grant (the record becomes readable) or decline. The
requester never learns anything about the record; other tenants see nothing."""

from __future__ import annotations

import json

import pytest
from django.core import mail
from django.test import Client

from chat.models import AccessRequest
from knowledge.access import document_access
from tests.chat.conftest import CANARIES, ask_json

pytestmark = pytest.mark.django_db

HIDDEN_QUESTION = "How many people does the workforce plan cut from the robotics team?"


def _page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _hinted_answer(world) -> dict:
    final = ask_json(world.client(world.member), HIDDEN_QUESTION).json()
    assert final["hint"] and final["outcome"] == "not_found"
    return final


def _assert_nothing_about_the_record(body: bytes, corpus) -> None:
    for canary in CANARIES:
        assert canary.encode() not in body
    data = json.loads(body)
    for row in data if isinstance(data, list) else [data]:
        assert set(row) <= {"id", "status", "created_at", "question", "resolved_at"}
        assert corpus.acme_hr.pk not in row.values()


def test_request_access_end_to_end(world, corpus, shared_topics, no_cache, django_capture_on_commit_callbacks):
    final = _hinted_answer(world)
    member = world.client(world.member)
    with django_capture_on_commit_callbacks(execute=True):
        created = member.post("/api/v1/access-requests", {"answer_id": final["message_id"]}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["status"] == "open" and set(created.json()) == {"id", "status", "created_at"}
    _assert_nothing_about_the_record(created.content, corpus)
    stored = AccessRequest.objects.get()
    assert stored.document_ids == [corpus.acme_hr.pk] and stored.question == HIDDEN_QUESTION
    assert stored.requester == world.member and stored.tenant == world.acme

    # a repeat returns the open one
    again = member.post("/api/v1/access-requests", {"answer_id": final["message_id"]}, format="json")
    assert again.status_code == 200 and again.json()["id"] == created.json()["id"]
    assert AccessRequest.objects.count() == 1

    mine = member.get("/api/v1/access-requests")
    assert mine.status_code == 200 and [r["id"] for r in mine.json()] == [stored.pk]
    assert mine.json()[0]["question"] == HIDDEN_QUESTION
    _assert_nothing_about_the_record(mine.content, corpus)

    # the admins are told who asked and what, not what the record says
    [email] = mail.outbox
    assert email.to == ["admin@example.test"]
    assert "member" in email.subject and HIDDEN_QUESTION in email.body
    assert "/t/acme/manage/access-requests/" in email.body
    for canary in CANARIES:
        assert canary not in email.body and canary not in email.subject

    [seen] = world.client(world.admin).get("/api/v1/access-requests").json()
    assert seen["requester"].startswith("member") and seen["question"] == HIDDEN_QUESTION
    assert seen["records"] == [{"readable": True, "document_id": corpus.acme_hr.pk, "title": "Q4 workforce plan",
                                "viewer_url": f"/t/acme/documents/{corpus.acme_hr.pk}/"}]
    assert world.client(world.analyst).get("/api/v1/access-requests").json() == []  # not theirs, not an admin
    assert world.client(world.outsider, world.globex).get("/api/v1/access-requests").json() == []

    page = _page_client(world.admin).get("/t/acme/manage/access-requests/")
    assert page.status_code == 200
    assert "Q4 workforce plan" in page.content.decode() and HIDDEN_QUESTION in page.content.decode()

    # grant: the member can read the record now; the other readers keep it
    assert document_access(world.authority(world.member), corpus.acme_hr.pk) is None
    response = _page_client(world.admin).post(f"/t/acme/manage/access-requests/{stored.pk}/resolve",
                                              {"decision": "grant"})
    assert response.status_code == 302
    assert document_access(world.authority(world.member), corpus.acme_hr.pk) is not None
    assert document_access(world.authority(world.admin), corpus.acme_hr.pk) is not None
    assert document_access(world.authority(world.analyst), corpus.acme_hr.pk) is None
    stored.refresh_from_db()
    assert stored.status == "granted" and stored.resolved_by == world.admin and stored.resolved_at is not None
    assert ask_json(world.client(world.member), HIDDEN_QUESTION).json()["outcome"] == "answered"
    # resolving twice is refused, and the member sees the status
    twice = _page_client(world.admin).post(f"/t/acme/manage/access-requests/{stored.pk}/resolve",
                                           {"decision": "decline"}, follow=True)
    assert "resolved already" in twice.content.decode()
    assert member.get("/api/v1/access-requests").json()[0]["status"] == "granted"


def test_decline_leaves_the_record_hidden(world, corpus, shared_topics, no_cache):
    final = _hinted_answer(world)
    created = world.client(world.member).post("/api/v1/access-requests", {"answer_id": final["message_id"]},
                                              format="json")
    request_id = created.json()["id"]
    # a member cannot resolve, not even their own
    assert _page_client(world.member).post(f"/t/acme/manage/access-requests/{request_id}/resolve",
                                           {"decision": "grant"}).status_code == 403
    # another tenant's admin cannot see it at all
    assert _page_client(world.outsider).post(f"/t/globex/manage/access-requests/{request_id}/resolve",
                                             {"decision": "grant"}).status_code == 404
    response = _page_client(world.admin).post(f"/t/acme/manage/access-requests/{request_id}/resolve",
                                              {"decision": "decline"})
    assert response.status_code == 302
    assert AccessRequest.objects.get(pk=request_id).status == "declined"
    assert document_access(world.authority(world.member), corpus.acme_hr.pk) is None
    # once resolved, the member may ask again
    again = world.client(world.member).post("/api/v1/access-requests", {"answer_id": final["message_id"]},
                                            format="json")
    assert again.status_code == 201 and again.json()["id"] != request_id


def test_only_own_hinted_answers_can_be_requested(world, corpus, shared_topics, no_cache):
    final = _hinted_answer(world)
    # someone else's answer: 404, like one that does not exist
    assert world.client(world.admin).post("/api/v1/access-requests", {"answer_id": final["message_id"]},
                                          format="json").status_code == 404
    assert world.client(world.member).post("/api/v1/access-requests", {"answer_id": 10**9},
                                           format="json").status_code == 404
    # an answer without a hint: 404
    plain = ask_json(world.client(world.member), "How long do laptop replacements take?").json()
    assert plain["hint"] is None
    assert world.client(world.member).post("/api/v1/access-requests", {"answer_id": plain["message_id"]},
                                           format="json").status_code == 404
    assert world.client(world.member).post("/api/v1/access-requests", {"answer_id": "x"},
                                           format="json").status_code == 400
    assert not AccessRequest.objects.exists()


def test_an_admin_who_cannot_read_a_record_sees_it_as_unreadable(world, corpus, no_cache):
    from chat.selectors import access_request_records

    records = access_request_records(world.authority(world.admin), [corpus.acme_eng.pk, corpus.acme_hr.pk])
    assert records[0] == {"readable": False}  # engineering-only: the admin is not in that group
    assert records[1]["title"] == "Q4 workforce plan"


def test_manage_pages_need_a_tenant_admin(world, corpus, no_cache):
    ask_json(world.client(world.member), "visitor parking policies")
    for url in ("/t/acme/manage/gaps/", "/t/acme/manage/access-requests/"):
        assert Client().get(url).status_code == 302
        assert _page_client(world.member).get(url).status_code == 403
        assert _page_client(world.analyst).get(url).status_code == 403
        assert _page_client(world.outsider).get(url).status_code == 403
        assert _page_client(world.admin).get(url).status_code == 200
    gaps = _page_client(world.admin).get("/t/acme/manage/gaps/")
    assert "visitor parking policies" in gaps.content.decode()
    assert "visitor parking" not in _page_client(world.outsider).get("/t/globex/manage/gaps/").content.decode()


def test_manage_cards_are_registered():
    from groundwork.hooks import manage_sections

    sections = {s.key: s for s in manage_sections()}
    assert sections["access-requests"].url_name == "pages:access-requests"
    assert sections["gaps"].url_name == "pages:gaps" and sections["gaps"].role == "admin"


def test_openapi_documents_access_requests_and_source_fields(client, db):
    schema = client.get("/api/schema/").content
    assert b"/api/v1/access-requests" in schema
    assert b"viewer_url" in schema and b"fragment_html" in schema and b"location" in schema
