"""Reciprocal rank fusion: merge ranked hit lists by rank, not by score.

Vector similarities and bm25 scores live on different scales, so hybrid search fuses
positions instead: a chunk's fused score is ``sum(1 / (k + rank))`` over the lists that
hold it (rank starting at 1). ``k = 60`` is the customary damping constant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from headwater.types import SearchHit

DEFAULT_RRF_K = 60


def reciprocal_rank_fusion(
    lists: Sequence[Sequence[SearchHit]], k: int = DEFAULT_RRF_K, limit: int = 10
) -> list[SearchHit]:
    """The best ``limit`` chunks of ``lists`` by fused score (higher is better).

    A chunk found in several lists appears once, as its first occurrence with the fused
    score. Ties keep the order in which chunks were first met, so the result is
    deterministic. A chunk repeated inside one list counts only at its best rank there.
    """
    if k < 0:
        raise ValueError(f"rrf k was {k}; expected k >= 0 (60 is customary)")
    if limit <= 0:
        return []
    scores: dict[str, float] = {}
    first: dict[str, SearchHit] = {}
    for hits in lists:
        seen_here: set[str] = set()
        for rank, hit in enumerate(hits, start=1):
            if hit.chunk_id in seen_here:
                continue
            seen_here.add(hit.chunk_id)
            first.setdefault(hit.chunk_id, hit)
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + 1.0 / (k + rank)
    order = {chunk_id: index for index, chunk_id in enumerate(first)}
    best = sorted(scores, key=lambda chunk_id: (-scores[chunk_id], order[chunk_id]))
    return [replace(first[chunk_id], score=scores[chunk_id]) for chunk_id in best[:limit]]
