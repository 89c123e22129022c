"""How QMD and memory-lancedb-pro combine a reranker's score with their fused ranking (SPEC.md sections 3
and 4; QMD 2.8.3 hybridQuery, memory-lancedb-pro src/retriever.ts rerankResults), as pure functions."""
from __future__ import annotations

import math
import re
from typing import Sequence

# QMD: the weight of the fused position 1/rank against the reranker, by fused rank (1-based)
QMD_POSITION_WEIGHTS = ((3, 0.75), (10, 0.60))
QMD_POSITION_WEIGHT_BEYOND = 0.40
_JS_SPACE_RUN = re.compile("[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+")

# memory-lancedb-pro
LANCEDB_RERANK_WEIGHT = 0.6  # cross-encoder share; the fused score keeps 0.4
LANCEDB_UNRETURNED_FACTOR = 0.8  # a candidate the reranker did not score
# (bm25 at least, floor factor for a reranked candidate, floor factor for an unreturned one)
LANCEDB_FLOORS = ((0.75, 0.95, 1.0), (0.6, 0.9, 0.95))
LANCEDB_FLOOR_DEFAULT = (0.5, 0.8)


def qmd_position_weight(rank: int) -> float:
    """0.75 for fused ranks 1-3, 0.60 for 4-10, 0.40 beyond."""
    if rank < 1:
        raise ValueError(f"ranks start at 1, got {rank}")
    for last, weight in QMD_POSITION_WEIGHTS:
        if rank <= last:
            return weight
    return QMD_POSITION_WEIGHT_BEYOND


def qmd_blend(rank: int, rerank_score: float) -> float:
    """QMD's position-aware blend: w x (1/rank) + (1 - w) x rerank, w = qmd_position_weight(rank)."""
    w = qmd_position_weight(rank)
    return w * (1.0 / rank) + (1.0 - w) * rerank_score


def _utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def qmd_best_chunk(query: str, chunks: Sequence[str]) -> int:
    """Which of a document's chunks QMD reranks: the one containing the most query terms (the query
    lowercased and split on whitespace, terms longer than 2 UTF-16 units, substring test on the lowercased
    chunk); the first such chunk on ties, the first chunk when none matches.  -1 for no chunks."""
    terms = [t for t in _JS_SPACE_RUN.split(query.lower()) if _utf16_length(t) > 2]
    best, best_score = -1, -1
    for i, chunk in enumerate(chunks):
        lowered = chunk.lower()
        score = sum(1 for t in terms if t in lowered)
        if score > best_score:
            best, best_score = i, score
    return best


def _clamp01(value: float, fallback: float) -> float:
    if not math.isfinite(value):
        return fallback if math.isfinite(fallback) else 0.0
    return min(1.0, max(0.0, value))


def clamp01_with_floor(value: float, floor: float) -> float:
    """memory-lancedb-pro's clamp01WithFloor: max(floor, value) with both clamped to [0, 1]."""
    safe_floor = _clamp01(floor, 0.0)
    return max(safe_floor, _clamp01(value, safe_floor))


def lancedb_rerank_floor(fused: float, bm25: float, *, returned: bool = True) -> float:
    """The preservation floor of a candidate with fused score `fused` and BM25 score `bm25` (0 without a
    BM25 hit): 0.95 / 0.9 / 0.5 x fused for bm25 >= 0.75 / >= 0.6 / below (1.0 / 0.95 / 0.8 when the
    reranker did not return it)."""
    for at_least, factor, unreturned in LANCEDB_FLOORS:
        if bm25 >= at_least:
            return fused * (factor if returned else unreturned)
    factor, unreturned = LANCEDB_FLOOR_DEFAULT
    return fused * (factor if returned else unreturned)


def lancedb_rerank_blend(fused: float, bm25: float, rerank_score: float | None) -> float:
    """memory-lancedb-pro's cross-encoder step: clamp01WithFloor(0.6 ce + 0.4 fused, floor), or for a
    candidate the reranker did not return (rerank_score None) clamp01WithFloor(0.8 fused, floor)."""
    if rerank_score is None:
        return clamp01_with_floor(fused * LANCEDB_UNRETURNED_FACTOR, lancedb_rerank_floor(fused, bm25, returned=False))
    blended = rerank_score * LANCEDB_RERANK_WEIGHT + fused * (1 - LANCEDB_RERANK_WEIGHT)
    return clamp01_with_floor(blended, lancedb_rerank_floor(fused, bm25))
