"""The answer protocol: sources before tokens, no half label in any token, invented labels removed before
the answer leaves the server, JSON without the stream, conversations owned by their creator, verification."""

import pytest

from chat.answering import answer_events
from chat.models import Message
from chat.providers.base import Delta, Done, Sources
from chat.services import conversation_start
from chat.streaming import ends_with_partial_label
from tests.chat.conftest import ask_json, ask_stream

pytestmark = pytest.mark.django_db


class ScriptedProvider:
    """A provider that searches for real and then emits a fixed text in awkward pieces."""

    cache_id = "scripted"

    def __init__(self, pieces):
        self.pieces = pieces

    def answer(self, request):
        decision = request.search(request.question)
        from chat.context import assemble_context

        context = assemble_context(request.question, decision.evidence, token_budget=2000)
        yield Sources(context.label_map)
        for piece in self.pieces:
            yield Delta(piece)
        yield Done(mode="grounding", decisions=[decision])


def test_half_labels_never_reach_the_client_and_invented_ones_are_removed(world, corpus, no_cache):
    authority = world.authority(world.member)
    conversation = conversation_start(authority, title="t")
    pieces = ["Replacements take five days [", "S", "1", "][S", "9] and more [S1", ",", " S9]", "."]
    events = list(answer_events(authority, question="How long do laptop replacements take?",
                                conversation=conversation, provider=ScriptedProvider(pieces)))
    assert events[0].name == "sources" and events[-1].name == "final"
    tokens = [e.data["text"] for e in events if e.name == "token"]
    assert not any(ends_with_partial_label(t) for t in tokens)
    final = events[-1].data
    assert "".join(tokens) == final["answer"] == "Replacements take five days [S1] and more [S1]."
    assert final["removed_labels"] == ["S9"] and [c["label"] for c in final["citations"]] == ["S1"]
    readable = {c["chunk_id"] for c in events[0].data["sources"]}
    assert all(c["chunk_id"] in readable for c in final["citations"])


def test_every_cited_label_maps_to_a_readable_chunk(world, corpus, no_cache):
    from knowledge.access import readable_chunks

    authority = world.authority(world.member)
    for question in ("How long do laptop replacements take?", "Why did the deploy pipeline fail?",
                     "Who receives a laptop on day one?"):
        final = ask_json(world.client(world.member), question).json()
        for citation in final["citations"]:
            readable = readable_chunks(authority).filter(pk=citation["chunk_id"], document_id=citation["document_id"])
            assert readable.exists()
            assert f"[{citation['label']}]" in final["answer"]


def test_stream_query_parameter_and_json_default(world, corpus, no_cache):
    client = world.client(world.member)
    streamed = client.post("/api/v1/answers?stream=1", {"question": "laptop replacements"}, format="json")
    assert streamed["Content-Type"].startswith("text/event-stream")
    plain = ask_json(client, "laptop replacements")
    assert plain["Content-Type"] == "application/json" and plain.json()["outcome"] == "answered"


def test_tenant_prefixed_endpoint_streams_too(world, corpus, no_cache):
    client = world.client(world.member)
    response = client.post("/t/acme/api/v1/answers", {"question": "laptop replacements"}, format="json",
                           HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 200 and b"event: final" in b"".join(response.streaming_content)


def test_conversation_belongs_to_its_creator(world, corpus, no_cache):
    member = world.client(world.member)
    final = ask_json(member, "How long do laptop replacements take?").json()
    follow = ask_json(member, "Who receives a laptop on day one?", conversation_id=final["conversation_id"]).json()
    assert follow["conversation_id"] == final["conversation_id"]
    detail = member.get(f"/api/v1/conversations/{final['conversation_id']}").json()
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant", "user", "assistant"]
    assert [c["id"] for c in member.get("/api/v1/conversations").json()] == [final["conversation_id"]]
    for other in (world.client(world.admin), world.client(world.outsider, world.globex)):
        assert other.get(f"/api/v1/conversations/{final['conversation_id']}").status_code == 404
        assert other.get(f"/api/v1/answers/{final['message_id']}").status_code == 404
        assert ask_json(other, "laptops", conversation_id=final["conversation_id"]).status_code == 404
        assert other.get("/api/v1/conversations").json() == []
    service = world.client(world.member)  # another key of the same user still sees it
    assert service.get(f"/api/v1/answers/{final['message_id']}").status_code == 200


def test_verification_runs_after_commit_and_is_flag_only(world, corpus, no_cache, django_capture_on_commit_callbacks):
    client = world.client(world.member)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        final = ask_json(client, "How long do laptop replacements take?").json()
    assert final["verification"] == {"status": "pending"}
    assert any(getattr(c, "task_name", None) == "chat.answer_verify" for c in callbacks)
    stored = client.get(f"/api/v1/answers/{final['message_id']}").json()
    verification = stored["verification"]
    assert verification["status"] == "done" and verification["total"] >= 1
    assert verification["badge"] == f"verified {verification['verified']}/{verification['total']} claims"
    assert verification["verified"] == verification["total"]  # extractive claims are evidence verbatim
    assert stored["answer"] == final["answer"]  # never rewritten


def test_verification_flags_an_unsupported_claim(world, corpus):
    from chat.services import answer_verify

    message = Message.objects.create(
        conversation=conversation_start(world.authority(world.member), title="t"), role="assistant",
        content="Replacements take five days [S1]. Replacements cost 9000 dollars [S1].",
        citations=[{"label": "S1", "chunk_id": 1, "document_id": 1, "title": "Laptop policy", "record_url": "",
                    "source_kind": "wiki", "source_name": "w", "fragment": "Replacements take five days.",
                    "start": 0, "end": 28}])
    answer_verify(message_id=message.pk)
    answer_verify(message_id=message.pk)  # safe twice
    message.refresh_from_db()
    assert message.verification["badge"] == "verified 1/2 claims"
    assert message.verification["claims"][1]["reasons"][0] == "numbers_missing"
    assert answer_verify(message_id=10**9) is None


def test_sse_events_are_well_formed(world, corpus, no_cache):
    raw, events = ask_stream(world.client(world.member), "How long do laptop replacements take?")
    assert raw.startswith(b": answer stream\n\n")
    assert [n for n, _ in events].count("sources") == 1 and [n for n, _ in events].count("final") == 1


def test_conversation_list_query_budget(world, corpus, no_cache, django_assert_max_num_queries):
    client = world.client(world.member)
    for question in ("laptop replacements", "laptop on day one", "deploy pipeline"):
        ask_json(client, question)
    client.get("/api/v1/conversations")  # warm the key lookup's side effects
    with django_assert_max_num_queries(8):
        rows = client.get("/api/v1/conversations").json()
    assert len(rows) == 3
