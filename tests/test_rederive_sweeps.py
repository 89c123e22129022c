"""The committed sweeps' verdicts re-derived from the per-query values they store (issue 37: a study stores its
per-query values, so a reader checks a gain, its test and its unit count without re-running it), with code of
this file's own: means, the held-out gain, and the exact sign-flip p over the resampling units."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

REPORTS = Path(__file__).resolve().parents[1] / "reports"
HEADLINE_SWEEPS = ["sweep/round3", "sweep/round4", "sweep/cmrc2018-dev"]  # the sweeps the README and docs quote
SWEEPS = sorted(str(p.parent.relative_to(REPORTS)) for p in REPORTS.glob("**/sweep.json"))


def _doc(folder: str) -> dict:
    return json.loads((REPORTS / folder / "sweep.json").read_text(encoding="utf-8"))


def _exact_sign_flip(d: np.ndarray, clusters: list[str] | None) -> tuple[float, float, int]:
    """Two-sided exact sign flip of sum(d) over the units (a cluster's differences flip together): (p, floor,
    informative units).  Written here, not imported, so that it checks the harness's test."""
    if clusters is None:
        totals = d
    else:
        index = {c: i for i, c in enumerate(dict.fromkeys(clusters))}
        totals = np.zeros(len(index))
        np.add.at(totals, [index[c] for c in clusters], d)
    totals = totals[np.abs(totals) > 1e-9 * max(1.0, float(np.abs(d).sum()))]
    m = len(totals)
    if m == 0:
        return 1.0, 1.0, 0
    observed = abs(totals.sum()) - 1e-9 * np.abs(totals).sum()
    sums = np.zeros(1)
    for t in totals:  # every one of the 2^m signed sums
        sums = np.concatenate([sums + t, sums - t])
    return float(np.count_nonzero(np.abs(sums) >= observed)) / 2 ** m, 2 / 2 ** m, m


@pytest.mark.parametrize("folder", HEADLINE_SWEEPS)
def test_the_headline_sweeps_store_their_per_query_values(folder):
    per_query = _doc(folder).get("per_query")
    assert per_query, f"reports/{folder}/sweep.json has no per-query values (make sweep)"
    n = len(per_query["query_ids"])
    assert n == _doc(folder)["objective"]["queries"]
    assert len(per_query["held_out"]) == len(per_query["fold"]) == n
    assert all(len(v) == n for v in per_query["objective"].values())


@pytest.mark.parametrize("folder", SWEEPS)
def test_a_sweeps_gain_and_test_follow_from_its_per_query_values(folder):
    doc = _doc(folder)
    per_query = doc.get("per_query")
    if per_query is None:
        pytest.skip(f"reports/{folder} was written before sweeps stored per-query values")
    cv, objective = doc["cv"], per_query["objective"]
    configured, held_out = np.asarray(objective["configured"]), np.asarray(per_query["held_out"])
    assert configured.mean() == pytest.approx(doc["configured"]["objective"], abs=1e-9)
    assert np.mean(objective["best"]) == pytest.approx(doc["best"]["objective"], abs=1e-9)
    assert configured.mean() == pytest.approx(cv["configured_mean"], abs=1e-9)
    assert held_out.mean() == pytest.approx(cv["held_out_mean"], abs=1e-9)
    d = held_out - configured
    assert d.mean() == pytest.approx(cv["gain"]["estimate"], abs=1e-9)
    # each held-out value is the value of the setting its fold chose
    assert max(per_query["fold"]) + 1 == cv["folds"] and min(per_query["fold"]) == 0
    if cv["recommended"] is not None:
        assert objective["recommended"] is not None
    if not cv["p_monte_carlo"]:
        p, floor, informative = _exact_sign_flip(d, per_query["clusters"])
        assert p == pytest.approx(cv["p_value"], rel=1e-9)
        assert floor == pytest.approx(cv["p_floor"], rel=1e-9)
    else:
        assert cv["p_floor"] < 0.05  # a random test's floor is 1/(B+1): never the reason for a verdict
    # a recommendation needs an interval at the unit above zero and a test that can and does reach 0.05
    if cv["recommended"] is not None:
        assert cv["gain"]["ci95"][0] > 0 and cv["p_value"] < 0.05 and cv["p_floor"] < 0.05
    holdout = doc.get("holdout")
    if holdout and holdout.get("per_query"):
        h = holdout["per_query"]
        gain = np.mean(np.asarray(h["chosen"]) - np.asarray(h["configured"]))
        assert gain == pytest.approx(holdout["gain"]["estimate"], abs=1e-9)
        assert len(h["query_ids"]) == holdout["queries"]
