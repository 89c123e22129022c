"""Sweeps: fusing cached legs gives exactly what the full pipeline gives; the grid is complete."""

import pytest

from harness.config import load_experiment
from harness.stages.lexical import FTS5Index
from harness.studies.experiment import run_experiment
from harness.studies.sweep import (
    load_grid,
    paired_randomization_test,
    run_sweep,
    weight_values,
    write_sweep,
)
from tests.conftest import ROOT

GRID = {"vector_weight": [0.3, 0.7, 1.0], "fusion": ["weighted", "rrf"],
        "tokenizer": [{"name": "unicode61"}, {"name": "jieba"}], "min_score": [0.0, 0.35]}


@pytest.fixture(scope="module")
def round3():
    return load_experiment(ROOT / "experiments/round3.toml")


@pytest.fixture(scope="module")
def sweep(round3):
    return run_sweep(round3, GRID, progress=False)


def test_grid_is_complete_and_legs_are_searched_once(round3, monkeypatch):
    calls = {"n": 0}
    original = FTS5Index.search

    def counting(self, query, k):
        calls["n"] += 1
        return original(self, query, k)

    monkeypatch.setattr(FTS5Index, "search", counting)
    result = run_sweep(round3, GRID, progress=False)
    # weighted: 3 weights x 2 minScores; rrf also takes weights: 3 x 2; per tokenizer
    assert len(result.settings) == 2 * (3 * 2 + 3 * 2)
    n_queries = 34
    assert calls["n"] == 2 * n_queries  # once per query and tokenizer, not once per setting


def test_a_setting_scores_exactly_like_the_full_pipeline(sweep, round3):
    row = sweep.settings.loc[sweep.default_index]
    assert (row["fusion"], row["vector_weight"], row["min_score"], row["tokenizer"]) == \
        ("weighted", 0.7, 0.35, "unicode61")
    full = run_experiment(round3, progress=False).summary["suite"]
    assert row["passed"] == full["passed"]
    assert row["mrr@6"] == pytest.approx(full["mrr@6"])
    assert row["ndcg@6"] == pytest.approx(full["ndcg@6"])
    assert row["suite_queries"] == 10  # round 3's suite: T1-T10


def test_jieba_at_other_weights_differs_from_default(sweep):
    s = sweep.settings
    assert s["passed"].nunique() > 1 or s["mrr@6"].nunique() > 1


def test_report_has_snippet_and_p_value(sweep, round3, tmp_path):
    doc = write_sweep(sweep, tmp_path, round3)
    assert "vectorWeight" in doc["openclaw_snippet"] and 0 < doc["p_value_best_vs_default"] <= 1
    assert (tmp_path / "sweep.png").stat().st_size > 10_000
    assert "minScore at the default weights" in (tmp_path / "sweep.md").read_text(encoding="utf-8")


def test_randomization_test():
    assert paired_randomization_test([1, 1, 1], [1, 1, 1]) == 1.0
    assert paired_randomization_test([1.0] * 12, [0.0] * 12) < 0.001
    assert paired_randomization_test([1, 0, 1, 0], [0, 1, 0, 1]) > 0.5


def test_weight_values_and_grid_file():
    assert weight_values({"start": 0, "stop": 1, "step": 0.05})[-1] == 1.0
    assert len(weight_values({"start": 0, "stop": 1, "step": 0.05})) == 21
    grid = load_grid(ROOT / "experiments/sweep.toml")
    assert grid["fusion"] == ["weighted", "wsum", "rrf"]
