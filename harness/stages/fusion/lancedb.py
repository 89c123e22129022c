"""memory-lancedb-pro's fusion, two readings side by side (SPEC.md section 4): the seed's description
of its older code (`multiplicative`) and its code since 2026-03-12 (`lancedb-pro`)."""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from harness.registry import stage
from harness.stages.fusion.base import (
    FUSIONS,
    Hit,
    Legs,
    fused_hits,
    normalised_weights,
)
from harness.trace import FusedArrays, LegArrays, elementwise

LANCEDB_STRONG_BM25 = 0.75  # b at or above this keeps 0.92 b even when the vector score is weak
LANCEDB_STRONG_BM25_FACTOR = 0.92


def sigmoid_bm25(raw: float) -> float:
    """memory-lancedb-pro's store: LanceDB's raw BM25 -> 1/(1 + exp(-raw/5)) when raw > 0, else 0.5."""
    return 1.0 / (1.0 + math.exp(-raw / 5.0)) if raw > 0 else 0.5


def inverse_distance(cosine: float) -> float:
    """memory-lancedb-pro's store: 1/(1 + d) with d = 1 - cosine (LanceDB cosine distance), 1/3..1."""
    return 1.0 / (1.0 + (1.0 - cosine))


def clamp01(value: float, fallback: float | None = None) -> float:
    """memory-lancedb-pro's clamp01(value, fallback): clamped to [0, 1]; a non-finite value gives the
    fallback as it is (0 when it is not finite either, or not given)."""
    if not math.isfinite(value):
        return fallback if fallback is not None and math.isfinite(fallback) else 0.0
    return min(1.0, max(0.0, value))


@FUSIONS.register("multiplicative")
@stage
class MultiplicativeFusion:
    """memory-lancedb-pro as seed 004 describes it (its retriever.ts before 2026-03-12, issue #130):

        fused = v + 0.15 v   when the chunk is also a BM25 hit, else v;   BM25-only hit -> b

    v is the cosine similarity (the seed: "LanceDB ANN cosine similarity"); `vector_to_score =
    "inverse_distance"` uses the store's 1/(1+d) instead, which isolates the change of formula from
    the change of vector scale when comparing with `lancedb-pro`.  Not clamped: the seed's formula
    lets a boosted score pass 1.0.

    BM25 normalisation: b = sigmoid(raw/5) for raw > 0 else 0.5, the mapping memory-lancedb-pro's
    store applies to LanceDB's raw BM25 before the retriever sees it; the seed's "keeps its BM25
    score" is that store score.  LanceDB's BM25, like FTS5's bm25(), uses k1 = 1.2, b = 0.75, so the
    raw FTS5 score is a fair stand-in, and both lancedb fusions then differ only in their formula
    (lexical "lancedb-fts" scores as the plugin's own LanceDB table does).

    The seed notes that the config's vectorWeight / bm25Weight (0.7 / 0.3) are not used by this
    formula: they are accepted here and ignored, so a weight sweep shows a flat line, which is the
    finding.  Compare `lancedb-pro` (LanceDBProFusion), the code since 2026-03-12."""

    vector_weight: float = Field(0.7, ge=0, allow_inf_nan=False)
    """accepted and unused, as in the code the seed describes"""
    text_weight: float = Field(0.3, ge=0, allow_inf_nan=False)
    """accepted and unused"""
    boost: float = Field(0.15, ge=0, allow_inf_nan=False)
    """added share of v when the chunk is also a BM25 hit"""
    vector_to_score: Literal["cosine", "inverse_distance"] = "cosine"
    """"cosine" (the seed) or "inverse_distance" (the store's 1/(1+d))"""

    def __post_init__(self) -> None:
        self.leg_weights = normalised_weights(self.vector_weight, self.text_weight)

    def __call__(self, legs: Legs) -> list[Hit]:
        return fused_hits(self, legs)

    def fuse_arrays(self, legs: LegArrays) -> FusedArrays:
        vf, tf = legs.vector_found, legs.lexical_found
        v = store_vector_score(legs, self.vector_to_score)
        b = store_bm25_score(legs)
        score = np.where(vf, np.where(tf, v + self.boost * v, v), b)
        return FusedArrays(score, vf | tf, tf, v, b)


def store_vector_score(legs: LegArrays, vector_to_score: str) -> np.ndarray:
    """The vector leg as memory-lancedb-pro's store scores it: the cosine, or 1/(1+d); 0 where not found."""
    if vector_to_score == "inverse_distance":
        return legs.derived(("inverse-distance",), lambda: np.where(
            legs.vector_found, inverse_distance(legs.vector), 0.0))
    return legs.derived(("cosine",), lambda: np.where(legs.vector_found, legs.vector, 0.0))


def store_bm25_score(legs: LegArrays) -> np.ndarray:
    """The lexical leg's score as memory-lancedb-pro's store gives it: sigmoid_bm25 of the raw BM25, or, for a
    query whose leg scores its own hits (the store's substring fallback: lexical.lancedb_fts), that score;
    0 where not found."""
    def score() -> np.ndarray:
        mapped = np.where(legs.lexical_found, elementwise(sigmoid_bm25)(legs.lexical), 0.0)
        if legs.ranked_rows is None:
            return mapped
        return np.where(legs.ranked_rows[:, None] & legs.lexical_found, legs.lexical_ranking, mapped)

    return legs.derived(("store-bm25",), score)


@FUSIONS.register("lancedb-pro")
@stage
class LanceDBProFusion:
    """memory-lancedb-pro as its code does since 2026-03-12 (src/retriever.ts fuseResults; the
    0.15 boost removed, issue #130):

        v = 1/(1 + d), d = 1 - cosine               (store.vectorSearch; range 1/3..1)
        b = sigmoid(raw/5) if raw > 0 else 0.5       (store.bm25Search; 0 if not a BM25 hit; a leg that
                                                      scores its own hits, the store's substring fallback
                                                      in lexical "lancedb-fts", gives b itself)
        vector hit:    fused = clamp01(max(vw v + tw b, 0.92 b if b >= 0.75 else 0))
        BM25-only hit: fused = clamp01(b)
        then drop fused < min_score (config minScore 0.3)

    vw, tw are the config's vectorWeight / bm25Weight used as given (default 0.7 / 0.3), as the code
    does.  Compare `multiplicative` (MultiplicativeFusion), the seed's description of the older
    code.  The reranker, recency, length, hard-minimum, decay and diversity steps that follow are
    post-processing stages."""

    vector_weight: float = Field(0.7, ge=0, allow_inf_nan=False)
    """vectorWeight, used as given"""
    text_weight: float = Field(0.3, ge=0, allow_inf_nan=False)
    """bm25Weight, used as given"""
    min_score: float = Field(0.3, ge=0, le=1, allow_inf_nan=False)
    """fused scores below this are dropped (the config's minScore)"""

    def __post_init__(self) -> None:
        self.leg_weights = normalised_weights(self.vector_weight, self.text_weight)

    def __call__(self, legs: Legs) -> list[Hit]:
        return fused_hits(self, legs)

    def fuse_arrays(self, legs: LegArrays) -> FusedArrays:
        vf, tf = legs.vector_found, legs.lexical_found
        v = store_vector_score(legs, "inverse_distance")
        b = store_bm25_score(legs)
        strong = np.where(b >= LANCEDB_STRONG_BM25, LANCEDB_STRONG_BM25_FACTOR * b, 0.0)
        blended = np.maximum(self.vector_weight * v + self.text_weight * b, strong)
        score = elementwise(clamp01)(np.where(vf, blended, b))
        return FusedArrays(score, (vf | tf) & (score >= self.min_score), tf, v, b)
