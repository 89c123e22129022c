"""Randomization tests over per-query values: the paired sign-flip test, the unpaired two-sample
permutation test, and the selection-aware max-statistic test of the best setting of a grid against the
configured one.  harness.evaluation.statistics re-exports them (its module docstring says when each is used)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

from harness.evaluation.formatting import p_text, plural
from harness.evaluation.resampling import (
    EXACT_MAX_CELLS,
    EXACT_MAX_QUERIES,
    FLIPS,
    RELATIVE_TIE,
    SEED,
    SIGN_BLOCK,
    Clusters,
    PairedTest,
    cluster_codes,
    one_blas_thread,
    per_query,
)

# --- paired sign-flip (randomization) test ----------------------------------------------------------

def cluster_totals(values: np.ndarray, clusters: Clusters) -> tuple[np.ndarray, int, bool]:
    """Per-query values (or a settings x queries matrix) summed within clusters: (totals, units,
    clustered).  A sign flip of a cluster flips all of its queries at once."""
    n = values.shape[-1]
    codes = cluster_codes(clusters, n)
    if codes is None:
        return values, n, False
    g = int(codes.max()) + 1
    totals = np.zeros(values.shape[:-1] + (g,))
    np.add.at(totals, (..., codes) if values.ndim > 1 else codes, values)
    return totals, g, True


def sign_flip_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray | None = None, *,
                   clusters: Clusters = None, unit: str = "query", flips: int = FLIPS, seed: int = SEED,
                   exact_max: int = EXACT_MAX_QUERIES,
                   alternative: Literal["two-sided", "less", "greater"] = "two-sided") -> PairedTest:
    """Two-sided paired randomization test of mean(a - b) = 0 (Fisher): under the null each unit's
    difference is as likely to have the opposite sign, so p = P(|sum of sign-flipped d| >= |sum d|).  A
    unit is a query, or with `clusters` a cluster whose queries' differences are summed and flipped
    together.  Units with d = 0 are left out of the enumeration (flipping them changes nothing).  With at
    most `exact_max` informative units every one of the 2^m sign patterns is enumerated (exact p, floor
    2/2^m); otherwise `flips` random patterns are drawn (seeded) and p = (hits + 1) / (flips + 1), which
    keeps the test valid at any number of flips (floor 1/(flips + 1)).  alternative="less" / "greater":
    the one-sided test of mean(a - b) < 0 / > 0, p = P(sum of sign-flipped d <= / >= sum d) (exact floor
    1/2^m): the gate's question, "did it get worse?", on runs of the same queries."""
    d = per_query(a, "a") - (per_query(b, "b") if b is not None else 0.0)
    n = len(d)
    statistic = float(d.mean()) if n else math.nan
    totals, units, clustered = cluster_totals(d, clusters)
    if not clustered:
        unit = "query"
    informative = totals[np.abs(totals) > RELATIVE_TIE * max(1.0, float(np.abs(d).sum()))] if clustered \
        else totals[totals != 0]
    m = len(informative)
    base = dict(queries=n, informative=m, units=units, unit=unit)
    if m == 0:
        return PairedTest(statistic if n else math.nan, 1.0, f"no {unit} differs", floor=1.0, **base)
    observed = abs(float(informative.sum()))
    tolerance = RELATIVE_TIE * float(np.abs(informative).sum())
    over = f" of {plural(unit, m)}" + (f" ({n:,} queries)" if clustered else "")
    if alternative != "two-sided":
        # P(S >= t) with t = sum d ("greater") or -sum d ("less": P(S <= sum d) by the null's symmetry)
        target = float(informative.sum()) * (1.0 if alternative == "greater" else -1.0)
        side = f"one-sided ({alternative}) "
        if m <= exact_max:
            half = m // 2
            left, right = signed_sums(informative[:half]), np.sort(signed_sums(informative[half:]))
            hits = int((len(right) - np.searchsorted(right, target - tolerance - left, side="left")).sum())
            return PairedTest(statistic, hits / (1 << m), f"exact {side}sign-flip test (2^{m} = {1 << m:,} sign "
                              f"patterns{over})", floor=1.0 / (1 << m), **base)
        rng = np.random.default_rng(seed)
        hits = 0
        with one_blas_thread():
            for size in _blocks(flips):
                hits += int(np.count_nonzero(_random_signs(rng, size, m) @ informative >= target - tolerance))
        return PairedTest(statistic, (hits + 1) / (flips + 1), f"Monte Carlo {side}sign-flip test ({flips:,} random "
                          f"sign patterns{over}, seed {seed})", floor=1.0 / (flips + 1), monte_carlo=True, **base)
    if m <= exact_max:
        p = _exact_two_sided(informative, observed - tolerance)
        return PairedTest(statistic, p, f"exact sign-flip test (2^{m} = {1 << m:,} sign patterns{over})",
                          floor=2.0 / (1 << m), **base)
    rng = np.random.default_rng(seed)
    hits = 0
    with one_blas_thread():
        for size in _blocks(flips):
            sums = _random_signs(rng, size, m) @ informative
            hits += int(np.count_nonzero(np.abs(sums) >= observed - tolerance))
    return PairedTest(statistic, (hits + 1) / (flips + 1),
                      f"Monte Carlo sign-flip test ({flips:,} random sign patterns{over}, seed {seed})",
                      floor=1.0 / (flips + 1), monte_carlo=True, **base)


def two_sample_test(now: Sequence[float] | np.ndarray, baseline: Sequence[float] | np.ndarray, *,
                    clusters_now: Clusters = None, clusters_baseline: Clusters = None, unit: str = "query",
                    alternative: Literal["less", "greater"] = "less", permutations: int = FLIPS,
                    seed: int = SEED) -> PairedTest:
    """One-sided two-sample permutation test of mean(now) against mean(baseline), unpaired: the units of
    both samples (queries, or with clusters whole clusters, each with its total and size) are pooled and
    relabelled at random, and p = (hits + 1) / (permutations + 1), hits counting relabellings whose
    difference in means is as far on the `alternative` side ("less": now worse when higher is better)
    as the observed one.  Valid at any sample size under the null that both samples come from the same
    distribution (floor 1/(permutations + 1)); on the same queries it ignores the pairing, so it is
    conservative there (the paired sign-flip test is the stronger one)."""
    a, b = per_query(now, "now"), per_query(baseline, "baseline")
    if len(a) == 0 or len(b) == 0:
        return PairedTest(math.nan, math.nan, "no queries in one of the samples", len(a) + len(b), 0, unit=unit,
                          first_units=len(a))
    totals_a, sizes_a, clustered_a = _unit_totals(a, clusters_now)
    totals_b, sizes_b, clustered_b = _unit_totals(b, clusters_baseline)
    unit = unit if (clustered_a or clustered_b) else "query"
    totals, sizes = np.concatenate([totals_a, totals_b]), np.concatenate([sizes_a, sizes_b])
    k, units = len(totals_a), len(totals)
    observed = float(a.mean() - b.mean())
    base = dict(queries=len(a) + len(b), informative=units, units=units, unit=unit, floor=1.0 / (permutations + 1),
                monte_carlo=True, first_units=k)
    if np.all(totals / sizes == totals[0] / sizes[0]):
        return PairedTest(observed, 1.0, f"no {unit} differs from another", **{**base, "floor": 1.0, "monte_carlo": False})
    rng = np.random.default_rng(seed)
    hits = 0
    tolerance = RELATIVE_TIE * max(1.0, abs(observed))
    for size in _blocks(permutations):
        order = np.argsort(rng.random((size, units)), axis=1)
        first = np.zeros((size, units))
        np.put_along_axis(first, order[:, :k], 1.0, axis=1)
        with one_blas_thread():
            diff = (first @ totals) / (first @ sizes) - ((1 - first) @ totals) / ((1 - first) @ sizes)
        hits += int(np.count_nonzero(diff <= observed + tolerance if alternative == "less"
                                     else diff >= observed - tolerance))
    return PairedTest(observed, (hits + 1) / (permutations + 1),
                      f"one-sided two-sample permutation test ({permutations:,} relabellings of {plural(unit, units)}, "
                      f"{k} now and {units - k} baseline; seed {seed})", **base)


def _unit_totals(values: np.ndarray, clusters: Clusters) -> tuple[np.ndarray, np.ndarray, bool]:
    """Per unit (a query, or a cluster): the sum of its values and its size."""
    codes = cluster_codes(clusters, len(values))
    if codes is None:
        return values.copy(), np.ones(len(values)), False
    g = int(codes.max()) + 1
    return np.bincount(codes, weights=values, minlength=g), np.bincount(codes, minlength=g).astype(float), True


def _exact_two_sided(values: np.ndarray, threshold: float) -> float:
    """Share of the 2^n sign patterns s with |sum(s_i v_i)| >= threshold, counted by meeting in the
    middle: the signed sums of each half (2^(n/2) each), one half sorted, pairs counted by bisection."""
    if threshold <= 0:
        return 1.0
    half = len(values) // 2
    left, right = signed_sums(values[:half]), np.sort(signed_sums(values[half:]))
    at_least = len(right) - np.searchsorted(right, threshold - left, side="left")  # a + b >= threshold
    at_most = np.searchsorted(right, -threshold - left, side="right")  # a + b <= -threshold
    return float(at_least.sum() + at_most.sum()) / (len(left) * len(right))


def signed_sums(values: np.ndarray) -> np.ndarray:
    """sum(s_i * v_i) for all 2^n sign vectors s (built by doubling: 2^(n+1) additions in all)."""
    sums = np.zeros(1)
    for v in values:
        sums = np.concatenate((sums + v, sums - v))
    return sums


def _blocks(total: int) -> list[int]:
    return [min(SIGN_BLOCK, total - start) for start in range(0, total, SIGN_BLOCK)]


def _random_signs(rng: np.random.Generator, rows: int, columns: int) -> np.ndarray:
    return rng.integers(0, 2, size=(rows, columns), dtype=np.int8).astype(float) * 2.0 - 1.0


def _all_signs(start: int, stop: int, columns: int) -> np.ndarray:
    """Sign patterns start..stop-1 of all 2^columns, one row each (bit j of the row number -> query j)."""
    bits = (np.arange(start, stop, dtype=np.int64)[:, None] >> np.arange(columns)) & 1
    return bits.astype(float) * 2.0 - 1.0


# --- selection-aware test: best of the grid vs the configuration -------------------------------------

@dataclass(frozen=True)
class SelectionTest:
    """The best setting of a grid against the configured one, with a p-value that accounts for having
    picked the best among all of them."""

    best: int  # index of the setting with the highest mean
    configured: int
    statistic: float  # mean per-query gain of the best over the configured setting
    p_value: float  # selection-aware (max over the grid)
    adjusted: np.ndarray  # per setting: single-step max-T adjusted p-value of its gain
    method: str
    queries: int
    informative: int  # queries on which some setting differs from the configured one
    settings: int
    distinct: int  # settings with distinct per-query differences (identical rows share one max)
    floor: float = 0.0  # the smallest p-value the test can give here
    monte_carlo: bool = False
    units: int | None = None  # resampling units flipped (queries, or clusters)
    unit: str = "query"

    def p_text(self) -> str:
        return p_text(self.p_value, self.floor, self.monte_carlo)


def max_statistic_test(scores: np.ndarray, configured: int, *, alternative: Literal["greater", "two-sided"] = "greater",
                       statistic: Literal["standardized", "mean"] = "standardized", flips: int = FLIPS,
                       seed: int = SEED, exact_max_cells: int = EXACT_MAX_CELLS, clusters: Clusters = None,
                       unit: str = "query") -> SelectionTest:
    """Westfall-Young max-T permutation test of the best setting against the configured one.

    scores: settings x queries, the per-query values the selection maximises (the mean over queries picks
    the best).  D[s, q] = scores[s, q] - scores[configured, q].  Under the null that no setting differs
    from the configuration, each query's whole difference vector D[:, q] is as likely negated, so the
    same random sign flips every setting's column of query q at once (this keeps the correlation
    between settings) and the null statistic is the maximum over the grid of each setting's flipped
    statistic (|.| inside the max for alternative="two-sided").  The best setting (highest mean gain,
    the selection's choice) has p = the share of flips whose max reaches its own statistic, so choosing
    among many settings is part of the null distribution and the false-positive rate holds after
    selection.  adjusted[s] compares each setting's statistic with the same max distribution (a setting
    with adjusted[s] < alpha is better than the configuration with family-wise error alpha).

    statistic: "standardized" (default) is sum_q e_q D[s, q] / sqrt(sum_q D[s, q]^2), each setting's
    sum in units of its own flip spread (the denominator does not change under flips); "mean" is the
    plain mean difference.  With "mean" the max is dominated by settings that differ from the
    configuration on many queries in both directions, so a setting that wins 7 queries and loses none
    can go unnoticed next to one that swings 20; standardizing gives every setting the same null
    spread, which is the usual remedy (Westfall & Young's max-T on pivotal statistics).

    With `clusters` (one label per query), the unit flipped is a cluster: each setting's differences are
    summed within clusters first, and a flip negates a whole cluster.

    Exact enumeration of all 2^n flips when 2^n x distinct settings <= exact_max_cells (floor 1/2^n),
    else `flips` seeded random flips with p = (hits + 1) / (flips + 1) (floor 1/(flips + 1))."""
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2 or not np.all(np.isfinite(scores)):
        raise ValueError(f"scores: expected a finite settings x queries matrix, got shape {scores.shape}")
    settings, n = scores.shape
    if not 0 <= configured < settings:
        raise ValueError(f"configured setting {configured} is not one of the {settings} settings")
    query_diffs = scores - scores[configured]
    gains = query_diffs.mean(axis=1) if n else np.zeros(settings)
    best = best_index(gains, prefer=configured)
    two_sided = alternative == "two-sided"
    diffs, units, clustered = cluster_totals(query_diffs, clusters) if n else (query_diffs, 0, False)
    unit = unit if clustered else "query"
    scale = max(1.0, float(np.abs(query_diffs).sum(axis=1).max())) if n else 1.0
    informative = np.flatnonzero(np.any(np.abs(diffs) > (RELATIVE_TIE * scale if clustered else 0), axis=0))
    distinct = _distinct_rows(diffs[:, informative])
    m, u = len(informative), len(distinct)
    base = dict(best=best, configured=configured, statistic=float(gains[best]), queries=n,
                informative=m, settings=settings, distinct=u, units=units, unit=unit)
    if m == 0:
        return SelectionTest(p_value=1.0, adjusted=np.ones(settings), method=f"no setting differs on any {unit}",
                             floor=1.0, **base)
    if statistic == "standardized":  # each setting's sum over its own flip spread (0 for the configuration)
        observed = diffs.sum(axis=1) / _norms(diffs)
        columns = (distinct / _norms(distinct)[:, None]).T  # m x u
        tolerance = RELATIVE_TIE * math.sqrt(m)
    else:
        observed = gains * n  # sums over all queries; uninformative queries add 0
        columns = distinct.T
        tolerance = RELATIVE_TIE * float(np.abs(distinct).sum(axis=1).max())
    observed_sums = np.abs(observed) if two_sided else observed

    def maxima(signs: np.ndarray) -> np.ndarray:
        sums = signs @ columns
        return (np.abs(sums) if two_sided else sums).max(axis=1)

    with one_blas_thread():  # small products: threads only contend on shared cores
        if m <= 40 and (1 << m) * u <= exact_max_cells:
            total = 1 << m
            null_max = np.concatenate([maxima(_all_signs(start, min(start + SIGN_BLOCK, total), m))
                                       for start in range(0, total, SIGN_BLOCK)])
            adjusted = _count_at_least(null_max, observed_sums - tolerance) / total
            method = (f"max-{statistic} sign-flip test over {settings:,} settings, "
                      f"exact (2^{m} = {total:,} patterns of {plural(unit, m)})")
            floor, monte_carlo = 1.0 / total, False
        else:
            rng = np.random.default_rng(seed)
            null_max = np.concatenate([maxima(_random_signs(rng, size, m)) for size in _blocks(flips)])
            adjusted = (_count_at_least(null_max, observed_sums - tolerance) + 1) / (flips + 1)
            method = (f"max-{statistic} sign-flip test over {settings:,} settings "
                      f"({flips:,} random sign patterns of {plural(unit, m)}, seed {seed})")
            floor, monte_carlo = 1.0 / (flips + 1), True
    return SelectionTest(p_value=float(adjusted[best]), adjusted=adjusted, method=method, floor=floor,
                         monte_carlo=monte_carlo, **base)


def _norms(rows: np.ndarray) -> np.ndarray:
    """sqrt(sum of squares) of each row, 1.0 for an all-zero row (its statistic stays 0)."""
    norms = np.sqrt((rows * rows).sum(axis=1))
    return np.where(norms > 0, norms, 1.0)


def _distinct_rows(matrix: np.ndarray) -> np.ndarray:
    """The matrix's distinct rows (settings that rank every query alike share one row of the max).
    Rows are grouped by a random projection, then checked against their group's first row; a projection
    collision (never seen in practice) falls back to exact byte keys."""
    if matrix.shape[1] == 0:
        return np.zeros((1, 0))
    projection = matrix @ np.random.default_rng(12345).standard_normal(matrix.shape[1])
    _, first, group = np.unique(projection, return_index=True, return_inverse=True)
    if np.array_equal(matrix, matrix[first][group]):
        return matrix[np.sort(first)]
    unique = {row.tobytes(): row for row in np.ascontiguousarray(matrix)}
    return np.array(list(unique.values())).reshape(len(unique), matrix.shape[1])


def _count_at_least(null: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """For each threshold, how many `null` values are >= it."""
    ordered = np.sort(null)
    return (len(ordered) - np.searchsorted(ordered, thresholds, side="left")).astype(float)


def best_index(values: np.ndarray, prefer: int | None = None, tolerance: float = 1e-12) -> int:
    """Index of the maximum; among values within `tolerance` of it, `prefer` if it is one of them, else
    the lowest index (a change is only chosen when it measurably helps)."""
    top = float(np.max(values))
    tied = np.flatnonzero(values >= top - tolerance)
    return int(prefer) if prefer is not None and prefer in tied else int(tied[0])


