"""Abstention: AUROC by hand and against scipy's Mann-Whitney U, the utility per query by hand, the
threshold choice cross-validated, `harness sweep --objective abstention` on a small case, and the
calibration study end to end on king78 with the hash embedder."""
import json
import math

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import ConfigError
from harness.evaluation.abstention import (
    auroc,
    bootstrap_auroc,
    calibrate,
    candidate_thresholds,
    middle_of_best,
    threshold_matrix,
    utility_values,
)
from harness.evaluation.fast_scoring import SettingScores
from harness.inputs.layout import Query
from harness.studies.sweep import objective_of


def test_auroc_by_hand():
    # pairs (answerable, unanswerable): 0.9>0.7, 0.9>0.5, 0.8>0.7, 0.8>0.5, 0.6<0.7, 0.6>0.5: 5 of 6
    assert auroc([0.9, 0.8, 0.6], [0.7, 0.5]) == pytest.approx(5 / 6)
    # a tie counts one half: (0.5 = 0.5) -> 1/2, (0.7 > 0.5) -> 1; (1/2 + 1) / 2
    assert auroc([0.5, 0.7], [0.5]) == pytest.approx(0.75)
    # nothing returned (NaN) ranks below every score; two empty answers tie
    assert auroc([math.nan], [0.1]) == 0.0
    assert auroc([0.2, math.nan], [math.nan]) == pytest.approx(0.75)
    # a perfect separation, reversed, and an empty class
    assert auroc([0.9, 0.8], [0.1, 0.2]) == 1.0 and auroc([0.1], [0.9, 0.8]) == 0.0
    assert math.isnan(auroc([], [0.3]))


def test_auroc_is_mann_whitney_u_over_the_pairs():
    rng = np.random.default_rng(3)
    pos, neg = np.round(rng.normal(0.62, 0.05, 60), 2), np.round(rng.normal(0.6, 0.05, 25), 2)  # rounded: ties
    u = stats.mannwhitneyu(pos, neg, alternative="two-sided").statistic
    assert auroc(pos, neg) == pytest.approx(u / (len(pos) * len(neg)))


def test_bootstrap_interval_brackets_the_estimate_and_is_deterministic():
    rng = np.random.default_rng(4)
    pos, neg = rng.normal(0.7, 0.1, 80), rng.normal(0.6, 0.1, 30)
    a = bootstrap_auroc(pos, neg, resamples=2000)
    assert 0.0 <= a.low <= a.estimate <= a.high <= 1.0 and a.low < a.high
    assert a == bootstrap_auroc(pos, neg, resamples=2000)
    same = bootstrap_auroc([0.5, 0.5], [0.5], resamples=200)  # nothing to resample: no interval, not a point
    assert same.estimate == 0.5 and not same.defined and same.method.startswith("n too small")


def test_utility_values_by_hand():
    # two answerable (one answered correctly), one unanswerable (silent): U = 0.5 x 1/2 + 0.5 x 1 = 0.75
    values = utility_values(np.array([1, 0, 0]), np.array([0, 0, 1]), [True, True, False], weight=0.5)
    assert values.tolist() == [[0.75, 0.0, 1.5]] and values.mean() == pytest.approx(0.75)
    # weight 0.2: U = 0.8 x 1/2 + 0.2 x 1 = 0.6
    assert utility_values(np.array([1, 0, 0]), np.array([0, 0, 1]), [True, True, False], 0.2).mean() == \
        pytest.approx(0.6)
    with pytest.raises(ValueError):
        utility_values(np.array([1]), np.array([1]), [True], weight=1.5)


def test_threshold_matrix_keeps_scores_at_the_threshold():
    correct, silent = threshold_matrix([0.5, 0.6], np.array([0.6, math.nan]), np.array([0.5, math.nan]))
    # t = 0.5: the relevant hit (0.5) is kept; t = 0.6: it is not, the top-1 (0.6) still is
    assert correct.tolist() == [[True, False], [False, False]]
    assert silent.tolist() == [[False, True], [False, True]]
    grid = candidate_thresholds(np.array([0.6, 0.7]), np.array([0.6, math.nan]), configured=0.35, steps=11)
    assert grid[0] == 0.0 and grid[1] == 0.35 and len(grid) == 13  # 0, 0.35 and 11 steps from 0.599 to 0.701
    assert grid[2] == pytest.approx(0.6 - 0.1 / 11) and grid[-1] == pytest.approx(0.7 + 0.1 / 11)


def test_middle_of_best_takes_the_middle_of_the_longest_tied_run():
    means = np.array([[0.5], [0.9], [0.9], [0.6], [0.9], [0.9], [0.9], [0.2]])
    assert middle_of_best()(means) == 5  # runs [1, 2] and [4, 5, 6]: the longer one's middle
    assert middle_of_best(prefer=2)(means) == 2 and middle_of_best(prefer=0)(means) == 5


def test_calibrate_finds_the_separating_threshold_and_cross_validates_it():
    # 30 answerable queries whose relevant top-1 scores 0.8-0.9, 20 unanswerable ones at 0.5-0.6:
    # a strict minScore between them answers every answerable query and silences every other one.
    pos = np.linspace(0.8, 0.9, 30)
    neg = np.linspace(0.5, 0.6, 20)
    top1 = np.concatenate([pos, neg])
    relevant = np.concatenate([pos, np.full(20, math.nan)])
    answerable = [True] * 30 + [False] * 20
    ids = [f"q{i:02d}" for i in range(50)]
    cal = calibrate(top1, relevant, answerable, ids, configured=0.35, resamples=500)
    assert cal.auroc.estimate == 1.0
    assert cal.best_threshold == pytest.approx(0.7, abs=0.002)  # the middle of the plateau (0.6, 0.8]
    assert cal.row(cal.best_threshold) == {"threshold": pytest.approx(cal.best_threshold), "answered_correctly": 1.0,
                                           "silent": 1.0, "utility": 1.0}
    configured = cal.row(0.35)
    assert configured["answered_correctly"] == 1.0 and configured["silent"] == 0.0 and configured["utility"] == 0.5
    # 50 queries > 20: five folds stratified by class; every fold's choice separates its held-out queries
    assert len(cal.cv.folds) == 5 and cal.cv.held_out_mean == pytest.approx(1.0)
    assert cal.cv.gain.estimate == pytest.approx(0.5) and cal.recommended_threshold == cal.best_threshold
    assert cal.versus_trivial["answer_all"].estimate == pytest.approx(0.5)  # answer all: U = 0.5 x 1 + 0.5 x 0
    assert cal.versus_trivial["silent_all"].estimate == pytest.approx(0.5)  # silent on all: U = 0.5
    doc = cal.as_dict()
    assert doc["auroc"]["ci95"] == [1.0, 1.0] and "U = 0.5" in doc["utility"]
    assert doc["answer_all_utility"] == 0.5 and doc["silent_all_utility"] == 0.5


def test_a_threshold_that_only_beats_a_poor_configuration_is_not_recommended():
    # no signal, and answering is right for a third of the answerable queries: the configured 0
    # (U = 0.5 x 1/3) loses to staying silent on everything (U = 0.5), which is all a threshold reaches here
    rng = np.random.default_rng(6)
    n = 300
    top1 = rng.uniform(0.5, 0.6, n)
    answerable = np.arange(n) % 3 != 0
    relevant = np.where(answerable & (np.arange(n) % 9 < 3), top1, math.nan)
    cal = calibrate(top1, relevant, answerable, [f"q{i}" for i in range(n)], configured=0.0, resamples=500)
    assert cal.row(0.0)["utility"] == pytest.approx(0.5 / 3, abs=0.02)
    assert cal.cv.recommended is not None  # against the configuration alone the choice would look like a gain
    assert cal.recommended_threshold is None and "silent all" in cal.reason


def test_calibrate_without_signal_recommends_nothing():
    rng = np.random.default_rng(5)
    top1 = rng.uniform(0.55, 0.65, 60)
    answerable = np.arange(60) % 3 != 0
    relevant = np.where(answerable, top1, math.nan)
    cal = calibrate(top1, relevant, answerable, [str(i) for i in range(60)], configured=None, resamples=500)
    assert cal.auroc.low < 0.5 < cal.auroc.high
    assert cal.recommended_threshold is None
    with pytest.raises(ValueError):
        calibrate([0.5], [0.5], [True], ["a"])


def _scores(hits, returned, passed):
    hits, returned, passed = np.array(hits, bool), np.array(returned), np.array(passed, bool)
    n = hits.shape
    return SettingScores([(None, None)] * n[0], [f"q{j}" for j in range(n[1])], np.zeros(n), passed, {6: hits},
                         {6: np.zeros(n)}, np.zeros(n), returned, np.zeros(n))


def test_sweep_objective_abstention_on_a_small_case():
    queries = [Query("s1", "a", {"d1": 1}), Query("s2", "b", {"d2": 1}), Query("p1", "c", {"d1": 1}, "paraphrase"),
               Query("n1", "d", {}, "negative")]
    # setting 0: no threshold (all answered, the negative too); setting 1: a threshold that silences the
    # negative and loses s2's relevant hit (s1's relevant chunk is returned but not first: not passed)
    scores = _scores(hits=[[1, 1, 1, 1], [1, 0, 1, 0]], returned=[[6, 6, 6, 6], [2, 1, 3, 0]],
                     passed=[[0, 1, 0, 1], [0, 0, 0, 0]])
    pass_objective = objective_of(scores, queries, None, 6)
    assert pass_objective.matrix.tolist() == [[0, 1, 1, 0], [0, 0, 1, 1]]
    abst = objective_of(scores, queries, None, 6, "abstention", 0.5)
    # 3 answerable: each counts (1 - 0.5) x 4/3 = 2/3; 1 unanswerable: 0.5 x 4/1 = 2
    assert abst.matrix == pytest.approx(np.array([[2 / 3, 2 / 3, 2 / 3, 0], [2 / 3, 0, 2 / 3, 2]]))
    # U: setting 0 = 0.5 x 3/3 + 0.5 x 0 = 0.5; setting 1 = 0.5 x 2/3 + 0.5 x 1 = 0.8333
    assert abst.matrix.mean(axis=1) == pytest.approx([0.5, 0.5 * 2 / 3 + 0.5])
    assert abst.kind == "abstention" and "U = 0.5" in abst.description
    with pytest.raises(ConfigError):
        objective_of(scores, queries, None, 6, "accuracy")


def test_harness_sweep_objective_abstention_tunes_min_score(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text('kind = "grid"\n[grid]\nvector_weight = []\nfusion = []\n'
                    'min_score = { start = 0.0, stop = 1.0, step = 0.05 }\n',
                    encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["sweep", "experiments/round4.toml", "--objective", "abstention", "--grid",
                                      str(grid), "--out", str(out), "--set", "embedder.name=hash"])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert doc["objective"]["kind"] == "abstention" and doc["objective"]["queries"] == 34
    # leave-one-out by record (king78's suite is small): a T-query leaves with its paraphrases
    assert doc["cv"]["folds"] == doc["cv"]["units"] < 34 and doc["cv"]["unit"] == "record"
    assert sorted({s["min_score"] for s in [doc["configured"], doc["best"]]}) == \
        sorted({0.35, doc["best"]["min_score"]})
    assert (out / "sweep.png").exists()


def test_abstention_study_end_to_end(tmp_path):
    spec = tmp_path / "abstention.toml"
    spec.write_text('kind = "abstention"\nname = "abs"\nweight = 0.5\nnotes = "n"\n[[runs]]\nlabel = "king78 r4"\n'
                    'experiment = "experiments/round4.toml"\npresets = ["openclaw-2026.08"]\n'
                    'overrides = { embedder = { name = "hash" } }\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["abstention", str(spec), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "out" / "abs.json").read_text(encoding="utf-8"))
    run = doc["runs"][0]
    assert (run["answerable"], run["unanswerable"]) == (24, 10) and run["configured_threshold"] == 0.35
    assert all(p["name"] != "min_score" for p in run["config"]["postprocess"])
    assert doc["environment"]  # versions and core count, as every results file
    top1 = np.array([math.nan if x is None else x for x in run["scores"]["top1"]])
    mask = np.array(run["scores"]["answerable"])
    assert run["auroc"]["estimate"] == pytest.approx(auroc(top1[mask], top1[~mask]))
    md = (tmp_path / "out" / "abs.md").read_text(encoding="utf-8")
    assert "AUROC [95% CI]" in md and "## What it means" in md and (tmp_path / "out" / "abs.png").exists()
    # --redraw takes the spec's edited text into the Markdown and the JSON alike, figures untouched
    spec.write_text(spec.read_text(encoding="utf-8").replace('notes = "n"', 'notes = "edited"'), encoding="utf-8")
    assert CliRunner().invoke(app, ["abstention", str(spec), "--out", str(tmp_path / "out"), "--redraw"]).exit_code == 0
    redrawn = json.loads((tmp_path / "out" / "abs.json").read_text(encoding="utf-8"))
    assert redrawn["notes"] == "edited" and redrawn["runs"] == doc["runs"]
    assert "edited" in (tmp_path / "out" / "abs.md").read_text(encoding="utf-8")


def test_spec_errors_name_the_file(tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text('kind = "abstention"\nname = "x"\nweight = 2\n[[runs]]\nlabel = "a"\nexperiment = "e.toml"\n',
                    encoding="utf-8")
    from harness.studies.abstention import load_abstention_spec

    with pytest.raises(ConfigError, match="bad.toml"):
        load_abstention_spec(spec)


def test_a_gain_over_silence_in_two_of_ten_groups_cannot_decide():
    """Issue 37's LoCoMo / lancedb-pro row: the best threshold silences every negative and answers 3
    answerable questions in 2 of 10 conversations.  Its gain over staying silent rests on those 2
    conversations, where an exact sign-flip cannot go below p = 0.5: no recommendation, and the verdict
    says "cannot decide", not a bare "none" or "yes"."""
    rng = np.random.default_rng(7)
    n = 400
    groups = [f"conv-{i // 40}" for i in range(n)]
    answerable = np.arange(n) % 4 != 0
    top1 = rng.uniform(0.5, 0.9, n)
    relevant = np.where(answerable & (rng.random(n) < 0.6), top1, math.nan)
    lifted = [i for i in range(n) if answerable[i] and groups[i] in ("conv-3", "conv-7")][:3]
    top1[lifted] = relevant[lifted] = 0.95
    cal = calibrate(top1, relevant, answerable, [f"q{i}" for i in range(n)], configured=None, resamples=500,
                    groups=groups, unit="conversation")
    assert cal.cv.recommended is not None  # against the configuration (answer everything) it looks like a gain
    assert cal.recommended_threshold is None
    assert cal.versus_trivial_tests["silent_all"].informative == 2
    assert cal.verdict.startswith("cannot decide with 2 of 10 conversations")
    assert cal.as_dict()["verdict"] == cal.verdict
