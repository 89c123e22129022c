"""harness.evaluation.comparison: hand-worked sign-flip p-values and Holm steps, the floor, the clustered
unit, Holm's properties, and every study that compares systems doing it through this one module."""
from __future__ import annotations

import math
import types

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.evaluation import comparison
from harness.evaluation.comparison import (
    Pair,
    column_pairs,
    comparison_rows,
    holm_adjusted,
    paired_difference,
)

# --- one comparison, worked by hand ------------------------------------------------------------------


def test_exact_sign_flip_on_five_queries_all_better():
    # d = 1..5, all positive: of the 2^5 = 32 sign patterns only all-plus and all-minus reach |sum| = 15
    d = paired_difference([1, 2, 3, 4, 5], [0, 0, 0, 0, 0])
    assert d.test.p_value == pytest.approx(2 / 32)
    assert d.test.floor == pytest.approx(2 / 32)  # the smallest p five queries can give
    assert not d.test.monte_carlo and "exact" in d.test.method
    assert d.interval.estimate == pytest.approx(3.0)


def test_exact_sign_flip_on_five_queries_one_loss():
    # d = (1, 1, 1, 1, -1), sum 3: |signed sum| >= 3 when 0, 1, 4 or 5 of the signs are +: 1+5+5+1 = 12 of 32
    d = paired_difference([1, 1, 1, 1, 0], [0, 0, 0, 0, 1])
    assert d.test.p_value == pytest.approx(12 / 32)
    assert d.test.informative == 5


def test_ties_are_not_informative_and_no_difference_gives_one():
    d = paired_difference([0.5, 0.2, 0.2], [0.5, 0.2, 0.2])
    assert d.test.p_value == 1.0 and d.test.informative == 0


def test_monte_carlo_floor_is_stated_and_reached():
    # 25 informative queries (beyond the exact limit of 20), all better: no random pattern of 999 reaches
    # the observed sum except by the +1 of (hits + 1) / (flips + 1)
    d = paired_difference(np.ones(25), np.zeros(25), flips=999)
    assert d.test.monte_carlo
    assert d.test.floor == pytest.approx(1 / 1000)
    assert d.test.p_value == pytest.approx(d.test.floor)


def test_clusters_are_the_unit_of_the_test_and_the_interval():
    # ten queries, two per record; the records' totals 1, 2, 1, 1, 1 are all positive: p = 2/2^5
    diffs = [1, 0, 1, 1, 0, 1, 2, -1, 1, 0]
    records = [f"r{i // 2}" for i in range(10)]
    clustered = paired_difference(diffs, np.zeros(10), clusters=records, unit="record")
    assert clustered.test.p_value == pytest.approx(2 / 32)
    assert (clustered.test.units, clustered.test.unit) == (5, "record")
    assert (clustered.interval.units, clustered.interval.unit) == (5, "record")
    # the same queries as independent units: 7 informative (1,1,1,1,2,-1,1); |sum| >= 6 in 14 of 128 patterns
    alone = paired_difference(diffs, np.zeros(10))
    assert alone.test.p_value == pytest.approx(14 / 128)
    assert (alone.test.units, alone.test.unit) == (10, "query")


def test_too_few_clusters_give_no_interval():
    diffs = [0.1, 0.2, 0.3, 0.1, 0.2, 0.4, 0.1, 0.3]
    d = paired_difference(diffs, np.zeros(8), clusters=[f"c{i % 4}" for i in range(8)], unit="conversation")
    assert not d.interval.defined and "n too small" in d.interval.method
    assert d.test.units == 4  # the test still runs, with its floor 2/2^4
    assert d.test.floor == pytest.approx(2 / 16)


# --- a family ----------------------------------------------------------------------------------------


def test_holm_steps_by_hand():
    # sorted 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> running max 0.03, 0.06, 0.06
    assert holm_adjusted([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    adjusted = holm_adjusted([0.01, math.nan, 0.04])  # the NaN is not part of the family of two
    assert adjusted[0] == pytest.approx(0.02) and math.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.04)


def test_family_holm_over_every_pair_and_floor_unchanged():
    zero = [0, 0, 0, 0, 0]
    pairs = [Pair("a", "ref", [1, 2, 3, 4, 5], zero, tags={"metric": "m"}),  # p = 2/32
             Pair("b", "ref", [1, 1, 1, 1, 0], [0, 0, 0, 0, 1], tags={"metric": "m"}),  # p = 12/32
             Pair("c", "ref", [1, 0, 0, 0, 0], [0, 1, 0, 0, 0], tags={"metric": "m"}),  # sum 0: p = 1
             Pair("d", "ref", [], [], tags={"metric": "m"})]  # no queries: out of the family
    rows = comparison_rows(pairs, family=" (this table)")
    by = {r["a"]: r for r in rows}
    assert by["a"]["p_holm"] == pytest.approx(3 * 2 / 32)
    assert by["b"]["p_holm"] == pytest.approx(2 * 12 / 32)
    assert by["c"]["p_holm"] == pytest.approx(1.0)
    assert math.isnan(by["d"]["p_value"]) and math.isnan(by["d"]["p_holm"]) and by["d"]["queries"] == 0
    assert by["a"]["p_floor"] == pytest.approx(2 / 32)  # the floor is the test's, not multiplied by Holm
    assert by["a"]["method"].endswith("; Holm over 3 (this table)") and by["a"]["metric"] == "m"


def test_column_pairs_align_on_common_queries_sorted():
    columns = {"ref": {"q2": 0.0, "q1": 0.5, "q3": 1.0}, "x": {"q3": 0.0, "q1": 1.0}, "y": {"q1": 0.0}}
    pairs = column_pairs(columns, baseline="ref", clusters={"q1": "c1"}, unit="record")
    assert [(p.a, p.b) for p in pairs] == [("x", "ref"), ("y", "ref")]
    assert list(pairs[0].values_a) == [1.0, 0.0] and list(pairs[0].values_b) == [0.5, 1.0]  # q1, q3
    assert list(pairs[0].clusters) == ["c1", "q3"]  # a query without a cluster is its own
    assert len(column_pairs(columns)) == 3  # every pair without a baseline
    with pytest.raises(ValueError):
        column_pairs(columns, baseline="missing")


@given(st.lists(st.one_of(st.floats(0, 1), st.just(math.nan)), min_size=1, max_size=30))
def test_holm_is_at_least_raw_and_keeps_the_order_of_raw_p(p_values):
    adjusted = holm_adjusted(p_values)
    pairs = [(p, a) for p, a in zip(p_values, adjusted) if p == p]
    assert all(math.isnan(a) for p, a in zip(p_values, adjusted) if p != p)
    for p, a in pairs:
        assert p <= a + 1e-15 and a <= 1.0
    ordered = sorted(pairs)
    assert all(a1 <= a2 + 1e-15 for (_, a1), (_, a2) in zip(ordered, ordered[1:]))


# --- every study compares through the module -----------------------------------------------------------


@pytest.fixture
def spy(monkeypatch):
    """Counts the comparisons made through the module (compare_family calls paired_difference)."""
    calls = []
    real = comparison.paired_difference

    def counted(*args, **kwargs):
        calls.append(kwargs.get("unit", "query"))
        return real(*args, **kwargs)

    monkeypatch.setattr(comparison, "paired_difference", counted)
    return calls, counted


def _run(values: dict[str, float], cluster: str | None = None):
    ids = list(values)
    frame = pd.DataFrame({"query_id": ids, "in_suite": True, "passed": [v > 0.5 for v in values.values()],
                          "mrr@6": list(values.values())})
    clusters = {q: f"c:{cluster}{i % 5}" for i, q in enumerate(ids)} if cluster else None
    return types.SimpleNamespace(per_query=frame, config={"search": {"max_results": 6}},
                                 unit="record" if cluster else "query", clusters=lambda: clusters)


def _values(seed: int, n: int = 12) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    return {f"q{i:02d}": float(v) for i, v in enumerate(rng.random(n))}


def test_matrix_compares_through_the_module(spy):
    from harness.studies.matrix import value_comparisons
    from harness.studies.spec.models import MatrixStudy, MatrixValue

    calls, _ = spy
    cells = [{"run": run, "value": value, "per_query": {"mrr@6": _values(seed)}}
             for run in ("r1", "r2") for value, seed in (("ref", 1), ("x", 2), ("y", 3))]
    spec = MatrixStudy.model_construct(values=[MatrixValue.model_construct(label="ref")])  # only what it reads
    rows = value_comparisons(spec, cells, "mrr@6")
    assert len(calls) == 4 and {r["run"] for r in rows} == {"r1", "r2"}
    assert all(r["method"].endswith("Holm over 4 (this table)") for r in rows)  # one family: both runs


def test_benchmark_compares_through_the_module(spy):
    from harness.studies.benchmark import paired_differences
    from harness.studies.spec.models import BenchmarkStudy, PairedTable

    calls, _ = spy
    results = [("run", "a", _run(_values(1), "conv")), ("run", "b", _run(_values(2), "conv"))]
    spec = BenchmarkStudy.model_construct(paired=PairedTable.model_construct(metrics=["mrr@6", "passed"]))
    rows = paired_differences(spec, results)
    assert calls == ["record", "record"]  # each metric at the runs' unit
    assert [r["metric"] for r in rows] == ["mrr@6", "passed"] and rows[0]["method"].endswith("Holm over 2 (this table)")


def test_rounds_compare_through_the_module(spy):
    from harness.studies.ablation_analysis import round_comparisons

    calls, _ = spy
    rows = round_comparisons({3: _run(_values(1)), 4: _run(_values(2))})
    assert len(calls) == 2 and rows[0]["method"].endswith("Holm over 2")


def test_language_pairs_compare_through_the_module(spy):
    from harness.studies.language_pairs import System, compare_systems

    calls, _ = spy
    a, b = _values(1), _values(2)
    system = System("openclaw", "presets", {q: {"mrr@6": v} for q, v in a.items()},
                    {q: {"mrr@6": v} for q, v in b.items()})
    paired = {q: {"category": 1} for q in a}
    doc = compare_systems([system], paired, ["mrr@6"])
    assert len(calls) == 1 and doc["tables"]["mrr@6"][0]["system"] == "openclaw"


def test_expansion_differences_come_from_the_module_with_holm(monkeypatch, spy):
    from harness.studies import expansion

    calls, counted = spy
    monkeypatch.setattr(expansion, "paired_difference", counted)
    ids = [f"q{i}" for i in range(12)]
    frames = {label: pd.DataFrame({"query_id": ids, "in_suite": True, "kind": "suite",
                                   "mrr@6": list(_values(seed).values())})
              for label, seed in (("none", 1), ("prf", 2), ("centroid", 3))}
    runs = [{"groups": expansion.compare(frames, "none", ["mrr@6"])}]
    expansion.holm_over_study(runs)
    diffs = [runs[0]["groups"]["suite"]["variants"][v]["mrr@6"]["difference"] for v in ("prf", "centroid")]
    assert len(calls) == 2
    assert [d["p_holm"] for d in diffs] == pytest.approx(holm_adjusted([d["p"] for d in diffs]))
    assert all(d["holm_family"] == 2 and d["p_holm"] >= d["p"] for d in diffs)


def test_abstention_table_holm_through_the_module(monkeypatch):
    from harness.studies import abstention

    seen = []
    real = comparison.holm_adjusted
    assert abstention.holm_adjusted is real  # the comparison module's Holm, looked up where the table is made
    monkeypatch.setattr(abstention, "holm_adjusted", lambda p: seen.append(list(p)) or real(p))
    rows = [{"cv": {"p_value": 0.01}, "recommended_threshold": 0.4, "reason": "held-out gain"},
            {"cv": {"p_value": 0.04}, "recommended_threshold": 0.5, "reason": "held-out gain"},
            {"cv": {"p_value": math.nan}, "recommended_threshold": None, "reason": "n too small"}]
    abstention.holm_over_table(rows)
    assert len(seen) == 1 and rows[0]["p_holm"] == pytest.approx(0.02) and rows[0]["recommended_threshold"] == 0.4
    assert rows[1]["p_holm"] == pytest.approx(0.04) and rows[1]["holm_family"] == 2
    assert "p_holm" not in rows[2]


def test_cross_validation_gain_through_the_module(monkeypatch, spy):
    from harness.evaluation import cross_validation

    calls, counted = spy
    monkeypatch.setattr(cross_validation, "paired_difference", counted)
    grid = np.vstack([np.full(24, 0.5), np.linspace(0.4, 1.0, 24)])
    cv = cross_validation.cross_validate(None, None, grid, configured=0, resamples=500, flips=500)
    assert len(calls) == 2  # the held-out gain and its one kind ("query")
    assert cv.test.p_value == paired_difference(cv.held_out, cv.configured_scores, resamples=500, flips=500
                                                ).test.p_value
