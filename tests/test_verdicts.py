"""Support from the quantity, not the sample, and one decision rule for verdicts (issue 37)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.evaluation.comparison import paired_difference
from harness.evaluation.statistics import (
    Interval,
    PairedTest,
    bootstrap_difference,
    bootstrap_mean,
    difference_support,
    sign_flip_test,
)
from harness.evaluation.verdicts import CANNOT_DECIDE, decide

RESAMPLES = 999


@st.composite
def one_sided_pairs(draw):
    """Paired values whose differences all happen to sit on one side of zero (a >= b), on a scale that is
    a rate ([0, 1]) or not (values up to `scale`, as the abstention utility's are), with or without
    clusters."""
    n = draw(st.integers(3, 40))
    scale = draw(st.sampled_from([1.0, 2.2, 3.5]))
    b = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=float) / 4 * scale
    up = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=float) / 4
    a = np.minimum(b + up * scale, scale)
    if not np.any(a != b):
        a[0] = min(scale, b[0] + scale / 4) if b[0] < scale else b[0]
        b[0] = b[0] if a[0] != b[0] else 0.0
    groups = draw(st.integers(5, 12))
    clusters = draw(st.one_of(st.none(), st.just([f"c{i % groups}" for i in range(n)])))
    return a, b, scale, clusters


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(one_sided_pairs())
def test_a_difference_on_one_side_of_zero_gets_the_mirror_of_its_negation(data):
    """mean(a - b) and mean(b - a) are the same quantity with the sign turned, so their intervals mirror
    each other.  Reading the support [0, 1] off a sample of differences that happens to be >= 0 broke
    this: a one-sided Clopper-Pearson bound for a - b (its low end above zero), a t interval for b - a."""
    a, b, scale, clusters = data
    support = (0.0, scale)
    forward = bootstrap_difference(a, b, clusters=clusters, unit="c", support=support, resamples=RESAMPLES)
    backward = bootstrap_difference(b, a, clusters=clusters, unit="c", support=support, resamples=RESAMPLES)
    assert forward.method == backward.method
    if forward.defined:
        assert forward.low == pytest.approx(-backward.high, abs=1e-9)
        assert forward.high == pytest.approx(-backward.low, abs=1e-9)
    else:
        assert not backward.defined
    # the same holds when the support is read off the values (rates: [0, 1] in, [-1, 1] out; else unbounded)
    auto_f = bootstrap_difference(a, b, clusters=clusters, unit="c", resamples=RESAMPLES)
    auto_b = bootstrap_difference(b, a, clusters=clusters, unit="c", resamples=RESAMPLES)
    if auto_f.defined:
        assert auto_f.low == pytest.approx(-auto_b.high, abs=1e-9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(one_sided_pairs())
def test_no_verdict_from_units_that_cannot_reach_the_level(data):
    """Whatever the interval says, a comparison whose sign-flip test cannot go below the level on its
    units is 'cannot decide'; one that decides has an interval excluding zero and p below the level."""
    a, b, scale, clusters = data
    paired = paired_difference(a, b, clusters=clusters, unit="c", support=(0.0, scale), resamples=RESAMPLES)
    decision = decide(paired.interval, paired.test)
    if paired.test.floor >= 0.05:
        assert decision.outcome == CANNOT_DECIDE
        assert "cannot decide with" in decision.text
    if decision.decided:
        assert paired.interval.excludes(0.0) and paired.test.p_value < 0.05


def test_the_locomo_artefact_two_conversations_of_ten():
    """The lancedb-pro LoCoMo case of issue 37: a tiny gain in 2 of 10 conversations, utilities on a
    scale above 1, every other difference 0.  The old rule gave a Clopper-Pearson interval whose low
    end was 4.5e-248 (> 0: "recommended"); now the interval includes zero or the test cannot decide."""
    rng = np.random.default_rng(1)
    sizes = rng.integers(150, 250, size=10)
    clusters = np.repeat([f"conv-{i}" for i in range(10)], sizes)
    base = np.where(rng.random(len(clusters)) < 0.2, 2.2, 0.0)
    now = base.copy()
    now[np.flatnonzero(clusters == "conv-3")[:2]] += 0.645
    now[np.flatnonzero(clusters == "conv-7")[:1]] += 0.645
    now = np.minimum(now, 2.9)
    paired = paired_difference(now, base, clusters=clusters, unit="conversation", support=(0.0, 2.9))
    assert paired.test.informative == 2 and paired.test.floor == pytest.approx(0.5)
    assert not paired.interval.low > 1e-9  # no bound pinned to zero by a support read off the sample
    decision = decide(paired.interval, paired.test)
    assert decision.outcome == CANNOT_DECIDE
    assert decision.text.startswith("cannot decide with 2 of 10 conversations")


def test_a_stated_support_is_checked_and_an_unbounded_one_never_gets_clopper_pearson():
    with pytest.raises(ValueError, match="support"):
        bootstrap_mean([0.5, 2.0, 0.1], support=(0.0, 1.0))
    small = bootstrap_mean([0.0, 0.2, 0.1, 0.3], support=None)
    assert "Clopper-Pearson" not in small.method and small.low < 0  # Student t: nothing cuts it at 0
    rate = bootstrap_mean([0.0, 0.2, 0.1, 0.3])  # per-query rates: the bounded interval
    assert "Clopper-Pearson" in rate.method and rate.low >= 0
    assert difference_support((0.0, 1.0)) == (-1.0, 1.0)
    assert difference_support(None) is None and difference_support((0.0, 2.0), (0.0, 1.0)) == (-1.0, 2.0)


def _test(p: float, floor: float, informative: int = 10, units: int = 10) -> PairedTest:
    return PairedTest(0.1, p, "exact sign-flip test", 100, informative, floor=floor, units=units,
                      unit="conversation")


def test_decide():
    inside = Interval(0.1, -0.01, 0.2, 0.95, "t")
    above = Interval(0.1, 0.02, 0.2, 0.95, "t")
    below = Interval(-0.1, -0.2, -0.02, 0.95, "t")
    undefined = Interval(0.1, math.nan, math.nan, 0.95, "n too small: 3 conversations")
    assert decide(above, _test(0.002, 0.002)).outcome == "better"
    assert decide(below, _test(0.002, 0.002)).outcome == "worse"
    assert decide(inside, _test(0.002, 0.002)).outcome == "no difference shown"
    assert decide(above, _test(0.08, 0.002)).outcome == "no difference shown"  # interval and test must agree
    blocked = decide(above, _test(0.5, 0.5, informative=2))
    assert blocked.outcome == CANNOT_DECIDE and blocked.text.startswith("cannot decide with 2 of 10 conversations")
    assert decide(undefined, _test(0.002, 0.002)).outcome == CANNOT_DECIDE


def test_sign_flip_floor_over_two_clusters_is_one_half():
    """An exact sign-flip over G clusters cannot go below 2/2^G: with 2 conversations, 0.5."""
    d = np.array([0.3, 0.2, 0.4, 0.1])
    test = sign_flip_test(d, clusters=["x", "x", "y", "y"], unit="conversation")
    assert test.floor == pytest.approx(0.5) and test.p_value == pytest.approx(0.5)
    assert decide(bootstrap_difference(d, np.zeros(4)), test).outcome == CANNOT_DECIDE


def test_repeated_grouped_splits_report_the_spread_of_the_held_out_gain():
    from harness.evaluation.cross_validation import (
        REPEAT_SEEDS,
        cross_validate,
        repeated_gains,
    )

    rng = np.random.default_rng(3)
    matrix = (rng.random((6, 60)) < 0.5).astype(float)  # equally good settings: the choice hangs on the split
    ids = [f"q{i:02d}" for i in range(60)]
    groups = [f"g{i // 2}" for i in range(60)]  # 30 groups: five grouped folds, not leave-one-out
    repeats = repeated_gains(None, matrix, configured=0, query_ids=ids, groups=groups)
    assert repeats["seeds"] == list(REPEAT_SEEDS) and len(repeats["gains"]) == len(REPEAT_SEEDS)
    assert repeats["min"] - 1e-12 <= repeats["mean"] <= repeats["max"] + 1e-12 and repeats["min"] < repeats["max"]
    # the published split (seed 0) is one more split of the same procedure
    cv = cross_validate(None, None, matrix, configured=0, query_ids=ids, groups=groups, resamples=200, flips=200)
    again = repeated_gains(None, matrix, configured=0, query_ids=ids, groups=groups, seeds=[0])
    assert again["gains"][0] == pytest.approx(cv.gain.estimate)
