"""The embedder failing (errors, timeouts): ingestion still stores and indexes the text, search answers from
full text and says so, and the embedding is done later by the task's retry."""

from __future__ import annotations

import pytest
from celery.exceptions import Retry

from groundwork import celery_app
from knowledge.models import Chunk
from knowledge.retrieval import RetrievalUnavailable, hybrid_search
from knowledge.retrieval.lookup import ground_search
from knowledge.tasks import chunks_embed_task
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db

def test_search_api_answers_from_full_text_when_the_embedder_fails(world, remote_embedder, remote_corpus):
    assert not Chunk.objects.filter(embedding__isnull=True).exists()  # embedded while the embedder worked
    client = world.client(world.member)
    healthy = client.post("/api/v1/search", {"query": "laptop replacements", "k": 3}, format="json").json()
    assert (healthy["lexical_only"], healthy["semantic"]) == (False, "ok")
    remote_embedder.fail_next(1000, status=503)
    down = client.post("/api/v1/search", {"query": "laptop replacements", "k": 3}, format="json")
    assert down.status_code == 200, down.content
    body = down.json()
    assert (body["lexical_only"], body["semantic"]) == (True, "error")
    assert body["hits"][0]["record_url"] == "https://wiki.acme.test/laptops"
    assert all(hit["channels"] == ["lexical"] for hit in body["hits"])
    # Still under the caller's rights: the member's full-text search shows nothing they may not read.
    hr = client.post("/api/v1/search", {"query": "workforce plan robotics"}, format="json").json()
    assert hr["lexical_only"] and hr["hits"] == []


def test_a_timing_out_embedder_is_full_text_only_and_not_asked_again_at_once(world, remote_embedder, remote_corpus):
    remote_embedder.stall_next(1000, 2.0)  # longer than EMBEDDING_TIMEOUT on every attempt
    member = world.authority(world.member)
    first = ground_search(member, "laptop replacements")
    asked = len(remote_embedder.requests_to("/embeddings"))
    second = ground_search(member, "laptop day one")
    assert first.lexical_only and second.lexical_only and first.vector == second.vector == "error"
    assert first.hits and second.hits
    # The cooldown: the second question did not wait for the failing embedder again.
    assert len(remote_embedder.requests_to("/embeddings")) == asked


def test_requiring_semantic_evidence_makes_a_failing_embedder_unavailable(
        world, remote_embedder, remote_corpus, settings):
    settings.RETRIEVAL_REQUIRE_SEMANTIC = True
    remote_embedder.fail_next(1000, status=503)
    with pytest.raises(RetrievalUnavailable) as info:
        ground_search(world.authority(world.member), "laptop replacements")
    assert info.value.cause == "embedding_error"
    response = world.client(world.member).post("/api/v1/search", {"query": "laptop replacements"}, format="json")
    assert response.status_code == 503 and response.json()["cause"] == "embedding_error"


def test_ingest_with_the_embedder_down_stores_the_text_and_embeds_it_on_retry(world, remote_embedder, remote_corpus):
    remote_embedder.fail_next(1000, status=503)
    doc = ingest(world, remote_corpus.acme_wiki, external_id="parking", title="Parking policy",
                 body="Visitors park on level two; staff park on level three.")
    chunks = Chunk.objects.filter(document=doc)
    assert chunks.exists() and not chunks.filter(embedding__isnull=False).exists()
    # Searchable at once, by full text.
    result = hybrid_search(world.authority(world.member), "visitor parking level", k=3, require_vector=True)
    assert result.lexical_only and result.hits[0].document_id == doc.pk
    # On a worker the task asks the broker to run it again later (here: the in-memory transport).
    celery_app.conf.task_always_eager = False
    chunks_embed_task.push_request(is_eager=False, retries=0, called_directly=False, args=[[doc.pk]], kwargs={})
    try:
        with pytest.raises(Retry):
            chunks_embed_task.run([doc.pk])
    finally:
        chunks_embed_task.pop_request()
        celery_app.conf.task_always_eager = True
    assert not chunks.filter(embedding__isnull=False).exists()
    # The embedder is back; the retry embeds the document's chunks, and only those that had none.
    remote_embedder.recover()
    before = len(remote_embedder.requests_to("/embeddings"))
    report = chunks_embed_task.apply(args=([doc.pk, remote_corpus.acme_public.pk],)).get()
    assert report["embedded"] == chunks.count()
    assert not chunks.filter(embedding__isnull=True).exists()
    assert len(remote_embedder.requests_to("/embeddings")) == before + 1
    again = chunks_embed_task.apply(args=([doc.pk],)).get()
    assert again["embedded"] == 0
