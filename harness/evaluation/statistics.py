"""Statistics over per-query values: intervals, paired tests, a test that survives selection, Holm, near ties.

Every function takes per-query values as arrays (one entry per query, the same query order in every array
of one call) and is deterministic: resampling is seeded.  Queries are the unit of resampling throughout,
because they are what a different data set would draw anew; chunks and settings are not.

    >>> bootstrap_mean(rr)                          # Interval(estimate, low, high, level, method)
    >>> bootstrap_difference(rr_best, rr_default)   # paired: both resampled with the same queries
    >>> sign_flip_test(rr_best, rr_default)         # two-sided; exact when 2^n is small
    >>> max_statistic_test(grid, configured=17)     # best of the grid vs the configuration, selection-aware
    >>> holm({"a": 0.01, "b": 0.04})                # family-wise corrected p-values
    >>> paired_comparisons({"round3": {...}, "round4": {...}})   # a table's columns, Holm-corrected

Cross-validation of a selection procedure is in harness.evaluation.cross_validation.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import cache
from itertools import combinations
from typing import Any, Literal, Mapping, Sequence, TypeVar

import numpy as np
from scipy import stats
from threadpoolctl import ThreadpoolController

from harness.config import NEAR_TIE_FRACTION

LEVEL = 0.95
SEED = 0
BOOTSTRAP_RESAMPLES = 10_000
FLIPS = 10_000  # Monte Carlo sign flips; the p-value's resolution is then 1/10,001
EXACT_MAX_QUERIES = 20  # sign-flip test: all 2^20 sign patterns are counted exactly, beyond that Monte Carlo
EXACT_MAX_CELLS = 1 << 24  # max-statistic test: enumerate when 2^queries x distinct settings stays below
_BLOCK = 1 << 12  # sign patterns per matrix product (bounds memory: 4,096 x queries floats)
_RELATIVE_TIE = 1e-9  # sums this close (relative to sum |d|) are equal: float rounding, not a difference


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence interval, and how the interval was computed."""

    estimate: float
    low: float
    high: float
    level: float
    method: str

    def excludes(self, value: float = 0.0) -> bool:
        """True when `value` lies outside [low, high] (a NaN interval excludes nothing)."""
        return bool(value < self.low or value > self.high)

    def as_dict(self) -> dict[str, object]:
        return {"estimate": self.estimate, f"ci{round(self.level * 100)}": [self.low, self.high],
                "method": self.method}


@dataclass(frozen=True)
class PairedTest:
    """A paired test of two systems over the same queries."""

    statistic: float  # mean per-query difference a - b
    p_value: float
    method: str
    queries: int
    informative: int  # queries whose difference is not zero (the others cannot change any flip)


@cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()  # scanning the loaded libraries takes ~10 ms: once per process


def _one_blas_thread():
    """The sign-flip products are small: BLAS threads only contend for the shared cores."""
    return _blas().limit(limits=1, user_api="blas")


def per_query(values: Sequence[float] | np.ndarray, name: str = "values") -> np.ndarray:
    """One-dimensional float array of finite per-query values (ValueError otherwise)."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"{name}: expected one value per query (1-D), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name}: per-query values must be finite")
    return x


# --- bootstrap intervals ----------------------------------------------------------------------------

def bootstrap_mean(values: Sequence[float] | np.ndarray, *, level: float = LEVEL,
                   resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED,
                   method: Literal["BCa", "percentile"] = "BCa") -> Interval:
    """Bootstrap interval for the mean over queries (scipy.stats.bootstrap, queries resampled with
    replacement).  BCa by default: it corrects the percentile interval for the bias and skew that
    bounded, discrete per-query values (reciprocal ranks, 0/1 passes near 1.0) give the bootstrap
    distribution.  Where BCa is undefined (too few distinct values to estimate its acceleration) the
    percentile interval is returned and the method says so; when every query has the same value the
    interval is that value (nothing to resample)."""
    x = per_query(values)
    if len(x) == 0:
        return Interval(math.nan, math.nan, math.nan, level, "no queries")
    estimate = float(x.mean())
    if np.all(x == x[0]):
        return Interval(estimate, estimate, estimate, level, "every query has the same value")
    label = f"{method} bootstrap over {len(x)} queries ({resamples:,} resamples, seed {seed})"
    low, high = _scipy_bootstrap(x, level, resamples, seed, method)
    if method == "BCa" and not (math.isfinite(low) and math.isfinite(high)):
        low, high = _scipy_bootstrap(x, level, resamples, seed, "percentile")
        label = f"percentile bootstrap over {len(x)} queries (BCa undefined; {resamples:,} resamples, seed {seed})"
    return Interval(estimate, low, high, level, label)


def _scipy_bootstrap(x: np.ndarray, level: float, resamples: int, seed: int, method: str) -> tuple[float, float]:
    with warnings.catch_warnings():  # a degenerate BCa is reported through the NaN it returns
        warnings.simplefilter("ignore")
        result = stats.bootstrap((x,), np.mean, n_resamples=resamples, confidence_level=level,
                                 method=method, vectorized=True, rng=np.random.default_rng(seed))
    low, high = result.confidence_interval
    return float(low), float(high)


def bootstrap_difference(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                         **options) -> Interval:
    """Paired bootstrap interval for mean(a) - mean(b): a query is drawn with both of its values, so the
    interval reflects the per-query differences, not two independent spreads."""
    a, b = per_query(a, "a"), per_query(b, "b")
    if len(a) != len(b):
        raise ValueError(f"paired values need the same queries: {len(a)} vs {len(b)}")
    interval = bootstrap_mean(a - b, **options)
    return Interval(interval.estimate, interval.low, interval.high, interval.level, "paired " + interval.method)


def bootstrap_means(columns: Mapping[str, Sequence[float] | np.ndarray], *, level: float = LEVEL,
                    resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED) -> dict[str, Interval]:
    """BCa intervals for the means of several per-query columns of the same queries (a summary's
    Recall, MRR, nDCG and pass columns), all from the same resampled queries, so they are also paired
    with one another.  The same interval as bootstrap_mean (scipy's BCa) up to the random draws, at a
    fraction of the cost: the resampled means of every column are one product (draw counts x values),
    and the BCa acceleration of a mean has a closed form (jackknife means (n mean - x_i) / (n - 1)).
    Degenerate cases as bootstrap_mean: a constant column is its value, an undefined BCa falls back
    to the percentile interval."""
    names = list(columns)
    x = np.column_stack([per_query(columns[name], name) for name in names]) if names else np.zeros((0, 0))
    n = x.shape[0]
    if not names:
        return {}
    if n == 0:
        return {name: Interval(math.nan, math.nan, math.nan, level, "no queries") for name in names}
    estimates = x.mean(axis=0)
    rng = np.random.default_rng(seed)
    boot = np.empty((resamples, len(names)))
    block = max(1, min(resamples, (1 << 22) // n))  # draw counts for `block` resamples at a time
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        draws = rng.integers(0, n, size=(rows, n)) + (np.arange(rows) * n)[:, None]
        counts = np.bincount(draws.ravel(), minlength=rows * n).reshape(rows, n).astype(float)
        with _one_blas_thread():
            boot[start:start + rows] = counts @ x / n
    alpha = (1 - level) / 2
    z = stats.norm.ppf([alpha, 1 - alpha])
    out = {}
    for j, name in enumerate(names):
        estimate = float(estimates[j])
        if np.all(x[:, j] == x[0, j]):
            out[name] = Interval(estimate, estimate, estimate, level, "every query has the same value")
            continue
        label = f"BCa bootstrap over {n} queries ({resamples:,} resamples, seed {seed})"
        # the share of resampled means below the estimate, ties counted half (scipy's "mean" rank)
        z0 = stats.norm.ppf((np.count_nonzero(boot[:, j] < estimate) + np.count_nonzero(boot[:, j] <= estimate))
                            / (2 * resamples))
        jackknife = (n * estimate - x[:, j]) / (n - 1) if n > 1 else x[:, j]
        d = jackknife.mean() - jackknife
        denominator = 6.0 * float((d * d).sum()) ** 1.5
        acceleration = float((d ** 3).sum()) / denominator if denominator > 0 else math.nan
        with np.errstate(divide="ignore", invalid="ignore"):
            shares = stats.norm.cdf(z0 + (z0 + z) / (1 - acceleration * (z0 + z)))
        if np.all(np.isfinite(shares)):
            low, high = np.percentile(boot[:, j], shares * 100)
        else:
            low, high = np.percentile(boot[:, j], [alpha * 100, (1 - alpha) * 100])
            label = f"percentile bootstrap over {n} queries (BCa undefined; {resamples:,} resamples, seed {seed})"
        out[name] = Interval(estimate, float(low), float(high), level, label)
    return out


def bootstrap_pass_rate(passed: Sequence[bool] | np.ndarray, **options) -> Interval:
    """Bootstrap interval for the share of queries that passed."""
    return bootstrap_mean(np.asarray(passed, dtype=bool).astype(float), **options)


# --- paired sign-flip (randomization) test ----------------------------------------------------------

def sign_flip_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray | None = None, *,
                   flips: int = FLIPS, seed: int = SEED, exact_max: int = EXACT_MAX_QUERIES) -> PairedTest:
    """Two-sided paired randomization test of mean(a - b) = 0 (Fisher): under the null each query's
    difference is as likely to have the opposite sign, so p = P(|mean of sign-flipped d| >= |mean d|).
    Queries with d = 0 are left out of the enumeration (flipping them changes nothing, so the p-value is
    the same).  With at most `exact_max` informative queries every one of the 2^n sign patterns is
    enumerated (exact p); otherwise `flips` random patterns are drawn (seeded) and p = (hits + 1) /
    (flips + 1), which keeps the test valid at any number of flips."""
    d = per_query(a, "a") - (per_query(b, "b") if b is not None else 0.0)
    n = len(d)
    informative = d[d != 0]
    m = len(informative)
    statistic = float(d.mean()) if n else math.nan
    if m == 0:
        return PairedTest(statistic if n else math.nan, 1.0, "no query differs", n, 0)
    observed = abs(float(informative.sum()))
    tolerance = _RELATIVE_TIE * float(np.abs(informative).sum())
    if m <= exact_max:
        p = _exact_two_sided(informative, observed - tolerance)
        return PairedTest(statistic, p, f"exact sign-flip test (2^{m} = {1 << m:,} sign patterns)", n, m)
    rng = np.random.default_rng(seed)
    hits = 0
    with _one_blas_thread():
        for size in _blocks(flips):
            sums = _random_signs(rng, size, m) @ informative
            hits += int(np.count_nonzero(np.abs(sums) >= observed - tolerance))
    return PairedTest(statistic, (hits + 1) / (flips + 1),
                      f"Monte Carlo sign-flip test ({flips:,} random sign patterns, seed {seed})", n, m)


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
    return [min(_BLOCK, total - start) for start in range(0, total, _BLOCK)]


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


def max_statistic_test(scores: np.ndarray, configured: int, *, alternative: Literal["greater", "two-sided"] = "greater",
                       statistic: Literal["standardized", "mean"] = "standardized", flips: int = FLIPS,
                       seed: int = SEED, exact_max_cells: int = EXACT_MAX_CELLS) -> SelectionTest:
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

    Exact enumeration of all 2^n flips when 2^n x distinct settings <= exact_max_cells, else `flips`
    seeded random flips with p = (hits + 1) / (flips + 1)."""
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2 or not np.all(np.isfinite(scores)):
        raise ValueError(f"scores: expected a finite settings x queries matrix, got shape {scores.shape}")
    settings, n = scores.shape
    if not 0 <= configured < settings:
        raise ValueError(f"configured setting {configured} is not one of the {settings} settings")
    diffs = scores - scores[configured]
    gains = diffs.mean(axis=1) if n else np.zeros(settings)
    best = best_index(gains, prefer=configured)
    two_sided = alternative == "two-sided"
    informative = np.flatnonzero(np.any(diffs != 0, axis=0))
    distinct = _distinct_rows(diffs[:, informative])
    m, u = len(informative), len(distinct)
    base = dict(best=best, configured=configured, statistic=float(gains[best]), queries=n,
                informative=m, settings=settings, distinct=u)
    if m == 0:
        return SelectionTest(p_value=1.0, adjusted=np.ones(settings), method="no setting differs on any query", **base)
    if statistic == "standardized":  # each setting's sum over its own flip spread (0 for the configuration)
        observed = diffs.sum(axis=1) / _norms(diffs)
        columns = (distinct / _norms(distinct)[:, None]).T  # m x u
        tolerance = _RELATIVE_TIE * math.sqrt(m)
    else:
        observed = gains * n  # sums over all queries; uninformative queries add 0
        columns = distinct.T
        tolerance = _RELATIVE_TIE * float(np.abs(distinct).sum(axis=1).max())
    observed_sums = np.abs(observed) if two_sided else observed

    def maxima(signs: np.ndarray) -> np.ndarray:
        sums = signs @ columns
        return (np.abs(sums) if two_sided else sums).max(axis=1)

    with _one_blas_thread():  # small products: threads only contend on shared cores
        if m <= 40 and (1 << m) * u <= exact_max_cells:
            total = 1 << m
            null_max = np.concatenate([maxima(_all_signs(start, min(start + _BLOCK, total), m))
                                       for start in range(0, total, _BLOCK)])
            adjusted = _count_at_least(null_max, observed_sums - tolerance) / total
            method = (f"max-{statistic} sign-flip test over {settings:,} settings, "
                      f"exact (2^{m} = {total:,} patterns)")
        else:
            rng = np.random.default_rng(seed)
            null_max = np.concatenate([maxima(_random_signs(rng, size, m)) for size in _blocks(flips)])
            adjusted = (_count_at_least(null_max, observed_sums - tolerance) + 1) / (flips + 1)
            method = (f"max-{statistic} sign-flip test over {settings:,} settings "
                      f"({flips:,} random sign patterns, seed {seed})")
    return SelectionTest(p_value=float(adjusted[best]), adjusted=adjusted, method=method, **base)


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


@dataclass(frozen=True)
class Comparison:
    """Column a against column b of a table, over the queries both have."""

    a: str
    b: str
    queries: int
    mean_a: float
    mean_b: float
    difference: Interval  # mean(a - b) with its paired bootstrap interval
    p_value: float  # paired sign-flip test
    p_holm: float  # Holm-corrected over the table's family of comparisons
    method: str

    def as_dict(self) -> dict[str, object]:
        return {"a": self.a, "b": self.b, "queries": self.queries, "mean_a": self.mean_a, "mean_b": self.mean_b,
                "difference": self.difference.as_dict(), "p_value": self.p_value, "p_holm": self.p_holm,
                "method": self.method}


def paired_comparisons(columns: Mapping[str, Mapping[str, float]], *, baseline: str | None = None,
                       pairs: Sequence[tuple[str, str]] | None = None, level: float = LEVEL,
                       resamples: int = BOOTSTRAP_RESAMPLES, flips: int = FLIPS, seed: int = SEED
                       ) -> list[Comparison]:
    """Paired tests across a table whose columns are systems (presets, rounds, tokenizers, chunkers) and
    whose values are per-query figures ({column: {query id: value}}).  The family is `pairs` if given,
    else every column against `baseline`, else every pair of columns; each comparison uses the queries
    both columns have (sorted by id), and all p-values are Holm-corrected together.  A pair with no
    common query gets NaN and stays out of the family."""
    if pairs is None:
        names = list(columns)
        if baseline is not None:
            if baseline not in columns:
                raise ValueError(f"baseline {baseline!r} is not a column ({names})")
            pairs = [(name, baseline) for name in names if name != baseline]
        else:
            pairs = list(combinations(names, 2))
    raw = []
    for a, b in pairs:
        common = sorted(columns[a].keys() & columns[b].keys())
        x = np.array([columns[a][q] for q in common], dtype=float)
        y = np.array([columns[b][q] for q in common], dtype=float)
        if not common:
            empty = Interval(math.nan, math.nan, math.nan, level, "no common queries")
            raw.append((a, b, 0, math.nan, math.nan, empty, math.nan, "no common queries"))
            continue
        test = sign_flip_test(x, y, flips=flips, seed=seed)
        interval = bootstrap_difference(x, y, level=level, resamples=resamples, seed=seed)
        raw.append((a, b, len(common), float(x.mean()), float(y.mean()), interval, test.p_value, test.method))
    family = {i: row[6] for i, row in enumerate(raw) if math.isfinite(row[6])}
    corrected = holm(family) if family else {}
    return [Comparison(a, b, n, ma, mb, interval, p, corrected.get(i, math.nan), f"{method}; Holm over {len(family)}")
            for i, (a, b, n, ma, mb, interval, p, method) in enumerate(raw)]


def holm_over_rows(rows: list[dict[str, Any]], family: str = "") -> list[dict[str, Any]]:
    """Re-correct the `p_holm` of comparison rows (Comparison.as_dict(), maybe from several
    paired_comparisons calls: one per metric or run) over all of them, the family a report's table
    shows; rows without a p-value stay out.  Returns the rows, changed in place."""
    finite = [i for i, r in enumerate(rows) if r["p_value"] == r["p_value"]]
    for i, p in zip(finite, holm([rows[i]["p_value"] for i in finite])):
        rows[i]["p_holm"] = p
        rows[i]["method"] = rows[i]["method"].rsplit("; Holm", 1)[0] + f"; Holm over {len(finite)}{family}"
    return rows


# --- near ties relative to the scale of the scores ----------------------------------------------------

# NEAR_TIE_FRACTION (harness.config, 0.0025):
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


def near_tie_thresholds(scores: np.ndarray | Sequence[Sequence[float]], found: np.ndarray | None = None, *,
                        fraction: float = NEAR_TIE_FRACTION) -> np.ndarray:
    """Per query, the margin under which an outcome is a near tie: `fraction` x the spread of its fused
    scores, so the threshold means the same for RRF (~0.01 scale) and weighted (0-1) scores."""
    return fraction * score_spread(scores, found)


def near_ties(margins: Sequence[float | None] | np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """True where |margin| < threshold; a missing margin (None or NaN) is not a near tie."""
    m = np.array([math.nan if v is None else v for v in margins], dtype=float)
    with np.errstate(invalid="ignore"):
        return np.abs(m) < np.asarray(thresholds, dtype=float)
