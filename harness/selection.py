"""OpenClaw's minScore selection on query x candidate arrays: the one definition the `min_score` stage
(harness.stages.postprocess MinScore, a query at a time) and the sweep's fast scorer
(harness.evaluation.fast_scoring, every query and setting at once) share.

    clears    score >= min_score
    none      the candidates that clear it
    relaxed   those; when none does, the keyword hits scoring >= the floor (min(min_score, text weight),
              or relaxed_floor)
    fill      as relaxed; when some clear, the keyword-only hits (vector score 0) below min_score after them
in the order given (an order MMR may have chosen), cut to max_results by the caller.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np

KeywordFallback = Literal["relaxed", "fill", "none"]
Need = tuple[np.ndarray, np.ndarray]  # (mask over candidates, how many of them must have been picked) per row


@dataclass(frozen=True)
class Threshold:
    """OpenClaw's min_score post-processing stage (harness.stages.postprocess `min_score`)."""

    min_score: float
    keyword_fallback: KeywordFallback = "relaxed"
    relaxed_floor: float | None = None  # None: min(min_score, text weight)


def positions(score: np.ndarray, present: np.ndarray, keyword: np.ndarray, threshold: Threshold | None,
              text_weight: np.ndarray, no_vector: np.ndarray | None = None) -> np.ndarray:
    """The 1-based place in the returned list (before the cut to max_results) of each ranked candidate
    the min_score stage keeps, 0 for the others (harness.stages.postprocess MinScore): in the given
    order the passing ones; when none passes, the keyword fallback's; with `fill`, the keyword-only hits
    below min_score after the passing ones (the stage appends them; in score order they come last anyway)."""
    def places(mask: np.ndarray, offset: Any = 0) -> np.ndarray:
        return np.where(mask, np.cumsum(mask, axis=-1, dtype=np.int32) + offset, 0)

    if threshold is None:
        return places(present)
    clears = present & (score >= threshold.min_score)
    if threshold.keyword_fallback == "none":
        return places(clears)
    floor = np.minimum(threshold.min_score, text_weight) if threshold.relaxed_floor is None \
        else threshold.relaxed_floor
    fallback = places(keyword & (score >= floor))
    some_clear = clears.any(axis=-1, keepdims=True)
    passing = places(clears)
    if threshold.keyword_fallback == "fill":
        assert no_vector is not None
        spare = keyword & no_vector & ~clears
        passing = np.where(clears, passing, places(spare, clears.sum(axis=-1, keepdims=True, dtype=np.int32)))
    return np.where(some_clear, passing, fallback)


def selection_needs(score: np.ndarray, present: np.ndarray, keyword: np.ndarray, no_vector: np.ndarray | None,
                    thresholds: Sequence[Any], text_weight: np.ndarray, max_results: int) -> list[Need]:
    """What the minScore selection (harness.stages.postprocess MinScore, as fast_scoring.positions reads it)
    needs of an order, per threshold: the first max_results of the candidates it keeps, which, since the
    sets kept do not depend on the order, are known before the order is: the passing ones (or the keyword
    fallback's when none passes), and for `fill` the keyword-only ones after them."""
    needs: list[Need] = []
    for threshold in thresholds:
        if threshold is None:
            needs.append((present, np.minimum(present.sum(axis=1), max_results)))
            continue
        clears = present & (score >= threshold.min_score)
        n_clear = clears.sum(axis=1)
        first = np.minimum(n_clear, max_results)
        if threshold.keyword_fallback == "none":
            needs.append((clears, first))
            continue
        floor = np.minimum(threshold.min_score, text_weight) if threshold.relaxed_floor is None \
            else np.full(score.shape[0], threshold.relaxed_floor)
        fallback = present & keyword & (score >= floor[:, None])
        some = n_clear > 0
        needs.append((np.where(some[:, None], clears, fallback),
                      np.where(some, first, np.minimum(fallback.sum(axis=1), max_results))))
        if threshold.keyword_fallback == "fill":
            spare = present & keyword & no_vector & ~clears
            needs.append((spare, np.where(some, np.minimum(spare.sum(axis=1), max_results - first), 0)))
    return needs


