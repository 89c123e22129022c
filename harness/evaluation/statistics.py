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
from dataclasses import dataclass
from functools import cache
from typing import Any, Hashable, Literal, Mapping, Sequence, TypeVar

import numpy as np
from threadpoolctl import ThreadpoolController

from harness.evaluation.formatting import LEVEL, p_text, plural  # noqa: F401  (re-exported: reports read them here)
from harness.evaluation.ties import NEAR_TIE_FRACTION

SEED = 0
BOOTSTRAP_RESAMPLES = 10_000
FLIPS = 10_000  # Monte Carlo sign flips; the p-value's resolution is then 1/10,001
EXACT_MAX_QUERIES = 20  # sign-flip test: all 2^20 sign patterns are counted exactly, beyond that Monte Carlo
EXACT_MAX_CELLS = 1 << 24  # max-statistic test: enumerate when 2^queries x distinct settings stays below
SMALL_SAMPLE = 20  # fewer units than this: a bounded (Clopper-Pearson type) interval instead of the bootstrap
MIN_CLUSTERS = 5  # fewer clusters: no interval ("n too small"), nothing to resample
SMALL_CLUSTER = 5  # few clusters with fewer queries than this on average: the clusters are the sample
DEGENERATE_SHARE = 0.01  # more cluster resamples without spread than this: bootstrap-t is not reliable
_BLOCK = 1 << 12  # sign patterns per matrix product (bounds memory: 4,096 x queries floats)
_RELATIVE_TIE = 1e-9  # sums this close (relative to sum |d|) are equal: float rounding, not a difference

Clusters = Sequence[Hashable] | np.ndarray | None


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence interval, how the interval was computed, and on how many
    resampling units (queries, or clusters such as conversations) it rests.  low/high are NaN when the
    sample is too small for any interval (method says so)."""

    estimate: float
    low: float
    high: float
    level: float
    method: str
    units: int | None = None  # resampling units the interval rests on
    unit: str = "query"  # what they are: query, conversation, article, record, ...

    def excludes(self, value: float = 0.0) -> bool:
        """True when `value` lies outside [low, high] (a NaN interval excludes nothing)."""
        return bool(value < self.low or value > self.high)

    @property
    def defined(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def as_dict(self) -> dict[str, object]:
        return {"estimate": self.estimate, f"ci{round(self.level * 100)}": [self.low, self.high],
                "method": self.method, "units": self.units, "unit": self.unit}


@dataclass(frozen=True)
class PairedTest:
    """A paired test of two systems over the same queries (or clusters of them)."""

    statistic: float  # mean per-query difference a - b
    p_value: float
    method: str
    queries: int
    informative: int  # units whose difference is not zero (the others cannot change any flip)
    floor: float = 0.0  # the smallest p-value this test can give on these units
    monte_carlo: bool = False  # random sign patterns (p at the floor means "below it")
    units: int | None = None  # resampling units (queries, or clusters)
    unit: str = "query"
    first_units: int | None = None  # a two-sample test: how many of `units` are the first sample's (the rest the second's)

    def p_text(self) -> str:
        return p_text(self.p_value, self.floor, self.monte_carlo)


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


def cluster_codes(clusters: Clusters, n: int) -> np.ndarray | None:
    """Cluster labels (one per query) as codes 0..G-1 in the order of the sorted labels; None when no
    clusters are given or every query is its own cluster (then queries are the unit)."""
    if clusters is None:
        return None
    labels = [str(c) for c in clusters]
    if len(labels) != n:
        raise ValueError(f"clusters: {len(labels)} labels for {n} values")
    distinct = sorted(set(labels))
    if len(distinct) == n:
        return None
    code = {label: i for i, label in enumerate(distinct)}
    return np.array([code[label] for label in labels], dtype=np.int64)


def cluster_labels(clusters: Sequence[Any] | None, ids: Sequence[Any]) -> list[str] | None:
    """Cluster labels for rows that may lack one: a row's cluster, or its own id when it has none (a
    negative query of king78); None when no row has a cluster (every query is its own unit)."""
    if clusters is None:
        return None
    present = [c is not None and c == c for c in clusters]  # c == c: not NaN
    if not any(present):
        return None
    return [f"c:{c}" if keep else f"q:{q}" for c, q, keep in zip(clusters, ids, present)]


def _within(x: np.ndarray, low: float, high: float) -> bool:
    return bool(len(x)) and bool(np.all((x >= low - 1e-12) & (x <= high + 1e-12)))


def _binary(x: np.ndarray) -> bool:
    return bool(len(x)) and bool(np.all((x == 0.0) | (x == 1.0)))


# --- bounded (Clopper-Pearson type) intervals --------------------------------------------------------

def _t_quantile(q: float, df: int) -> float:
    """Student's t quantile (scipy.stats.t.ppf)."""
    from scipy import (
        special,  # imported when needed: ~0.4 s, which a gate without a test never pays
    )

    return float(special.stdtrit(df, q))


def clopper_pearson(successes: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial proportion; a fractional `successes` (the sum
    of values in [0, 1]) gives the same beta bounds at the fractional count."""
    if n <= 0:
        return math.nan, math.nan
    from scipy import (
        special,  # the quantiles; scipy.stats costs seconds of import for nothing more
    )

    alpha = 1.0 - level
    x = min(max(float(successes), 0.0), float(n))
    low = 0.0 if x <= 0 else float(special.betaincinv(x, n - x + 1, alpha / 2))
    high = 1.0 if x >= n else float(special.betaincinv(x + 1, n - x, 1 - alpha / 2))
    return low, high


def _bounded_mean(x: np.ndarray, level: float, unit: str, over: str = "") -> Interval:
    """Values in [0, 1]: the Clopper-Pearson bounds at the (fractional) count."""
    n = len(x)
    low, high = clopper_pearson(float(x.sum()), n, level)
    what = plural(unit, n) + over
    method = (f"exact Clopper-Pearson interval over {what}" if _binary(x) else
              f"Clopper-Pearson bound at the fractional count over {what} (values in [0, 1]; conservative)")
    return Interval(float(x.mean()), low, high, level, method, n, unit)


def _bounded_difference(d: np.ndarray, level: float, unit: str, over: str = "") -> Interval:
    """Differences in [-1, 1]: Clopper-Pearson bounds of the positive and the negative parts, each at
    level 1 - alpha/2 (Bonferroni), combined: mean(d+) - mean(d-) lies in [low+ - high-, high+ - low-]."""
    n = len(d)
    inner = 1.0 - (1.0 - level) / 2
    up_low, up_high = clopper_pearson(float(np.clip(d, 0, None).sum()), n, inner)
    down_low, down_high = clopper_pearson(float(np.clip(-d, 0, None).sum()), n, inner)
    return Interval(float(d.mean()), up_low - down_high, up_high - down_low, level,
                    f"Clopper-Pearson bounds of the gains and the losses over {plural(unit, n)}{over} "
                    "(Bonferroni, conservative)", n, unit)


def _too_small(estimate: float, level: float, units: int, unit: str, why: str) -> Interval:
    return Interval(estimate, math.nan, math.nan, level, f"n too small: {why}", units, unit)


# --- bootstrap intervals ----------------------------------------------------------------------------

Support = tuple[float, float] | None  # the values' possible range (None: unbounded); see _support


def bootstrap_mean(values: Sequence[float] | np.ndarray, *, clusters: Clusters = None, unit: str = "query",
                   level: float = LEVEL, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED,
                   difference: bool = False, support: Support | str = "values") -> Interval:
    """The interval of the mean over queries, by the rules of the module docstring (BCa bootstrap for
    large samples of independent queries; exact or bounded intervals for 0/1 values and small samples;
    the studentized cluster bootstrap when `clusters` are given).  difference=True: the values are
    differences of two [0, 1] figures (bounded in [-1, 1]).  support: what the quantity can be, (low,
    high) or None (unbounded); "values" (default) reads it off the values for a mean of per-query
    metric values (in [0, 1]: a rate), never for a difference."""
    x = per_query(values)
    supports = {} if isinstance(support, str) else {"x": support}
    return bootstrap_means({"x": x}, clusters=clusters, unit=unit, level=level, resamples=resamples, seed=seed,
                           differences=("x",) if difference else (), supports=supports)["x"]


def difference_support(a: Support, b: Support | None = ...) -> Support:  # type: ignore[assignment]
    """The support of a - b from the supports of a and b (b defaults to a): [la - hb, ha - lb]; None
    when either is unbounded."""
    b = a if b is ... else b
    if a is None or b is None:
        return None
    return (float(a[0]) - float(b[1]), float(a[1]) - float(b[0]))


def bootstrap_difference(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *,
                         clusters: Clusters = None, unit: str = "query", support: Support | str = "values",
                         **options) -> Interval:
    """Paired interval for mean(a - b): a query (or cluster) is drawn with both of its values, so
    the interval reflects the per-query differences, not two independent spreads.  support: what a and
    b can be ((low, high), None: unbounded; "values": [0, 1] when both sets of values lie in it, the
    per-query metrics' rates, else unbounded).  The difference's support follows from theirs ([-1, 1]
    for two rates) and never from the differences observed: a difference whose sample happens to sit on
    one side of zero is still a difference (issue 37)."""
    a, b = per_query(a, "a"), per_query(b, "b")
    if len(a) != len(b):
        raise ValueError(f"paired values need the same queries: {len(a)} vs {len(b)}")
    if isinstance(support, str):
        support = (0.0, 1.0) if _within(a, 0, 1) and _within(b, 0, 1) else None
    interval = bootstrap_mean(a - b, clusters=clusters, unit=unit, support=difference_support(support), **options)
    return Interval(interval.estimate, interval.low, interval.high, interval.level, "paired " + interval.method,
                    interval.units, interval.unit)


def bootstrap_means(columns: Mapping[str, Sequence[float] | np.ndarray], *, clusters: Clusters = None,
                    unit: str = "query", level: float = LEVEL, resamples: int = BOOTSTRAP_RESAMPLES,
                    seed: int = SEED, differences: Sequence[str] = (),
                    supports: Mapping[str, Support] | None = None) -> dict[str, Interval]:
    """Intervals for the means of several per-query columns of the same queries (a summary's Recall,
    MRR, nDCG and pass columns), each by the rules of the module docstring.  The bootstrapped ones come
    from the same resampled queries (or clusters), so they are also paired with one another; the
    resampled means of every column are one product (draw counts x values).  BCa: the acceleration of
    a mean has a closed form (jackknife means (n mean - x_i) / (n - 1)); an undefined BCa falls back to
    the percentile interval.  `differences`: columns holding differences of [0, 1] figures (support
    [-1, 1]); `supports`: a column's support given outright ((low, high), None: unbounded); any other
    column is a mean of per-query metric values, [0, 1] when its values lie in it (_support)."""
    names = list(columns)
    if not names:
        return {}
    x = np.column_stack([per_query(columns[name], name) for name in names])
    n = x.shape[0]
    if n == 0:
        return {name: Interval(math.nan, math.nan, math.nan, level, "no queries", 0, unit) for name in names}
    codes = cluster_codes(clusters, n)
    support = {name: _support(name, x[:, j], differences, supports) for j, name in enumerate(names)}
    scales = {name: _scale(support[name]) for name in names}
    if any(scales.values()):  # [0, s] or [-s, s]: in units of s, a rate or a difference of rates
        x = x.copy()
        for j, name in enumerate(names):
            if scales[name]:
                x[:, j] /= scales[name]
                support[name] = RATE if support[name][0] == 0 else RATE_DIFFERENCE  # type: ignore[index]
        out = bootstrap_means({name: x[:, j] for j, name in enumerate(names)}, clusters=clusters, unit=unit,
                              level=level, resamples=resamples, seed=seed, supports=support)
        return {name: _scaled(out[name], scales[name] or 1.0) for name in names}
    if codes is not None:
        return _cluster_intervals(names, x, codes, unit, level, resamples, seed, support)
    out: dict[str, Interval] = {}
    boot_columns = []
    for j, name in enumerate(names):
        col = x[:, j]
        constant = bool(np.all(col == col[0]))
        if _binary(col) and support[name] == RATE:
            out[name] = _bounded_mean(col, level, "query")
        elif (n < SMALL_SAMPLE or constant) and support[name] == RATE_DIFFERENCE:
            out[name] = _bounded_difference(col, level, "query")
        elif (n < SMALL_SAMPLE or constant) and support[name] == RATE:
            out[name] = _bounded_mean(col, level, "query")
        elif constant:
            out[name] = _too_small(float(col[0]), level, n, "query", "every query has the same value")
        elif n < SMALL_SAMPLE:
            out[name] = _t_interval(col, level)
        else:
            boot_columns.append(j)
    if boot_columns:
        out.update(_bca_intervals([names[j] for j in boot_columns], x[:, boot_columns], level, resamples, seed))
    return {name: _clipped(out[name], support[name]) for name in names}


RATE, RATE_DIFFERENCE = (0.0, 1.0), (-1.0, 1.0)


def _support(name: str, values: np.ndarray, differences: Sequence[str], supports: Mapping[str, Support] | None
             ) -> Support:
    """A column's support: given outright, [-1, 1] for a difference of rates, else (a mean of per-query
    metric values) [0, 1] when the values lie in it, else unbounded.  A given support must hold the values."""
    if supports is not None and name in supports:
        given = supports[name]
        if given is not None:
            given = (float(given[0]), float(given[1]))
            if not _within(values, *given):
                raise ValueError(f"{name}: values outside their stated support [{given[0]:g}, {given[1]:g}]")
        return given
    if name in differences:
        if not _within(values, -1, 1):
            raise ValueError(f"{name}: a difference of [0, 1] figures outside [-1, 1]")
        return RATE_DIFFERENCE
    return RATE if _within(values, 0, 1) else None


def _scale(support: Support) -> float | None:
    """s for a support [0, s] or [-s, s] other than a rate's: the quantity in units of s is a rate or a
    difference of rates, and takes their bounded rules (a utility scaled per class, its differences)."""
    if support is None or support in (RATE, RATE_DIFFERENCE):
        return None
    low, high = support
    if high > 0 and (low == 0 or math.isclose(low, -high)):
        return float(high)
    return None


def _scaled(interval: Interval, scale: float) -> Interval:
    if scale == 1.0:
        return interval
    return Interval(interval.estimate * scale, interval.low * scale, interval.high * scale, interval.level,
                    interval.method + (f" (in units of {scale:.4g}, the values' range)"), interval.units, interval.unit)


def _clipped(interval: Interval, support: Support) -> Interval:
    """The interval cut to the quantity's support (a bootstrap or t bound can step beyond it)."""
    if support is None or not interval.defined:
        return interval
    return Interval(interval.estimate, max(interval.low, support[0]), min(interval.high, support[1]), interval.level,
                    interval.method, interval.units, interval.unit)


def _t_interval(x: np.ndarray, level: float) -> Interval:
    n = len(x)
    half = float(_t_quantile(0.5 + level / 2, n - 1)) * float(x.std(ddof=1)) / math.sqrt(n)
    return Interval(float(x.mean()), float(x.mean()) - half, float(x.mean()) + half, level,
                    f"Student t interval over {plural('query', n)} (fewer than {SMALL_SAMPLE}, unbounded values)",
                    n, "query")


def _draw_counts(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """rows x n: how often each of n units is drawn in each of `rows` resamples with replacement."""
    draws = rng.integers(0, n, size=(rows, n)) + (np.arange(rows) * n)[:, None]
    return np.bincount(draws.ravel(), minlength=rows * n).reshape(rows, n).astype(float)


def _bca_intervals(names: list[str], x: np.ndarray, level: float, resamples: int, seed: int) -> dict[str, Interval]:
    from scipy import special

    n = x.shape[0]
    estimates = x.mean(axis=0)
    rng = np.random.default_rng(seed)
    boot = np.empty((resamples, len(names)))
    block = max(1, min(resamples, (1 << 22) // n))  # draw counts for `block` resamples at a time
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        with _one_blas_thread():
            boot[start:start + rows] = _draw_counts(rng, rows, n) @ x / n
    alpha = (1 - level) / 2
    z = special.ndtri(np.asarray([alpha, 1 - alpha]))
    out = {}
    for j, name in enumerate(names):
        estimate = float(estimates[j])
        label = f"BCa bootstrap over {plural('query', n)} ({resamples:,} resamples, seed {seed})"
        # the share of resampled means below the estimate, ties counted half (scipy's "mean" rank)
        z0 = float(special.ndtri((np.count_nonzero(boot[:, j] < estimate) + np.count_nonzero(boot[:, j] <= estimate))
                                 / (2 * resamples)))
        jackknife = (n * estimate - x[:, j]) / (n - 1) if n > 1 else x[:, j]
        d = jackknife.mean() - jackknife
        denominator = 6.0 * float((d * d).sum()) ** 1.5
        acceleration = float((d ** 3).sum()) / denominator if denominator > 0 else math.nan
        with np.errstate(divide="ignore", invalid="ignore"):
            shares = special.ndtr(z0 + (z0 + z) / (1 - acceleration * (z0 + z)))
        if np.all(np.isfinite(shares)):
            low, high = np.percentile(boot[:, j], shares * 100)
        else:
            low, high = np.percentile(boot[:, j], [alpha * 100, (1 - alpha) * 100])
            label = (f"percentile bootstrap over {plural('query', n)} (BCa undefined; {resamples:,} resamples, "
                     f"seed {seed})")
        out[name] = Interval(estimate, float(low), float(high), level, label, n, "query")
    return out


def _cluster_intervals(names: list[str], x: np.ndarray, codes: np.ndarray, unit: str, level: float,
                       resamples: int, seed: int, support: Mapping[str, Support]) -> dict[str, Interval]:
    """Intervals over clusters.  Many queries per cluster: the studentized cluster bootstrap of the mean
    over queries (a ratio: cluster totals over cluster sizes), se = sqrt(G/(G-1) sum_c (S_c - mean
    n_c)^2) / N (the cluster-robust standard error); each resample of G clusters gives t* = (mean* -
    mean) / se*, and the interval is [mean - q(1-a/2) se, mean - q(a/2) se], clipped to [0, 1] (or
    [-1, 1]) for bounded values, and never narrower than mean +- t(G-1) se.  Few clusters of few queries (fewer than SMALL_SAMPLE clusters of under
    SMALL_CLUSTER queries on average: king78's records), clusters whose means are all equal, or a
    bootstrap whose resamples often have no spread (one deviant cluster among identical ones): the
    clusters are the sample, and the bounded interval of the small-sample rules is taken over them."""
    g = int(codes.max()) + 1
    n = x.shape[0]
    sizes = np.bincount(codes, minlength=g).astype(float)
    sums = np.zeros((g, x.shape[1]))
    np.add.at(sums, codes, x)
    estimates = x.mean(axis=0)
    over = f" ({n:,} queries)"
    out: dict[str, Interval] = {}

    def over_clusters(j: int, why: str) -> Interval:
        """The clusters as the sample: bounded intervals at the clusters' count, centred on the mean."""
        means = sums[:, j] / sizes
        note = f" ({n:,} queries; {why})"
        if support[names[j]] == RATE_DIFFERENCE:
            shifted = means - means.mean() + estimates[j]  # centred on the question-weighted mean
            bound = _bounded_difference(np.clip(shifted, -1, 1), level, unit, note)
        elif support[names[j]] == RATE:
            low, high = clopper_pearson(float(estimates[j]) * g, g, level)
            bound = Interval(float(estimates[j]), low, high, level,
                             f"Clopper-Pearson bound at the fractional count over {plural(unit, g)}{note}", g, unit)
        elif np.any(np.abs(means - means[0]) > 1e-12):  # unbounded values (tokens): Student t over the cluster means
            half = float(_t_quantile(0.5 + level / 2, g - 1)) * float(means.std(ddof=1)) / math.sqrt(g)
            bound = Interval(float(estimates[j]), float(estimates[j]) - half, float(estimates[j]) + half, level,
                             f"Student t interval over the means of {plural(unit, g)}{note}", g, unit)
        else:
            bound = _too_small(float(estimates[j]), level, g, unit, f"{plural(unit, g)}; {why}")
        return Interval(float(estimates[j]), bound.low, bound.high, level, bound.method, g, unit)

    boot_columns = []
    for j, name in enumerate(names):
        means = sums[:, j] / sizes
        if g < MIN_CLUSTERS:
            out[name] = _too_small(float(estimates[j]), level, g, unit,
                                   f"{plural(unit, g)}, at least {MIN_CLUSTERS} are needed to resample")
        elif np.all(np.abs(means - means[0]) <= 1e-12):
            out[name] = over_clusters(j, f"every {unit} has the same mean")
        elif g < SMALL_SAMPLE and n / g < SMALL_CLUSTER:
            out[name] = over_clusters(j, f"fewer than {SMALL_SAMPLE} {plural(unit, None)} of about one query each")
        else:
            boot_columns.append(j)
    if not boot_columns:
        return {name: _clipped(out[name], support[name]) for name in names}
    cols = sums[:, boot_columns]
    mu = estimates[boot_columns]
    residual = cols - sizes[:, None] * mu
    se = np.sqrt(g / (g - 1) * (residual ** 2).sum(axis=0)) / n
    rng = np.random.default_rng(seed)
    t_stats = np.empty((resamples, len(boot_columns)))
    block = max(1, min(resamples, (1 << 22) // g))
    squares, cross, size_squares = cols ** 2, cols * sizes[:, None], sizes ** 2
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        counts = _draw_counts(rng, rows, g)
        with _one_blas_thread():
            n_star = counts @ sizes
            mu_star = (counts @ cols) / n_star[:, None]
            ss = counts @ squares - 2 * mu_star * (counts @ cross) + mu_star ** 2 * (counts @ size_squares)[:, None]
        se_star = np.sqrt(g / (g - 1) * np.clip(ss, 0, None)) / n_star[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            t_stats[start:start + rows] = np.where(se_star > 1e-12 * np.maximum(1.0, np.abs(mu_star)),
                                                   (mu_star - mu) / se_star, np.nan)
    alpha = (1 - level) / 2
    for k, j in enumerate(boot_columns):
        t = t_stats[:, k][np.isfinite(t_stats[:, k])]
        if len(t) < (1 - DEGENERATE_SHARE) * resamples:
            out[names[j]] = over_clusters(j, f"{resamples - len(t):,} of {resamples:,} cluster resamples have "
                                             "no spread")
            continue
        q_low, q_high = np.percentile(t, [alpha * 100, (1 - alpha) * 100])
        # never narrower than Student's t on G - 1 degrees of freedom: with ten clusters the resampled
        # t's tails are too light on their own (coverage 94% instead of 95% in tests/test_coverage.py)
        student = float(_t_quantile(1 - alpha, g - 1))
        q_low, q_high = min(q_low, -student), max(q_high, student)
        low, high = float(mu[k] - q_high * se[k]), float(mu[k] - q_low * se[k])
        out[names[j]] = Interval(float(mu[k]), low, high, level,
                                 f"studentized cluster bootstrap over {plural(unit, g)}{over} "
                                 f"({resamples:,} resamples, seed {seed})", g, unit)
    return {name: _clipped(out[name], support[name]) for name in names}


def bootstrap_pass_rate(passed: Sequence[bool] | np.ndarray, **options) -> Interval:
    """The interval of the share of queries that passed (exact Clopper-Pearson for independent queries)."""
    return bootstrap_mean(np.asarray(passed, dtype=bool).astype(float), **options)


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
    informative = totals[np.abs(totals) > _RELATIVE_TIE * max(1.0, float(np.abs(d).sum()))] if clustered \
        else totals[totals != 0]
    m = len(informative)
    base = dict(queries=n, informative=m, units=units, unit=unit)
    if m == 0:
        return PairedTest(statistic if n else math.nan, 1.0, f"no {unit} differs", floor=1.0, **base)
    observed = abs(float(informative.sum()))
    tolerance = _RELATIVE_TIE * float(np.abs(informative).sum())
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
        with _one_blas_thread():
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
    with _one_blas_thread():
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
    tolerance = _RELATIVE_TIE * max(1.0, abs(observed))
    for size in _blocks(permutations):
        order = np.argsort(rng.random((size, units)), axis=1)
        first = np.zeros((size, units))
        np.put_along_axis(first, order[:, :k], 1.0, axis=1)
        with _one_blas_thread():
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
    informative = np.flatnonzero(np.any(np.abs(diffs) > (_RELATIVE_TIE * scale if clustered else 0), axis=0))
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
