"""Generic fusions of per-query normalised leg scores: weighted sum (ranx `wsum`), CombSUM, CombMNZ."""
from __future__ import annotations

import math
from typing import Callable, Literal

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
from harness.trace import FusedArrays, LegArrays

MIN_MAX_FLOOR = 1e-9  # ranx's denominator floor, so a spread of 1e-12 is not blown up to [0, 1]


def min_max_rows(raw: np.ndarray, found: np.ndarray, rank: np.ndarray | None = None) -> np.ndarray:
    """(s - min) / (max - min) per query row and leg over the leg's found candidates (0 elsewhere), as ranx
    does (its denominator floor 1e-9 included).  One deliberate difference: when every score in the leg is
    equal (always so for a single hit), ranx maps them all to 0, i.e. as if the leg had found nothing; here
    they all map to 1.0, because each of them is that leg's best hit.  A lone BM25 match (the typical
    exact-keyword case) would otherwise add nothing.  (`rank` is unused: the signature of z_score_rows.)"""
    low = np.where(found, raw, np.inf).min(axis=1, keepdims=True)
    high = np.where(found, raw, -np.inf).max(axis=1, keepdims=True)
    flat = high == low
    with np.errstate(invalid="ignore"):
        span = np.maximum(np.where(flat, 1.0, high - low), MIN_MAX_FLOOR)
        scaled = np.where(flat, 1.0, (raw - np.where(flat, 0.0, low)) / span)
    return np.where(found, scaled, 0.0)


def z_score_rows(raw: np.ndarray, found: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """(s - mean) / population stdev per query row and leg, as ranx's zmuv (stdev floor 1e-9); a chunk
    the leg did not return counts 0 (the leg's mean).  Below-mean hits are negative, so raising a
    leg's weight can push its own weak hits down: z-score fusion does not have the monotonicity
    the other methods have (tests/test_fusion.py shows a case).  The sums run over the leg best first
    (`rank`), one float at a time, so the mean and stdev do not depend on the width of the row."""
    out = np.zeros(raw.shape)
    for q in range(raw.shape[0]):
        columns = np.flatnonzero(found[q])
        if not columns.size:
            continue
        values = [float(raw[q, c]) for c in columns[np.argsort(rank[q, columns], kind="stable")]]
        n = len(values)
        mean = sum(values) / n
        stdev = math.sqrt(sum((s - mean) ** 2 for s in values) / n)
        out[q, columns] = (raw[q, columns] - mean) / max(stdev, MIN_MAX_FLOOR)
    return out


def _one_row(rows: Callable[..., np.ndarray]) -> Callable[[dict[str, float]], dict[str, float]]:
    """A row normalisation applied to one leg given as {id: score} (in the dict's order)."""
    def normalise(scores: dict[str, float]) -> dict[str, float]:
        if not scores:
            return {}
        raw = np.array([list(scores.values())], dtype=float)
        found = np.ones(raw.shape, dtype=bool)
        scaled = rows(raw, found, np.arange(1, raw.shape[1] + 1)[None, :])
        return {cid: float(v) for cid, v in zip(scores, scaled[0])}

    normalise.__doc__ = rows.__doc__
    return normalise


min_max = _one_row(min_max_rows)
z_score = _one_row(z_score_rows)
ROW_NORMALISATIONS: dict[str, Callable[..., np.ndarray]] = {"min-max": min_max_rows, "zscore": z_score_rows}
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
        return fused_hits(self, legs)

    def fuse_arrays(self, legs: LegArrays) -> FusedArrays:
        vw, tw = self.leg_weights
        vector, text = normalised_legs(legs, self.norm)
        either = legs.derived(("either",), lambda: legs.vector_found | legs.lexical_found)
        return FusedArrays(vw * vector + tw * text, either, legs.lexical_found, vector, text)


def normalised_legs(legs: LegArrays, norm: str) -> tuple[np.ndarray, np.ndarray]:
    """Both legs normalised per query (0 where a leg did not find the candidate)."""
    rows = ROW_NORMALISATIONS[norm]
    return (legs.derived((norm, "vector"), lambda: rows(legs.vector, legs.vector_found, legs.vector_rank)),
            legs.derived((norm, "lexical"), lambda: rows(legs.lexical, legs.lexical_found, legs.lexical_rank)))


@FUSIONS.register("combsum")
@stage
class CombSum:
    """CombSUM (Fox & Shaw 1994): the sum of the normalised leg scores, legs unweighted."""

    norm: Normalisation = "min-max"
    """per-query, per-leg normalisation: "min-max" or "zscore\""""

    leg_weights = (0.5, 0.5)
    mnz = False

    def __call__(self, legs: Legs) -> list[Hit]:
        return fused_hits(self, legs)

    def fuse_arrays(self, legs: LegArrays) -> FusedArrays:
        vector, text = normalised_legs(legs, self.norm)
        vf, tf = legs.vector_found, legs.lexical_found
        total = vector + text
        either = legs.derived(("either",), lambda: vf | tf)
        return FusedArrays(total * (vf.astype(float) + tf) if self.mnz else total, either, tf, vector, text)


@FUSIONS.register("combmnz")
@stage
class CombMNZ(CombSum):
    """CombMNZ (Fox & Shaw 1994): CombSUM times the number of legs that returned the chunk."""

    mnz = True
