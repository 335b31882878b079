"""Chit-chat and meta questions (issue 12 item 5): thanks, greetings and "what can you do" are answered without
retrieval or citations; "summarise that" reuses the previous answer's sources, re-checked against the caller's
access now, and refuses when they are no longer readable."""

from __future__ import annotations

from unittest import mock

import pytest

from chat.models import Message, Outcome
from chat.smalltalk import (
    CAPABILITIES_REPLY,
    GREETING_REPLY,
    NO_PREVIOUS_ANSWER_TEXT,
    PREVIOUS_SOURCES_GONE_TEXT,
    THANKS_REPLY,
    SmallTalk,
    classify,
)
from knowledge.services import document_acl_set
from tests.chat.conftest import ask_json, ask_stream

pytestmark = pytest.mark.django_db

LAPTOP = "How long do laptop replacements take?"  # answered from acme_public (workspace)


@pytest.mark.parametrize(("message", "kind"), [
    ("thanks", SmallTalk.THANKS), ("Thank you!", SmallTalk.THANKS), ("thx", SmallTalk.THANKS),
    ("Great, thanks a lot for the help.", SmallTalk.THANKS), ("ok thank you, that helps", SmallTalk.THANKS),
    ("Cheers!", SmallTalk.THANKS), ("Much appreciated", SmallTalk.THANKS),
    ("hello", SmallTalk.GREETING), ("Hi there!", SmallTalk.GREETING), ("Good morning", SmallTalk.GREETING),
    ("hey", SmallTalk.GREETING),
    ("What can you do?", SmallTalk.CAPABILITIES), ("hi, what can you do for me?", SmallTalk.CAPABILITIES),
    ("How can you help me?", SmallTalk.CAPABILITIES), ("Who are you?", SmallTalk.CAPABILITIES),
    ("help", SmallTalk.CAPABILITIES), ("What questions can I ask?", SmallTalk.CAPABILITIES),
    ("summarise that", SmallTalk.FOLLOW_UP), ("Summarize that please", SmallTalk.FOLLOW_UP),
    ("Explain that more", SmallTalk.FOLLOW_UP), ("can you explain it in more detail?", SmallTalk.FOLLOW_UP),
    ("tell me more", SmallTalk.FOLLOW_UP), ("TL;DR", SmallTalk.FOLLOW_UP),
    ("sum up the previous answer", SmallTalk.FOLLOW_UP),
    # questions, however chatty, go to retrieval
    ("hi, what is the PTO policy?", None), ("thanks, and who approves laptops?", None),
    ("summarise the parental leave policy", None), ("explain the escalation process", None),
    ("What can you tell me about Perch?", None), ("help desk opening hours", None),
    ("Who is the Head of Support?", None),
    ("", None), ("?", None),
])
def test_classify(message, kind):
    assert classify(message) == kind


@pytest.fixture
def no_retrieval():
    """Every search entry point fails the test if it is called."""
    with mock.patch("chat.answering.decide_question", side_effect=AssertionError("search ran")) as grounding, \
            mock.patch("chat.answering.hidden_probe", side_effect=AssertionError("hidden probe ran")), \
            mock.patch("chat.retrieval.hybrid_search", side_effect=AssertionError("retrieval ran")), \
            mock.patch("chat.answering.current_facts", side_effect=AssertionError("findings read")):
        yield grounding


@pytest.mark.parametrize(("message", "reply"), [
    ("Thanks!", THANKS_REPLY), ("hello", GREETING_REPLY), ("What can you do?", CAPABILITIES_REPLY),
])
def test_small_talk_is_answered_without_retrieval_or_citations(world, corpus, no_cache, no_retrieval, message,
                                                               reply):
    _, events = ask_stream(world.client(world.member), message)
    assert [name for name, _ in events][0] == "sources" and events[0][1] == {"sources": []}
    final = events[-1][1]
    assert (final["answer"], final["outcome"], final["mode"]) == (reply, "small_talk", "conversational")
    assert final["citations"] == [] and final["sources"] == [] and final["hint"] is None
    assert "[S" not in final["answer"]
    stored = Message.objects.get(pk=final["message_id"])
    assert (stored.outcome, stored.citations, stored.verification) == (
        Outcome.SMALL_TALK, [], {"status": "not_applicable"})
    assert no_retrieval.call_count == 0


def test_summarise_that_reuses_the_previous_sources_without_searching(world, corpus, no_cache):
    member = world.client(world.member)
    first = ask_json(member, LAPTOP).json()
    assert first["outcome"] == "answered" and first["citations"]
    cited = {c["chunk_id"] for c in first["citations"]}
    with mock.patch("chat.answering.decide_question", side_effect=AssertionError("search ran")), \
            mock.patch("chat.answering.hidden_probe", side_effect=AssertionError("hidden probe ran")):
        follow = ask_json(member, "summarise that", conversation_id=first["conversation_id"]).json()
    assert follow["outcome"] == "answered" and follow["mode"] == "grounding", follow
    assert follow["citations"] and {c["chunk_id"] for c in follow["citations"]} <= cited
    assert "Replacements take five days" in follow["answer"]
    stored = Message.objects.get(pk=follow["message_id"])
    assert corpus.acme_public.pk in stored.context_document_ids


def test_summarise_that_refuses_when_the_sources_are_no_longer_readable(world, corpus, no_cache):
    member = world.client(world.member)
    first = ask_json(member, LAPTOP).json()
    assert {c["document_id"] for c in first["citations"]} == {corpus.acme_public.pk}
    document_acl_set(authority=world.service(), document=corpus.acme_public, visibility="restricted",
                     acl=["group:hr"])
    with mock.patch("chat.answering.decide_question", side_effect=AssertionError("search ran")):
        follow = ask_json(member, "Explain that more", conversation_id=first["conversation_id"]).json()
    assert (follow["answer"], follow["outcome"], follow["citations"]) == (PREVIOUS_SOURCES_GONE_TEXT, "not_found", [])
    assert "five days" not in follow["answer"]


def test_summarise_that_with_nothing_before_it(world, corpus, no_cache, no_retrieval):
    final = ask_json(world.client(world.member), "summarise that").json()
    assert (final["answer"], final["outcome"], final["citations"]) == (NO_PREVIOUS_ANSWER_TEXT, "not_found", [])
