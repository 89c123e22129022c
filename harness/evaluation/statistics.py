"""Statistics over per-query values: intervals, paired tests, a test that survives selection, Holm, near ties.

Every function takes per-query values as arrays (one entry per query, the same query order in every array
of one call) and is deterministic: resampling is seeded.  The unit of resampling is what a different data
set would draw anew: a query, unless the queries come in clusters (`clusters=`: one label per query, e.g.
the LoCoMo conversation, the CMRC article, the king78 record a paraphrase shares with its T-query).  Then
whole clusters are resampled and sign-flipped, since the questions of one conversation are not
independent draws, and every interval and p-value says how many clusters it rests on.

How an interval is made (Interval.method says which, and Interval.units / unit on how many of what):

    0/1 values, independent queries           exact Clopper-Pearson interval (any n)
    values in [0, 1], fewer than SMALL_SAMPLE  Clopper-Pearson bound at the fractional count (conservative
      queries or all equal                     for bounded values; never a point)
    differences in [-1, 1] of such values,     the bounds of the positive and negative parts at level
      small or all equal                       1 - alpha/2 each (Bonferroni), combined
    otherwise, independent queries             BCa bootstrap over the queries
    clusters (fewer clusters than queries)     studentized cluster bootstrap (bootstrap-t with the cluster-
                                               robust standard error, its quantiles never inside Student's
                                               t on G - 1 degrees of freedom): the plain cluster bootstrap
                                               covers ~89% at 10 clusters, this ~95% (tests/
                                               test_coverage.py); few clusters of about one query each,
                                               or clusters whose means are all equal: the bounded interval
                                               over the clusters; fewer than MIN_CLUSTERS: "n too small"

Which rule applies depends on the quantity's support, what its values can be, not on where its sample
happens to lie: a mean of per-query rates (recall, pass) is in [0, 1], a difference of two rates in
[-1, 1] (bootstrap_difference says so from its inputs), a quantity given `support=None` is unbounded
(Student t / bootstrap, never a Clopper-Pearson bound).  A difference whose sample is all >= 0 is still
a difference: reading [0, 1] off such a sample gave a one-sided bound that excluded zero (issue 37).

    >>> bootstrap_mean(rr)                          # Interval(estimate, low, high, level, method, units, unit)
    >>> bootstrap_mean(recall_any, clusters=conv, unit="conversation")
    >>> bootstrap_difference(rr_best, rr_default)   # paired: both resampled with the same queries
    >>> sign_flip_test(rr_best, rr_default, clusters=conv)  # two-sided; exact when 2^units is small
    >>> max_statistic_test(grid, configured=17)     # best of the grid vs the configuration, selection-aware
    >>> holm({"a": 0.01, "b": 0.04})                # family-wise corrected p-values

Every p-value has a floor, the smallest value its test can give: 2/2^m for an exact sign-flip test over m
informative units (0.002 with 10 conversations), 1/(B+1) for B random sign patterns; p_text prints a
p-value at the floor of a random test as "< 1/(B+1)" and every p with its floor.

Comparisons of systems (a paired difference with its interval and test, a family of them with Holm) are
in harness.evaluation.comparison; cross-validation of a selection procedure is in
harness.evaluation.cross_validation.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence, TypeVar

import numpy as np

# The statistics live in three modules by concern (issue 39: no module over 600 lines); this module is
# their public name: the names other modules read here are re-exported.
from harness.evaluation.formatting import plural  # noqa: F401
from harness.evaluation.intervals import (  # noqa: F401
    bootstrap_difference, bootstrap_mean, bootstrap_means, bootstrap_pass_rate, difference_support)
from harness.evaluation.resampling import (  # noqa: F401
    BOOTSTRAP_RESAMPLES, FLIPS, LEVEL, MIN_CLUSTERS, SEED, SMALL_CLUSTER, Interval, PairedTest, cluster_labels)
from harness.evaluation.sign_flip import (  # noqa: F401
    SelectionTest, best_index, max_statistic_test, sign_flip_test, two_sample_test)
from harness.evaluation.ties import NEAR_TIE_FRACTION

# --- multiple comparisons ----------------------------------------------------------------------------

P = TypeVar("P", Mapping[str, float], Sequence[float])


def holm(p_values: P) -> P:
    """Holm's step-down correction (family-wise error): the i-th smallest of m p-values becomes
    max over j <= i of min(1, (m - j + 1) p_(j)).  A mapping gives a dict with the same keys, a
    sequence a list in the same order."""
    keys = list(p_values) if isinstance(p_values, Mapping) else None
    p = np.asarray([p_values[k] for k in keys] if keys is not None else list(p_values), dtype=float)
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("holm: p-values must lie in [0, 1]")
    order = np.argsort(p, kind="stable")
    m = len(p)
    stepped = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    adjusted = np.empty(m)
    adjusted[order] = stepped
    if keys is not None:
        return {k: float(v) for k, v in zip(keys, adjusted)}
    return [float(v) for v in adjusted]


# --- near ties relative to the scale of the scores ----------------------------------------------------

# NEAR_TIE_FRACTION (harness.evaluation.ties, 0.0025):
# A margin below this share of the query's fused-score spread is a near tie.  Chosen so that a typical
# weighted (0-1) list, whose candidates spread over ~0.4, keeps the old absolute threshold of 0.001, while
# an RRF list (spread ~0.02) gets ~0.00005 instead of a threshold larger than most of its gaps.


def score_spread(scores: np.ndarray | Sequence[Sequence[float]], found: np.ndarray | None = None) -> np.ndarray:
    """Per query, max - min of the fused scores over its candidates (0 with fewer than two).  `scores` is a
    queries x candidates matrix (with `found` masking padding) or one sequence of scores per query."""
    if found is None and not isinstance(scores, np.ndarray):
        return np.array([float(np.ptp(s)) if len(s) > 1 else 0.0 for s in scores])
    matrix = np.asarray(scores, dtype=float)
    mask = np.ones(matrix.shape, dtype=bool) if found is None else np.asarray(found, dtype=bool)
    high = np.where(mask, matrix, -np.inf).max(axis=-1)
    low = np.where(mask, matrix, np.inf).min(axis=-1)
    return np.where(mask.sum(axis=-1) > 1, high - low, 0.0)


def near_ties(margins: Sequence[float | None] | np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """True where |margin| < threshold; a missing margin (None or NaN) is not a near tie."""
    m = np.array([math.nan if v is None else v for v in margins], dtype=float)
    with np.errstate(invalid="ignore"):
        return np.abs(m) < np.asarray(thresholds, dtype=float)
