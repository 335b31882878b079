"""Hybrid search: lexical + vector (+ registered channels such as the graph), each filtered by the access path
in SQL, fused by RRF."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.utils import DEFAULT_DB_ALIAS

from groundwork.authority import Authority
from groundwork.replicas import read_alias, read_connection, replica_failed, replica_reads
from groundwork.rls import in_current_scope
from knowledge.structure import structure_load

from ..access import chunk_access_params
from .channels import ChannelHits, ChannelQuery, channels_registered
from .fusion import Fused, rrf_fuse
from .lexical import lexical_search
from .sql import HYDRATE, compose, filters_sql
from .types import SEMANTIC_FAILURES, Hit, RetrievalUnavailable, SearchFilters, SearchResult
from .vector import readable_set_small, vector_search

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueryVector:
    """A query's embedding and the state of the vector channel it leaves ("ok": `vector` is usable)."""

    vector: list[float] | None
    space_id: int | None
    state: str


def query_vector(query: str):
    """Embed the query (outside any transaction) and check it. Returns (vector, space_id, state)."""
    embedded = query_vectors([query])[0]
    return embedded.vector, embedded.space_id, embedded.state


def query_vectors(queries: Sequence[str], *, unindexed: bool = False) -> list[QueryVector]:
    """Embed several queries in one embedder call (outside any transaction) and check each: a question's
    search text and its hint probe's topic words cost one round trip, and the vectors are passed on.
    `unindexed`: embed even before anything was embedded with this model (state "no_space", the vector kept
    for a caller that compares queries with each other, such as the answer cache; the search ignores it)."""
    from ..embedders import (
        EmbeddingError,
        embedder_get,
        query_embedding_failed,
        query_embedding_suspended,
        vector_problem,
    )
    from ..embedding import active_space

    if not queries:
        return []
    embedder = embedder_get()
    if embedder is None:
        return [QueryVector(None, None, "no_embedder") for _ in queries]
    space = active_space()
    indexed = space is not None and space.model_id == embedder.model_id
    if not indexed and not unindexed:
        return [QueryVector(None, None, "no_space") for _ in queries]  # nothing was embedded with this model yet
    if query_embedding_suspended():
        return [QueryVector(None, None, "error") for _ in queries]
    try:
        batch = getattr(embedder, "embed_queries", None)
        vectors = batch(list(queries)) if batch else [embedder.embed_query(q) for q in queries]
    except EmbeddingError as exc:
        logger.warning("query embedding failed, searching full text alone: %s", exc)
        query_embedding_failed()
        return [QueryVector(None, None, "error") for _ in queries]
    if not indexed:
        return [QueryVector(list(vector), None, "no_space") for vector in vectors]
    # The active space was activated only after its dimension matched the index (embedding.chunks_embed),
    # so checking against it costs no catalog query on every search.
    out = []
    for vector in vectors:
        problem = vector_problem(vector, space.dimension)
        state = "ok" if not problem else "wrong_dimension" if problem == "wrong_dimension" else "zero_vector"
        out.append(QueryVector(vector if state == "ok" else None, space.pk if state == "ok" else None, state))
    return out


def hybrid_search(authority: Authority, query: str, *, k: int = 10, filters: SearchFilters | None = None,
                  per_document_cap: int | None = None, channels: tuple[str, ...] | None = None,
                  lexical_strategy: str | None = None, vector_route: str | None = None,
                  require_vector: bool = False, embedded: QueryVector | None = None) -> SearchResult:
    """The caller's top-k readable chunks for `query`. Raises RetrievalUnavailable when the corpus cannot be
    searched: a database failure; with `require_vector` and RETRIEVAL_REQUIRE_SEMANTIC, a vector channel that is
    failing or absent. Otherwise a failing embedder leaves the full-text channel alone (`result.lexical_only`).
    `embedded`: the query's vector computed already (`query_vectors`), so it is not embedded again; a repeat
    search with reworded full-text terms passes the question's own vector.

    `channels` names the channels to run; by default lexical, vector and every registered one
    (knowledge.retrieval.channels). A registered channel that fails is left out and reported in
    `result.extra` as "error" (`result.degraded_channels`), never raised."""
    if channels is None:
        channels = ("lexical", "vector", *sorted(channels_registered()))
    query = (query or "").strip()
    if not query:
        return SearchResult(hits=[], lexical="off", vector="off", query=query)
    depth = max(settings.RETRIEVAL_CHANNEL_DEPTH, k * 4)
    vector, space_id, vector_state = (None, None, "off")
    if "vector" in channels:
        # Before any transaction; the synthetic-corpus bench stands in for `query_vector` (knowledge/bench).
        vector, space_id, vector_state = (query_vector(query) if embedded is None else (
            embedded.vector if embedded.state == "ok" else None, embedded.space_id, embedded.state))
        # A configured embedder that fails, or answers with a wrong-size or zero vector, leaves the search to full
        # text (the result says lexical_only), unless the deployment requires semantic evidence: then such a
        # search — and one with no embedder at all — is unavailable. "Nothing embedded yet" only steps aside.
        if require_vector and settings.RETRIEVAL_REQUIRE_SEMANTIC and (
                vector_state in SEMANTIC_FAILURES or vector_state == "no_embedder"):
            raise RetrievalUnavailable(_cause(vector_state))
    access = chunk_access_params(authority)
    filters_clause, filter_params = filters_sql(filters)
    run = functools.partial(_channels_run, authority, query=query, channels=channels, vector=vector,
                            space_id=space_id, access=access, filters_clause=filters_clause,
                            filter_params=filter_params, depth=depth, vector_route=vector_route,
                            lexical_strategy=lexical_strategy)
    try:
        # A replica serves the channels and hydration when it has replayed the caller's latest access change
        # (groundwork/replicas.py), the registered channels (the graph) included.
        alias = DEFAULT_DB_ALIAS
        try:
            with replica_reads(authority) as alias:
                hits, extra = run()
        except DatabaseError:
            if alias == DEFAULT_DB_ALIAS:
                raise
            # The replica failed under the search (it went down, or cancelled the query over a replay conflict):
            # it is left out for a while, and this search runs again on the primary.
            logger.warning("replica %s failed during a search; searching on the primary", alias, exc_info=True)
            replica_failed(alias)
            hits, extra = run()
    except DatabaseError as exc:
        logger.exception("retrieval query failed")
        raise RetrievalUnavailable("database_error", type(exc).__name__) from exc
    hits = _rank(hits, k=k, cap=per_document_cap or settings.RETRIEVAL_PER_DOCUMENT_CAP)
    return SearchResult(hits=hits, lexical="ok" if "lexical" in channels else "off", vector=vector_state,
                        query=query, extra={name: out.state for name, out in extra.items()})


def _channels_run(authority: Authority, *, query: str, channels: tuple[str, ...], vector, space_id, access: dict,
                  filters_clause, filter_params: dict, depth: int, vector_route: str | None,
                  lexical_strategy: str | None) -> tuple[list[Hit], dict[str, ChannelHits]]:
    """Every channel, fused and hydrated, on the current read connection (groundwork/replicas.py)."""
    channel = {"vector": vector, "space_id": space_id, "access_params": access,
               "filters_clause": filters_clause, "filter_params": filter_params, "limit": depth,
               "route": vector_route}
    pending: Future | None = None
    if vector is not None and "lexical" in channels and _parallel_ok():
        # The worker thread runs under this request's database scope (groundwork/rls.py).
        pending = _executor().submit(in_current_scope(_in_worker), vector_search, **channel)
    lexical = []
    request = ChannelQuery(authority=authority, query=query, access_params=access,
                           filters_clause=filters_clause, filter_params=filter_params, limit=depth)
    try:
        if "lexical" in channels:
            small = readable_set_small(space_id=space_id, access_params=access, filters_clause=filters_clause,
                                       filter_params=filter_params)
            lexical = lexical_search(query=query, access_params=access, filters_clause=filters_clause,
                                     filter_params=filter_params, limit=depth, strategy=lexical_strategy,
                                     small_scope=small)
        # The registered channels (the graph) run here too, while the vector channel may still be scanning
        # on its own connection: they need neither channel's rows, and in turn they added their time to it.
        extra = {name: _extra_channel(name, request) for name in channels if name not in ("lexical", "vector")}
    finally:
        # Always collect the vector channel's outcome, so a lexical failure never leaves it running.
        nearest = pending.result()[0] if pending is not None else []
    if pending is None and vector is not None:
        nearest, _ = vector_search(**channel)
    # Nearest neighbours always exist; below this similarity they are noise, not evidence, and an
    # unrelated question must be able to come back empty.
    nearest = [(cid, sim) for cid, sim in nearest if sim >= settings.RETRIEVAL_VECTOR_MIN_SIMILARITY]
    fused = rrf_fuse(lexical, nearest, k=settings.RETRIEVAL_RRF_K, both_bonus=settings.RETRIEVAL_BOTH_BONUS,
                     extra={name: out.ranked for name, out in extra.items() if out.ranked},
                     weights={name: out.weight for name, out in extra.items()})
    paths = {cid: path for out in extra.values() for cid, path in out.paths.items()}
    hits = _hydrate(authority, fused, paths)
    return hits, extra


def _extra_channel(name: str, request: ChannelQuery) -> ChannelHits:
    """Run one registered channel in its own savepoint (or short transaction): whatever it does wrong — an
    exception, a failed statement — is rolled back to here and the search goes on without it."""
    function = channels_registered().get(name)
    if function is None:
        return ChannelHits(state="off")
    try:
        # On the search's read connection: a replica serving the search runs the channel too.
        with transaction.atomic(using=read_alias()):
            out = function(request)
    except Exception:  # a broken channel degrades the search to the built-in two, never fails it
        logger.exception("retrieval channel %s failed; ranking without it", name)
        return ChannelHits(state="error")
    out.ranked = out.ranked[: request.limit]
    return out


_executor_lock = threading.Lock()
_executor_instance: ThreadPoolExecutor | None = None


def _parallel_ok() -> bool:
    # Inside a transaction the channels must share its snapshot (and see its uncommitted rows): in turn.
    return settings.RETRIEVAL_PARALLEL_CHANNELS and not connection.in_atomic_block


def _executor() -> ThreadPoolExecutor:
    global _executor_instance
    with _executor_lock:
        if _executor_instance is None:
            _executor_instance = ThreadPoolExecutor(max_workers=settings.RETRIEVAL_PARALLEL_WORKERS,
                                                    thread_name_prefix="retrieval")
        return _executor_instance


def _in_worker(function, **kwargs):
    """Run a channel on the worker thread's own connection, which stays open between searches (that is
    the point: no connection set-up per search); one the server dropped is replaced first. With a
    connection pool (DATABASE_POOL) the connection goes back to the pool afterwards instead: the
    request threads and these share one bounded pool, and borrowing from it costs no set-up either."""
    from django.db import connections

    worker = connections[read_alias()]
    worker.close_if_unusable_or_obsolete()
    try:
        return function(**kwargs)
    finally:
        if worker.pool is not None:
            worker.close()


def channel_workers_close() -> None:
    """Close the worker threads' connections and stop the pool (tests, before dropping their database).
    Each worker thread takes exactly one of the close jobs: every job waits at a barrier until all run."""
    global _executor_instance
    with _executor_lock:
        executor, _executor_instance = _executor_instance, None
    if executor is None:
        return
    workers = settings.RETRIEVAL_PARALLEL_WORKERS  # the size the pool was created with
    barrier = threading.Barrier(workers)

    def close() -> None:
        from django.db import connections

        try:
            barrier.wait(timeout=10)
        finally:
            connections.close_all()

    for future in [executor.submit(close) for _ in range(workers)]:
        try:
            future.result()
        except threading.BrokenBarrierError:
            pass
    executor.shutdown(wait=True)


def _cause(state: str) -> str:
    return {"no_embedder": "no_embedder", "no_space": "no_embedder", "error": "embedding_error",
            "wrong_dimension": "wrong_dimension", "zero_vector": "zero_vector"}.get(state, "embedding_error")


def _hydrate(authority: Authority, fused: list[Fused], paths: dict[int, tuple[str, ...]] | None = None) -> list[Hit]:
    if not fused:
        return []
    by_id = {f.chunk_id: f for f in fused}
    with read_connection().cursor() as cursor:
        # The access predicate again: hydration must never widen what the channels returned.
        cursor.execute(compose(HYDRATE), {**chunk_access_params(authority), "ids": list(by_id)})
        rows = cursor.fetchall()
    hits = []
    for (cid, doc_id, ordinal, text, start, end, heading, title, url, source_id, source_name, source_kind,
         author_id, tenant_id, structure) in rows:
        f = by_id[cid]
        hits.append(Hit(
            chunk_id=cid, document_id=doc_id, ordinal=ordinal, text=text, start=start, end=end,
            heading_path=heading, title=title, record_url=url, source_id=source_id, source_name=source_name,
            source_kind=source_kind, author_id=author_id, score=f.score, lexical_rank=f.lexical_rank,
            vector_rank=f.vector_rank, lexical_score=f.lexical_score, vector_similarity=f.vector_similarity,
            corpus="platform" if tenant_id == authority.platform_tenant_id and not authority.is_platform
            else "tenant", channel_ranks=dict(f.ranks), path=(paths or {}).get(cid, ()) if f.ranks else (),
            structure=structure_load(structure),
        ))
    return hits


def _rank(hits: list[Hit], *, k: int, cap: int) -> list[Hit]:
    """Best fused score first; on equal scores the tenant's own records before the platform corpus;
    at most `cap` chunks of one document, so near-duplicates cannot crowd out other documents."""
    ordered = sorted(hits, key=lambda h: (-round(h.score, 12), h.corpus != "tenant", h.best_rank, h.chunk_id))
    per_doc: dict[int, int] = {}
    out = []
    for hit in ordered:
        if per_doc.get(hit.document_id, 0) >= cap:
            continue
        per_doc[hit.document_id] = per_doc.get(hit.document_id, 0) + 1
        out.append(hit)
        if len(out) == k:
            break
    return out
