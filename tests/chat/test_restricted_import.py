"""Records a caller cannot read never move what they see (issue #36): after an admin imports records restricted to
hr that hold the words of a member's questions, the member's searches, the gate's decisions, their answers and
their hints are byte-identical — the word statistics behind BM25, the gate's term weights and the hint probe are
counted over shared records only. The admin, who reads the import, finds it; another tenant sees nothing move."""

from __future__ import annotations

import json

import pytest

from chat.decision import decide_question
from chat.retrieval import term_weights
from knowledge.embedding import chunks_embed
from knowledge.models import Source
from knowledge.retrieval.hints import hidden_relevant
from knowledge.retrieval.statistics import corpus_stats_forget
from knowledge.services import DocumentInput, documents_import
from knowledge.services.statistics import corpus_statistics_count
from tests.chat.conftest import ask_json, ingest

pytestmark = pytest.mark.django_db

QUERIES = (
    "How long do laptop replacements take?",
    "laptop replacement days",
    "zephyr copper valve",
    "When does the copper valve close?",
    "What is the visitor parking policy?",
    "How many people does the workforce plan cut from the robotics team?",
)
# The first word of each query, in an HR line about something else: the records hold the member's words but answer
# none of the questions, so the hint (that a hidden record is relevant) has nothing new to say either.
FIRST_WORDS = "laptop, zephyr, copper, visitor, workforce"


def _count(world) -> None:
    for tenant in (world.acme, world.globex, world.platform):
        corpus_statistics_count(tenant.pk)
    corpus_stats_forget()


def _seen(world, user, tenant=None) -> dict[str, bytes]:
    """Everything a caller sees for each query, byte for byte (an answer without its message and conversation ids)."""
    client, authority = world.client(user, tenant), world.authority(user, tenant)
    out = {}
    for query in QUERIES:
        search = client.post("/api/v1/search", {"query": query, "k": 10}, format="json")
        assert search.status_code == 200, search.content
        answer = ask_json(client, query)
        assert answer.status_code == 200, answer.content
        body = {key: value for key, value in answer.json().items() if key not in ("message_id", "conversation_id")}
        gate = [(part.decision, part.retried_with, [e.chunk_id for e in part.evidence],
                 sorted(term_weights(authority, part.question).items()))
                for part in decide_question(authority, query).parts]
        out[query] = b"\n".join([search.content, json.dumps(body, sort_keys=True).encode(), repr(gate).encode(),
                                 repr(hidden_relevant(authority, query, k=8)).encode()])
    return out


@pytest.fixture
def notes(world, corpus, shared_topics):
    ingest(world, corpus.acme_wiki, external_id="z", title="Zephyr valve", body="The zephyr valve opens at dawn.")
    ingest(world, corpus.acme_wiki, external_id="c", title="Copper valve", body="The copper valve closes at dusk.")
    ingest(world, corpus.globex_wiki, external_id="gz", title="Globex valves",
           body="Globex fits a zephyr valve and a copper valve to every laptop cart.")
    chunks_embed()
    return corpus


def test_a_restricted_import_leaves_what_a_member_sees_byte_identical(world, notes, settings):
    settings.ANSWER_CACHE_ENABLED = False
    settings.ANSWER_HINTS_PER_HOUR = 1000
    _count(world)
    member, outsider = _seen(world, world.member), _seen(world, world.outsider, world.globex)
    assert member[QUERIES[-1]].count(b'"exists": true') == 1  # the hidden HR plan's hint, before as after

    hr = Source.objects.create(tenant=world.acme, kind="folder", name="HR import")
    documents_import(authority=world.service(), source=hr, batch_size=50, items=(
        DocumentInput(external_id=f"hr{i}", title=f"HR case {i}", visibility="restricted", acl=("group:hr",),
                      body=f"HR case {i}: the employee file notes {FIRST_WORDS}; filed after review {i}.")
        for i in range(40)))
    chunks_embed()
    _count(world)

    assert _seen(world, world.member) == member
    assert _seen(world, world.outsider, world.globex) == outsider
    # The admin reads the import: it is there to be found.
    found = world.client(world.admin).post("/api/v1/search", {"query": "zephyr copper valve"}, format="json").json()
    assert any(hit["source"] == "HR import" for hit in found["hits"])


def test_the_same_import_readable_by_everyone_moves_the_member_s_weights(world, notes):
    """The control: the check above can fail — shared records are the statistics."""
    _count(world)
    member = world.authority(world.member)
    before = term_weights(member, "zephyr copper valve")
    ingest(world, notes.acme_wiki, external_id="memo", title="Copper memo",
           body="Copper, copper everywhere: the copper order is late.")
    _count(world)
    assert term_weights(member, "zephyr copper valve")["copper"] < before["copper"]
