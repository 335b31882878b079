"""The vector channel: cosine distance in the active embedding space."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from django.conf import settings
from django.db import transaction
from psycopg import sql

from groundwork.replicas import read_alias, read_connection

from ..sql import vector_literal
from .sql import (
    FILTERED_COUNT,
    FILTERED_COUNT_PREDICATE,
    HNSW_SETTINGS,
    VECTOR_EXACT,
    VECTOR_EXACT_PREDICATE,
    VECTOR_HNSW,
    compose,
)

# The route depends on how many rows the caller may read, which moves slowly; counting them costs an
# index walk of up to RETRIEVAL_EXACT_SCAN_BELOW rows (several ms, a large share of a query's cost). So the
# answer is kept per (space, rights) for ROUTE_TTL_S. A stale route only costs speed: both routes apply the
# same access predicate. Searches with user filters are counted every time.
ROUTE_TTL_S = 60.0
_route_lock = threading.Lock()
_routes: dict[tuple, tuple[str, float]] = {}


def vector_search(*, vector: Sequence[float], space_id: int, access_params: dict, filters_clause: sql.Composable,
                  filter_params: dict, limit: int, route: str | None = None, access: sql.Composable | None = None,
                  ) -> tuple[list[tuple[int, float]], str]:
    """[(chunk id, cosine similarity)] nearest first, and the route taken ('exact' or 'hnsw').

    The query vector was embedded before this call, outside any transaction. The transaction here
    only scopes the SET LOCALs of the HNSW scan.
    """
    params = {**access_params, **filter_params, "vector": vector_literal(vector), "space_id": space_id,
              "limit": limit}
    with transaction.atomic(using=read_alias()), read_connection().cursor() as cursor:
        if route is None:
            key = _route_key(space_id, access_params, filters_clause, filter_params, access)
            route = _route_cached(key)
            if route is None:
                bound = settings.RETRIEVAL_EXACT_SCAN_BELOW
                count = FILTERED_COUNT if access is None else FILTERED_COUNT_PREDICATE
                cursor.execute(compose(count, filters_clause, access=access), {**params, "bound": bound})
                route = "exact" if cursor.fetchone()[0] < bound else "hnsw"
                _route_store(key, route)
        if route == "hnsw":
            # One round trip for the three SET LOCALs (set_config(..., true) is SET LOCAL).
            cursor.execute(HNSW_SETTINGS, {"ef_search": str(settings.HNSW_EF_SEARCH),
                                           "max_scan_tuples": str(settings.HNSW_MAX_SCAN_TUPLES)})
            cursor.execute(compose(VECTOR_HNSW, filters_clause, access=access), params)
        else:
            exact = VECTOR_EXACT if access is None else VECTOR_EXACT_PREDICATE
            cursor.execute(compose(exact, filters_clause, access=access), params)
        return [(row[0], 1.0 - float(row[1])) for row in cursor.fetchall()], route



def readable_set_small(*, space_id: int | None, access_params: dict, filters_clause, filter_params: dict) -> bool:
    """Whether the caller was last found to read fewer than RETRIEVAL_EXACT_SCAN_BELOW embedded rows (the vector
    channel's cached route is 'exact'); False when not known yet. The lexical channel skips its pairs pass then:
    its ORed candidates are the caller's own matches only (sql.CLASS_FILTER), few enough to score them all."""
    if space_id is None:
        return False
    return _route_cached(_route_key(space_id, access_params, filters_clause, filter_params, None)) == "exact"


def _route_key(space_id: int, access_params: dict, filters_clause, filter_params: dict, access) -> tuple | None:
    if filter_params or access is not None or (filters_clause is not None and filters_clause != sql.SQL("")):
        return None  # user filters or a custom predicate: count every time
    return (space_id, tuple(access_params.get("tenant_ids", ())), tuple(access_params.get("principal_ids", ())),
            settings.RETRIEVAL_EXACT_SCAN_BELOW)


def _route_cached(key: tuple | None) -> str | None:
    if key is None:
        return None
    with _route_lock:
        found = _routes.get(key)
        if found and time.monotonic() - found[1] < ROUTE_TTL_S:
            return found[0]
    return None


def _route_store(key: tuple | None, route: str) -> None:
    if key is None:
        return
    with _route_lock:
        if len(_routes) > 10_000:
            _routes.clear()
        _routes[key] = (route, time.monotonic())


def route_cache_clear() -> None:
    with _route_lock:
        _routes.clear()
