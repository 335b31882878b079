"""Reciprocal-rank fusion of the channels.

RRF needs no calibration between a BM25 score and a cosine similarity: each channel contributes
1 / (k + rank). Chunks found by both lexical and vector get a small bonus on top, so agreement breaks ties.
Registered channels (knowledge.retrieval.channels, e.g. the graph) join the same sum, each rank counting its
channel's weight / (k + rank); an empty one adds nothing, so the fused order of the other two is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass
class Fused:
    chunk_id: int
    score: float = 0.0
    lexical_rank: int | None = None
    vector_rank: int | None = None
    lexical_score: float | None = None
    vector_similarity: float | None = None
    ranks: dict[str, int] = field(default_factory=dict)  # registered channels: name → rank


def rrf_fuse(lexical: list[tuple[int, float]], vector: list[tuple[int, float]], *, k: int = 60,
             both_bonus: float = 0.0, extra: Mapping[str, list[tuple[int, float]]] | None = None,
             weights: Mapping[str, float] | None = None) -> list[Fused]:
    fused: dict[int, Fused] = {}
    for rank, (chunk_id, score) in enumerate(lexical, start=1):
        item = fused.setdefault(chunk_id, Fused(chunk_id))
        item.score += 1.0 / (k + rank)
        item.lexical_rank, item.lexical_score = rank, score
    for rank, (chunk_id, similarity) in enumerate(vector, start=1):
        item = fused.setdefault(chunk_id, Fused(chunk_id))
        item.score += 1.0 / (k + rank)
        item.vector_rank, item.vector_similarity = rank, similarity
    for name, ranked in (extra or {}).items():
        weight = (weights or {}).get(name, 1.0)
        for rank, (chunk_id, _score) in enumerate(ranked, start=1):
            item = fused.setdefault(chunk_id, Fused(chunk_id))
            item.score += weight / (k + rank)
            item.ranks[name] = rank
    for item in fused.values():
        if item.lexical_rank is not None and item.vector_rank is not None:
            item.score += both_bonus
    return list(fused.values())
