"""The minScore selection's needs of a post-processing order, for the fast sweep scorer (fast_scoring).

The array forms of the post-processing stages themselves (temporal decay, importance, MMR) live with the
stages, in harness.stages.postprocess.arrays; the scorer receives them built (`post=`) and applies each
through its own methods, so evaluation imports nothing from the stages.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

Need = tuple[np.ndarray, np.ndarray]  # (mask over candidates, how many of them must have been picked) per row


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


