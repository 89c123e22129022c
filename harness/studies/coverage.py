"""Do the harness's intervals and tests hold their stated levels?  Measured in simulated worlds whose truth
is known (`make statistics`, `python -m harness.cli.coverage` -> reports/statistics/; tests/test_coverage.py
asserts the same figures at the default size in `make test`).

    intervals   exact coverage of the pass-rate interval at n = 12 over true rates 0.5-0.95 (every
                outcome enumerated), the coverage of small samples of reciprocal ranks (n = 12), and the
                coverage on LoCoMo-like clustered data (10 conversations of LoCoMo's sizes, the
                intra-cluster correlation measured on LoCoMo)
    selection   the sweep's worlds of 1,008 equally good settings: how often the old naive test, the
                max-statistic test and the cross-validated recommendation say "better" (false
                positives), with independent queries and with queries in groups (a T-query and its
                paraphrases) whose folds and flips are grouped; the power where one family is better
    gate        the statistical gate rules on two runs of one system: how often `interval` (two-sample
                permutation) and `paired` (sign flips) fail a run that did not regress

    >>> doc = measure("default")      # seconds; measure("full") for the opt-in sizes (minutes)
    >>> write_report(doc, "reports/statistics")   # harness.reporting.coverage
"""
from __future__ import annotations

import math
import time
from typing import Any, Sequence

import numpy as np
from scipy import stats

from harness.evaluation.cross_validation import cross_validate
from harness.evaluation.statistics import (
    bootstrap_mean,
    bootstrap_pass_rate,
    max_statistic_test,
    sign_flip_test,
    two_sample_test,
)

ALPHA = 0.05
LOCOMO_SIZES = (150, 81, 152, 199, 178, 123, 150, 191, 156, 156)  # questions per conversation (suite)
LOCOMO_ICC = 0.008  # intra-conversation correlation of recall_any@10 (openclaw-2026.02), ANOVA estimator
RR_VALUES = (1.0, 0.5, 1 / 3, 0.25, 0.0)
RR_WORLDS = ((0.55, 0.15, 0.1, 0.05, 0.15), (0.85, 0.05, 0.03, 0.02, 0.05), (0.3, 0.2, 0.2, 0.1, 0.2))
SIZES = {
    # reps of each simulated world; "full" is opt-in (HARNESS_FULL_STATISTICS=1, `make statistics SIZE=full`)
    "default": {"rr": 1000, "clustered": 600, "null": 200, "effect": 100, "grouped": 200, "gate": 400, "flips": 100,
                "resamples": 1000},
    "full": {"rr": 5000, "clustered": 4000, "null": 1000, "effect": 400, "grouped": 1000, "gate": 2000, "flips": 500,
             "resamples": 2000},
    # what reports/statistics/ publishes (`make statistics`): >= 2,000 worlds behind every rate, so a rate near
    # 5% carries a Monte Carlo standard error under 0.5 points (every rate prints its own)
    "published": {"rr": 2000, "clustered": 2000, "null": 2000, "effect": 2000, "grouped": 2000, "gate": 2000,
                  "flips": 100, "resamples": 1000},
}


# --- intervals ------------------------------------------------------------------------------------------

def binomial_coverage(n: int = 12, rates: Sequence[float] = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)) -> dict[str, Any]:
    """The pass-rate interval's exact coverage at n queries: sum over k of P(k passes | p) when the
    interval made from k passes contains p (no simulation: every outcome is enumerated).  Beside it, what
    the plain percentile bootstrap the harness printed before would cover (a constant sample collapses)."""
    ours = {k: bootstrap_pass_rate([True] * k + [False] * (n - k)) for k in range(n + 1)}
    rows = []
    for p in rates:
        weights = stats.binom.pmf(np.arange(n + 1), n, p)
        covered = sum(w for k, w in enumerate(weights) if ours[k].low <= p <= ours[k].high)
        rows.append({"rate": p, "coverage": float(covered), "percentile_bootstrap": _percentile_coverage(n, p)})
    low, at = coverage_infimum({k: (iv.low, iv.high) for k, iv in ours.items()}, n)
    return {"n": n, "method": ours[n - 1].method, "rows": rows, "min_coverage": min(r["coverage"] for r in rows),
            "infimum": low, "infimum_at": at}


def coverage_infimum(intervals: dict[int, tuple[float, float]], n: int) -> tuple[float, float]:
    """The exact infimum over every true rate p in (0, 1) of the coverage of the intervals made from k passes
    of n (`intervals`: k -> (low, high)), and a p at (or next to) which it is reached.  Between two
    consecutive interval ends the set of k whose interval holds p is fixed, so the coverage there is a
    smooth sum of binomial terms: its infimum over the closed piece (the limits at the ends included) is
    found with a bounded minimiser and compared with both ends."""
    from scipy.optimize import minimize_scalar

    ends = sorted({0.0, 1.0, *(float(x) for pair in intervals.values() for x in pair if 0.0 <= x <= 1.0)})
    best, best_at = 1.0, 0.5
    for a, b in zip(ends, ends[1:]):
        if b - a < 1e-12:
            continue
        middle = (a + b) / 2
        inside = [k for k, (lo, hi) in intervals.items() if lo <= middle <= hi]

        def cover(p: float, inside: list[int] = inside) -> float:
            return float(stats.binom.pmf(inside, n, p).sum()) if inside else 0.0

        candidates = [(cover(a), a), (cover(b), b)]
        found = minimize_scalar(cover, bounds=(a, b), method="bounded", options={"xatol": 1e-10})
        candidates.append((float(found.fun), float(found.x)))
        value, where = min(candidates)
        if 0.0 < where < 1.0 and value < best:
            best, best_at = value, where
    return best, best_at


def _percentile_coverage(n: int, p: float, resamples: int = 2000) -> float:
    """Exact over outcomes: the plain percentile bootstrap of k passes of n (what reports printed before)."""
    weights = stats.binom.pmf(np.arange(n + 1), n, p)
    covered = 0.0
    for k, w in enumerate(weights):
        boot = np.random.default_rng(k).binomial(n, k / n, size=resamples) / n
        low, high = np.percentile(boot, [2.5, 97.5])
        covered += w * (low <= p <= high)
    return float(covered)


def rr_coverage(reps: int, n: int = 12, seed: int = 1) -> dict[str, Any]:
    """Samples of n reciprocal ranks (values 1, 1/2, 1/3, 1/4, 0) from known distributions: how often the
    interval covers the true mean reciprocal rank."""
    rng = np.random.default_rng(seed)
    values = np.array(RR_VALUES)
    rows = []
    for probs in RR_WORLDS:
        truth = float(values @ np.array(probs))
        covered = sum(bootstrap_mean(rng.choice(values, p=probs, size=n)).excludes(truth) is False for _ in range(reps))
        rows.append({"true_mrr": truth, "coverage": covered / reps})
    return {"n": n, "reps": reps, "method": bootstrap_mean(rng.choice(values, size=n)).method, "rows": rows,
            "min_coverage": min(r["coverage"] for r in rows)}


def clustered_coverage(reps: int, resamples: int, means: Sequence[float] = (0.75, 0.85, 0.95),
                       iccs: Sequence[float] = (LOCOMO_ICC, 0.03), sizes: Sequence[int] = LOCOMO_SIZES,
                       seed: int = 2) -> dict[str, Any]:
    """LoCoMo-like worlds: each conversation's recall rate drawn from a beta distribution of mean `mean`
    and intra-cluster correlation `icc`, each question a 0/1 draw at its conversation's rate: how often
    the interval over the conversations covers `mean`; beside it, the interval that treats the
    questions as independent draws."""
    rng = np.random.default_rng(seed)
    sizes = np.asarray(sizes)
    labels = np.repeat(np.arange(len(sizes)), sizes)
    rows = []
    for icc in iccs:
        spread = 1 / icc - 1
        for mean in means:
            clustered = independent = 0
            for r in range(reps):
                rates = rng.beta(mean * spread, (1 - mean) * spread, size=len(sizes))
                y = (rng.random(sizes.sum()) < rates[labels]).astype(float)
                clustered += not bootstrap_mean(y, clusters=labels, unit="conversation", resamples=resamples,
                                                seed=r).excludes(mean)
                independent += not bootstrap_mean(y, resamples=resamples, seed=r).excludes(mean)
            rows.append({"icc": icc, "mean": mean, "coverage": clustered / reps,
                         "coverage_if_independent": independent / reps})
    return {"clusters": len(sizes), "questions": int(sizes.sum()), "reps": reps, "resamples": resamples, "rows": rows,
            "min_coverage": min(r["coverage"] for r in rows)}


# --- selection: the sweep's worlds ----------------------------------------------------------------------

CONFIGURED = 14  # family 0, weight index 14 (vectorWeight 0.7 on a 0.05 grid)
Z_SD = math.sqrt(1.0 + 0.5 ** 2 + 0.5 ** 2)  # sd of z: difficulty + family + walk


def grid_world(rng: np.random.Generator, queries: int, *, families: int = 48, weights: int = 21,
               effect: float = 0.0, better_family: int = 1, objective: str = "rr", group: int = 1) -> np.ndarray:
    """Per-query scores of families x weights settings (48 x 21 = 1,008, like tokenizer x fusion x
    minScore by vectorWeight).  A query's latent match quality z is its difficulty (shared by every
    setting) + a family effect + a stationary AR(1) walk along the weights (neighbouring weights agree),
    so every setting has the same distribution of z: all are equally good unless `effect` lifts one
    family.  z becomes the rank of the relevant chunk, so the objective is discrete with many ties:
    reciprocal rank (0 beyond rank 10) or a 0/1 pass (rank 1).  group > 1: queries come in groups of that
    size (a T-query and its paraphrases) sharing their difficulty and their settings' effects, as
    paraphrases of one record do."""
    units = -(-queries // group)
    difficulty = rng.normal(0.0, 1.0, size=(1, 1, units))
    family = rng.normal(0.0, 0.5, size=(families, 1, units))
    steps = rng.normal(0.0, 0.5, size=(families, weights, units))
    walk = np.empty_like(steps)
    walk[:, 0] = steps[:, 0]
    rho = 0.9
    for w in range(1, weights):
        walk[:, w] = rho * walk[:, w - 1] + math.sqrt(1 - rho ** 2) * steps[:, w]
    z = np.repeat(difficulty + family + walk, group, axis=2)[:, :, :queries]
    if group > 1:  # each paraphrase words the question its own way: a little noise of its own
        z = z + rng.normal(0.0, 0.2, size=z.shape)
    z[better_family] += effect
    rank = 1 + np.floor(np.clip(1.0 - z, 0.0, None) * 2.0)
    values = (rank == 1).astype(float) if objective == "pass" else np.where(rank <= 10, 1.0 / rank, 0.0)
    return values.reshape(families * weights, queries)


def expected_rr(shift: float = 0.0) -> float:
    """E[reciprocal rank] of a setting whose z is N(shift, Z_SD^2): rank r <=> 1 - r/2 < z <= 1 - (r-1)/2."""
    upper = [math.inf] + [1 - (r - 1) / 2 for r in range(2, 11)]
    lower = [1 - r / 2 for r in range(1, 11)]
    cdf = lambda x: stats.norm.cdf((x - shift) / Z_SD)  # noqa: E731
    return float(sum((cdf(hi) - cdf(lo)) / r for r, (lo, hi) in enumerate(zip(lower, upper), start=1)))


def rejection_rates(reps: int, queries: int, flips: int, seed: int, held_out: bool = False,
                    statistics: tuple[str, ...] = ("standardized",), group: int = 1, grouped_tests: bool = True,
                    **world: Any) -> dict[str, float]:
    """Share of `reps` worlds in which each test rejects at ALPHA, and the mean in-sample gain of the best.
    naive: pick the best setting on all queries, then an ordinary two-sided paired sign-flip test of it
    against the configuration on the same queries (what sweep.py did).  standardized / mean:
    max_statistic_test with that statistic.  held_out (optional): the cross-validated procedure against
    the configuration (its recommendation rule: interval above zero and sign-flip p < 0.05).  group > 1:
    queries in groups (grid_world); grouped_tests: the tests and folds use the groups (as the harness
    does), else they treat the queries as independent."""
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys(("naive", *statistics, *(("held_out",) if held_out else ())), 0)
    gains = []
    groups = [str(q // group) for q in range(queries)] if group > 1 and grouped_tests else None
    for r in range(reps):
        scores = grid_world(rng, queries, group=group, **world)
        for statistic in statistics:
            test = max_statistic_test(scores, CONFIGURED, flips=flips, seed=r, statistic=statistic, clusters=groups)
            counts[statistic] += test.p_value < ALPHA
        counts["naive"] += sign_flip_test(scores[test.best], scores[CONFIGURED], flips=flips, seed=r).p_value < ALPHA
        if held_out:
            cv = cross_validate(None, None, scores, configured=CONFIGURED, groups=groups, resamples=1000, flips=flips,
                                seed=r)
            counts["held_out"] += cv.recommended is not None
        gains.append(test.statistic)
    return {**{k: v / reps for k, v in counts.items()}, "gain": float(np.mean(gains))}


def selection_worlds(size: dict[str, int]) -> dict[str, Any]:
    null = rejection_rates(reps=size["null"], queries=30, flips=size["flips"], seed=20261130)
    effect = rejection_rates(reps=size["effect"], queries=30, flips=size["flips"], seed=7, effect=1.2)
    grouped = rejection_rates(reps=size["grouped"], queries=36, flips=size["flips"], seed=3, group=3, held_out=True)
    ignored = rejection_rates(reps=size["grouped"], queries=36, flips=size["flips"], seed=3, group=3, held_out=True,
                              grouped_tests=False)
    return {
        "null": {"settings": 1008, "queries": 30, "reps": size["null"], "naive": null["naive"],
                 "max_statistic": null["standardized"], "in_sample_gain": null["gain"]},
        "effect": {"settings_better": 21, "queries": 30, "reps": size["effect"], "true_mrr_gain":
                   expected_rr(1.2) - expected_rr(0.0), "power": effect["standardized"]},
        "grouped_null": {"queries": 36, "group": 3, "reps": size["grouped"],
                         "max_statistic": grouped["standardized"], "cross_validated": grouped["held_out"],
                         "max_statistic_ignoring_groups": ignored["standardized"],
                         "cross_validated_ignoring_groups": ignored["held_out"]},
    }


# --- the gate's statistical rules --------------------------------------------------------------------

def gate_false_alarms(reps: int, seed: int = 5) -> dict[str, Any]:
    """Two runs of one system: how often each statistical rule fails the second against the first.
    interval (two-sample permutation test at 0.05): both runs' per-query values drawn from one
    distribution, 40 independent queries (reciprocal ranks) and LoCoMo-like clusters (10
    conversations, 0/1 recall); paired (sign flips at 0.05): the same 40 queries, each query's second
    value a fresh draw from its own distribution (what a new embedding model of equal quality does)."""
    rng = np.random.default_rng(seed)
    values = np.array(RR_VALUES)
    probs = np.array(RR_WORLDS[0])
    sizes = np.array(LOCOMO_SIZES)
    labels = np.repeat(np.arange(len(sizes)), sizes)
    spread = 1 / LOCOMO_ICC - 1
    alarms = {"interval_queries": 0, "interval_clusters": 0, "paired_queries": 0}
    for r in range(reps):
        a, b = rng.choice(values, p=probs, size=40), rng.choice(values, p=probs, size=40)
        alarms["interval_queries"] += two_sample_test(b, a, permutations=999, seed=r).p_value < ALPHA
        rates = rng.beta(0.85 * spread, 0.15 * spread, size=len(sizes))
        first = (rng.random(sizes.sum()) < rates[labels]).astype(float)
        second = (rng.random(sizes.sum()) < rng.beta(0.85 * spread, 0.15 * spread, size=len(sizes))[labels]).astype(float)
        test = two_sample_test(second, first, clusters_now=labels, clusters_baseline=labels, unit="conversation",
                               permutations=999, seed=r)
        alarms["interval_clusters"] += test.p_value < ALPHA
        quality = rng.dirichlet(np.ones(len(values)) * 2, size=40)  # each query its own distribution
        first_run = np.array([rng.choice(values, p=q) for q in quality])
        second_run = np.array([rng.choice(values, p=q) for q in quality])
        test = sign_flip_test(second_run, first_run, flips=999, seed=r)
        alarms["paired_queries"] += test.statistic < 0 and test.p_value < ALPHA
    return {"reps": reps, "alpha": ALPHA, **{k: v / reps for k, v in alarms.items()}}


# --- the report ---------------------------------------------------------------------------------------

def measure(size: str = "default") -> dict[str, Any]:
    """Every measurement at one size ("default": what `make test` asserts; "published": what
    reports/statistics/ holds, >= 2,000 worlds a rate; "full": opt-in)."""
    sizes = SIZES[size]
    started = time.perf_counter()
    doc = {
        "size": size, "sizes": sizes, "alpha": ALPHA, "level": 0.95,
        "binomial": binomial_coverage(),
        "reciprocal_rank": rr_coverage(sizes["rr"]),
        "clustered": clustered_coverage(sizes["clustered"], sizes["resamples"]),
        "selection": selection_worlds(sizes),
        "gate": gate_false_alarms(sizes["gate"]),
    }
    add_monte_carlo_errors(doc)
    doc["seconds"] = time.perf_counter() - started
    return doc


RATES = {  # the simulated rates of each block (a share of `reps` worlds), which get a Monte Carlo error
    "reciprocal_rank": ("coverage",), "clustered": ("coverage", "coverage_if_independent"),
    "null": ("naive", "max_statistic"), "effect": ("power",),
    "grouped_null": ("max_statistic", "cross_validated", "max_statistic_ignoring_groups",
                     "cross_validated_ignoring_groups"),
    "gate": ("interval_queries", "interval_clusters", "paired_queries"),
}


def monte_carlo_error(rate: float, reps: int) -> float:
    """The standard error of a rate measured as a share of `reps` independent worlds."""
    return float(np.sqrt(rate * (1 - rate) / reps)) if reps else float("nan")


def add_monte_carlo_errors(doc: dict[str, Any]) -> None:
    """Beside each simulated rate r of a block of `reps` worlds: r_se = sqrt(r (1 - r) / reps)."""
    blocks = {"reciprocal_rank": doc["reciprocal_rank"], "clustered": doc["clustered"], "gate": doc["gate"],
              **{k: doc["selection"][k] for k in ("null", "effect", "grouped_null")}}
    for name, block in blocks.items():
        reps = block["reps"]
        for target in block.get("rows") or [block]:
            for key in RATES[name]:
                target[f"{key}_se"] = monte_carlo_error(target[key], reps)


if __name__ == "__main__":  # the command line, which also writes the report, is harness.cli.coverage
    raise SystemExit("run `python -m harness.cli.coverage` (`make statistics`): this module only measures")
