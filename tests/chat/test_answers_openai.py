"""The `openai` provider against a real local OpenAI-compatible server: the model decides to search through
the one read-only tool, gets labelled context back in a delimited user block, and streams a cited answer."""

import json

import pytest

from chat.models import GapEvent
from knowledge.models import Document
from tests.chat.conftest import CANARIES, ask_json, ask_stream
from tests.fake_openai import ScriptedCall

pytestmark = pytest.mark.django_db



def _chat_requests(fake):
    return [r.body for r in fake.requests_to("/chat/completions")]


def test_model_searches_and_streams_a_cited_answer(world, corpus, llm):
    # The tool arguments try to widen access; only `query` is used, under the caller's own authority.
    llm.script_chat(
        [ScriptedCall("search_knowledge", {"query": "laptop replacements", "tenant": "globex", "acl": ["group:hr"],
                                           "document_ids": [corpus.acme_hr.pk]})],
        "Replacements take five days [S1]. Budgets doubled [S9].",
    )
    raw, events = ask_stream(world.client(world.member), "How long do laptop replacements take?")
    names = [n for n, _ in events]
    assert names[0] == "sources" and names[-1] == "final" and "token" in names
    assert names.index("sources") < names.index("token")
    sources = events[0][1]["sources"]
    assert sources[0]["label"] == "S1" and sources[0]["document_id"] == corpus.acme_public.pk
    final = events[-1][1]
    assert final["mode"] == "grounding" and final["outcome"] == "answered"
    assert final["answer"] == "Replacements take five days [S1]. Budgets doubled."
    assert final["removed_labels"] == ["S9"] and [c["label"] for c in final["citations"]] == ["S1"]
    for _, data in events:
        if "text" in data:
            assert "[S9" not in data["text"]
    for canary in CANARIES:
        assert canary.encode() not in raw

    first, second = _chat_requests(llm)
    assert [t["function"]["name"] for t in first["tools"]] == ["search_knowledge"]
    assert first["tools"][0]["function"]["parameters"]["properties"] == {"query": {"type": "string",
                                                                                 "description": "What to search for."}}
    assert first["stream"] is True
    system, *_, tool_reply, context = second["messages"]
    assert system["role"] == "system" and "CANARY" not in system["content"] and "laptop" not in system["content"]
    assert tool_reply["role"] == "tool" and tool_reply["tool_call_id"] == "call_0"
    assert context["role"] == "user" and "<<<SOURCE S1 boundary=" in context["content"]
    assert "Replacements take five days" in context["content"]
    assert not any(canary in json.dumps(second) for canary in CANARIES)


def test_no_tool_call_is_conversational_without_citations(world, corpus, llm):
    llm.script_chat("Paris is the capital of France [S1].")
    final = ask_json(world.client(world.member), "What is the capital of France?").json()
    assert final["mode"] == "conversational" and final["outcome"] == "answered"
    assert final["answer"] == "Paris is the capital of France." and final["citations"] == []
    assert final["verification"] == {"status": "not_applicable"}
    assert not GapEvent.objects.exists()


def test_empty_base_offers_no_tool(world, llm):
    Document.objects.filter(tenant=world.platform).delete()
    llm.script_chat("Spring rain on the roof.")
    # Not small talk ("hello" is answered without the model at all: chat.smalltalk).
    final = ask_json(world.client(world.member), "Write a haiku about spring").json()
    assert final["corpus"] == "empty" and final["mode"] == "conversational"
    [request] = _chat_requests(llm)
    assert "tools" not in request


def test_gate_refusal_never_asks_the_model_to_fill_in(world, corpus, llm):
    llm.script_chat([ScriptedCall("search_knowledge", {"query": "visitor parking policy"})])
    final = ask_json(world.client(world.member), "What is the visitor parking policy?").json()
    assert final["mode"] == "grounding" and final["outcome"] == "not_found" and final["citations"] == []
    assert len(_chat_requests(llm)) == 1  # no generation after a refusal
    assert GapEvent.objects.get().kind == "knowledge_missing"


def test_at_most_two_tool_rounds(world, corpus, llm):
    llm.script_chat(
        [ScriptedCall("search_knowledge", {"query": "laptop replacements"})],
        [ScriptedCall("search_knowledge", {"query": "laptop on day one"})],
        "Engineers get a laptop on day one [S1].",
    )
    final = ask_json(world.client(world.member), "Tell me about laptops for engineers").json()
    requests = _chat_requests(llm)
    assert len(requests) == 3 and "tools" in requests[1] and "tools" not in requests[2]
    assert final["outcome"] == "answered" and final["citations"][0]["label"] == "S1"


def test_malformed_tool_arguments_fall_back_to_the_question(world, corpus, llm):
    llm.script_chat([ScriptedCall("search_knowledge", "{not json")], "Replacements take five days [S1].")
    final = ask_json(world.client(world.member), "How long do laptop replacements take?").json()
    assert final["outcome"] == "answered" and final["citations"][0]["document_id"] == corpus.acme_public.pk


def test_model_down_falls_back_to_extractive(world, corpus, llm):
    llm.fail_next(1, status=400)
    final = ask_json(world.client(world.member), "How long do laptop replacements take?").json()
    assert final["mode"] == "grounding" and final["outcome"] == "answered"
    assert "Replacements take five days. [S1]" in final["answer"]
