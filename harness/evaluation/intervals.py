"""Confidence intervals of means over queries (or clusters of them): the bounded Clopper-Pearson type
intervals for rates and small samples, the BCa bootstrap, the studentized cluster bootstrap.  Which rule
applies when is the module docstring of harness.evaluation.statistics, the public name of these functions."""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from harness.evaluation.formatting import plural
from harness.evaluation.resampling import (
    BOOTSTRAP_RESAMPLES,
    DEGENERATE_SHARE,
    LEVEL,
    MIN_CLUSTERS,
    SEED,
    SMALL_CLUSTER,
    SMALL_SAMPLE,
    Clusters,
    Interval,
    all_binary,
    cluster_codes,
    one_blas_thread,
    per_query,
    within_support,
)

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
    method = (f"exact Clopper-Pearson interval over {what}" if all_binary(x) else
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
        support = (0.0, 1.0) if within_support(a, 0, 1) and within_support(b, 0, 1) else None
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
        if all_binary(col) and support[name] == RATE:
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
            if not within_support(values, *given):
                raise ValueError(f"{name}: values outside their stated support [{given[0]:g}, {given[1]:g}]")
        return given
    if name in differences:
        if not within_support(values, -1, 1):
            raise ValueError(f"{name}: a difference of [0, 1] figures outside [-1, 1]")
        return RATE_DIFFERENCE
    return RATE if within_support(values, 0, 1) else None


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
        with one_blas_thread():
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
        with one_blas_thread():
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

