"""The vector channel: cosine distance in the active embedding space."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.db import connection, transaction
from psycopg import sql

from .sql import FILTERED_COUNT, VECTOR_EXACT, VECTOR_HNSW, compose


def vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def vector_search(*, vector: Sequence[float], space_id: int, access_params: dict, filters_clause: sql.Composable,
                  filter_params: dict, limit: int, route: str | None = None, access: sql.Composable | None = None,
                  ) -> tuple[list[tuple[int, float]], str]:
    """[(chunk id, cosine similarity)] nearest first, and the route taken ('exact' or 'hnsw').

    The query vector was embedded before this call, outside any transaction. The transaction here
    only scopes the SET LOCALs of the HNSW scan.
    """
    params = {**access_params, **filter_params, "vector": vector_literal(vector), "space_id": space_id,
              "limit": limit}
    with transaction.atomic(), connection.cursor() as cursor:
        if route is None:
            bound = settings.RETRIEVAL_EXACT_SCAN_BELOW
            cursor.execute(compose(FILTERED_COUNT, filters_clause, access=access), {**params, "bound": bound})
            route = "exact" if cursor.fetchone()[0] < bound else "hnsw"
        if route == "hnsw":
            cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cursor.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(settings.HNSW_EF_SEARCH)))
            cursor.execute(sql.SQL("SET LOCAL hnsw.max_scan_tuples = {}").format(
                sql.Literal(settings.HNSW_MAX_SCAN_TUPLES)))
            cursor.execute(compose(VECTOR_HNSW, filters_clause, access=access), params)
        else:
            cursor.execute(compose(VECTOR_EXACT, filters_clause, access=access), params)
        return [(row[0], 1.0 - float(row[1])) for row in cursor.fetchall()], route
