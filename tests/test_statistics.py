"""Statistics of harness.evaluation.statistics and .cross_validation: a simulated null world shows the
sweep's old test (best of the grid vs the configuration, ordinary paired test) is invalid and the
selection-aware test holds its level; an effect world shows it still finds a real gain; exact
enumeration agrees with scipy and brute force; bootstrap coverage; Holm; folds.

Run with -s to see the measured false-positive rates and power (also printed by the slow version)."""
from __future__ import annotations

import itertools
import math
import os

import numpy as np
import pytest
from scipy import stats

from harness.evaluation.comparison import column_pairs, compare_family
from harness.evaluation.cross_validation import (
    best_on_average,
    cross_validate,
    query_folds,
)
from harness.evaluation.statistics import (
    NEAR_TIE_FRACTION,
    bootstrap_difference,
    bootstrap_mean,
    bootstrap_pass_rate,
    holm,
    max_statistic_test,
    near_ties,
    score_spread,
    sign_flip_test,
)
from harness.studies.coverage import (
    expected_rr,
    grid_world,
    rejection_rates,
)

ALPHA = 0.05


# --- simulated worlds (harness.studies.coverage: `make statistics` reports them) -------------------------

def test_null_world_naive_test_is_inflated_and_selection_aware_test_holds_its_level():
    """1,008 equally good settings, 200 repetitions, 30 queries, reciprocal rank."""
    rates = rejection_rates(reps=200, queries=30, flips=100, seed=20261130)
    print(f"\nnull world (1,008 equally good settings, 30 queries, reciprocal rank, 200 reps): best vs "
          f"configured p < 0.05 in {rates['naive']:.3f} (naive paired test), {rates['standardized']:.3f} "
          f"(max-statistic test); the 'best' gains {rates['gain']:+.3f} MRR in-sample, 0 in truth")
    assert rates["naive"] > 0.3
    assert rates["standardized"] <= 0.07


def test_effect_world_selection_aware_test_detects_a_real_gain():
    """One family (21 of the 1,008 settings) is truly better."""
    rates = rejection_rates(reps=100, queries=30, flips=100, seed=7, effect=1.2)
    truth = expected_rr(1.2) - expected_rr(0.0)
    print(f"\neffect world (21 of 1,008 settings better by {truth:+.3f} MRR in truth, 30 queries, 100 reps): "
          f"power of the max-statistic test {rates['standardized']:.2f}")
    assert rates["standardized"] >= 0.8


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("HARNESS_FULL_STATISTICS"),
                    reason="minutes of CPU: set HARNESS_FULL_STATISTICS=1 to run")
@pytest.mark.parametrize("objective,queries,effect,reps", [("rr", 500, 0.2, 200), ("pass", 500, 0.2, 200),
                                                           ("rr", 40, 0.8, 400), ("rr", 12, 1.5, 400)])
def test_null_and_effect_worlds_at_sweep_sizes(objective, queries, effect, reps):
    """The sizes of the README's sweeps: CMRC 2018 dev (500 queries), king78 rounds (12), and between;
    both statistics of the max test, and the cross-validated recommendation rule."""
    both = ("standardized", "mean")
    null = rejection_rates(reps=reps, queries=queries, flips=500, seed=1, objective=objective, held_out=True,
                           statistics=both)
    power = rejection_rates(reps=reps // 2, queries=queries, flips=500, seed=2, objective=objective,
                            effect=effect, held_out=True, statistics=both)
    print(f"\n{objective}, {queries} queries, 1,008 settings, {reps} null reps: false positives naive "
          f"{null['naive']:.3f}, max-standardized {null['standardized']:.3f}, max-mean {null['mean']:.3f}, "
          f"CV recommendation {null['held_out']:.3f}; with 21 settings better by z + {effect} ({reps // 2} reps): "
          f"power {power['standardized']:.2f} / {power['mean']:.2f} / CV {power['held_out']:.2f}")
    assert null["standardized"] <= 0.07 + 2 * math.sqrt(0.05 * 0.95 / reps) and null["naive"] > null["standardized"]


# --- exact enumeration ------------------------------------------------------------------------------

def brute_force_p(d: np.ndarray) -> float:
    observed = abs(d.sum())
    sums = [abs(np.dot(signs, d)) for signs in itertools.product((1.0, -1.0), repeat=len(d))]
    return float(np.mean([s >= observed - 1e-9 for s in sums]))


@pytest.mark.parametrize("seed", range(5))
def test_exact_sign_flip_matches_scipy_and_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 6 + seed
    a = 1.0 / rng.integers(1, 5, size=n)  # reciprocal ranks: ties and exact zeros in the differences
    b = 1.0 / rng.integers(1, 5, size=n)
    ours = sign_flip_test(a, b)
    assert ours.method.startswith("exact")
    scipy_p = stats.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis), vectorized=True,
                                     permutation_type="samples", n_resamples=np.inf).pvalue
    assert ours.p_value == pytest.approx(brute_force_p(a - b), abs=1e-12)
    assert ours.p_value == pytest.approx(scipy_p, abs=1e-12)


def test_monte_carlo_sign_flip_is_seeded_and_close_to_exact():
    rng = np.random.default_rng(3)
    d = rng.choice([-1.0, -0.5, 0.5, 1.0, 0.25], size=22)  # no zeros: all 22 queries are informative
    exact = sign_flip_test(d, exact_max=22).p_value
    mc = sign_flip_test(d, exact_max=20, flips=20_000, seed=5)
    assert mc.method.startswith("Monte Carlo") and mc == sign_flip_test(d, exact_max=20, flips=20_000, seed=5)
    assert mc.p_value == pytest.approx(exact, abs=0.01)
    assert sign_flip_test(np.zeros(30)).p_value == 1.0


@pytest.mark.parametrize("statistic", ["standardized", "mean"])
def test_max_statistic_exact_matches_brute_force(statistic):
    rng = np.random.default_rng(11)
    scores = 1.0 / rng.integers(1, 4, size=(5, 9))
    test = max_statistic_test(scores, configured=0, statistic=statistic)
    assert test.method.startswith(f"max-{statistic}") and "exact" in test.method
    diffs = scores - scores[0]
    scale = np.sqrt((diffs ** 2).sum(axis=1)) if statistic == "standardized" else np.ones(5)
    scale[scale == 0] = 1.0
    maxima = [max((np.array(s) * diffs).sum(axis=1) / scale) for s in itertools.product((1.0, -1.0), repeat=9)]
    observed = diffs.sum(axis=1) / scale
    brute = [np.mean([m >= o - 1e-9 for m in maxima]) for o in observed]
    assert test.adjusted.tolist() == pytest.approx(brute, abs=1e-12)
    assert test.best == int(np.argmax(diffs.mean(axis=1))) and test.p_value == pytest.approx(brute[test.best])
    mc = max_statistic_test(scores, configured=0, statistic=statistic, exact_max_cells=0, flips=20_000)
    assert mc.p_value == pytest.approx(test.p_value, abs=0.015)


def test_standardized_max_sees_a_consistent_gain_beside_a_noisy_setting():
    """Setting 1 wins 7 queries and loses none; setting 2 swings +-1 on 30 queries (net +1).  The mean
    max is dominated by setting 2's spread; the standardized max is not."""
    scores = np.zeros((3, 40))
    scores[1, :7] = 1.0
    scores[2, :30] = np.where(np.arange(30) % 2 == 0, 1.0, -1.0)
    scores[2, 30] = 1.0
    standardized = max_statistic_test(scores, configured=0)
    mean = max_statistic_test(scores, configured=0, statistic="mean")
    assert standardized.best == mean.best == 1
    assert standardized.p_value < 0.05 < mean.p_value


def test_max_statistic_is_never_below_the_single_comparison():
    """Selection can only cost significance: the grid's p is >= the best's own p with one-sided flips."""
    rng = np.random.default_rng(5)
    scores = 1.0 / rng.integers(1, 4, size=(30, 16))
    grid = max_statistic_test(scores, configured=3)
    alone = max_statistic_test(scores[[3, grid.best]], configured=0)
    assert grid.p_value >= alone.p_value


# --- bootstrap ---------------------------------------------------------------------------------------

def test_bootstrap_coverage_of_a_reciprocal_rank_mean():
    """200 samples of 60 queries from a known discrete distribution: the 95% BCa interval covers the
    true mean in about 95% of them."""
    values = np.array([1.0, 0.5, 1 / 3, 0.25, 0.0])
    probs = np.array([0.55, 0.15, 0.1, 0.05, 0.15])
    truth = float(values @ probs)
    rng = np.random.default_rng(1)
    covered = sum(bootstrap_mean(rng.choice(values, p=probs, size=60), resamples=1000, seed=s).excludes(truth)
                  is False for s in range(200))
    print(f"\nbootstrap 95% BCa coverage of a mean reciprocal rank (60 queries, 200 samples): {covered / 200:.3f}")
    assert 0.9 <= covered / 200 <= 0.985


def test_paired_bootstrap_difference_and_pass_rate():
    rng = np.random.default_rng(2)
    a = (rng.random(80) < 0.8).astype(float)
    b = np.where(rng.random(80) < 0.9, a, 1 - a)  # b differs from a on ~10% of queries
    diff = bootstrap_difference(a, b, seed=4)
    assert diff.estimate == pytest.approx(a.mean() - b.mean())
    assert diff.low <= diff.estimate <= diff.high and diff.method.startswith("paired BCa")
    assert diff == bootstrap_difference(a, b, seed=4)  # seeded: the same interval every time
    # pairing narrows the interval: the same values resampled independently spread much wider
    assert diff.high - diff.low < 0.8 * (2 * 1.96 * math.sqrt(a.var() / 80 + b.var() / 80))
    rate = bootstrap_pass_rate(a.astype(bool))
    assert rate.low < a.mean() < rate.high
    # 7 of 7: not the point [1, 1] a bootstrap collapses to, but Clopper-Pearson's exact bound, where
    # P(7 of 7 | p) = p^7 = 0.025 at the lower end
    all_passed = bootstrap_pass_rate([True] * 7)
    assert all_passed.low == pytest.approx(0.025 ** (1 / 7)) and all_passed.high == 1.0
    assert all_passed.method.startswith("exact Clopper-Pearson")


# --- multiple comparisons ----------------------------------------------------------------------------

def test_holm_hand_worked():
    # sorted: d 0.005 x 4 = 0.02; a 0.01 x 3 = 0.03; c 0.03 x 2 = 0.06; b 0.04 x 1 = 0.04 -> max(0.06, 0.04)
    assert holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005}) == pytest.approx(
        {"a": 0.03, "b": 0.06, "c": 0.06, "d": 0.02})
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    with pytest.raises(ValueError):
        holm([0.1, float("nan")])


def test_paired_comparisons_across_a_table():
    rng = np.random.default_rng(8)
    base = 1.0 / rng.integers(1, 4, size=30)
    table = {"unicode61": dict(enumerate(base)),
             "jieba": dict(enumerate(np.minimum(1.0, base + 0.5))),  # clearly better
             "trigram": {q: v for q, v in enumerate(base) if q < 20}}  # same values, fewer queries
    rows = compare_family(column_pairs(table, baseline="unicode61"), flips=2000, resamples=2000)
    by = {(r.a, r.b): r for r in rows}
    assert set(by) == {("jieba", "unicode61"), ("trigram", "unicode61")}
    assert by[("trigram", "unicode61")].queries == 20 and by[("trigram", "unicode61")].p_value == 1.0
    jieba = by[("jieba", "unicode61")]
    assert jieba.p_value < 0.001 and jieba.p_holm == pytest.approx(min(1.0, 2 * jieba.p_value))
    assert jieba.difference.excludes(0.0) and "Holm over 2" in jieba.method
    assert len(compare_family(column_pairs(table))) == 3  # every pair without a baseline


# --- cross-validation ---------------------------------------------------------------------------------

def test_folds_leave_one_out_for_small_suites():
    folds = query_folds([f"T{i}" for i in range(12)])
    assert [f.tolist() for f in folds] == [[i] for i in range(12)]


def test_folds_stratified_by_kind_deterministic_and_order_free():
    ids = [f"q{i:03d}" for i in range(103)]
    kinds = ["suite"] * 70 + ["paraphrase"] * 21 + ["negative"] * 12
    folds = query_folds(ids, kinds, folds=5, seed=3)
    assert sorted(np.concatenate(folds).tolist()) == list(range(103))
    sizes = [len(f) for f in folds]
    assert max(sizes) - min(sizes) <= 1
    for kind, total in (("suite", 70), ("paraphrase", 21), ("negative", 12)):
        per_fold = [sum(kinds[i] == kind for i in f) for f in folds]
        assert max(per_fold) - min(per_fold) <= 1 and sum(per_fold) == total
    assert [f.tolist() for f in folds] == [f.tolist() for f in query_folds(ids, kinds, folds=5, seed=3)]
    shuffled = list(reversed(range(103)))  # the same queries given in another order: the same folds
    again = query_folds([ids[i] for i in shuffled], [kinds[i] for i in shuffled], folds=5, seed=3)
    as_ids = lambda fs, order: sorted(sorted(order[i] for i in f) for f in fs)  # noqa: E731
    assert as_ids(again, [ids[i] for i in shuffled]) == as_ids(folds, ids)


def test_cross_validation_recommends_only_a_gain_that_replicates():
    rng = np.random.default_rng(4)
    null = grid_world(rng, 60, families=6, weights=5)  # 30 equally good settings; configured: setting 0
    cv = cross_validate(best_on_average(prefer=0), None, null, configured=0,
                        objective="reciprocal rank", resamples=2000, flips=2000)
    assert cv.in_sample_mean > cv.held_out_mean  # the in-sample best is optimistic
    assert cv.recommended is None and "keep the configuration" in cv.reason
    assert len(cv.folds) == 5 and len(cv.chosen) == 5
    better = grid_world(rng, 60, families=6, weights=5, effect=1.0, better_family=2)
    cv = cross_validate(None, None, better, configured=0, resamples=2000, flips=2000)
    assert cv.recommended is not None and cv.recommended // 5 == 2 and cv.gain.low > 0
    assert "excludes zero" in cv.reason and cv.as_dict()["recommended"] == cv.recommended
    small = cross_validate(None, None, better[:, :12], configured=0, resamples=2000)
    assert len(small.folds) == 12  # leave-one-out


def test_no_recommendation_when_interval_and_exact_test_disagree():
    """King78 round 3's case: the held-out procedure wins 7 queries, loses 1 and ties 26.  The bootstrap
    interval excludes zero, the exact sign-flip test gives p = 2 x 9/256 = 0.07: too few queries differ."""
    configured = np.zeros(34)
    tuned = np.zeros(34)
    tuned[:7], tuned[7] = 1.0, -1.0
    cv = cross_validate(None, None, np.vstack([configured, tuned]), configured=0)
    assert cv.gain.low > 0 and cv.p_value == pytest.approx(18 / 256)
    assert cv.recommended is None and "only 8 queries differ" in cv.reason


def test_cross_validation_scores_with_a_separate_measure():
    objective = np.array([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]])  # setting 1 better, on query 2 only
    ndcg = np.array([[0.9, 0.8, 0.1, 0.0], [0.7, 0.6, 0.5, 0.4]])
    cv = cross_validate(None, ndcg, objective, configured=0, resamples=500)
    # leave-one-out: without query 2 the settings tie and the configuration is kept, so query 2 is scored
    # by setting 0; the other folds choose setting 1 and report its nDCG, not the objective
    assert cv.chosen == [1, 1, 0, 1]
    assert cv.held_out.tolist() == [0.7, 0.6, 0.1, 0.4] and cv.in_sample_best == 1


# --- near ties ----------------------------------------------------------------------------------------

def test_near_tie_threshold_follows_the_score_scale():
    rrf = [[2 / 61, 1 / 61 + 1 / 62, 1 / 63, 1 / 100]]  # RRF: ~0.02 spread
    weighted = [[0.82, 0.61, 0.44, 0.40]]  # weighted: ~0.4 spread
    t_rrf, t_weighted = (NEAR_TIE_FRACTION * score_spread(rrf))[0], (NEAR_TIE_FRACTION * score_spread(weighted))[0]
    assert t_weighted == pytest.approx(0.00105)
    assert t_rrf < 0.0001
    assert near_ties([0.0005, None, -0.002], np.array([t_weighted] * 3)).tolist() == [True, False, False]
    matrix = np.array([[0.5, 0.4, 9.0]])
    assert score_spread(matrix, np.array([[True, True, False]]))[0] == pytest.approx(0.1)


def test_unbounded_values_equal_in_every_cluster_up_to_rounding_are_n_too_small_not_a_point():
    # 446 gains of 2.22197 spread over 10 clusters: the cluster means differ only by float rounding
    clusters = [f"c{i % 10}" for i in range(446)]
    values = np.array([2.22197 + (1e-13 if i % 10 == 0 else 0.0) for i in range(446)])
    interval = bootstrap_mean(values, clusters=clusters, unit="conversation")
    assert math.isnan(interval.low) and math.isnan(interval.high)
    assert "n too small" in interval.method
