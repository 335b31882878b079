"""Conversations: rename, delete and search (API and page), thumbs up/down with a reason feeding the admins' gaps
page, and the empty Ask page's suggested questions drawn from what the caller can read."""

from __future__ import annotations

import pytest
from django.test import Client

from chat.models import AnswerFeedback, Conversation, Message
from chat.suggestions import question_suggestions
from tests.chat.conftest import ask_json

pytestmark = pytest.mark.django_db


def _page(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def asked(world, corpus, no_cache):
    """The member's conversation with one answer, and the analyst's own conversation."""
    member = world.client(world.member)
    final = ask_json(member, "How long do laptop replacements take?").json()
    other = ask_json(world.client(world.analyst), "Who receives a laptop on day one?").json()
    return {"member": member, "final": final, "conversation_id": final["conversation_id"],
            "analyst_conversation_id": other["conversation_id"], "analyst_message_id": other["message_id"]}


# --- Rename / delete -------------------------------------------------------------------------------------

def test_rename_through_the_api_folds_whitespace_and_refuses_an_empty_title(world, asked):
    url = f"/api/v1/conversations/{asked['conversation_id']}"
    response = asked["member"].patch(url, {"title": "  Laptop   questions "}, format="json")
    assert response.status_code == 200 and response.json()["title"] == "Laptop questions"
    assert Conversation.objects.get(pk=asked["conversation_id"]).title == "Laptop questions"
    empty = asked["member"].patch(url, {"title": "   "}, format="json")
    assert empty.status_code == 400 and empty.json() == {"title": ["A conversation needs a title."]}
    long = asked["member"].patch(url, {"title": "x" * 201}, format="json")
    assert long.status_code == 400 and "at most 200" in long.json()["title"][0]
    assert asked["member"].patch(url, {}, format="json").status_code == 400
    assert Conversation.objects.get(pk=asked["conversation_id"]).title == "Laptop questions"


def test_nobody_else_renames_or_deletes_a_conversation(world, asked):
    url = f"/api/v1/conversations/{asked['conversation_id']}"
    for user in (world.admin, world.analyst):
        client = world.client(user)
        assert client.patch(url, {"title": "mine now"}, format="json").status_code == 404
        assert client.delete(url).status_code == 404
    assert world.client(world.outsider, world.globex).delete(url).status_code == 404
    page = _page(world.admin)
    assert page.post(f"/t/acme/chat/{asked['conversation_id']}/rename", {"title": "x"}).status_code == 404
    assert page.post(f"/t/acme/chat/{asked['conversation_id']}/delete").status_code == 404
    assert Conversation.objects.get(pk=asked["conversation_id"]).title == "How long do laptop replacements take?"


def test_delete_through_the_api_removes_messages_and_feedback(world, asked):
    message_id = asked["final"]["message_id"]
    assert asked["member"].post(f"/api/v1/answers/{message_id}/feedback", {"rating": "down"},
                                format="json").status_code == 200
    response = asked["member"].delete(f"/api/v1/conversations/{asked['conversation_id']}")
    assert response.status_code == 204
    assert not Conversation.objects.filter(pk=asked["conversation_id"]).exists()
    assert not Message.objects.filter(conversation_id=asked["conversation_id"]).exists()
    assert not AnswerFeedback.objects.filter(message_id=message_id).exists()
    assert asked["member"].get(f"/api/v1/conversations/{asked['conversation_id']}").status_code == 404
    assert Conversation.objects.filter(pk=asked["analyst_conversation_id"]).exists()


def test_rename_and_delete_from_the_page(world, asked):
    page = _page(world.member)
    cid = asked["conversation_id"]
    html = page.get(f"/t/acme/chat/{cid}/").content.decode()
    assert f'action="/t/acme/chat/{cid}/rename"' in html and f'action="/t/acme/chat/{cid}/delete"' in html
    response = page.post(f"/t/acme/chat/{cid}/rename", {"title": "Replacements"}, follow=True)
    assert response.redirect_chain[-1][0] == f"/t/acme/chat/{cid}/"
    assert "Conversation renamed." in response.content.decode()
    assert '<h1 id="chat-heading" class="chat-heading">Replacements</h1>' in response.content.decode()
    refused = page.post(f"/t/acme/chat/{cid}/rename", {"title": ""}, follow=True).content.decode()
    assert "A conversation needs a title." in refused
    assert page.get(f"/t/acme/chat/{cid}/rename").status_code == 405
    response = page.post(f"/t/acme/chat/{cid}/delete", follow=True)
    assert response.redirect_chain[-1][0] == "/t/acme/chat/"
    assert "Deleted the conversation “Replacements”." in response.content.decode()
    assert not Conversation.objects.filter(pk=cid).exists()


# --- Search ----------------------------------------------------------------------------------------------

def test_search_matches_titles_and_questions_of_ones_own_conversations(world, corpus, asked):
    member = asked["member"]
    follow_up = ask_json(member, "Which certificate expired?", conversation_id=asked["conversation_id"])
    assert follow_up.status_code == 200
    elsewhere = ask_json(member, "What does the citation guide say?").json()["conversation_id"]
    ids = lambda q: [c["id"] for c in member.get("/api/v1/conversations", {"q": q}).json()]  # noqa: E731
    assert ids("LAPTOP") == [asked["conversation_id"]]  # the title, any case
    assert ids("certificate") == [asked["conversation_id"]]  # a later question in it
    assert ids("citation guide") == [elsewhere]
    assert ids("") == [elsewhere, asked["conversation_id"]]
    assert ids("day one") == []  # the analyst's question is theirs alone
    assert [c["id"] for c in world.client(world.analyst).get("/api/v1/conversations", {"q": "day one"}).json()] \
        == [asked["analyst_conversation_id"]]


def test_search_does_not_read_answers(world, asked):
    # An answer may quote a record the caller can no longer read: its words never find a conversation.
    assert "five days" in asked["final"]["answer"].lower()
    assert asked["member"].get("/api/v1/conversations", {"q": "five days"}).json() == []


def test_search_on_the_page(world, asked):
    page = _page(world.member)
    html = page.get("/t/acme/chat/", {"q": "replacements"}).content.decode()
    assert 'id="search-summary"' in html and "1 conversation matching “replacements”" in html
    assert f'/t/acme/chat/{asked["conversation_id"]}/' in html
    html = page.get("/t/acme/chat/", {"q": "nothing like this"}).content.decode()
    assert "No conversation matches." in html and f'/t/acme/chat/{asked["conversation_id"]}/' not in html


# --- Feedback --------------------------------------------------------------------------------------------

def test_thumbs_down_with_a_reason_reaches_the_gaps_page_and_api(world, asked):
    message_id = asked["final"]["message_id"]
    url = f"/api/v1/answers/{message_id}/feedback"
    first = asked["member"].post(url, {"rating": "up"}, format="json")
    assert first.status_code == 200 and first.json() == {"message_id": message_id, "rating": "up", "reason": ""}
    gaps = _page(world.admin).get("/t/acme/manage/gaps/").content.decode()
    assert 'id="no-unhelpful"' in gaps  # a thumbs up is no gap
    second = asked["member"].post(url, {"rating": "down", "reason": "  It ignored the loaner policy. "},
                                  format="json")
    assert second.json() == {"message_id": message_id, "rating": "down", "reason": "It ignored the loaner policy."}
    assert AnswerFeedback.objects.filter(message_id=message_id).count() == 1  # replaced, not added
    gaps = _page(world.admin).get("/t/acme/manage/gaps/").content.decode()
    assert 'id="unhelpful"' in gaps and "How long do laptop replacements take?" in gaps
    assert "It ignored the loaner policy." in gaps
    rows = world.client(world.admin).get("/api/v1/gaps/unhelpful-answers").json()
    assert [(r["example"], r["count"], r["reasons"]) for r in rows] == [
        ("How long do laptop replacements take?", 1, ["It ignored the loaner policy."])]
    # The reader sees their own rating when they reopen the conversation.
    detail = asked["member"].get(f"/api/v1/conversations/{asked['conversation_id']}").json()
    assert [m.get("feedback") for m in detail["messages"]] == [None, "down"]
    assert asked["member"].get(f"/api/v1/answers/{message_id}").json()["feedback"] == "down"


def test_feedback_only_on_ones_own_answers_and_only_up_or_down(world, asked):
    url = f"/api/v1/answers/{asked['final']['message_id']}/feedback"
    assert world.client(world.admin).post(url, {"rating": "down"}, format="json").status_code == 404
    assert world.client(world.outsider, world.globex).post(url, {"rating": "down"}, format="json").status_code \
        == 404
    bad = asked["member"].post(url, {"rating": "meh"}, format="json")
    assert bad.status_code == 400 and "rating" in bad.json()
    long = asked["member"].post(url, {"rating": "down", "reason": "x" * 1001}, format="json")
    assert long.status_code == 400 and "reason" in long.json()
    # A question's id is not an answer's.
    question_id = Message.objects.get(conversation_id=asked["conversation_id"], role="user").pk
    assert asked["member"].post(f"/api/v1/answers/{question_id}/feedback", {"rating": "up"},
                                format="json").status_code == 404
    assert not AnswerFeedback.objects.exists()


def test_unhelpful_answers_are_for_admins_of_their_own_tenant(world, asked):
    asked["member"].post(f"/api/v1/answers/{asked['final']['message_id']}/feedback", {"rating": "down"},
                         format="json")
    assert world.client(world.member).get("/api/v1/gaps/unhelpful-answers").status_code == 403
    assert _page(world.member).get("/t/acme/manage/gaps/").status_code == 403
    assert world.client(world.outsider, world.globex).get("/api/v1/gaps/unhelpful-answers").json() == []
    assert len(world.client(world.admin).get("/api/v1/gaps/unhelpful-answers").json()) == 1


# --- Suggestions -----------------------------------------------------------------------------------------

def test_suggestions_come_from_what_the_caller_can_read(world, corpus):
    member = question_suggestions(world.authority(world.member))
    admin = question_suggestions(world.authority(world.admin))
    outsider = question_suggestions(world.authority(world.outsider, world.globex))
    assert "What does “Incident review” say?" in member  # engineering's restricted record
    assert all("workforce" not in q.lower() and "Globex" not in q for q in member)
    assert "What does “Q4 workforce plan” say?" in admin  # hr's
    assert all("Incident review" not in q for q in admin)
    assert "What does “Globex laptops” say?" in outsider
    assert all("Laptop policy" not in q and "Incident" not in q for q in outsider)
    assert len(member) == len(set(member)) <= 4


def test_suggestions_prefer_the_findings_the_caller_can_read(world, corpus):
    from findings.writer import claims_write
    from tests.findings.conftest import fact

    chunk = corpus.acme_eng.chunks.order_by("ordinal").first()
    claims_write(tenant_id=world.acme.pk, label="suggest", facts=[
        fact(chunk, "The deploy pipeline failed because the laptop fleet certificate expired.", "Deploy pipeline",
             "status", "failed", "2025-01-15")])
    assert question_suggestions(world.authority(world.member))[0] == "What is the status of Deploy pipeline?"
    assert all("Deploy pipeline" not in q for q in question_suggestions(world.authority(world.analyst)))


def test_the_empty_ask_page_offers_them_and_an_open_conversation_does_not(world, corpus, no_cache):
    page = _page(world.member)
    html = page.get("/t/acme/chat/").content.decode()
    assert 'id="suggestions"' in html and 'data-question="What does “Incident review” say?"' in html
    final = ask_json(world.client(world.member), "How long do laptop replacements take?").json()
    assert 'id="suggestions"' not in page.get(f"/t/acme/chat/{final['conversation_id']}/").content.decode()
