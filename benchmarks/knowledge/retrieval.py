"""Retrieval quality on BEIR-layout data: nDCG@10 and recall@100 for lexical, vector and fused; and
`run`, the retrieval area of `make bench` (quality on SciFact, Cranfield and CISI, plus the speed bench
of benchmarks.knowledge.retrieval_speed).

The dataset is ingested into a scratch tenant through the normal ingestion path (and embedded), each
query is searched under that tenant's authority, and documents are ranked by their best chunk.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from statistics import mean

from benchmarks import eval_dir
from groundwork.models import Tenant
from groundwork.selectors import authority_for_service
from knowledge.embedding import chunks_embed
from knowledge.hooks import listeners_paused
from knowledge.models import Document, Source
from knowledge.retrieval.search import hybrid_search
from knowledge.services import DocumentInput, documents_import

from .beir import beir_record, dataset_load, ndcg_at, recall_at
from .retrieval_speed import flat_figures, speed_markdown, speed_merge, speed_plots, speed_run
from .shipped import eval_set_missing_note

# fused_graph: the fused search with the registered graph channel on (findings' entity graph). A BEIR set has no
# entities, so its nDCG must equal fused's (the channel stays off unless the question names a visible entity).
MODES = {"lexical": ("lexical",), "vector": ("vector",), "fused": ("lexical", "vector"),
         "fused_graph": ("lexical", "vector", "graph")}


def scratch_tenant(name: str) -> Tenant:
    return Tenant.objects.create(slug=f"bench-{name}-{uuid.uuid4().hex[:6]}"[:63], name=f"Benchmark {name}")


def dataset_ingest(tenant: Tenant, dataset, *, embed: bool = True, progress=None) -> dict:
    authority = authority_for_service(tenant=tenant, service_name="bench", role="admin")
    source = Source.objects.create(tenant=tenant, kind="upload", name=dataset.name)
    items = (DocumentInput.from_record(beir_record(row)) for row in dataset.corpus.values())
    started = time.perf_counter()
    with listeners_paused():  # ranking needs the chunks, not the facts later layers derive from them
        counts = documents_import(authority=authority, source=source, items=items, batch_size=200,
                                  progress=progress)
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


def evaluate(tenant: Tenant, dataset, *, modes=("lexical", "vector", "fused", "fused_graph"), lexical_strategy=None,
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
                tenant_slug: str | None = None, limit_queries: int | None = None) -> dict:
    dataset = dataset_load(path, split)
    tenant = Tenant.objects.filter(slug=tenant_slug).first() if tenant_slug else None
    if tenant is None:
        tenant = scratch_tenant(path.name)
        info = dataset_ingest(tenant, dataset)
        if stdout:
            stdout.write(f"{path.name}: ingested {info} into {tenant.slug}")
    try:
        return evaluate(tenant, dataset, lexical_strategy=lexical_strategy, limit_queries=limit_queries)
    finally:
        if not keep and not tenant_slug:
            tenant.delete()


# --- make bench -----------------------------------------------------------------------------------------

# (folder, split, published or locally measured BM25 nDCG@10 from the eval data's README.md)
QUALITY_SETS = (
    ("scifact", "train", "BM25 0.665 (BEIR, test split) / 0.676 (local BM25 run, test split)"),
    ("cranfield", "test", "BM25 0.366 (local run)"),
    ("cisi", "test", "BM25 0.372 (local run)"),
)
QUICK_QUERIES = 200


def speed_report_write(out_dir: Path, result: dict) -> tuple[dict, list[str]]:
    """Merge a speed run into `<out_dir>/retrieval_speed.json`, draw its plots, write
    `retrieval_speed.md`; returns (all sizes measured so far, plot file names)."""
    merged = speed_merge(out_dir, result)
    plots = speed_plots(out_dir, merged["speed"])
    (out_dir / "retrieval_speed.md").write_text(
        "## Retrieval speed\n\n" + speed_markdown(merged["speed"]) + "\n"
        + "".join(f"![{name}]({name})\n" for name in plots))
    return merged, plots


def run(out_dir: Path, quick: bool = False, *, speed_size: int = 100_000, speed_queries: int | None = None,
        datasets=QUALITY_SETS, stdout=None) -> dict:
    """The retrieval area of `make bench`: writes `retrieval.json`, `retrieval.md` and PNG plots into
    `out_dir` and returns {"quality": {set: {mode: {"ndcg@10", "recall@100", ...}}}, "speed": {size:
    {selectivity: {...}}}, ...}. Speed runs first: it removes its synthetic corpus when done, so the
    quality sets are ranked with corpus statistics of their own documents only."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    say = (lambda msg: stdout.write(msg)) if stdout else (lambda _msg: None)
    started = time.perf_counter()
    speed = speed_run(size=speed_size, queries=speed_queries or (50 if quick else 200), progress=say)
    merged, plots = speed_report_write(out_dir, speed)
    speed_s = time.perf_counter() - started
    quality, missing = {}, []
    root = eval_dir()
    for name, split, _ in datasets:
        path = root / name
        if not (path / "qrels" / f"{split}.tsv").exists():
            missing.append(name)
            continue
        limit = QUICK_QUERIES if quick and name == "scifact" else None
        quality[name] = quality_run(path, split, limit_queries=limit, stdout=stdout)
        say(f"{name}: {json.dumps(quality[name])}")
    result = {
        "quality": quality,
        "speed": {str(speed_size): speed[str(speed_size)]},
        "speed_all_sizes": merged["speed"],
        "speed_setup": merged.get("setup", {}),
        "speed_seconds": round(speed_s, 1),
        "plots": plots,
        "notes": [f"details: {out_dir / 'retrieval.md'}"]
        + [eval_set_missing_note(name, "its quality figures are not measured") for name in missing],
    }
    for name, modes in quality.items():  # flat headline numbers for the shared report table
        for mode, figures in modes.items():
            result[f"{name}_{mode}_ndcg@10"] = figures["ndcg@10"]
        if "fused_graph" in modes:  # goal: |delta| ≤ 0.005 (issue #14)
            result[f"{name}_graph_ndcg_delta"] = round(modes["fused_graph"]["ndcg@10"] - modes["fused"]["ndcg@10"], 4)
    # The speed headline under the names `make bench-scale` gives 1M (retrieval_scale.json), with the goals.
    flat, goals, ceilings, plan_notes = flat_figures(speed_size, speed[str(speed_size)])
    result.update(flat)
    result["goals"] = {**result.get("goals", {}), **goals}
    result["ceilings"] = {**result.get("ceilings", {}), **ceilings}
    result["notes"] += plan_notes
    (out_dir / "retrieval.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    (out_dir / "retrieval.md").write_text(retrieval_markdown(result, quick=quick))
    return result


def retrieval_markdown(result: dict, *, quick: bool = False) -> str:
    lines = ["## Retrieval", "", "### Quality (nDCG@10 / recall@100, documents ranked by best chunk)", "",
             "| set | split | queries | lexical | vector | fused | BM25 reference (nDCG@10) |",
             "|---|---|---|---|---|---|---|"]
    for name, split, reference in QUALITY_SETS:
        modes = result["quality"].get(name)
        if not modes:
            continue
        cells = [f"{modes[m]['ndcg@10']:.3f} / {modes[m]['recall@100']:.3f}" for m in ("lexical", "vector", "fused")]
        queries = next(iter(modes.values()))["queries"]
        lines.append(f"| {name} | {split} | {queries} | " + " | ".join(cells) + f" | {reference} |")
    lines += [f"\n- {note}" for note in result["notes"] if note.startswith("eval set missing")]
    if quick:
        lines.append(f"\nQuick run: SciFact limited to its first {QUICK_QUERIES} training queries.")
    lines += ["", "### Speed (synthetic corpus, k=10; see benchmarks/knowledge/retrieval_speed.py)", "",
              speed_markdown(result["speed_all_sizes"]),
              "Goal (issue #37): at 100k and 1M chunks (`make bench-scale`), at every readable share: p95 ≤ 25 ms, "
              "recall@10 ≥ 0.98, no under-filled query.", ""]
    lines += [f"![{name}]({name})" for name in result["plots"]]
    return "\n".join(lines) + "\n"
