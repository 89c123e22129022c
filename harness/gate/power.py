"""The gate's statistical rules on the same queries: false alarms and power, measured (`make gate-power`).

The gate's usual case is a new run of the same queries against the accepted baseline.  Two worlds, each
simulated `reps` times (seeded), with a second run that did not regress (false alarms) and one that lost
a real `drop` (power):

    queries   40 independent queries, reciprocal ranks; each query has its own distribution over the
              ranks (Dirichlet), both runs draw from it (a model of equal quality ranks each query anew)
    locomo    LoCoMo-like: 1,536 questions in 10 conversations of LoCoMo's sizes, 0/1 recall; each
              conversation a rate (beta, LoCoMo's intra-conversation correlation), each question its own
              probability around it (beta), both runs draw each question from its probability; the drop
              scales every probability so the expected recall falls by `drop` (3 points)

Rules, at alpha 0.05, failing only when the second run is worse:
    interval            as the gate runs it now on shared queries: the paired one-sided sign-flip test
    interval, unpaired  as it ran before (issue 37): the one-sided two-sample permutation test
    paired              the two-sided paired sign-flip test, failing when worse (effective level 2.5%)

Each rate carries its Monte Carlo error, sqrt(rate (1 - rate) / reps).
"""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from harness.evaluation.statistics import sign_flip_test, two_sample_test

ALPHA = 0.05
REPS = 2000
SEED = 37
DROP = 0.03
PERMUTATIONS = 999  # Monte Carlo tests inside each simulated world
RR_VALUES = np.array([1.0, 0.5, 1 / 3, 0.25, 0.0])
LOCOMO_SIZES = (150, 81, 152, 199, 178, 123, 150, 191, 156, 156)  # questions per conversation (suite)
LOCOMO_ICC = 0.008  # intra-conversation correlation of recall_any@10 (harness.studies.coverage)
LOCOMO_MEAN = 0.85
QUESTION_SPREAD = 2.0  # beta concentration of a question's probability around its conversation's rate
RULES = ("interval", "interval, unpaired", "paired")


def _rules(now: np.ndarray, base: np.ndarray, clusters: np.ndarray | None, seed: int) -> dict[str, bool]:
    unit = "conversation" if clusters is not None else "query"
    one_sided = sign_flip_test(now, base, clusters=clusters, unit=unit, flips=PERMUTATIONS, seed=seed,
                               alternative="less")
    unpaired = two_sample_test(now, base, clusters_now=clusters, clusters_baseline=clusters, unit=unit,
                               permutations=PERMUTATIONS, seed=seed, alternative="less")
    two_sided = sign_flip_test(now, base, clusters=clusters, unit=unit, flips=PERMUTATIONS, seed=seed)
    return {"interval": one_sided.p_value < ALPHA, "interval, unpaired": unpaired.p_value < ALPHA,
            "paired": two_sided.statistic < 0 and two_sided.p_value < ALPHA}


def _queries_world(rng: np.random.Generator, drop: float) -> tuple[np.ndarray, np.ndarray, None]:
    quality = rng.dirichlet(np.ones(len(RR_VALUES)) * 2, size=40)
    first = np.array([rng.choice(RR_VALUES, p=q) for q in quality])
    if drop:  # move `drop` of each query's probability from its ranks to "not found" (expected loss ~drop)
        shift = np.minimum(quality[:, :-1], drop * quality[:, :-1] / (quality[:, :-1] @ RR_VALUES[:-1])[:, None])
        quality = np.column_stack([quality[:, :-1] - shift, quality[:, -1] + shift.sum(axis=1)])
    second = np.array([rng.choice(RR_VALUES, p=q) for q in quality])
    return second, first, None


def _locomo_world(rng: np.random.Generator, drop: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sizes = np.array(LOCOMO_SIZES)
    labels = np.repeat(np.arange(len(sizes)), sizes)
    spread = 1 / LOCOMO_ICC - 1
    rates = rng.beta(LOCOMO_MEAN * spread, (1 - LOCOMO_MEAN) * spread, size=len(sizes))[labels]
    p = rng.beta(rates * QUESTION_SPREAD, (1 - rates) * QUESTION_SPREAD)
    first = (rng.random(len(p)) < p).astype(float)
    second_p = p * (1 - drop / max(float(p.mean()), 1e-9)) if drop else p
    second = (rng.random(len(p)) < np.clip(second_p, 0, 1)).astype(float)
    return second, first, labels


WORLDS = {"queries": ("40 independent queries (reciprocal rank)", _queries_world),
          "locomo": ("LoCoMo-like: 1,536 questions in 10 conversations (0/1 recall)", _locomo_world)}


def measure(reps: int = REPS, seed: int = SEED, drop: float = DROP) -> dict[str, Any]:
    started = time.perf_counter()
    worlds = []
    for name, (description, world) in WORLDS.items():
        for effect in (0.0, drop):
            rng = np.random.default_rng([seed, len(worlds)])
            hits = dict.fromkeys(RULES, 0)
            observed_drop = []
            for r in range(reps):
                now, base, clusters = world(rng, effect)
                observed_drop.append(float(base.mean() - now.mean()))
                for rule, failed in _rules(now, base, clusters, seed + r).items():
                    hits[rule] += bool(failed)
            rates = {rule: {"rate": h / reps, "mc_error": math.sqrt((h / reps) * (1 - h / reps) / reps)}
                     for rule, h in hits.items()}
            worlds.append({"world": name, "description": description, "drop": effect,
                           "mean_observed_drop": float(np.mean(observed_drop)), "reps": reps, "rules": rates})
    return {"alpha": ALPHA, "reps": reps, "seed": seed, "drop": drop, "permutations": PERMUTATIONS,
            "worlds": worlds, "seconds": round(time.perf_counter() - started, 1)}
