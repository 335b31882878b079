"""One straight pipeline: authorise -> retrieve (the question embedded once) -> decide (a frozen decision) ->
compose (a provider, which cannot change the decision) -> stream -> record."""

import ast
import dataclasses
from pathlib import Path
from unittest import mock

import pytest

from chat.answering import answer_events
from chat.decision import Decision, PartDecision, decide_question
from chat.providers.base import Done, Sources
from chat.services import conversation_start
from tests.chat.conftest import ask_json

pytestmark = pytest.mark.django_db

LAPTOP = "How long do laptop replacements take?"


@pytest.fixture
def embedder_calls(corpus):
    """The corpus embedded by the default (offline) embedder, and a count of the embedder's calls from then on:
    every query embedding — one text or several — is one `embed_documents` call (one batch, one round trip)."""
    from knowledge.embedders import embedder_get
    from knowledge.embedding import chunks_embed

    chunks_embed()
    embedder = embedder_get()
    with mock.patch.object(embedder, "embed_documents", wraps=embedder.embed_documents) as calls:
        yield calls


@pytest.mark.parametrize("cache", [True, False])
def test_a_question_is_embedded_once(world, embedder_calls, settings, cache):
    settings.ANSWER_CACHE_ENABLED = cache
    final = ask_json(world.client(world.member), LAPTOP).json()
    assert final["outcome"] == "answered" and final["citations"]
    # One call embeds the question (cache lookup, search, the repeat search) and its hint probe's words.
    assert embedder_calls.call_count == 1


def test_a_refused_question_that_searches_twice_is_embedded_once(world, embedder_calls):
    decision = decide_question(world.authority(world.member), "What is the visitor parking policy?")
    [part] = decision.parts
    assert part.retried_with == "visitor parking policy" and part.semantic == "ok" and not part.answerable
    assert embedder_calls.call_count == 1


def test_a_compound_question_is_embedded_in_one_call(world, embedder_calls, no_cache):
    ask_json(world.client(world.member), "Who receives a laptop on day one and how long do replacements take?")
    assert embedder_calls.call_count == 1


def test_small_talk_and_follow_ups_embed_nothing(world, embedder_calls, no_cache):
    member = world.client(world.member)
    first = ask_json(member, LAPTOP).json()
    before = embedder_calls.call_count
    assert ask_json(member, "Thanks!").json()["outcome"] == "small_talk"
    follow = ask_json(member, "summarise that", conversation_id=first["conversation_id"]).json()
    assert follow["outcome"] == "answered" and follow["citations"]
    assert embedder_calls.call_count == before


class MeddlingProvider:
    """A provider that tries to overturn the decision it was given."""

    cache_id = "meddling"
    reads_history = False

    def __init__(self):
        self.errors = []

    def answer(self, request):
        decision = request.search(request.question)
        part = decision.parts[0]
        for attempt in (lambda: setattr(part, "decision", None), lambda: setattr(decision, "parts", ()),
                        lambda: setattr(part.decision, "answer", True)):
            try:
                attempt()
            except dataclasses.FrozenInstanceError as exc:
                self.errors.append(exc)
        yield Sources({})
        yield Done(mode="grounding", decisions=[decision])


def test_a_provider_cannot_alter_the_decision(world, corpus, no_cache):
    authority = world.authority(world.member)
    provider = MeddlingProvider()
    events = list(answer_events(authority, question="What is the visitor parking policy?",
                                conversation=conversation_start(authority, title="t"), provider=provider))
    assert len(provider.errors) == 3
    assert isinstance(Decision.__dataclass_params__, object) and Decision.__dataclass_params__.frozen
    assert PartDecision.__dataclass_params__.frozen
    assert events[-1].data["outcome"] == "not_found"


def test_the_question_is_decided_before_the_provider_composes(world, corpus, no_cache):
    authority = world.authority(world.member)
    seen = []

    class Recording:
        cache_id = "recording"

        def answer(self, request):
            seen.append(decide.call_count)
            yield Done(mode="grounding", decisions=[request.search(request.question)])

    with mock.patch("chat.answering.decide_question", wraps=decide_question) as decide:
        list(answer_events(authority, question=LAPTOP, conversation=conversation_start(authority, title="t"),
                           provider=Recording()))
    assert seen == [1] and decide.call_count == 1  # decided once, before composing; the provider reuses it


# The answering path: the answer service, its steps and the modules they call. Other chat modules (views,
# admin, bench) are not held to it here.
PIPELINE = ("chat/*.py", "chat/answerability/*.py", "chat/providers/*.py")
MAX_FUNCTION_LINES = 60


def test_no_function_on_the_answering_path_is_over_60_lines():
    root = Path(__file__).resolve().parents[2]
    long = []
    for pattern in PIPELINE:
        for path in sorted(root.glob(pattern)):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        long.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, long


def test_answer_events_reads_as_the_pipeline():
    source = Path(__file__).resolve().parents[2] / "chat" / "answering.py"
    [node] = [n for n in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
              if isinstance(n, ast.FunctionDef) and n.name == "answer_events"]
    assert node.end_lineno - node.lineno + 1 <= 40
