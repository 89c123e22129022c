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
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from harness.evaluation.comparison import paired_difference
from harness.evaluation.statistics import (
    BOOTSTRAP_RESAMPLES,
    FLIPS,
    LEVEL,
    SEED,
    Interval,
    PairedTest,
    best_index,
    plural,
)
from harness.evaluation.verdicts import CANNOT_DECIDE, decide

FOLDS = 5
LEAVE_ONE_OUT_MAX = 20  # suites this small are cross-validated one query at a time

Selector = Callable[[np.ndarray], int]  # settings x training queries -> index of the chosen setting


def query_folds(query_ids: Sequence[str], kinds: Sequence[str | None] | None = None, *,
                groups: Sequence[str | None] | None = None, folds: int = FOLDS,
                leave_one_out_max: int = LEAVE_ONE_OUT_MAX, seed: int = SEED) -> list[np.ndarray]:
    """Held-out query indices of each fold (sorted; together they cover every query once).

    The unit dealt to folds is a group (`groups`: one label per query, e.g. the record a T-query and its
    paraphrases share, a conversation, a paragraph; None: the query alone), so queries that are not
    independent never sit on both sides of a fold.  Without groups every query is its own unit.

    units <= leave_one_out_max: one fold per unit (leave-one-out, or leave-one-group-out), in the order
    of the units' first queries.  Otherwise `folds` folds: within each stratum (a unit's kinds, in
    order of name) the units, sorted by their smallest query id, are shuffled with the seed and dealt
    round-robin, the deal continuing across strata, so every fold holds each kind in proportion.  The
    folds depend on the set of ids, kinds and groups, not on the order they are given in."""
    n = len(query_ids)
    if len(set(query_ids)) != n:
        raise ValueError("query_folds: query ids must be unique")
    if kinds is not None and len(kinds) != n:
        raise ValueError(f"query_folds: {len(kinds)} kinds for {n} queries")
    if groups is not None and len(groups) != n:
        raise ValueError(f"query_folds: {len(groups)} groups for {n} queries")
    members = fold_units(query_ids, groups)
    if len(members) <= leave_one_out_max:
        return [np.array(m) for m in members]
    if folds < 2:
        raise ValueError(f"query_folds: need at least 2 folds, got {folds}")
    rng = np.random.default_rng(seed)
    kind_of = [("" if kinds is None or kinds[i] is None else str(kinds[i])) for i in range(n)]
    members = sorted(members, key=lambda m: min(query_ids[i] for i in m))  # by id: order-free folds
    stratum = ["+".join(sorted({kind_of[i] for i in m})) for m in members]
    assignment = np.empty(n, dtype=int)
    dealt = 0
    for name in sorted(set(stratum)):
        units = [u for u in range(len(members)) if stratum[u] == name]
        for position, u in enumerate(rng.permutation(units)):
            assignment[members[u]] = (dealt + position) % folds
        dealt += len(units)
    return [np.flatnonzero(assignment == f) for f in range(folds)]


def fold_units(query_ids: Sequence[str], groups: Sequence[str | None] | None = None) -> list[list[int]]:
    """The units cross-validation deals: query indices per group (a query with no group alone), the
    units in the order of their first query."""
    n = len(query_ids)
    by: dict[str, list[int]] = {}
    for i in range(n):
        label = groups[i] if groups is not None and groups[i] is not None else None
        key = "g:" + str(label) if label is not None else "q:" + str(query_ids[i])
        by.setdefault(key, []).append(i)
    return [sorted(m) for m in by.values()]  # in order of their first query, as given


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
    test: PairedTest | None = None  # the paired sign-flip test behind p_value (its floor, units)
    units: int = 0  # resampling units: groups (clusters), or queries
    unit: str = "query"
    by_kind: dict[str, dict[str, object]] = field(default_factory=dict)  # the held-out gain per query kind
    carried_by: str | None = None  # "negatives" when the gain rests on negative queries alone

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

    @property
    def p_text(self) -> str:
        return self.test.p_text() if self.test is not None else f"{self.p_value:.3g}"

    @property
    def verdict(self) -> str:
        """The verdict column, naming what carries it: "abstention change: silences 7 of 10 negatives;
        retrieval +0.000", "retrieval change: held-out gain +0.0340", "cannot decide with 2 of 10
        conversations", "keep the configuration" (never a bare "change")."""
        if self.recommended is not None:
            answerable = self.by_kind.get("answerable")
            retrieval = f"retrieval {answerable['gain']['estimate']:+.3f}" if answerable else None  # type: ignore[index]
            if self.carried_by == "negatives":
                negative = self.by_kind[NEGATIVE]
                return "; ".join(x for x in (f"abstention change: silences {negative['gained']} of "
                                             f"{negative['queries']} negatives", retrieval) if x)
            return f"retrieval change: held-out gain {self.gain.estimate:+.4f}" + (f" ({retrieval} on answerable "
                                                                                   "queries)" if answerable else "")
        if self.test is not None and self.in_sample_best != self.configured \
                and any(c != self.configured for c in self.chosen):
            decision = decide(self.gain, self.test)
            if decision.outcome == CANNOT_DECIDE:
                return decision.text.split(" (")[0]
        return "keep the configuration"

    def as_dict(self) -> dict[str, object]:
        return {"objective": self.objective, "folds": len(self.folds), "chosen": list(self.chosen),
                "held_out_mean": self.held_out_mean, "configured_mean": self.configured_mean,
                "in_sample_best": self.in_sample_best, "in_sample_mean": self.in_sample_mean,
                "agreement": self.agreement, "gain": self.gain.as_dict(), "p_value": self.p_value,
                "p_floor": self.test.floor if self.test else None,
                "p_monte_carlo": self.test.monte_carlo if self.test else None,
                "units": self.units, "unit": self.unit, "by_kind": self.by_kind, "carried_by": self.carried_by,
                "recommended": self.recommended, "verdict": self.verdict, "reason": self.reason}


def cross_validate(select: Selector | None, score: np.ndarray | None, per_query_matrix: np.ndarray, *,
                   configured: int, query_ids: Sequence[str] | None = None,
                   kinds: Sequence[str | None] | None = None, groups: Sequence[str | None] | None = None,
                   unit: str = "group", categories: Sequence[object] | None = None, folds: int = FOLDS,
                   leave_one_out_max: int = LEAVE_ONE_OUT_MAX, objective: str = "mean per-query objective",
                   level: float = LEVEL, resamples: int = BOOTSTRAP_RESAMPLES, flips: int = FLIPS,
                   seed: int = SEED, support: object = "values") -> CrossValidation:
    """Cross-validate `select` over queries.

    per_query_matrix: settings x queries, the objective the selection reads; `select(training columns)`
    returns a setting index (None: best_on_average(prefer=configured)).  score: settings x queries, the
    per-query figure the held-out queries report (None: per_query_matrix itself, so the selection and the
    test read the same quantity).  query_ids (default "0", "1", ...), kinds and groups feed query_folds:
    with groups (a label per query; `unit` names them: "record", "conversation") whole groups are held
    out together, and the held-out gain's interval and sign-flip test resample groups.

    Returns the per-query held-out scores of the procedure, the setting chosen on each fold, the
    in-sample best, the held-out gain over the configured setting with its paired interval, and that
    gain split by query kind (and by `categories`, when given).  A setting (the in-sample best) is
    recommended only when the interval lies above zero and the paired sign-flip test on the same
    held-out values agrees; otherwise `reason` says why the configuration stays.  When the gain rests on
    the negative queries alone (answerable queries gain nothing measurable), `carried_by` is
    "negatives" and the reason says so.  support: what the per-query scores can be
    (statistics.bootstrap_difference; "values": rates when they lie in [0, 1])."""
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
    fold_list = query_folds(ids, kinds, groups=groups, folds=folds, leave_one_out_max=leave_one_out_max, seed=seed)
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
    labels = _labels(ids, groups)
    units = len(fold_units(ids, groups))
    unit_name = unit if units < n else "query"
    options = dict(level=level, resamples=resamples, seed=seed, support=support)
    paired = paired_difference(held_out, base, clusters=labels, unit=unit_name, flips=flips, **options)
    gain, test = paired.interval, paired.test
    by_kind = gain_by_kind(held_out, base, kinds, labels, unit_name, categories, flips=flips, **options)
    carried = carried_by(gain, by_kind)
    recommended, reason = _recommendation(gain, test, in_sample_best, configured, chosen,
                                          float(scores[in_sample_best].mean() - base.mean()), by_kind, carried,
                                          len(fold_list), units, unit_name)
    return CrossValidation(objective, fold_list, chosen, held_out, base, configured, in_sample_best,
                           float(scores[in_sample_best].mean()), gain, test.p_value, recommended, reason, test,
                           units, unit_name, by_kind, carried)


REPEAT_SEEDS = tuple(range(1, 21))  # repeated_gains: 20 further grouped splits, seeds 1-20 (the published one is SEED)


def repeated_gains(select: Selector | None, per_query_matrix: np.ndarray, *, configured: int,
                   query_ids: Sequence[str], kinds: Sequence[str | None] | None = None,
                   groups: Sequence[str | None] | None = None, folds: int = FOLDS,
                   leave_one_out_max: int = LEAVE_ONE_OUT_MAX, seeds: Sequence[int] = REPEAT_SEEDS,
                   **_: object) -> dict[str, object]:
    """The held-out gain (procedure minus configuration, mean over queries) over repeated grouped splits,
    one per seed: how much the published gain owes to its one split.  Leave-one-out has one split only
    (then the seeds all give it).  Returns the seeds, each split's gain, their mean, min and max."""
    matrix = np.asarray(per_query_matrix, dtype=float)
    select = select or best_on_average(prefer=configured)
    n = matrix.shape[1]
    everyone = np.ones(n, dtype=bool)
    gains = []
    for seed in seeds:
        held_out = np.empty(n)
        for fold in query_folds(list(query_ids), kinds, groups=groups, folds=folds,
                                leave_one_out_max=leave_one_out_max, seed=seed):
            train = everyone.copy()
            train[fold] = False
            held_out[fold] = matrix[int(select(matrix[:, train])), fold]
        gains.append(float((held_out - matrix[configured]).mean()))
    return {"seeds": list(seeds), "gains": gains, "mean": float(np.mean(gains)), "min": float(min(gains)),
            "max": float(max(gains))}


def _labels(ids: Sequence[str], groups: Sequence[str | None] | None) -> list[str] | None:
    """Cluster labels for the statistics: a query's group, or the query itself."""
    if groups is None:
        return None
    return [f"g:{g}" if g is not None else f"q:{q}" for q, g in zip(ids, groups)]


NEGATIVE = "negative"


def gain_by_kind(held_out: np.ndarray, base: np.ndarray, kinds: Sequence[str | None] | None,
                 labels: Sequence[str] | None, unit: str, categories: Sequence[object] | None = None, *,
                 level: float = LEVEL, resamples: int = BOOTSTRAP_RESAMPLES, flips: int = FLIPS,
                 seed: int = SEED, support: object = "values") -> dict[str, dict[str, object]]:
    """The held-out gain (held_out - base per query) within each query kind, within the answerable
    queries (every kind but negative) when negatives are present, and within each category: queries,
    how many gained and lost, the mean gain with its paired interval and the sign-flip p (at the unit of
    the whole comparison).  A kind with no queries is left out."""
    n = len(held_out)
    parts: dict[str, np.ndarray] = {}
    kind_of = [str(k) if k is not None else "query" for k in (kinds if kinds is not None else [None] * n)]
    for kind in sorted(set(kind_of)):
        parts[kind] = np.array([k == kind for k in kind_of])
    if NEGATIVE in parts and len(parts) > 1:
        parts["answerable"] = np.array([k != NEGATIVE for k in kind_of])
    if categories is not None:
        for value in sorted({c for c in categories if c is not None}, key=str):
            parts[f"category {value}"] = np.array([c == value for c in categories])
    out: dict[str, dict[str, object]] = {}
    for name, mask in parts.items():
        if not mask.any():
            continue
        a, b = held_out[mask], base[mask]
        sub = [labels[i] for i in np.flatnonzero(mask)] if labels is not None else None
        paired = paired_difference(a, b, clusters=sub, unit=unit, level=level, resamples=resamples, flips=flips,
                                   seed=seed, support=support)
        interval, test = paired.interval, paired.test
        out[name] = {"queries": int(mask.sum()), "gained": int((a > b).sum()), "lost": int((a < b).sum()),
                     "gain": interval.as_dict(), "p_value": test.p_value, "p_floor": test.floor,
                     "p_monte_carlo": test.monte_carlo, "p_text": test.p_text()}
    return out


def carried_by(gain: Interval, by_kind: dict[str, dict[str, object]]) -> str | None:
    """"negatives" when a positive held-out gain comes from negative queries going silent while the
    answerable queries' own gain is not positive by its interval; else None."""
    negative, answerable = by_kind.get(NEGATIVE), by_kind.get("answerable")
    if negative is None or answerable is None or not gain.estimate > 0:
        return None
    answerable_low = answerable["gain"]["ci95"][0] if "ci95" in answerable["gain"] else math.nan  # type: ignore[index]
    if negative["gained"] and not answerable_low > 0:  # type: ignore[operator]
        return "negatives"
    return None


def kind_sentence(by_kind: dict[str, dict[str, object]]) -> str:
    """"silences 7 of 10 negatives; on answerable queries +0.000 [-0.167, +0.167] (p = 1)"."""
    negative, answerable = by_kind.get(NEGATIVE, {}), by_kind.get("answerable", {})
    parts = []
    if negative:
        parts.append(f"silences {negative['gained']} of {negative['queries']} negatives"
                     + (f" (answers {negative['lost']} it kept silent)" if negative["lost"] else ""))
    if answerable:
        g = answerable["gain"]
        low, high = g["ci95"]  # type: ignore[index]
        span = f"[{low:+.3f}, {high:+.3f}]" if low == low else "(n too small)"
        parts.append(f"on answerable queries {g['estimate']:+.3f} {span} (p = {answerable['p_text']})")
    return "; ".join(parts)


def _recommendation(gain: Interval, test: PairedTest, best: int, configured: int, chosen: list[int],
                    in_sample_gain: float, by_kind: dict[str, dict[str, object]], carried: str | None,
                    folds: int, units: int, unit: str) -> tuple[int | None, str]:
    """The in-sample best is recommended by harness.evaluation.verdicts.decide: the held-out gain's
    interval lies above zero, the paired sign-flip test agrees (p < 1 - level), and the test's floor on
    these units lies below the level (else "cannot decide with G units").  Both are asked because with few queries that differ (7 wins,
    1 loss, 26 ties) a bootstrap or t interval can exclude zero while the exact test gives p = 0.07:
    the interval's normal-ish approximation is then the weaker of the two.  A gain carried by negative
    queries alone is said to be so: it is an abstention change, not a retrieval improvement."""
    pct = round(gain.level * 100)
    span = (f"{gain.estimate:+.4f} ({pct}% interval {gain.low:+.4f} to {gain.high:+.4f})" if gain.defined
            else f"{gain.estimate:+.4f} ({gain.method})")
    where = f"{folds} folds over {plural(unit, units)}"
    if best == configured:
        return None, "keep the configuration: it is already the best setting on all queries"
    if all(c == configured for c in chosen):
        return None, "keep the configuration: the selection keeps it on every fold's training queries"
    decision = decide(gain, test)
    if decision.outcome == CANNOT_DECIDE:
        return None, f"keep the configuration: {decision.text}; held-out gain {span}"
    if decision.better:
        why = (f"held-out gain over the configuration {span} excludes zero "
               f"(paired sign-flip p = {test.p_text()}; {where})")
        if carried == "negatives":
            why += (f"; the gain rests on the negative queries: {kind_sentence(by_kind)}, so it changes what "
                    "is left silent, not what is found")
        return best, why
    if gain.low > 0:
        return None, (f"keep the configuration: the held-out gain {span} excludes zero, but only "
                      f"{test.informative} {unit if test.informative == 1 else plural(unit, 2).split(' ', 1)[1]} "
                      f"differ and the paired sign-flip test gives p = {test.p_text()}")
    if gain.high < 0:
        return None, (f"keep the configuration: tuning loses on queries it did not see, held-out gain {span} "
                      f"(in-sample gain {in_sample_gain:+.4f})")
    return None, (f"keep the configuration: the held-out gain {span} includes zero; the in-sample gain "
                  f"({in_sample_gain:+.4f}) does not replicate on queries the selection did not see")
