"""Abstention: does the top-1 score tell "nothing relevant here" apart, and where should minScore sit?

An agent's memory search should stay silent when the memory holds nothing for the question (king78's
negative queries, LoCoMo's adversarial category 5) and answer when it does.  The only signal a
threshold (OpenClaw's minScore) can read is the score of what was found, so two questions are asked of
per-query arrays, one entry per query:

- top1: the final score of the first returned hit (NaN when nothing is returned: the search abstained
  by itself, which ranks below every score);
- relevant_score: the score of the first relevant hit among the returned ones (NaN when none is relevant);
- answerable: True for queries with something relevant in memory (suite, paraphrases), False for the
  "nothing relevant" ones.

1. **Separation**: the AUROC of the top-1 score as a "something relevant" signal, in its Mann-Whitney
   form: the probability that an answerable query's top-1 score exceeds an unanswerable query's, ties
   counting one half.  0.5 = no signal (no threshold does better than chance), 1.0 = a threshold
   separates them perfectly.  The interval is a bootstrap that resamples each class within itself.
2. **A threshold**: keep the hits scoring >= t (OpenClaw's rule, without its keyword fallback: a strict
   minScore).  Then an answerable query is *answered correctly* when its relevant hit scores >= t, an
   unanswerable one is *silent* when its top-1 scores < t, and the stated utility is

       U(t) = (1 - w) x share of answerable queries answered correctly + w x share of unanswerable silent

   with w = ABSTENTION_WEIGHT = 0.5 by default: a wrong answer to an unanswerable question costs as much
   as a missed answer to an answerable one, per class, whatever the classes' sizes (a count-weighted
   mean would let LoCoMo's 1,536 answerable questions outvote its 446 adversarial ones).  Answering an
   answerable query with irrelevant hits only earns 0, like silence.  Per query, U is a mean of
   `utility_values`, so the sweep's selection and cross-validation (harness.evaluation.cross_validation)
   read it as they read any per-query objective.
3. **A recommendation**: `calibrate` chooses the threshold on training queries (the middle of the
   plateau of best U, on an even grid over the observed scores), scores it on held-out ones, and
   recommends it only when its held-out U beats the configured minScore and also the two policies
   that need no score, answering everything (minScore 0) and staying silent on everything (U = w),
   each by harness.evaluation.verdicts.decide: interval and paired test at the data's unit, on units
   that can reach the level (else "cannot decide with G units").  The verdict names what carries it
   (how many negatives it silences, what it does to the answerable queries).

    >>> cal = calibrate(top1, relevant_score, answerable, ids, kinds, configured=0.35)
    >>> cal.auroc                      # Interval(estimate, low, high, ...)
    >>> cal.best_threshold, cal.cv.held_out_mean, cal.cv.gain
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from harness.evaluation.comparison import paired_difference
from harness.evaluation.cross_validation import (
    FOLDS,
    LEAVE_ONE_OUT_MAX,
    CrossValidation,
    cross_validate,
)
from harness.evaluation.statistics import (
    BOOTSTRAP_RESAMPLES,
    LEVEL,
    MIN_CLUSTERS,
    SEED,
    Interval,
    PairedTest,
    plural,
)
from harness.evaluation.verdicts import CANNOT_DECIDE, decide

ABSTENTION_WEIGHT = 0.5
MAX_THRESHOLDS = 400  # evenly spaced candidate thresholds over the observed scores


def utility_description(weight: float = ABSTENTION_WEIGHT) -> str:
    return (f"abstention utility U = {1 - weight:g} x share of answerable queries answered correctly (a relevant "
            f"hit among the returned ones) + {weight:g} x share of unanswerable queries left silent (nothing "
            "returned); per query: an answerable query's 0/1 scaled by (1-w)·n/n_answerable, an unanswerable "
            "one's by w·n/n_unanswerable, so the mean over queries is U")


def _scores(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"{name}: expected one score per query (1-D), got shape {x.shape}")
    return np.where(np.isnan(x), -np.inf, x)  # nothing returned ranks below every score


def auroc(answerable: Sequence[float] | np.ndarray, unanswerable: Sequence[float] | np.ndarray) -> float:
    """P(top-1 of an answerable query > top-1 of an unanswerable one) + 1/2 P(equal): the Mann-Whitney U
    of the answerable scores divided by n_answerable x n_unanswerable.  NaN (nothing returned) ranks
    lowest.  NaN when a class is empty."""
    pos, neg = _scores(answerable, "answerable"), _scores(unanswerable, "unanswerable")
    if len(pos) == 0 or len(neg) == 0:
        return math.nan
    return float(_auroc_along(pos, neg, axis=-1))


def _auroc_along(pos: np.ndarray, neg: np.ndarray, axis: int = -1) -> np.ndarray:
    """AUROC along `axis` (vectorised for the bootstrap's batches): average ranks of the pooled scores,
    U = sum of the answerable ranks - n1(n1 + 1)/2."""
    n1, n0 = pos.shape[axis], neg.shape[axis]
    ranks = stats.rankdata(np.concatenate([pos, neg], axis=axis), axis=axis)
    u = np.take(ranks, np.arange(n1), axis=axis).sum(axis=axis) - n1 * (n1 + 1) / 2
    return u / (n1 * n0)


def bootstrap_auroc(answerable: Sequence[float] | np.ndarray, unanswerable: Sequence[float] | np.ndarray, *,
                    level: float = LEVEL, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED,
                    clusters: tuple[Sequence[str], Sequence[str]] | None = None, unit: str = "query") -> Interval:
    """AUROC with a bootstrap interval that resamples the answerable and the unanswerable queries each
    within their own class (scipy.stats.bootstrap, two independent samples), percentile method: BCa's
    jackknife over two samples of ~2,000 costs more than the interval gains here.  With `clusters`
    (labels of the answerable and of the unanswerable queries, e.g. their conversations) the unit is the
    cluster: a cluster jackknife (leave one cluster out, both classes) with a t interval on G - 1 degrees
    of freedom, which keeps its level with few clusters where a percentile cluster bootstrap is narrow.
    A sample whose scores are all equal has no spread to resample: "n too small"."""
    pos, neg = _scores(answerable, "answerable"), _scores(unanswerable, "unanswerable")
    estimate = auroc(pos, neg)
    if math.isnan(estimate):
        return Interval(math.nan, math.nan, math.nan, level, "a class has no queries")
    finite = np.concatenate([pos, neg])
    if np.all(finite == finite[0]):
        return Interval(estimate, math.nan, math.nan, level, "n too small: every query has the same top-1 score",
                        len(finite))
    if clusters is not None:
        labels_pos, labels_neg = np.asarray(clusters[0], dtype=object), np.asarray(clusters[1], dtype=object)
        groups = sorted(set(labels_pos) | set(labels_neg), key=str)
        if len(groups) < len(pos) + len(neg):
            return _cluster_jackknife_auroc(pos, neg, labels_pos, labels_neg, groups, estimate, level, unit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = stats.bootstrap((pos, neg), _auroc_along, n_resamples=resamples, confidence_level=level,
                                 method="percentile", vectorized=True, batch=200, rng=np.random.default_rng(seed))
    low, high = result.confidence_interval
    return Interval(estimate, float(low), float(high), level,
                    f"percentile bootstrap, classes resampled separately ({len(pos)} answerable, {len(neg)} "
                    f"unanswerable; {resamples:,} resamples, seed {seed})", len(pos) + len(neg))


def _cluster_jackknife_auroc(pos: np.ndarray, neg: np.ndarray, labels_pos: np.ndarray, labels_neg: np.ndarray,
                             groups: list[Any], estimate: float, level: float, unit: str) -> Interval:
    g = len(groups)
    if g < MIN_CLUSTERS:
        return Interval(estimate, math.nan, math.nan, level, f"n too small: {plural(unit, g)}", g, unit)
    leave_out = []
    for group in groups:
        p, n = pos[labels_pos != group], neg[labels_neg != group]
        leave_out.append(float(_auroc_along(p, n)) if len(p) and len(n) else math.nan)
    values = np.array([v for v in leave_out if v == v])
    if len(values) < 2:
        return Interval(estimate, math.nan, math.nan, level, f"n too small: {plural(unit, g)}", g, unit)
    se = math.sqrt((len(values) - 1) / len(values) * float(((values - values.mean()) ** 2).sum()))
    if se <= 1e-12:  # leaving any cluster out changes nothing: no spread to estimate, not a point interval
        return Interval(estimate, math.nan, math.nan, level, f"n too small: every leave-one-{unit}-out AUROC is "
                        f"the same ({plural(unit, g)})", g, unit)
    half = float(stats.t.ppf(0.5 + level / 2, len(values) - 1)) * se
    return Interval(estimate, max(0.0, estimate - half), min(1.0, estimate + half), level,
                    f"cluster jackknife t interval over {plural(unit, g)} ({len(pos)} answerable, {len(neg)} "
                    f"unanswerable; t with {len(values) - 1} degrees of freedom)", g, unit)


def utility_values(answered_correctly: np.ndarray, silent: np.ndarray, answerable: Sequence[bool] | np.ndarray,
                   weight: float = ABSTENTION_WEIGHT) -> np.ndarray:
    """Per-query utility, settings x queries (or one row): the mean over a row's queries is U (see the
    module docstring).  answered_correctly is read for answerable queries, silent for the others."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"abstention weight must lie in [0, 1], got {weight}")
    mask = np.asarray(answerable, dtype=bool)
    correct = np.atleast_2d(np.asarray(answered_correctly, dtype=float))
    quiet = np.atleast_2d(np.asarray(silent, dtype=float))
    n, n_pos = len(mask), int(mask.sum())
    n_neg = n - n_pos
    if correct.shape[-1] != n or quiet.shape[-1] != n:
        raise ValueError(f"utility_values: {correct.shape[-1]} / {quiet.shape[-1]} values for {n} queries")
    pos_scale = (1 - weight) * n / n_pos if n_pos else 0.0
    neg_scale = weight * n / n_neg if n_neg else 0.0
    return np.where(mask, correct * pos_scale, quiet * neg_scale)


def threshold_matrix(thresholds: Sequence[float], top1: np.ndarray, relevant_score: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(answered correctly, silent), thresholds x queries, for a strict minScore t: hits scoring >= t kept."""
    t = np.asarray(thresholds, dtype=float)[:, None]
    top = _scores(top1, "top1")[None, :]
    rel = _scores(relevant_score, "relevant_score")[None, :]
    return rel >= t, ~(top >= t)


def candidate_thresholds(top1: np.ndarray, relevant_score: np.ndarray, configured: float | None = None,
                         steps: int = MAX_THRESHOLDS) -> np.ndarray:
    """`steps` evenly spaced thresholds from just below the lowest finite score to just above the
    highest (so one keeps every returned hit and one silences every query), plus 0 and the configured
    threshold.  Evenly spaced rather than at the observed scores: a plateau of equal utility then
    spans many candidates, and middle_of_best can take its middle (a threshold at a training query's
    own score has no margin for the queries it has not seen).  Scale-free, so it serves weighted 0-1
    scores and RRF's ~0.01-0.03 alike."""
    pooled = np.concatenate([_scores(top1, "top1"), _scores(relevant_score, "relevant_score")])
    finite = pooled[np.isfinite(pooled)]
    extra = [0.0] + ([] if configured is None else [float(configured)])
    if len(finite) == 0:
        return np.unique(extra)
    low, high = float(finite.min()), float(finite.max())
    pad = (high - low) / steps or abs(high) * 1e-9 or 1e-9
    return np.unique(np.concatenate([np.linspace(low - pad, high + pad, steps), extra]))


def middle_of_best(prefer: int | None = None, tolerance: float = 1e-12):
    """Selector for cross_validate over thresholds sorted ascending: the highest mean utility; among
    thresholds tied within `tolerance`, `prefer` (the configured one) if tied, else the middle of the
    longest run of consecutive tied thresholds (the first such run): a plateau of equal in-sample
    utility says nothing about where in it unseen queries fall, and its middle leaves them the widest
    margin on both sides, where its lower end (best_on_average's choice) sits on a training score."""
    def select(training: np.ndarray) -> int:
        means = training.mean(axis=1)
        tied = np.flatnonzero(means >= means.max() - tolerance)
        if prefer is not None and prefer in tied:
            return int(prefer)
        runs = np.split(tied, np.flatnonzero(np.diff(tied) > 1) + 1)
        longest = max(runs, key=len)  # max keeps the first of equally long runs
        return int(longest[(len(longest) - 1) // 2])
    return select


@dataclass(frozen=True)
class Calibration:
    """What calibrate found for one system on one data set."""

    weight: float
    auroc: Interval
    curve: pd.DataFrame  # threshold, answered_correctly, silent, utility (in-sample, every candidate)
    configured_threshold: float | None
    best_threshold: float  # in-sample maximiser of U (ties: the configured one, else the middle one)
    cv: CrossValidation  # the threshold chosen on training queries, scored on held-out ones
    answerable: int
    unanswerable: int
    # held-out U of the procedure against each threshold that needs no score (paired bootstrap intervals):
    # "answer_all" (minScore 0) and "silent_all" (above every score)
    versus_trivial: dict[str, Interval]
    versus_trivial_tests: dict[str, PairedTest] = field(default_factory=dict)  # the paired tests behind them

    def trivial_decisions(self) -> dict[str, Any]:
        return {name: decide(g, self.versus_trivial_tests[name]) for name, g in self.versus_trivial.items()
                if name in self.versus_trivial_tests}

    @property
    def recommended_threshold(self) -> float | None:
        """The in-sample best, when cross-validation recommends it over the configured threshold and its
        held-out gain over both trivial policies is decided positive (verdicts.decide)."""
        decisions = self.trivial_decisions()
        if self.cv.recommended is None or len(decisions) < len(self.versus_trivial) \
                or not all(d.better for d in decisions.values()):
            return None
        return float(self.curve["threshold"][self.cv.recommended])

    @property
    def reason(self) -> str:
        decisions = self.trivial_decisions()
        beaten = [name for name, d in decisions.items() if not d.better]
        if self.cv.recommended is not None and beaten:
            return (f"no threshold: the held-out gain over the configuration holds ({self.cv.reason}), but not "
                    f"over {' or '.join(n.replace('_', ' ') for n in beaten)} (" + "; ".join(
                        f"{n.replace('_', ' ')}: {d.text}" for n, d in decisions.items()) + ")")
        return self.cv.reason

    def answerable_change(self) -> float | None:
        """Held-out change in the share of answerable queries answered correctly (the answerable part of
        the utility gain, unscaled)."""
        part = self.cv.by_kind.get("answerable")
        if part is None or self.answerable == 0:
            return None
        scale = (1 - self.weight) * (self.answerable + self.unanswerable) / self.answerable
        return float(part["gain"]["estimate"]) / scale if scale else None  # type: ignore[index]

    @property
    def verdict(self) -> str:
        """The verdict column: what is recommended and what carries it, or why nothing is."""
        threshold = self.recommended_threshold
        if threshold is not None:
            negative = self.cv.by_kind.get("negative", {})
            change = self.answerable_change()
            parts = [f"abstention change: minScore {threshold:.4g}"]
            if negative:
                parts.append(f"silences {negative['gained']} of {negative['queries']} negatives")
            if change is not None:
                parts.append(f"answered correctly {change:+.3f} on answerable queries")
            return "; ".join(parts)
        decisions = self.trivial_decisions()
        if self.cv.recommended is not None:
            undecided = [(n, d) for n, d in decisions.items() if d.outcome == CANNOT_DECIDE]
            if undecided:
                name, d = undecided[0]
                return f"{d.text.split(' (')[0]} against {name.replace('_', ' ')}"
            return "none: does not beat " + " or ".join(n.replace("_", " ") for n, d in decisions.items()
                                                         if not d.better)
        cv_decision = decide(self.cv.gain, self.cv.test) if self.cv.test is not None else None
        if self.cv.in_sample_best == self.cv.configured or all(c == self.cv.configured for c in self.cv.chosen):
            return "none: the configured minScore is the best"
        if cv_decision is not None and cv_decision.outcome == CANNOT_DECIDE:
            return cv_decision.text.split(" (")[0]
        if cv_decision is not None and cv_decision.outcome == "worse":
            return "none: a tuned threshold loses held out"
        return "none: held-out gain not shown"

    def row(self, threshold: float) -> dict[str, float]:
        i = int(np.argmin(np.abs(self.curve["threshold"].to_numpy() - threshold)))
        return {k: float(v) for k, v in self.curve.iloc[i].items()}

    def as_dict(self) -> dict[str, object]:
        fold_thresholds = [float(self.curve["threshold"][c]) for c in self.cv.chosen]
        return {"weight": self.weight, "utility": utility_description(self.weight),
                "answerable": self.answerable, "unanswerable": self.unanswerable,
                "auroc": self.auroc.as_dict(), "configured_threshold": self.configured_threshold,
                "configured": self.row(0.0 if self.configured_threshold is None else self.configured_threshold),
                # the two thresholds that need no score: a tuned one is worth something only above both
                "answer_all_utility": self.row(0.0)["utility"], "silent_all_utility": self.weight,
                "best_threshold": self.best_threshold, "best": self.row(self.best_threshold),
                "fold_thresholds": {"min": min(fold_thresholds), "max": max(fold_thresholds),
                                    "median": float(np.median(fold_thresholds))},
                "versus_trivial": {k: v.as_dict() for k, v in self.versus_trivial.items()},
                "versus_trivial_tests": {k: {"p_value": t.p_value, "p_floor": t.floor, "p_text": t.p_text(),
                                             "informative": t.informative, "units": t.units, "unit": t.unit}
                                         for k, t in self.versus_trivial_tests.items()},
                "recommended_threshold": self.recommended_threshold, "verdict": self.verdict, "reason": self.reason,
                "cv": self.cv.as_dict()}


def calibrate(top1: Sequence[float], relevant_score: Sequence[float], answerable: Sequence[bool],
              query_ids: Sequence[str], kinds: Sequence[str] | None = None, *, configured: float | None = None,
              weight: float = ABSTENTION_WEIGHT, thresholds: Sequence[float] | None = None, folds: int = FOLDS,
              resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED, groups: Sequence[str | None] | None = None,
              unit: str = "group") -> Calibration:
    """AUROC of the top-1 score with its interval, U(t) over candidate thresholds, the in-sample best
    threshold, and the threshold choice cross-validated over queries against `configured` (None: 0,
    keep everything) by harness.evaluation.cross_validation, so the recommendation is judged on queries
    the choice did not see (leave-one-out up to LEAVE_ONE_OUT_MAX queries, else `folds` folds
    stratified by kind: answerable vs not when no kinds are given).  `groups` (a cluster per query, None:
    alone; `unit` names them) make folds hold out whole clusters and every interval and test resample
    clusters."""
    top = _scores(top1, "top1")
    rel = _scores(relevant_score, "relevant_score")
    mask = np.asarray(answerable, dtype=bool)
    if not (len(top) == len(rel) == len(mask) == len(query_ids)):
        raise ValueError("calibrate: top1, relevant_score, answerable and query_ids need one entry per query")
    if mask.all() or not mask.any():
        raise ValueError("calibrate: needs both answerable and unanswerable queries")
    grid = np.unique(np.asarray(thresholds, dtype=float)) if thresholds is not None else \
        candidate_thresholds(top, rel, configured)
    reference = 0.0 if configured is None else float(configured)
    finite = np.concatenate([top[np.isfinite(top)], rel[np.isfinite(rel)]])
    above = float(np.nextafter(finite.max(), np.inf)) if len(finite) else 1.0
    grid = np.unique(np.concatenate([grid, [0.0, reference, max(above, float(grid.max()))]]))  # both trivial ends
    correct, silent = threshold_matrix(grid, top, rel)
    values = utility_values(correct, silent, mask, weight)
    curve = pd.DataFrame({"threshold": grid, "answered_correctly": correct[:, mask].mean(axis=1),
                          "silent": silent[:, ~mask].mean(axis=1), "utility": values.mean(axis=1)})
    configured_index = int(np.flatnonzero(grid == reference)[0])
    n_pos = int(mask.sum())
    # what a per-query utility can be: 0, or its class's scale (utility_values), whatever the sample holds
    support = (0.0, max((1 - weight) * len(mask) / n_pos, weight * len(mask) / (len(mask) - n_pos)))
    strata = list(kinds) if kinds is not None else ["answerable" if m else "unanswerable" for m in mask]
    cv = cross_validate(middle_of_best(prefer=configured_index), None, values, configured=configured_index,
                        query_ids=query_ids, kinds=strata, groups=groups, unit=unit, folds=folds,
                        leave_one_out_max=LEAVE_ONE_OUT_MAX, objective=utility_description(weight),
                        resamples=resamples, seed=seed, support=support)
    trivial = {"answer_all": int(np.flatnonzero(grid == 0.0)[0]), "silent_all": len(grid) - 1}
    labels = [f"g:{g}" if g is not None else f"q:{q}" for q, g in zip(query_ids, groups)] if groups is not None \
        and any(g is not None for g in groups) else None
    at_unit = dict(clusters=labels, unit=cv.unit)

    paired = {name: paired_difference(cv.held_out, values[i], resamples=resamples, seed=seed, support=support,
                                      **at_unit) for name, i in trivial.items()}
    split = None if labels is None else ([l for l, m in zip(labels, mask) if m], [l for l, m in zip(labels, mask) if not m])
    auroc_interval = bootstrap_auroc(top[mask], top[~mask], resamples=resamples, seed=seed, clusters=split, unit=cv.unit)
    return Calibration(weight, auroc_interval, curve, configured, float(grid[cv.in_sample_best]), cv,
                       int(mask.sum()), int((~mask).sum()), {k: v.interval for k, v in paired.items()},
                       {k: v.test for k, v in paired.items()})
