"""Reciprocal-rank fusion of the two channels.

RRF needs no calibration between a BM25 score and a cosine similarity: each channel contributes
1 / (k + rank). Chunks found by both channels get a small bonus on top, so agreement breaks ties.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Fused:
    chunk_id: int
    score: float = 0.0
    lexical_rank: int | None = None
    vector_rank: int | None = None
    lexical_score: float | None = None
    vector_similarity: float | None = None


def rrf_fuse(lexical: list[tuple[int, float]], vector: list[tuple[int, float]], *, k: int = 60,
             both_bonus: float = 0.0) -> list[Fused]:
    fused: dict[int, Fused] = {}
    for rank, (chunk_id, score) in enumerate(lexical, start=1):
        item = fused.setdefault(chunk_id, Fused(chunk_id))
        item.score += 1.0 / (k + rank)
        item.lexical_rank, item.lexical_score = rank, score
    for rank, (chunk_id, similarity) in enumerate(vector, start=1):
        item = fused.setdefault(chunk_id, Fused(chunk_id))
        item.score += 1.0 / (k + rank)
        item.vector_rank, item.vector_similarity = rank, similarity
    for item in fused.values():
        if item.lexical_rank is not None and item.vector_rank is not None:
            item.score += both_bonus
    return list(fused.values())
