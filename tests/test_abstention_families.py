"""The abstention reports' Holm families are disjoint: a hypothesis two reports share (the same data set,
preset, fusion and stages left out, with the same raw p) is corrected once, in the family of the report
its spec names (`holm_elsewhere`); every other row is corrected over its own table."""
from __future__ import annotations

import pytest

from harness.studies.abstention import holm_over_table


def _row(label, p, recommended=0.6):
    return {"label": label, "preset": "openclaw-2026.08", "experiment": f"experiments/{label}.toml",
            "fusion": "weighted", "without": [], "cv": {"p_value": p}, "recommended_threshold": recommended,
            "verdict": "abstention change", "reason": "held-out gain"}


def test_a_shared_hypothesis_takes_the_other_familys_correction_and_leaves_this_family():
    rows = [_row("a", 0.01), _row("b", 0.02), _row("shared", 0.004)]
    other = {**_row("shared", 0.004), "p_holm": 0.06, "holm_family": 6, "holm_source": "reports/x/abstention.json"}
    key = ("shared", "openclaw-2026.08", "experiments/shared.toml", "weighted", ())
    holm_over_table(rows, elsewhere={key: other})
    a, b, shared = rows
    assert a["holm_family"] == b["holm_family"] == 2  # Holm over the two rows this table owns
    assert a["p_holm"] == pytest.approx(0.02) and b["p_holm"] == pytest.approx(0.02)
    assert shared["p_holm"] == 0.06 and shared["holm_family"] == 6
    assert shared["holm_source"] == "reports/x/abstention.json"
    assert shared["recommended_threshold"] is None and "reports/x/abstention.json" in shared["verdict"]
    assert a["recommended_threshold"] == 0.6


def test_without_the_other_report_or_with_another_raw_p_every_row_is_this_tables():
    rows = [_row("a", 0.01), _row("shared", 0.004)]
    holm_over_table(rows)
    assert [r["holm_family"] for r in rows] == [2, 2] and "holm_source" not in rows[1]
    rows = [_row("a", 0.01), _row("shared", 0.004)]
    other = {**_row("shared", 0.5), "p_holm": 1.0, "holm_family": 6, "holm_source": "elsewhere"}
    holm_over_table(rows, elsewhere={("shared", "openclaw-2026.08", "experiments/shared.toml", "weighted", ()): other})
    assert rows[1]["holm_family"] == 2 and rows[1]["p_holm"] == pytest.approx(0.008)
