"""Retrieval speed under access filters: our hybrid query against a plain baseline, on the synthetic
corpus of benchmarks.knowledge.synthetic (its docstring describes the design)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import numpy as np
from django.conf import settings
from django.db import connection
from psycopg import sql

from groundwork.authority import Authority
from groundwork.models import Principal, Tenant
from groundwork.selectors import platform_tenant
from knowledge.access import chunk_access_params, chunk_access_sql
from knowledge.models import EmbeddingSpace
from knowledge.retrieval import search as search_module
from knowledge.retrieval.lexical import K1, B, lexical_search_planned, or_query, usable_lexemes
from knowledge.retrieval.search import hybrid_search
from knowledge.retrieval.sql import LEXICAL_BM25, compose
from knowledge.retrieval.statistics import corpus_stats, idf_for
from knowledge.retrieval.vector import readable_set_small, vector_literal, vector_search

from .synthetic import (
    SELECTIVITIES,
    SLUG_PREFIX,
    VERSION,
    Corpus,
    K,
    corpus_find,
    corpus_load,
    marker_slug,
    space_model_id,
    synthetic_remove,
    synthetic_tenant_ids,
)

# --- measuring --------------------------------------------------------------------------------------------

BASELINE = sql.SQL(
    """
    WITH lex AS (
        SELECT id, row_number() OVER (ORDER BY score DESC, id) AS rank FROM (
            SELECT c.id, ts_rank_cd(c.search, q.query) AS score
              FROM knowledge_chunk c, websearch_to_tsquery('english', %(query)s) AS q(query)
             WHERE c.search @@ q.query AND {access}
             ORDER BY score DESC, c.id
             LIMIT %(depth)s) l
    ), vec AS (
        SELECT id, row_number() OVER (ORDER BY distance, id) AS rank FROM (
            SELECT c.id, c.embedding <=> %(vector)s::vector AS distance
              FROM knowledge_chunk c
             WHERE c.embedding_space_id = %(space_id)s AND {access}
             ORDER BY c.embedding <=> %(vector)s::vector
             LIMIT %(depth)s) v
    )
    SELECT coalesce(lex.id, vec.id) AS id,
           coalesce(1.0 / (60 + lex.rank), 0) + coalesce(1.0 / (60 + vec.rank), 0) AS score,
           (SELECT count(*) FROM vec) AS vector_rows
      FROM lex FULL OUTER JOIN vec ON lex.id = vec.id
     ORDER BY score DESC, id
     LIMIT %(k)s
    """
)


def baseline_search(*, query: str, vector: list[float], space_id: int, access_params: dict, depth: int
                    ) -> tuple[list[int], int]:
    """The straightforward hybrid query: (fused ids, rows the vector arm returned)."""
    params = {**access_params, "query": query, "vector": vector_literal(vector), "space_id": space_id,
              "depth": depth, "k": K}
    with connection.cursor() as cursor:
        cursor.execute(BASELINE.format(access=chunk_access_sql("c")), params)
        rows = cursor.fetchall()
    return [r[0] for r in rows], (rows[0][2] if rows else 0)


def lexical_exhaustive(*, query: str, access_params: dict, limit: int) -> list[int]:
    """The truth for the lexical channel: BM25's top `limit` over every readable chunk holding any of the
    query's lexemes — no candidate cap, no first pass — with the weights the production path uses."""
    lexemes = usable_lexemes(query)
    if not lexemes:
        return []
    stats = corpus_stats(access_params["tenant_ids"])
    idf = idf_for(lexemes, stats)
    keep = [i for i, v in enumerate(idf) if v >= settings.LEXICAL_MIN_IDF] or list(range(len(lexemes)))
    lexemes, idf = [lexemes[i] for i in keep], [idf[i] for i in keep]
    params = {**access_params, "limit": limit, "lexemes": lexemes, "idf": idf, "match_query": or_query(lexemes),
              "k1": K1, "b": B, "avg_len": stats.average_tokens, "candidate_cap": 2**62,
              "paired": False, "pairs_query": or_query(lexemes), "bound": 0.0}  # the ORed pass alone
    with connection.cursor() as cursor:
        cursor.execute(compose(LEXICAL_BM25, sql.SQL("")), params)
        return [row[0] for row in cursor.fetchall()]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def caller_authority(*, big: Tenant, group_id: int, caller_id: int, platform_id: int) -> Authority:
    return Authority(tenant_id=big.pk, tenant_slug=big.slug, platform_tenant_id=platform_id,
                     principal_ids=frozenset({caller_id, group_id}), kind="service", role="member",
                     service_name="rbench-caller")


def selectivity_measure(*, authority: Authority, queries: list[tuple[str, list[float]]], space_id: int,
                        warmup: int = 20) -> dict:
    access = chunk_access_params(authority)
    depth = max(settings.RETRIEVAL_CHANNEL_DEPTH, K * 4)
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL("SELECT count(*) FROM knowledge_chunk c WHERE c.embedding_space_id = %(space_id)s "
                               "AND {}").format(chunk_access_sql("c")), {**access, "space_id": space_id})
        passing = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM knowledge_chunk")
        total = cursor.fetchone()[0]
    current: dict = {}

    def synthetic_query_vector(_query: str):
        return current["vector"], space_id, "ok"

    ours, base, recalls, routes, lexical_recalls, lexical_plans = [], [], [], {}, [], {}
    underfilled = base_underfilled = 0
    channel = {"access_params": access, "filters_clause": sql.SQL(""), "filter_params": {}, "space_id": space_id}
    with mock.patch.object(search_module, "query_vector", synthetic_query_vector):
        warm = queries[:warmup]  # the first queries once more, unmeasured: caches filled as in steady use
        for i, (text, vector) in enumerate(warm + queries):
            measured = i >= len(warm)
            current["vector"] = vector
            started = time.perf_counter()
            hybrid_search(authority, text, k=K)
            elapsed = time.perf_counter() - started
            started = time.perf_counter()
            _, vector_rows = baseline_search(query=text, vector=vector, space_id=space_id, access_params=access,
                                             depth=depth)
            base_elapsed = time.perf_counter() - started
            if not measured:
                continue
            ours.append(elapsed)
            base.append(base_elapsed)
            nearest, route = vector_search(vector=vector, limit=depth, **channel)
            routes[route] = routes.get(route, 0) + 1
            # The truth: full-precision distances over every readable row (the chunk-predicate form of the
            # exact scan, not the class index's half-precision copy that the production route ranks by).
            exact, _ = vector_search(vector=vector, limit=K, route="exact", access=chunk_access_sql("c"), **channel)
            truth = {cid for cid, _ in exact}
            got = {cid for cid, _ in nearest[:K]}
            recalls.append(len(truth & got) / len(truth) if truth else 1.0)
            # The lexical channel as hybrid_search runs it, against BM25 over every readable match.
            lexical, plan = lexical_search_planned(query=text, limit=depth, small_scope=readable_set_small(**channel),
                                                   **{k: v for k, v in channel.items() if k != "space_id"})
            lexical_plans[plan] = lexical_plans.get(plan, 0) + 1
            lexical_truth = set(lexical_exhaustive(query=text, access_params=access, limit=K))
            lexical_got = {cid for cid, _ in lexical[:K]}
            lexical_recalls.append(len(lexical_truth & lexical_got) / len(lexical_truth) if lexical_truth else 1.0)
            if passing >= K and len(nearest) < K:
                underfilled += 1
            if passing >= K and vector_rows < K:
                base_underfilled += 1
    n = len(queries)
    return {
        "p50_ms": round(1000 * percentile(ours, 0.5), 2), "p95_ms": round(1000 * percentile(ours, 0.95), 2),
        "recall@10": round(sum(recalls) / n, 4), "underfilled": round(underfilled / n, 4),
        "baseline_p50_ms": round(1000 * percentile(base, 0.5), 2),
        "baseline_p95_ms": round(1000 * percentile(base, 0.95), 2),
        "baseline_underfilled": round(base_underfilled / n, 4),
        "passing_rows": passing, "pass_share": round(passing / total, 5) if total else 0.0, "queries": n,
        "routes": routes, "lexical_recall@10": round(sum(lexical_recalls) / n, 4), "lexical_plans": lexical_plans,
    }


def speed_run(*, size: int = 100_000, queries: int = 200, keep: bool = False, seed: int = 7,
              progress: Callable[[str], None] | None = None) -> dict:
    """{str(size): {"100%": {...}, "10%": ..., "2%": ..., "0.2%": ...}, "setup": {...}}"""
    say = progress or (lambda _msg: None)
    corpus = Corpus(size, seed)
    prefix = f"{SLUG_PREFIX}v{VERSION}-{corpus.size}-s{seed}-"
    stale = synthetic_tenant_ids(exclude_prefix=prefix)
    if stale:
        say(f"removing {len(stale)} scratch tenants of another synthetic corpus")
        synthetic_remove(stale)
    setup: dict = {"rows": corpus.size, "documents": corpus.documents, "seed": seed, "reused": False}
    if corpus_find(corpus):
        setup["reused"] = True
        say("reusing the kept synthetic corpus")
    else:
        leftovers = synthetic_tenant_ids()
        if leftovers:
            synthetic_remove(leftovers)  # a half-finished load of this corpus
        say(f"loading {corpus.size} synthetic chunks")
        setup.update(corpus_load(corpus, progress=say))
    big = Tenant.objects.get(slug=marker_slug(corpus.size, seed, 0))
    space = EmbeddingSpace.objects.get(model_id=space_model_id(corpus.size, seed))
    groups = dict(Principal.objects.filter(tenant=big, kind=Principal.Kind.GROUP)
                  .values_list("key", "pk"))
    caller, _ = Principal.objects.get_or_create(tenant=big, kind=Principal.Kind.SERVICE, key="rbench-caller")
    platform_id = platform_tenant().pk
    workload = corpus.queries(queries)
    figures = {}
    try:
        for label, group in SELECTIVITIES.items():
            authority = caller_authority(big=big, group_id=groups[f"rbench-{group}"], caller_id=caller.pk,
                                         platform_id=platform_id)
            figures[label] = selectivity_measure(authority=authority, queries=workload, space_id=space.pk)
            say(f"{corpus.size} {label}: {json.dumps(figures[label])}")
    finally:
        if not keep:
            synthetic_remove(synthetic_tenant_ids(), [space.pk])
    setup["settings"] = {"ef_search": settings.HNSW_EF_SEARCH, "max_scan_tuples": settings.HNSW_MAX_SCAN_TUPLES,
                         "exact_scan_below": settings.RETRIEVAL_EXACT_SCAN_BELOW,
                         "channel_depth": settings.RETRIEVAL_CHANNEL_DEPTH,
                         "lexical_strategy": settings.LEXICAL_STRATEGY,
                         "lexical_candidate_cap": settings.LEXICAL_CANDIDATE_CAP}
    return {str(corpus.size): figures, "setup": {str(corpus.size): setup}}


# --- output ----------------------------------------------------------------------------------------------

# The goals of issue #37, at every size and readable share.
P95_CEILING_MS = 25.0
RECALL_GOAL = 0.98


def flat_figures(size: int, figures: dict) -> tuple[dict, dict, dict, list[str]]:
    """The headline numbers of one size's speed figures as flat keys, their goals (at least) and ceilings (at
    most), and a note per share naming the plans its queries took."""
    flat, goals, ceilings, notes = {}, {}, {}, []
    for label in SELECTIVITIES:
        row = figures.get(label)
        if row is None:
            continue
        prefix = f"speed_{size}_{label}"
        flat[f"{prefix}_p50_ms"] = row["p50_ms"]
        flat[f"{prefix}_p95_ms"] = row["p95_ms"]
        flat[f"{prefix}_recall@10"] = row["recall@10"]
        flat[f"{prefix}_underfilled_queries"] = round(row["underfilled"] * row["queries"])
        ceilings[f"{prefix}_p95_ms"] = P95_CEILING_MS
        goals[f"{prefix}_recall@10"] = RECALL_GOAL
        ceilings[f"{prefix}_underfilled_queries"] = 0
        if "lexical_recall@10" in row:
            flat[f"{prefix}_lexical_recall@10"] = row["lexical_recall@10"]
        plans = ", ".join(f"{name} {count}" for name, count in sorted(row.get("routes", {}).items()))
        lexical = ", ".join(f"{name} {count}" for name, count in sorted(row.get("lexical_plans", {}).items()))
        notes.append(f"{size:,} chunks, {label} readable ({row['passing_rows']:,} rows): vector plans {plans}; "
                     f"lexical plans {lexical or 'not recorded'}; {row['queries']} queries")
    return flat, goals, ceilings, notes


def speed_merge(out_dir: Path, result: dict) -> dict:
    """Merge this run's sizes into `<out_dir>/retrieval_speed.json` (a 1M run is kept for the by-size
    plot of later 100k runs) and return the merged figures."""
    path = out_dir / "retrieval_speed.json"
    merged = {"speed": {}, "setup": {}}
    if path.exists():
        try:
            merged = json.loads(path.read_text())
        except ValueError:
            pass
    for size, figures in result.items():
        if size == "setup":
            continue
        merged.setdefault("speed", {})[size] = figures
    merged.setdefault("setup", {}).update(result.get("setup", {}))
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n")
    return merged


def speed_plots(out_dir: Path, speed: dict) -> list[str]:
    """PNG plots: p50/p95 by selectivity, ours vs baseline, per size; p95 by size when several ran."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    for size, figures in sorted(speed.items(), key=lambda kv: int(kv[0])):
        labels = [s for s in SELECTIVITIES if s in figures]
        x = np.arange(len(labels))
        fig, ax = plt.subplots(figsize=(7, 3.8), dpi=100)
        series = (("ours p50", "p50_ms", "#4c72b0"), ("ours p95", "p95_ms", "#27408b"),
                  ("baseline p50", "baseline_p50_ms", "#dd8452"), ("baseline p95", "baseline_p95_ms", "#a0522d"))
        for j, (name, key, colour) in enumerate(series):
            bars = ax.bar(x + (j - 1.5) * 0.2, [figures[s][key] for s in labels], 0.2, label=name, color=colour)
            ax.bar_label(bars, fmt="%.0f", fontsize=7)
        ax.axhline(25, color="#c44e52", linestyle="dashed", linewidth=1, label="goal p95 25 ms")
        ax.set_xticks(x, [f"{s} readable" for s in labels])
        ax.set_ylabel("latency (ms)")
        ax.set_title(f"Hybrid search latency, {int(size):,} chunks")
        ax.legend(fontsize=7)
        fig.tight_layout()
        name = f"retrieval_latency_{size}.png"
        fig.savefig(out_dir / name)
        plt.close(fig)
        names.append(name)
    if len(speed) > 1:
        fig, ax = plt.subplots(figsize=(7, 3.8), dpi=100)
        for size, figures in sorted(speed.items(), key=lambda kv: int(kv[0])):
            labels = [s for s in SELECTIVITIES if s in figures]
            ax.plot(labels, [figures[s]["p95_ms"] for s in labels], marker="o", label=f"ours p95, {int(size):,}")
            ax.plot(labels, [figures[s]["baseline_p95_ms"] for s in labels], marker="x", linestyle="dotted",
                    label=f"baseline p95, {int(size):,}")
        ax.axhline(25, color="#c44e52", linestyle="dashed", linewidth=1)
        ax.set_yscale("log")
        ax.set_xlabel("share of rows readable")
        ax.set_ylabel("p95 latency (ms, log)")
        ax.set_title("Hybrid search p95 by corpus size")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out_dir / "retrieval_latency_by_size.png")
        plt.close(fig)
        names.append("retrieval_latency_by_size.png")
    return names


def speed_markdown(speed: dict) -> str:
    lines = ["| size | readable | p50 ms | p95 ms | recall@10 | under-filled | baseline p50 ms | baseline p95 ms "
             "| baseline under-filled | rows passing | routes |", "|" + "---|" * 11]
    for size, figures in sorted(speed.items(), key=lambda kv: int(kv[0])):
        for label in SELECTIVITIES:
            f = figures.get(label)
            if f is None:
                continue
            routes = ", ".join(f"{k} {v}" for k, v in sorted(f.get("routes", {}).items()))
            lines.append(f"| {int(size):,} | {label} | {f['p50_ms']:.1f} | {f['p95_ms']:.1f} | {f['recall@10']:.3f} "
                         f"| {f['underfilled']:.1%} | {f['baseline_p50_ms']:.1f} | {f['baseline_p95_ms']:.1f} "
                         f"| {f.get('baseline_underfilled', 0):.1%} | {f.get('passing_rows', '')} | {routes} |")
    return "\n".join(lines) + "\n"
