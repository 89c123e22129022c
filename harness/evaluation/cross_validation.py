"""Cross-validation of a selection procedure over queries: is tuning worth it on queries it never saw?

A sweep chooses a setting by an objective measured on some queries; the score of that choice on the
same queries is optimistic (it is the maximum of many noisy means).  Here the choice is made on the
training queries of each fold and scored on the held-out ones, so every query's figure comes from a
setting chosen without it:

    >>> cv = cross_validate(best_on_average(prefer=configured), None, objective_matrix,
    ...                     configured=configured, query_ids=ids, kinds=kinds,
    ...                     objective="per-query pass (top-1 relevant and >= minScore)")
    >>> cv.held_out.mean(), cv.in_sample_mean, cv.gain     # procedure vs optimistic in-sample figure
    >>> cv.recommended, cv.reason                          # a setting only when the gain's CI excludes 0

Folds are stratified by query kind when kinds are given, leave-one-out for 20 queries or fewer, and
deterministic (seeded shuffles of the queries sorted by id).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from harness.evaluation.statistics import (
    BOOTSTRAP_RESAMPLES,
    FLIPS,
    LEVEL,
    SEED,
    Interval,
    PairedTest,
    best_index,
    bootstrap_difference,
    sign_flip_test,
)

FOLDS = 5
LEAVE_ONE_OUT_MAX = 20  # suites this small are cross-validated one query at a time

Selector = Callable[[np.ndarray], int]  # settings x training queries -> index of the chosen setting


def query_folds(query_ids: Sequence[str], kinds: Sequence[str | None] | None = None, *, folds: int = FOLDS,
                leave_one_out_max: int = LEAVE_ONE_OUT_MAX, seed: int = SEED) -> list[np.ndarray]:
    """Held-out query indices of each fold (sorted; together they cover every query once).

    n <= leave_one_out_max: one fold per query.  Otherwise `folds` folds: within each kind (in order of
    kind name) the queries, sorted by id, are shuffled with the seed and dealt round-robin, the deal
    continuing across kinds, so every fold holds each kind in proportion and fold sizes differ by at
    most one.  The folds depend on the set of ids and kinds, not on the order they are given in."""
    n = len(query_ids)
    if len(set(query_ids)) != n:
        raise ValueError("query_folds: query ids must be unique")
    if kinds is not None and len(kinds) != n:
        raise ValueError(f"query_folds: {len(kinds)} kinds for {n} queries")
    if n <= leave_one_out_max:
        return [np.array([i]) for i in range(n)]
    if folds < 2:
        raise ValueError(f"query_folds: need at least 2 folds, got {folds}")
    rng = np.random.default_rng(seed)
    kind_of = [("" if kinds is None or kinds[i] is None else str(kinds[i])) for i in range(n)]
    assignment = np.empty(n, dtype=int)
    dealt = 0
    for kind in sorted(set(kind_of)):
        members = sorted((i for i in range(n) if kind_of[i] == kind), key=lambda i: query_ids[i])
        for position, i in enumerate(rng.permutation(members)):
            assignment[i] = (dealt + position) % folds
        dealt += len(members)
    return [np.flatnonzero(assignment == f) for f in range(folds)]


def best_on_average(prefer: int | None = None, tolerance: float = 1e-12) -> Selector:
    """The selection the sweep makes: the setting with the highest mean objective over the given queries;
    among settings tied within `tolerance`, `prefer` (the configuration) if it is one of them, else the
    lowest index."""
    def select(training: np.ndarray) -> int:
        return best_index(training.mean(axis=1), prefer=prefer, tolerance=tolerance)
    return select


@dataclass(frozen=True)
class CrossValidation:
    """Held-out figures of a selection procedure against the configured setting."""

    objective: str  # the per-query quantity the selection maximises
    folds: list[np.ndarray]  # held-out query indices per fold
    chosen: list[int]  # the setting chosen on each fold's training queries
    held_out: np.ndarray  # per query: score of the setting chosen without that query
    configured_scores: np.ndarray  # per query: score of the configured setting
    configured: int
    in_sample_best: int  # the setting chosen on all queries (what would be recommended)
    in_sample_mean: float  # its mean score on those same queries: optimistic
    gain: Interval  # mean(held_out - configured) with its paired bootstrap interval
    p_value: float  # paired sign-flip test of held_out against configured
    recommended: int | None  # in_sample_best when the held-out gain is positive by interval and test, else None
    reason: str

    @property
    def held_out_mean(self) -> float:
        return float(self.held_out.mean()) if len(self.held_out) else math.nan

    @property
    def configured_mean(self) -> float:
        return float(self.configured_scores.mean()) if len(self.configured_scores) else math.nan

    @property
    def agreement(self) -> float:
        """Share of folds whose choice is the in-sample best (1.0: the choice does not hang on a few queries)."""
        return sum(c == self.in_sample_best for c in self.chosen) / len(self.chosen) if self.chosen else math.nan

    def as_dict(self) -> dict[str, object]:
        return {"objective": self.objective, "folds": len(self.folds), "chosen": list(self.chosen),
                "held_out_mean": self.held_out_mean, "configured_mean": self.configured_mean,
                "in_sample_best": self.in_sample_best, "in_sample_mean": self.in_sample_mean,
                "agreement": self.agreement, "gain": self.gain.as_dict(), "p_value": self.p_value,
                "recommended": self.recommended, "reason": self.reason}


def cross_validate(select: Selector | None, score: np.ndarray | None, per_query_matrix: np.ndarray, *,
                   configured: int, query_ids: Sequence[str] | None = None,
                   kinds: Sequence[str | None] | None = None, folds: int = FOLDS,
                   leave_one_out_max: int = LEAVE_ONE_OUT_MAX, objective: str = "mean per-query objective",
                   level: float = LEVEL, resamples: int = BOOTSTRAP_RESAMPLES, flips: int = FLIPS,
                   seed: int = SEED) -> CrossValidation:
    """Cross-validate `select` over queries.

    per_query_matrix: settings x queries, the objective the selection reads; `select(training columns)`
    returns a setting index (None: best_on_average(prefer=configured)).  score: settings x queries, the
    per-query figure the held-out queries report (None: per_query_matrix itself, so the selection and the
    test read the same quantity).  query_ids (default "0", "1", ...) and kinds feed query_folds.

    Returns the per-query held-out scores of the procedure, the setting chosen on each fold, the
    in-sample best, and the held-out gain over the configured setting with a paired bootstrap interval.
    A setting (the in-sample best) is recommended only when that interval lies above zero and the paired
    sign-flip test on the same held-out values agrees; otherwise `reason` says why the configuration stays."""
    objective_matrix = np.asarray(per_query_matrix, dtype=float)
    scores = objective_matrix if score is None else np.asarray(score, dtype=float)
    if objective_matrix.ndim != 2 or scores.shape != objective_matrix.shape:
        raise ValueError(f"cross_validate: per_query_matrix {objective_matrix.shape} and score {scores.shape} "
                         "must both be settings x queries")
    settings, n = objective_matrix.shape
    if not 0 <= configured < settings:
        raise ValueError(f"configured setting {configured} is not one of the {settings} settings")
    if n == 0:
        raise ValueError("cross_validate: no queries")
    select = select or best_on_average(prefer=configured)
    ids = list(query_ids) if query_ids is not None else [str(i) for i in range(n)]
    if len(ids) != n:
        raise ValueError(f"cross_validate: {len(ids)} query ids for {n} queries")
    fold_list = query_folds(ids, kinds, folds=folds, leave_one_out_max=leave_one_out_max, seed=seed)
    held_out = np.empty(n)
    chosen = []
    everyone = np.ones(n, dtype=bool)
    for fold in fold_list:
        train = everyone.copy()
        train[fold] = False
        setting = int(select(objective_matrix[:, train]))
        chosen.append(setting)
        held_out[fold] = scores[setting, fold]
    in_sample_best = int(select(objective_matrix))
    base = scores[configured]
    gain = bootstrap_difference(held_out, base, level=level, resamples=resamples, seed=seed)
    test = sign_flip_test(held_out, base, flips=flips, seed=seed)
    recommended, reason = _recommendation(gain, test, in_sample_best, configured, chosen,
                                          float(scores[in_sample_best].mean() - base.mean()))
    return CrossValidation(objective, fold_list, chosen, held_out, base, configured, in_sample_best,
                           float(scores[in_sample_best].mean()), gain, test.p_value, recommended, reason)


def _recommendation(gain: Interval, test: PairedTest, best: int, configured: int, chosen: list[int],
                    in_sample_gain: float) -> tuple[int | None, str]:
    """The in-sample best is recommended when the held-out gain's interval lies above zero and the paired
    sign-flip test agrees (p < 1 - level).  Both are asked because with few queries that differ (7 wins,
    1 loss, 26 ties) a bootstrap or t interval can exclude zero while the exact test gives p = 0.07:
    the interval's normal-ish approximation is then the weaker of the two."""
    pct = round(gain.level * 100)
    span = f"{gain.estimate:+.4f} ({pct}% interval {gain.low:+.4f} to {gain.high:+.4f})"
    if best == configured:
        return None, "keep the configuration: it is already the best setting on all queries"
    if all(c == configured for c in chosen):
        return None, "keep the configuration: the selection keeps it on every fold's training queries"
    if gain.low > 0 and test.p_value < 1 - gain.level:
        return best, (f"held-out gain over the configuration {span} excludes zero "
                      f"(paired sign-flip p = {test.p_value:.3g})")
    if gain.low > 0:
        return None, (f"keep the configuration: the held-out gain {span} excludes zero, but only "
                      f"{test.informative} queries differ and the paired sign-flip test gives p = {test.p_value:.3g}")
    if gain.high < 0:
        return None, (f"keep the configuration: tuning loses on queries it did not see, held-out gain {span} "
                      f"(in-sample gain {in_sample_gain:+.4f})")
    return None, (f"keep the configuration: the held-out gain {span} includes zero; the in-sample gain "
                  f"({in_sample_gain:+.4f}) does not replicate on queries the selection did not see")
