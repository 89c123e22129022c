"""What every statistic of harness.evaluation.statistics shares: the defaults (level, seed, resamples),
the result types (Interval, PairedTest), per-query values checked, and clusters as codes, the unit a
resampling draws or flips (the module docstring of harness.evaluation.statistics says how they are used)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any, Hashable, Sequence

import numpy as np
from threadpoolctl import ThreadpoolController

from harness.evaluation.formatting import LEVEL, p_text  # LEVEL: the one confidence level, set where numbers are formatted

SEED = 0
BOOTSTRAP_RESAMPLES = 10_000
FLIPS = 10_000  # Monte Carlo sign flips; the p-value's resolution is then 1/10,001
EXACT_MAX_QUERIES = 20  # sign-flip test: all 2^20 sign patterns are counted exactly, beyond that Monte Carlo
EXACT_MAX_CELLS = 1 << 24  # max-statistic test: enumerate when 2^queries x distinct settings stays below
SMALL_SAMPLE = 20  # fewer units than this: a bounded (Clopper-Pearson type) interval instead of the bootstrap
MIN_CLUSTERS = 5  # fewer clusters: no interval ("n too small"), nothing to resample
SMALL_CLUSTER = 5  # few clusters with fewer queries than this on average: the clusters are the sample
DEGENERATE_SHARE = 0.01  # more cluster resamples without spread than this: bootstrap-t is not reliable
SIGN_BLOCK = 1 << 12  # sign patterns per matrix product (bounds memory: 4,096 x queries floats)
RELATIVE_TIE = 1e-9  # sums this close (relative to sum |d|) are equal: float rounding, not a difference

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


def one_blas_thread():
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


def within_support(x: np.ndarray, low: float, high: float) -> bool:
    return bool(len(x)) and bool(np.all((x >= low - 1e-12) & (x <= high + 1e-12)))


def all_binary(x: np.ndarray) -> bool:
    return bool(len(x)) and bool(np.all((x == 0.0) | (x == 1.0)))

