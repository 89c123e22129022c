"""OpenClaw's merge (SPEC.md section 2), and single legs for ablations."""
from __future__ import annotations

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
from harness.stages.lexical import RANK_TO_SCORE
from harness.trace import FusedArrays, LegArrays, elementwise

Bm25ToScore = Literal["current", "legacy"]


@FUSIONS.register("weighted")
@stage
class WeightedFusion:
    """OpenClaw's merge: union by chunk id, missing side scores 0, score = vw*vector + tw*text.

    text is the keyword leg's own ranking score when it has one (OpenClaw 2026.8.1: the boosted score of
    its keyword fallback, Legs.lexical_ranking), else the FTS5 rank mapped by `bm25_to_score`."""

    vector_weight: float = Field(0.7, ge=0, le=1, allow_inf_nan=False)
    """vectorWeight, in [0, 1] as openclaw.json's schema says; both weights are scaled to sum 1 (0.7/0.3
    when both are 0), as OpenClaw does, and a run notes it when they did not"""
    text_weight: float = Field(0.3, ge=0, le=1, allow_inf_nan=False)
    """textWeight, in [0, 1]; scaled with vector_weight"""
    bm25_to_score: Bm25ToScore = "current"
    """FTS5 rank -> text score: "current" (bm25RankToScore, since 2026-03-07) or "legacy" (every hit 1.0)"""

    scales_weights = True  # the score uses leg_weights, not the weights as written

    def __post_init__(self) -> None:
        self.leg_weights = normalised_weights(self.vector_weight, self.text_weight)

    def __call__(self, legs: Legs) -> list[Hit]:
        return fused_hits(self, legs)

    def fuse_arrays(self, legs: LegArrays) -> FusedArrays:
        """vw * cosine + tw * text over every query's candidates (0 from a leg that did not find one)."""
        vw, tw = self.leg_weights
        text = keyword_text(legs, self.bm25_to_score)
        cosine = vector_cosine(legs)
        either = legs.derived(("either",), lambda: legs.vector_found | legs.lexical_found)
        return FusedArrays(vw * cosine + tw * text, either, legs.lexical_found, cosine, text)


def mapped_bm25(legs: LegArrays, bm25_to_score: str) -> np.ndarray:
    """The lexical leg's raw BM25 back to FTS5's rank sign (rank = -raw) and mapped as OpenClaw maps it
    (harness.stages.lexical RANK_TO_SCORE), 0 where the leg did not find the candidate."""
    return legs.derived(("bm25", bm25_to_score), lambda: np.where(
        legs.lexical_found, elementwise(RANK_TO_SCORE[bm25_to_score])(-legs.lexical), 0.0))


def keyword_text(legs: LegArrays, bm25_to_score: str) -> np.ndarray:
    """The weighted merge's text score: the lexical leg's own ranking score for a query whose leg has one
    (OpenClaw 2026.8's boosted keyword score), the mapped BM25 otherwise."""
    text = mapped_bm25(legs, bm25_to_score)
    if legs.ranked_rows is None:
        return text
    return legs.derived(("ranked", bm25_to_score), lambda: np.where(
        legs.ranked_rows[:, None], np.where(legs.lexical_found, legs.lexical_ranking, 0.0), text))


def vector_cosine(legs: LegArrays) -> np.ndarray:
    """The vector leg's cosine, 0 where it did not find the candidate."""
    return legs.derived(("cosine",), lambda: np.where(legs.vector_found, legs.vector, 0.0))


@FUSIONS.register("lexical-only")
@stage
class LexicalOnly:
    """The lexical leg alone (BM25 mapped as OpenClaw maps it), for ablations."""

    bm25_to_score: Bm25ToScore = "current"
    """FTS5 rank -> score: "current" or "legacy" (see weighted)"""

    leg_weights = (0.0, 1.0)  # post-processing sees all weight on the one leg

    def __call__(self, legs: Legs) -> list[Hit]:
        return fused_hits(self, legs)

    def fuse_arrays(self, legs: LegArrays) -> FusedArrays:
        text = mapped_bm25(legs, self.bm25_to_score)
        found = legs.lexical_found
        return FusedArrays(text, found, found, np.zeros(legs.shape), text)


@FUSIONS.register("keyword-only")
@stage
class KeywordOnly:
    """OpenClaw's FTS-only mode (no embedding provider, 2026.8.1 finalizeKeywordOnlyResults): a hit scores
    the keyword leg's ranking score (the boosted score of the keyword fallback; the mapped BM25 without
    one), text_score is the mapped BM25, and equal scores are ordered as compareKeywordSearchHits orders
    them (text score, path, line, OpenClaw's chunk id: the leg's tie order; by text score without one).
    The vector leg, if any, is ignored."""

    bm25_to_score: Bm25ToScore = "current"
    """FTS5 rank -> text score: "current" or "legacy" (see weighted)"""

    leg_weights = (0.0, 1.0)

    def __call__(self, legs: Legs) -> list[Hit]:
        return fused_hits(self, legs)

    def fuse_arrays(self, legs: LegArrays) -> FusedArrays:
        text = mapped_bm25(legs, self.bm25_to_score)
        found = legs.lexical_found
        score = text if legs.ranked_rows is None else \
            np.where(legs.ranked_rows[:, None] & found, legs.lexical_ranking, text)
        tiebreak = text if legs.tie_rows is None else \
            np.where(legs.tie_rows[:, None], -legs.lexical_tie_order, text)  # larger first
        return FusedArrays(score, found, found, np.zeros(legs.shape), text, tiebreak)


@FUSIONS.register("vector-only")
@stage
class VectorOnly:
    """The vector leg alone (cosine similarity), for ablations."""

    leg_weights = (1.0, 0.0)

    def __call__(self, legs: Legs) -> list[Hit]:
        return fused_hits(self, legs)

    def fuse_arrays(self, legs: LegArrays) -> FusedArrays:
        cosine = vector_cosine(legs)
        found = legs.vector_found
        return FusedArrays(cosine, found, np.zeros(legs.shape, dtype=bool), cosine, np.zeros(legs.shape))
