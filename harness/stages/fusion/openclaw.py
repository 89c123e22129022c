"""OpenClaw's merge (SPEC.md section 2), and single legs for ablations."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from harness.registry import stage
from harness.stages.fusion.base import FUSIONS, Hit, Legs, normalised_weights, rank_hits
from harness.stages.lexical import RANK_TO_SCORE

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
        self._text_score = RANK_TO_SCORE[self.bm25_to_score]

    def __call__(self, legs: Legs) -> list[Hit]:
        vw, tw = self.leg_weights
        merged: dict[str, Hit] = {}
        for cid, cosine in legs.vector:
            merged[cid] = Hit(cid, 0.0, vector_score=cosine)
        ranking = legs.lexical_ranking
        for cid, bm25 in legs.lexical:
            hit = merged.setdefault(cid, Hit(cid, 0.0))
            # back to FTS5's rank sign convention
            hit.text_score = ranking[cid] if ranking is not None else self._text_score(-bm25)
            hit.keyword_hit = True
        for hit in merged.values():
            hit.score = vw * hit.vector_score + tw * hit.text_score
        return rank_hits(list(merged.values()))


@FUSIONS.register("lexical-only")
@stage
class LexicalOnly:
    """The lexical leg alone (BM25 mapped as OpenClaw maps it), for ablations."""

    bm25_to_score: Bm25ToScore = "current"
    """FTS5 rank -> score: "current" or "legacy" (see weighted)"""

    leg_weights = (0.0, 1.0)  # post-processing sees all weight on the one leg

    def __call__(self, legs: Legs) -> list[Hit]:
        to_score = RANK_TO_SCORE[self.bm25_to_score]
        return rank_hits([Hit(cid, to_score(-raw), text_score=to_score(-raw), keyword_hit=True)
                          for cid, raw in legs.lexical])


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
        to_score = RANK_TO_SCORE[self.bm25_to_score]
        ranking, ties = legs.lexical_ranking, legs.lexical_tie_order
        hits = []
        for cid, raw in legs.lexical:
            text = to_score(-raw)
            score = ranking[cid] if ranking is not None else text
            tiebreak = -float(ties[cid]) if ties is not None else text  # larger first
            hits.append(Hit(cid, score, text_score=text, keyword_hit=True, tiebreak=tiebreak))
        return rank_hits(hits)


@FUSIONS.register("vector-only")
@stage
class VectorOnly:
    """The vector leg alone (cosine similarity), for ablations."""

    leg_weights = (1.0, 0.0)

    def __call__(self, legs: Legs) -> list[Hit]:
        return rank_hits([Hit(cid, cos, vector_score=cos) for cid, cos in legs.vector])
