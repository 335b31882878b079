"""The embedder failing during a question: the answer comes from full text, cited as always, and says so
(`lexical_only`) in the stream, in GET /answers/<id> and in the conversation; it is not cached; and a question
full text cannot answer is recorded as a retrieval failure, not as missing knowledge."""

from __future__ import annotations

import pytest

from chat.models import AnswerCache, GapEvent, Message
from tests.chat.conftest import ask_json, ask_stream

pytestmark = pytest.mark.django_db

QUESTION = "How long do laptop replacements take?"


@pytest.fixture
def gate_for_fake_vectors(settings):
    # The fake's vectors are random: the similarity bar is calibrated for MiniLM, not for them.
    settings.ANSWER_GATE_MIN_SIMILARITY = 0.0


def test_a_failing_embedder_gives_a_cited_full_text_answer_with_the_flag(world, remote_embedder, remote_corpus,
                                                                         gate_for_fake_vectors):
    client = world.client(world.member)
    remote_embedder.fail_next(1000, status=503)
    _, events = ask_stream(client, QUESTION)
    final = events[-1][1]
    assert final["outcome"] == "answered" and final["lexical_only"] is True
    assert "Replacements take five days." in final["answer"]
    assert [c["record_url"] for c in final["citations"]] == ["https://wiki.acme.test/laptops"]
    assert not AnswerCache.objects.exists()  # a degraded answer must not outlive the outage
    stored = client.get(f"/api/v1/answers/{final['message_id']}").json()
    assert stored["lexical_only"] is True and stored["outcome"] == "answered"
    conversation = client.get(f"/api/v1/conversations/{final['conversation_id']}").json()
    assert conversation["messages"][-1]["lexical_only"] is True
    # The embedder is back (and its cooldown over): the same question is answered with it, without the flag.
    from knowledge.embedders import embedder_reset

    remote_embedder.recover()
    embedder_reset()
    again = ask_json(client, QUESTION).json()
    assert again["lexical_only"] is False  # (the fake's random vectors may not agree with full text: no outcome)
    assert Message.objects.filter(role="assistant", lexical_only=True).count() == 1


def test_a_timing_out_embedder_is_the_same_as_a_failing_one(
        world, remote_embedder, remote_corpus, gate_for_fake_vectors):
    remote_embedder.stall_next(1000, 2.0)
    final = ask_json(world.client(world.member), QUESTION).json()
    assert final["outcome"] == "answered" and final["lexical_only"] is True and final["citations"]


def test_nothing_found_by_full_text_is_a_retrieval_failure_gap(world, remote_embedder, remote_corpus, no_cache):
    remote_embedder.fail_next(1000, status=503)
    final = ask_json(world.client(world.member), "What is the visitor parking policy?").json()
    assert final["outcome"] == "not_found" and final["lexical_only"] is True
    [gap] = GapEvent.objects.all()
    assert (gap.kind, gap.cause) == ("retrieval_failed", "embedding_error")


def test_hidden_records_stay_hidden_when_full_text_answers(world, remote_embedder, remote_corpus, no_cache):
    remote_embedder.fail_next(1000, status=503)
    final = ask_json(world.client(world.member), "What does the workforce plan do to the robotics team?").json()
    assert final["lexical_only"] is True and final["outcome"] != "answered"
    assert "CANARY-HR-7731" not in str(final) and "robotics team by four" not in str(final)


def test_strict_deployments_still_say_unavailable(world, remote_embedder, remote_corpus, settings, no_cache):
    settings.RETRIEVAL_REQUIRE_SEMANTIC = True
    remote_embedder.fail_next(1000, status=503)
    final = ask_json(world.client(world.member), QUESTION).json()
    assert final["outcome"] == "unavailable" and final["citations"] == []
