"""Retrieval channels beyond lexical and vector, registered by later layers.

Knowledge cannot import the apps above it, yet a channel may need their data (the entity graph lives in
findings). So a later layer registers a function here from its AppConfig.ready() — `channel_register("graph",
fn)` — and `hybrid_search` calls every registered channel the caller asks for (by default all of them), fusing
each one's ranked chunks with lexical and vector by reciprocal rank. A channel:

- receives a `ChannelQuery` (the caller's authority, the query, the access parameters and user filters) and
  must apply the access predicate (knowledge.access.chunk_access_sql) to every chunk it returns;
- returns `ChannelHits`: chunk ids best first, optionally the path that reached each one, and its state —
  "ok", or "off" when it had nothing to do (no graph, no entity named); an "off" or empty channel leaves the
  fused ranking exactly as lexical and vector made it;
- may fail: search then logs it, keeps the other channels' ranking and reports the channel's state "error".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from psycopg import sql

from groundwork.authority import Authority
from groundwork.sql import prepared_cursor

from .sql import LINKED_CHUNKS, compose


@dataclass(frozen=True)
class ChannelQuery:
    authority: Authority
    query: str
    access_params: dict
    filters_clause: sql.Composable
    filter_params: dict
    limit: int


@dataclass
class ChannelHits:
    ranked: list[tuple[int, float]] = field(default_factory=list)
    paths: dict[int, tuple[str, ...]] = field(default_factory=dict)
    state: str = "ok"
    weight: float = 1.0  # what one of its ranks counts in the fusion, relative to lexical and vector


ChannelFunction = Callable[[ChannelQuery], ChannelHits]
_channels: dict[str, ChannelFunction] = {}


def channel_register(name: str, function: ChannelFunction) -> None:
    """Register (or replace) a channel under a stable name ("graph")."""
    if name in ("lexical", "vector"):
        raise ValueError(f"{name!r} is a built-in channel")
    _channels[name] = function


def channel_unregister(name: str) -> None:
    _channels.pop(name, None)


def channels_registered() -> dict[str, ChannelFunction]:
    return dict(_channels)


@dataclass(frozen=True)
class LinkedChunk:
    from_document: int
    to_document: int
    kind: str
    anchor: str
    chunk_id: int


def linked_chunks(document_ids: Sequence[int], request: ChannelQuery, *, limit: int = 50) -> list[LinkedChunk]:
    """Record links (knowledge.record_links) out of and into these documents, each to the first chunk of the
    linked document the caller may read (under the query's filters). Documents the caller cannot read link
    nowhere."""
    if not document_ids:
        return []
    params = {**request.access_params, **request.filter_params, "documents": sorted(set(document_ids)),
              "limit": limit}
    with prepared_cursor() as cursor:
        cursor.execute(compose(LINKED_CHUNKS, request.filters_clause), params)
        return [LinkedChunk(*row) for row in cursor.fetchall()]
