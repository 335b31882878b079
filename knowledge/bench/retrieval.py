"""Retrieval quality on BEIR-layout data: nDCG@10 and recall@100 for lexical, vector and fused.

The dataset is ingested into a scratch tenant through the normal ingestion path (and embedded), each
query is searched under that tenant's authority, and documents are ranked by their best chunk.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from statistics import mean

from groundwork.models import Tenant
from groundwork.selectors import authority_for_service

from ..embedding import chunks_embed
from ..models import Document, Source
from ..retrieval.search import hybrid_search
from ..services import DocumentInput, documents_import
from .beir import dataset_load, ndcg_at, recall_at

MODES = {"lexical": ("lexical",), "vector": ("vector",), "fused": ("lexical", "vector")}


def scratch_tenant(name: str) -> Tenant:
    return Tenant.objects.create(slug=f"bench-{name}-{uuid.uuid4().hex[:6]}"[:63], name=f"Benchmark {name}")


def dataset_ingest(tenant: Tenant, dataset, *, embed: bool = True, progress=None) -> dict:
    authority = authority_for_service(tenant=tenant, service_name="bench", role="admin")
    source = Source.objects.create(tenant=tenant, kind="upload", name=dataset.name)
    items = (
        DocumentInput(external_id=doc_id, title=(row.get("title") or doc_id)[:500],
                      body=(row.get("text") or row.get("title") or doc_id))
        for doc_id, row in dataset.corpus.items()
    )
    started = time.perf_counter()
    counts = documents_import(authority=authority, source=source, items=items, batch_size=200, progress=progress)
    ingest_s = time.perf_counter() - started
    embed_s = 0.0
    if embed:
        started = time.perf_counter()
        ids = list(Document.objects.filter(tenant=tenant).values_list("pk", flat=True))
        chunks_embed(document_ids=ids)
        embed_s = time.perf_counter() - started
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunk")
    return {**counts, "ingest_s": ingest_s, "embed_s": embed_s}


def evaluate(tenant: Tenant, dataset, *, modes=("lexical", "vector", "fused"), lexical_strategy=None,
             limit_queries: int | None = None) -> dict:
    authority = authority_for_service(tenant=tenant, service_name="bench", role="admin")
    external = dict(Document.objects.filter(tenant=tenant).values_list("pk", "external_id"))
    results = {}
    qids = list(dataset.queries)[:limit_queries] if limit_queries else list(dataset.queries)
    for mode in modes:
        ndcgs, recalls, latencies = [], [], []
        for qid in qids:
            started = time.perf_counter()
            result = hybrid_search(authority, dataset.queries[qid], k=100, per_document_cap=1,
                                   channels=MODES[mode], lexical_strategy=lexical_strategy)
            latencies.append(time.perf_counter() - started)
            ranked = [external[h.document_id] for h in result.hits if h.document_id in external]
            ndcgs.append(ndcg_at(ranked, dataset.qrels[qid], 10))
            recalls.append(recall_at(ranked, dataset.qrels[qid], 100))
        latencies.sort()
        results[mode] = {"ndcg@10": round(mean(ndcgs), 4), "recall@100": round(mean(recalls), 4),
                         "queries": len(qids), "p50_ms": round(1000 * latencies[len(latencies) // 2], 2)}
    return results


def quality_run(path: Path, split: str, *, keep: bool = False, lexical_strategy=None, stdout=None,
                tenant_slug: str | None = None) -> dict:
    dataset = dataset_load(path, split)
    tenant = Tenant.objects.filter(slug=tenant_slug).first() if tenant_slug else None
    if tenant is None:
        tenant = scratch_tenant(path.name)
        info = dataset_ingest(tenant, dataset)
        if stdout:
            stdout.write(f"{path.name}: ingested {info} into {tenant.slug}")
    try:
        return evaluate(tenant, dataset, lexical_strategy=lexical_strategy)
    finally:
        if not keep and not tenant_slug:
            tenant.delete()
