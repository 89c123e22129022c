"""Paired comparisons: one definition of "system a against system b on the same queries", and of a family
of such comparisons with Holm's correction, used by every study (matrix, benchmark, language pairs, the
ablation's rounds, the sweep's hold-out, expansion, abstention, cross-validation).

A study says only which pairs it compares and on which metric; this module does the rest, with the
machinery of harness.evaluation.statistics at the data's resampling unit (a query, or a cluster such as
the LoCoMo conversation when `clusters` are given):

    paired_difference(a, b, clusters=conv, unit="conversation")
        -> PairedDifference(interval, test)    # mean(a - b) with its paired interval (the same units
                                               # drawn for both) and the two-sided sign-flip test with
                                               # its floor; no correction: one comparison
    compare_family([Pair("jieba", "unicode61", x, y, clusters, "article", {"metric": "mrr@6"}), ...],
                   family=" (this table)")
        -> [Comparison, ...]                   # one per pair, p_holm over every pair of the call
    column_pairs({"jieba": {qid: v}, "unicode61": {qid: v}}, baseline="unicode61")
        -> [Pair, ...]                         # a table's columns aligned on the queries both have
    paired_comparisons(columns, baseline=...)  # column_pairs + compare_family in one call
    holm_adjusted([p, ...])                    # Holm over the finite p-values; NaN stays NaN, out of the
                                               # family (a comparison with no common query)

The family is whatever the report shows together: each study passes all its pairs in one call, so one
Holm correction covers the table a reader scans.  A p-value keeps its floor (the smallest the test can
give: 2/2^m exact over m informative units, 1/(B+1) for B random sign patterns) and the floor is not
multiplied by Holm; an interval over fewer than MIN_CLUSTERS clusters is "n too small" (NaN bounds).

scipy is imported by harness.evaluation.statistics inside the functions that compute an interval or a
test, so a command that compares nothing does not pay for it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Hashable, Mapping, Sequence

import numpy as np

from harness.evaluation import statistics as st
from harness.evaluation.statistics import LEVEL, Interval, PairedTest, holm


@dataclass(frozen=True)
class PairedDifference:
    """One paired comparison: the mean difference a - b with its interval, and the sign-flip test."""

    interval: Interval
    test: PairedTest


@dataclass(frozen=True)
class Pair:
    """One comparison a study asks for: the per-query values of a and of b in the same query order,
    one cluster label per query (None: every query is its own unit), and `tags`, the study's own labels
    of the comparison (run, metric, group), put in front of its row."""

    a: str
    b: str
    values_a: Sequence[float] | np.ndarray
    values_b: Sequence[float] | np.ndarray
    clusters: Sequence[Hashable] | None = None
    unit: str = "query"
    tags: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Comparison:
    """Column a against column b of a table, over the queries both have."""

    a: str
    b: str
    queries: int
    mean_a: float
    mean_b: float
    difference: Interval  # mean(a - b) with its paired interval
    p_value: float  # paired sign-flip test
    p_holm: float  # Holm-corrected over the family of comparisons
    method: str
    p_floor: float = 0.0  # the smallest p-value the test can give here
    monte_carlo: bool = False
    units: int | None = None  # resampling units (queries, or clusters)
    unit: str = "query"
    informative: int | None = None  # units whose difference is not zero (not in as_dict: tables never showed it)

    def as_dict(self) -> dict[str, object]:
        return {"a": self.a, "b": self.b, "queries": self.queries, "mean_a": self.mean_a, "mean_b": self.mean_b,
                "difference": self.difference.as_dict(), "p_value": self.p_value, "p_holm": self.p_holm,
                "p_floor": self.p_floor, "monte_carlo": self.monte_carlo, "units": self.units, "unit": self.unit,
                "method": self.method}


def paired_difference(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *,
                      clusters: Sequence[Hashable] | None = None, unit: str = "query", level: float | None = None,
                      resamples: int | None = None, flips: int | None = None, seed: int | None = None,
                      support: Any = "values") -> PairedDifference:
    """mean(a - b) over the same queries: the paired interval (statistics.bootstrap_difference) and the
    two-sided sign-flip test (statistics.sign_flip_test), both at the unit of `clusters`, with the same
    seed.  Options left None take the statistics module's defaults; `support` is what a and b can be
    (statistics.bootstrap_difference: (low, high), None for unbounded, "values" for rates read off them)."""
    seed = st.SEED if seed is None else seed
    interval = st.bootstrap_difference(a, b, clusters=clusters, unit=unit, seed=seed, support=support,
                                       level=st.LEVEL if level is None else level,
                                       resamples=st.BOOTSTRAP_RESAMPLES if resamples is None else resamples)
    test = st.sign_flip_test(a, b, clusters=clusters, unit=unit, seed=seed, flips=st.FLIPS if flips is None else flips)
    return PairedDifference(interval, test)


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down correction over the finite p-values of a family (statistics.holm); a NaN p (a
    comparison that could not be made) stays NaN and does not count in the family."""
    finite = [i for i, p in enumerate(p_values) if p == p]
    out = [math.nan] * len(p_values)
    for i, p in zip(finite, holm([float(p_values[i]) for i in finite])):
        out[i] = p
    return out


def compare_family(pairs: Sequence[Pair], *, family: str = "", level: float | None = None,
                   resamples: int | None = None, flips: int | None = None, seed: int | None = None
                   ) -> list[Comparison]:
    """Every pair compared (paired_difference), p-values Holm-corrected over all of them: one family.
    A pair without queries gets NaN and stays out of the family.  Each comparison's method names its
    test and the family ("...; Holm over 12" + `family`, e.g. " (this table)")."""
    options = dict(level=level, resamples=resamples, flips=flips, seed=seed)
    made: list[tuple[Pair, PairedDifference | None, float, float, int]] = []
    for pair in pairs:
        x, y = np.asarray(pair.values_a, dtype=float), np.asarray(pair.values_b, dtype=float)
        if len(x) == 0:
            made.append((pair, None, math.nan, math.nan, 0))
            continue
        made.append((pair, paired_difference(x, y, clusters=pair.clusters, unit=pair.unit, **options),
                     float(x.mean()), float(y.mean()), len(x)))
    adjusted = holm_adjusted([d.test.p_value if d is not None else math.nan for _, d, *_ in made])
    size = sum(d is not None for _, d, *_ in made)
    out = []
    for (pair, d, mean_a, mean_b, n), p_holm in zip(made, adjusted):
        if d is None:
            empty = Interval(math.nan, math.nan, math.nan, LEVEL if level is None else level, "no common queries",
                             0, pair.unit)
            out.append(Comparison(pair.a, pair.b, 0, mean_a, mean_b, empty, math.nan, math.nan, "no common queries",
                                  unit=pair.unit))
            continue
        out.append(Comparison(pair.a, pair.b, n, mean_a, mean_b, d.interval, d.test.p_value, p_holm,
                              f"{d.test.method}; Holm over {size}{family}", d.test.floor, d.test.monte_carlo,
                              d.test.units, d.test.unit, d.test.informative))
    return out


def comparison_rows(pairs: Sequence[Pair], **options) -> list[dict[str, Any]]:
    """compare_family as report rows: each pair's tags, then Comparison.as_dict()."""
    return [{**pair.tags, **c.as_dict()} for pair, c in zip(pairs, compare_family(pairs, **options))]


def column_pairs(columns: Mapping[str, Mapping[str, float]], *, baseline: str | None = None,
                 pairs: Sequence[tuple[str, str]] | None = None, clusters: Mapping[str, Hashable] | None = None,
                 unit: str = "query", tags: Mapping[str, Any] | None = None) -> list[Pair]:
    """The pairs of a table whose columns are systems and whose values are per-query figures ({column:
    {query id: value}}): `pairs` if given, else every column against `baseline`, else every pair of
    columns.  Each pair is aligned on the queries both columns have (sorted by id); `clusters` ({query
    id: cluster}) gives each query its unit (a query without one is its own)."""
    if pairs is None:
        names = list(columns)
        if baseline is not None:
            if baseline not in columns:
                raise ValueError(f"baseline {baseline!r} is not a column ({names})")
            pairs = [(name, baseline) for name in names if name != baseline]
        else:
            pairs = list(combinations(names, 2))
    out = []
    for a, b in pairs:
        common = sorted(columns[a].keys() & columns[b].keys())
        labels = [clusters.get(q, q) for q in common] if clusters and common else None
        out.append(Pair(a, b, [columns[a][q] for q in common], [columns[b][q] for q in common], labels, unit,
                        dict(tags or {})))
    return out
