"""Agreement between two judges of the same items: the table and Cohen's kappa with an interval.

kappa = (p_o - p_e) / (1 - p_e), p_o the observed agreement, p_e the agreement expected from each judge's own
marginals; weighted = "quadratic" gives Cohen's weighted kappa for graded labels (disagreements cost the
squared grade distance).  The 95% interval resamples the clusters the items come in (a query's chunks, and a
session's queries, are not independent draws): a percentile bootstrap over clusters, BOOTSTRAP_RESAMPLES
draws with the harness's seed; with fewer than MIN_CLUSTERS clusters, or when a resample has no spread, it is
"n too small" rather than a number.  A resample in which one judge gives every item the same label (and the other
does not) has kappa 0 whatever the labels are: when more than the interval's tail share of the resamples are such
(few items of the minority label, in few clusters), the percentile interval would only report that, e.g. the
useless [0, 1], so none is given and the method says why and how often.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from harness.evaluation.statistics import LEVEL, SEED

RESAMPLES = 2000
MIN_CLUSTERS = 5


def _kappa(table: np.ndarray, weighted: str | None) -> float:
    n = table.sum()
    if n == 0:
        return float("nan")
    k = table.shape[0]
    if weighted == "quadratic":
        i, j = np.indices((k, k))
        w = ((i - j) ** 2) / max(1, (k - 1) ** 2)  # disagreement weights
    else:
        w = 1.0 - np.eye(k)
    observed = (w * table).sum() / n
    expected = (w * np.outer(table.sum(axis=1), table.sum(axis=0))).sum() / (n * n)
    if expected == 0:
        return float("nan")
    return float(1.0 - observed / expected)


@dataclass
class Agreement:
    name: str  # e.g. "implicit vs explicit"
    categories: list[int]
    labels: tuple[str, str]  # the two judges
    items: int
    clusters: int
    table: list[list[int]]  # rows: the first judge's labels, columns: the second's
    observed: float  # share of items labelled alike
    kappa: float
    kappa_ci95: list[float]
    method: str
    weighted: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def agreement(name: str, pairs: Sequence[tuple[int, int]], clusters: Sequence[str], categories: Sequence[int],
              labels: tuple[str, str], *, weighted: str | None = None, resamples: int = RESAMPLES) -> Agreement:
    """The agreement table and kappa of paired labels, the interval over `clusters` (one label per pair)."""
    categories = list(categories)
    index = {c: i for i, c in enumerate(categories)}
    k = len(categories)
    by_cluster: dict[str, np.ndarray] = {}
    for (x, y), c in zip(pairs, clusters):
        t = by_cluster.setdefault(c, np.zeros((k, k)))
        t[index[x], index[y]] += 1
    total = sum(by_cluster.values(), np.zeros((k, k)))
    n = int(total.sum())
    kappa = _kappa(total, weighted)
    observed = float(np.trace(total) / n) if n else float("nan")
    tables = list(by_cluster.values())
    method = (f"percentile bootstrap over {len(tables)} clusters (the sessions the queries were asked in), "
              f"{resamples:,} resamples, seed {SEED}")
    low = high = float("nan")
    if len(tables) >= MIN_CLUSTERS and kappa == kappa:
        rng = np.random.default_rng(SEED)
        stack = np.stack(tables)
        draws = []
        degenerate = 0
        for _ in range(resamples):
            pick = rng.integers(0, len(tables), len(tables))
            table = stack[pick].sum(axis=0)
            constant = ((table.sum(axis=1) > 0).sum() < 2, (table.sum(axis=0) > 0).sum() < 2)
            if constant[0] != constant[1]:
                degenerate += 1  # one judge constant in this resample, not the other: kappa 0 whatever they say
            value = _kappa(table, weighted)
            if value == value:
                draws.append(value)
        alpha = (1 - LEVEL) / 2
        if degenerate > alpha * resamples:
            method += (f"; no interval: in {degenerate:,} of {resamples:,} resamples one judge gives every item the "
                       f"same label (kappa 0 whatever the other does), so the percentile interval "
                       f"would only say that; more judged items of the rarer label, in more clusters, are needed")
        elif len(draws) >= resamples // 2 and np.ptp(draws) > 0:
            low, high = (float(v) for v in np.quantile(draws, [alpha, 1 - alpha]))
        else:
            method += "; n too small (the resamples have no spread)"
    else:
        method += f"; n too small (fewer than {MIN_CLUSTERS} clusters, or kappa undefined)"
    return Agreement(name, categories, labels, n, len(tables), total.astype(int).tolist(), observed, kappa, [low, high],
                     method, weighted)
