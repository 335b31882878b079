"""Ingest benchmark on the SciFact abstracts (without them, on documents generated from the shipped sample
corpus, with a note naming the skipped set).

1. Ingestion alone (parse, chunk, full-text vector, store) through `documents_import` at its default
   batch size, with the semantic channel off, so the number is the write path's own: `chunks_per_s`
   (goal ≥ 2,000 on 2 cores).
2. Embedding: `chunks_embed` over a fixed subset of those chunks against the raw embedder on the same
   texts in the same batches, in the same run: `embed_ratio` = pipeline rate / raw rate (goal ≥ 0.9),
   i.e. what the database reads and writes around the model cost.

Everything happens in a scratch tenant that is deleted at the end, also when the bench fails.
"""

from __future__ import annotations

import json
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.test import override_settings
from django.utils.module_loading import autodiscover_modules

from benchmarks import bar_plot, eval_dir
from groundwork import celery_app
from groundwork.models import Tenant
from groundwork.selectors import authority_for_service
from knowledge.embedders import embedder_get, embedder_reset
from knowledge.embedding import chunks_embed, embedding_text
from knowledge.hooks import listeners_paused
from knowledge.models import Chunk, Source
from knowledge.services import DocumentInput, documents_import

from .beir import beir_record
from .shipped import eval_set_missing_note, generated_documents

GOALS = {"chunks_per_s": 2000.0, "embed_ratio": 0.9}
EMBED_SUBSET = 1000
QUICK_DOCS = 1000
QUICK_EMBED_SUBSET = 200
GENERATED_DOCS = 5000  # about SciFact's size, when the clone has no SciFact


def ingest_items(quick: bool) -> tuple[list[DocumentInput], list[str]]:
    """SciFact's abstracts when the eval data is there, else documents generated from the shipped
    sample corpus; returns (items, notes naming what was skipped)."""
    if (eval_dir() / "scifact" / "corpus.jsonl").is_file():
        return scifact_items(QUICK_DOCS if quick else None), []
    count = QUICK_DOCS if quick else GENERATED_DOCS
    return generated_documents(count), [eval_set_missing_note(
        "scifact", f"ingest measured on {count} documents generated from the shipped sample corpus")]


def scifact_items(limit: int | None = None) -> list[DocumentInput]:
    path = eval_dir() / "scifact" / "corpus.jsonl"
    items = []
    with path.open() as handle:
        for line in handle:
            if not line.strip():
                continue
            record = json.loads(line)
            items.append(DocumentInput.from_record(beir_record(record)))
            if limit is not None and len(items) >= limit:
                break
    return items


@contextmanager
def embedding_off():
    """Ingest without the semantic channel: EMBEDDER=none for this block, and the after-commit embed
    task runs inline (where it finds no embedder and returns) instead of on a worker that would embed
    concurrently and skew the timing."""
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        with override_settings(EMBEDDER="none"):
            embedder_reset()
            yield
    finally:
        celery_app.conf.task_always_eager = eager
        embedder_reset()


@contextmanager
def scratch_tenant():
    tenant = Tenant.objects.create(slug=f"bench-{uuid.uuid4().hex[:12]}", name="Ingest benchmark (scratch)")
    try:
        yield tenant
    finally:
        tenant.delete()


def _embed_subset(source: Source, size: int | None) -> tuple[list[int], list[tuple[str, str]]]:
    """Whole documents, in id order, until `size` chunks (all chunks when None)."""
    doc_ids, texts = [], []
    rows = Chunk.objects.filter(document__source=source).order_by("document_id", "pk").values_list(
        "document_id", "heading_path", "text")
    for document_id, heading, text in rows.iterator(chunk_size=2000):
        if size is not None and len(texts) >= size and document_id != doc_ids[-1]:
            break
        if not doc_ids or doc_ids[-1] != document_id:
            doc_ids.append(document_id)
        texts.append((heading, text))
    return doc_ids, texts


def _raw_rate(embedder, texts: list[str], batch_size: int) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), batch_size):
        embedder.embed_documents(texts[start:start + batch_size])
    return len(texts) / (time.perf_counter() - started)


def run(out_dir: Path, quick: bool = False, full: bool = False) -> dict:
    """Run the bench, write its plots into `out_dir`, return the numbers (the caller writes the JSON)."""
    items, notes = ingest_items(quick)
    subset = QUICK_EMBED_SUBSET if quick else (None if full else EMBED_SUBSET)
    result: dict = {"goals": GOALS, "quick": quick, "docs": len(items), "notes": notes}
    with scratch_tenant() as tenant:
        authority = authority_for_service(tenant=tenant, service_name="bench-ingest", role="admin")
        source = Source.objects.create(tenant=tenant, kind="other", name="Generated" if notes else "SciFact")
        # A worker imports every app's task modules when it starts; the first queued task would otherwise
        # import them inside the timing (about 0.5 s here).
        autodiscover_modules("tasks")
        # Ingestion alone: later layers' derived work (fact extraction) is not part of it.
        with embedding_off(), listeners_paused():
            started = time.perf_counter()
            counts = documents_import(authority=authority, source=source, items=items)
            seconds = time.perf_counter() - started
        result.update(chunks=counts["chunks"], seconds=round(seconds, 3),
                      chunks_per_s=round(counts["chunks"] / seconds, 1), docs_per_s=round(len(items) / seconds, 1))
        print(f"ingest: {len(items)} docs, {counts['chunks']} chunks in {seconds:.2f}s = "
              f"{result['chunks_per_s']:.0f} chunks/s")

        embedder = embedder_get()
        if embedder is None:
            result["notes"].append("EMBEDDER=none: embedding not measured")
        else:
            doc_ids, pairs = _embed_subset(source, subset)
            texts = [embedding_text(heading, text) for heading, text in pairs]
            batch_size = settings.EMBEDDING_BATCH_SIZE
            embedder.embed_documents(texts[:batch_size])  # warm-up: model load and graph optimisation
            # Raw runs before and after the pipeline and is averaged, so drift on a shared machine (CPU
            # boost, autovacuum after the bulk insert) does not land on one side of the ratio only.
            raw_before = _raw_rate(embedder, texts, batch_size)
            started = time.perf_counter()
            report = chunks_embed(document_ids=doc_ids, batch_size=batch_size)
            pipeline_seconds = time.perf_counter() - started
            raw_after = _raw_rate(embedder, texts, batch_size)
            raw = (raw_before + raw_after) / 2
            if report.faulted or report.embedded == 0:
                raise RuntimeError(f"chunks_embed embedded nothing ({report}); see the configuration faults")
            pipeline = report.embedded / pipeline_seconds
            result.update(embed_model=embedder.model_id, embed_batch_size=batch_size, embed_chunks=len(texts),
                          embedded=report.embedded, skipped_zero=report.skipped_zero,
                          raw_embed_per_s=round(raw, 1), raw_embed_per_s_before=round(raw_before, 1),
                          raw_embed_per_s_after=round(raw_after, 1), pipeline_embed_per_s=round(pipeline, 1),
                          embed_ratio=round(pipeline / raw, 3))
            print(f"embed: {len(texts)} chunks with {embedder.model_id}: raw {raw:.1f}/s, pipeline "
                  f"{pipeline:.1f}/s, ratio {pipeline / raw:.3f}")

    out_dir.mkdir(parents=True, exist_ok=True)
    plots = [bar_plot(out_dir / "ingest_throughput.png", title="Ingest (SciFact, embedding off)",
                      labels=["chunks/s", "docs/s"], values=[result["chunks_per_s"], result["docs_per_s"]],
                      ylabel="per second", goals=[GOALS["chunks_per_s"], None])]
    if "embed_ratio" in result:
        plots.append(bar_plot(out_dir / "ingest_embedding.png", title=f"Embedding ({result['embed_model']})",
                              labels=["raw embedder", "chunks_embed"],
                              values=[result["raw_embed_per_s"], result["pipeline_embed_per_s"]],
                              ylabel="chunks per second",
                              goals=[None, GOALS["embed_ratio"] * result["raw_embed_per_s"]]))
    result["plots"] = [p.name for p in plots]
    return result
