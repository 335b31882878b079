"""Embedding after ingest: the dimension guard, zero vectors, the active space, the start-up probe and
the OpenAI-compatible embedder end to end (against the local fake server)."""

import math

import pytest
from django.contrib.auth import get_user_model
from django.contrib.postgres.search import SearchQuery

from knowledge.embedding import DIMENSION_FAULT, chunks_embed, embedding_text, semantic_probe
from knowledge.models import Chunk, ConfigurationFault, EmbeddingSpace, Source
from knowledge.services import DocumentInput, documents_import
from knowledge.tasks import chunks_embed_task
from tests.fake_openai import fake_vector

pytestmark = pytest.mark.django_db

BODIES = [
    "Turbine blades crack when the compressor surges during cold starts.",
    "The warehouse robot fleet charges overnight in bay seven.",
    "Quarterly maintenance replaces every turbine bearing and seal.",
]


def _ingest(world, source, bodies=BODIES, prefix="d"):
    authority = world.service(world.acme, role="admin")
    items = [DocumentInput(external_id=f"{prefix}{i}", title=f"Note {i}", body=body) for i, body in enumerate(bodies)]
    return documents_import(authority=authority, source=source, items=items)


@pytest.fixture
def source(world):
    return Source.objects.create(tenant=world.acme, kind="wiki", name="Embedding wiki")


def test_dimension_mismatch_is_one_configuration_fault(world, source, use_embedder, fake_openai, client,
                                                       django_capture_on_commit_callbacks):
    use_embedder("openai")  # the fake answers 8-d vectors; the index holds 384-d ones
    with django_capture_on_commit_callbacks(execute=True):
        _ingest(world, source, BODIES[:2], prefix="a")  # the embed task runs after each batch's commit
    with django_capture_on_commit_callbacks(execute=True):
        _ingest(world, source, BODIES[2:], prefix="b")
    report = chunks_embed()

    assert report.faulted and report.embedded == 0
    faults = list(ConfigurationFault.objects.filter(resolved_at__isnull=True))
    assert [f.code for f in faults] == [DIMENSION_FAULT]
    assert faults[0].occurrences == 3  # two ingest batches and the explicit run: one row, counted
    assert "8-d vectors" in faults[0].message and "384-d" in faults[0].message
    assert not Chunk.objects.filter(document__source=source, embedding__isnull=False).exists()
    found = Chunk.objects.filter(document__source=source, search=SearchQuery("turbine", config="english"))
    assert sorted(c.document.external_id for c in found) == ["a0", "b0"]

    semantic_probe(refresh=True)
    response = client.get("/healthz")
    assert response.status_code == 503
    embedder = response.json()["embedder"]
    assert embedder["ok"] is False
    assert [f["code"] for f in embedder["faults"]] == [DIMENSION_FAULT]

    root = get_user_model().objects.create_superuser("root", "root@example.test", None)
    client.force_login(root)
    page = client.get("/admin/knowledge/document/")
    assert page.status_code == 200
    messages = [str(m) for m in page.context["messages"]]
    assert messages == [f"Configuration fault: {faults[0].message}"]

    fake_openai.embedding_dim = 384  # the fix: a model of the index's width
    use_embedder("openai")
    fixed = chunks_embed()
    assert not fixed.faulted and fixed.embedded == Chunk.objects.filter(document__source=source).count()
    assert not ConfigurationFault.objects.filter(resolved_at__isnull=True).exists()
    assert ConfigurationFault.objects.get(code=DIMENSION_FAULT).resolved_at is not None


def test_zero_vectors_are_skipped_and_counted(world, source, use_embedder, fake_openai):
    fake_openai.embedding_dim, fake_openai.embedding_mode = 384, "zero"
    use_embedder("openai", dimension=384)
    _ingest(world, source)
    total = Chunk.objects.filter(document__source=source).count()
    report = chunks_embed()
    assert (report.embedded, report.skipped_zero, report.faulted) == (0, total, False)
    assert Chunk.objects.filter(document__source=source, embedding__isnull=True).count() == total


def test_onnx_embeds_into_the_active_space_after_commit_and_only_once(world, source, use_embedder,
                                                                      django_capture_on_commit_callbacks):
    embedder = use_embedder("onnx")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        _ingest(world, source)
    # one embedding task per committed batch (document listeners, e.g. findings, may add their own callbacks)
    assert len([c for c in callbacks if getattr(c, "task_name", None) == "knowledge.tasks.chunks_embed_task"]) == 1
    space = EmbeddingSpace.objects.get(is_active=True)
    assert (space.model_id, space.dimension) == (embedder.model_id, 384)
    chunks = list(Chunk.objects.filter(document__source=source))
    assert chunks and all(c.embedding_space_id == space.pk and c.embedded_at for c in chunks)
    assert all(math.isclose(sum(float(x) ** 2 for x in c.embedding), 1.0, abs_tol=1e-3) for c in chunks)

    ids = [c.document_id for c in chunks]
    assert chunks_embed_task.delay(ids).get() == {"embedded": 0, "skipped_zero": 0, "skipped_dimension": 0,
                                                  "faulted": False}
    assert chunks_embed().embedded == 0
    assert EmbeddingSpace.objects.filter(is_active=True).count() == 1


def test_semantic_probe(use_embedder):
    onnx = use_embedder("onnx")
    assert semantic_probe(refresh=True) == {"ok": True, "semantic": "active", "model": onnx.model_id,
                                            "dimension": 384}

    use_embedder("none")
    probe = semantic_probe(refresh=True)
    assert (probe["ok"], probe["semantic"]) == (True, "inactive") and "EMBEDDER=none" in probe["reason"]

    use_embedder("openai", dimension=8)  # the fake's width; the index holds 384
    probe = semantic_probe(refresh=True)
    assert (probe["ok"], probe["semantic"], probe["model"]) == (False, "inactive", "fake-embed")
    assert "wrong_dimension" in probe["reason"]


def test_openai_embedder_end_to_end_in_batches(world, source, use_embedder, fake_openai,
                                               django_capture_on_commit_callbacks):
    fake_openai.embedding_dim = 384
    use_embedder("openai", dimension=384, batch_size=2)
    bodies = [f"Record {i}: the pump in line {i} was serviced and its seals replaced." for i in range(5)]
    with django_capture_on_commit_callbacks(execute=True):
        _ingest(world, source, bodies)
    chunks = list(Chunk.objects.filter(document__source=source).order_by("pk"))
    assert len(chunks) == 5
    requests = fake_openai.requests_to("/embeddings")
    assert [len(r.body["input"]) for r in requests] == [2, 2, 1]
    assert all(r.body["model"] == "fake-embed" for r in requests)
    space = EmbeddingSpace.objects.get(is_active=True)
    assert (space.model_id, space.dimension) == ("fake-embed", 384)
    for chunk in chunks:
        # The fake answers in reverse order; the stored vector must still be this chunk's own.
        expected = fake_vector(embedding_text(chunk.heading_path, chunk.text), 384)
        assert chunk.embedding_space_id == space.pk
        assert max(abs(float(a) - b) for a, b in zip(chunk.embedding, expected, strict=True)) < 1e-6
