"""Generic fusions of per-query normalised leg scores: weighted sum (ranx `wsum`), CombSUM, CombMNZ."""
from __future__ import annotations

import math
from typing import Callable, Literal

from pydantic import Field

from harness.registry import stage
from harness.stages.fusion.base import (
    FUSIONS,
    Hit,
    Legs,
    merged_hits,
    normalised_weights,
    ranked_leg,
)

MIN_MAX_FLOOR = 1e-9  # ranx's denominator floor, so a spread of 1e-12 is not blown up to [0, 1]


def min_max(scores: dict[str, float]) -> dict[str, float]:
    """(s - min) / (max - min) per query and leg, as ranx does (its denominator floor 1e-9 included).
    One deliberate difference: when every score in the leg is equal (always so for a single hit),
    ranx maps them all to 0, i.e. as if the leg had found nothing; here they all map to 1.0, because
    each of them is that leg's best hit.  A lone BM25 match (the typical exact-keyword case) would
    otherwise add nothing."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi == lo:
        return dict.fromkeys(scores, 1.0)
    span = max(hi - lo, MIN_MAX_FLOOR)
    return {cid: (s - lo) / span for cid, s in scores.items()}


def z_score(scores: dict[str, float]) -> dict[str, float]:
    """(s - mean) / population stdev per query and leg, as ranx's zmuv (stdev floor 1e-9); a chunk
    the leg did not return counts 0 (the leg's mean).  Below-mean hits are negative, so raising a
    leg's weight can push its own weak hits down: z-score fusion does not have the monotonicity
    the other methods have (tests/test_fusion.py shows a case)."""
    if not scores:
        return {}
    n = len(scores)
    mean = sum(scores.values()) / n
    stdev = math.sqrt(sum((s - mean) ** 2 for s in scores.values()) / n)
    denominator = max(stdev, MIN_MAX_FLOOR)
    return {cid: (s - mean) / denominator for cid, s in scores.items()}


NORMALISATIONS: dict[str, Callable[[dict[str, float]], dict[str, float]]] = {
    "min-max": min_max,
    "zscore": z_score,
}
Normalisation = Literal["min-max", "zscore"]


@FUSIONS.register("wsum")
@stage
class WeightedSumFusion:
    """Weighted sum of per-query normalised leg scores (ranx `wsum`); a chunk missing from a leg gets 0
    from it.  Weights are clamped and normalised to sum 1 as OpenClaw's are, so a sweep over
    vectorWeight means the same thing for `weighted` and `wsum`."""

    vector_weight: float = Field(0.7, ge=0, allow_inf_nan=False)
    """weight of the vector leg (clamped to [0, 1], then both scaled to sum 1)"""
    text_weight: float = Field(0.3, ge=0, allow_inf_nan=False)
    """weight of the lexical leg"""
    norm: Normalisation = "min-max"
    """per-query, per-leg normalisation: "min-max" or "zscore" (ranx's zmuv)"""

    scales_weights = True  # the score uses leg_weights, not the weights as written

    def __post_init__(self) -> None:
        self.leg_weights = normalised_weights(self.vector_weight, self.text_weight)

    def __call__(self, legs: Legs) -> list[Hit]:
        normalise = NORMALISATIONS[self.norm]
        vw, tw = self.leg_weights
        vector = normalise(dict(ranked_leg(legs.vector, "vector")))
        text = normalise(dict(ranked_leg(legs.lexical, "lexical")))
        return merged_hits(vector, text, lambda _cid, v, t: vw * v + tw * t)


@FUSIONS.register("combsum")
@stage
class CombSum:
    """CombSUM (Fox & Shaw 1994): the sum of the normalised leg scores, legs unweighted."""

    norm: Normalisation = "min-max"
    """per-query, per-leg normalisation: "min-max" or "zscore\""""

    leg_weights = (0.5, 0.5)
    mnz = False

    def __call__(self, legs: Legs) -> list[Hit]:
        normalise = NORMALISATIONS[self.norm]
        vector = normalise(dict(ranked_leg(legs.vector, "vector")))
        text = normalise(dict(ranked_leg(legs.lexical, "lexical")))

        def score(cid: str, v: float, t: float) -> float:
            return (v + t) * ((cid in vector) + (cid in text)) if self.mnz else v + t

        return merged_hits(vector, text, score)


@FUSIONS.register("combmnz")
@stage
class CombMNZ(CombSum):
    """CombMNZ (Fox & Shaw 1994): CombSUM times the number of legs that returned the chunk."""

    mnz = True
