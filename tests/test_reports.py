"""The ablation report's explanations are computed from the results, never written by hand."""
from types import SimpleNamespace

import pandas as pd
import pytest

from harness.reporting.markdown import our_cell
from harness.studies.ablation_analysis import differences, paraphrase_misses

LEGS_UNSEEN = {"relevant_indexed": True, "vector_candidates": 24, "lexical_candidates": 0,
               "lexical_rank": None, "lexical_raw": None, "lexical_raw_at_cut": None}


def row(qid, kind, *, passed, rank, score, margin, vector_rank, hit6=True, threshold=0.001, **extra):
    near = margin is not None and abs(margin) < threshold
    return {"query_id": qid, "text": f"query {qid}", "kind": kind, "in_suite": kind == "suite",
            "passed": passed, "rank": rank, "score": score, "relevant_margin": margin,
            "near_tie": near, "near_tie_on": "relevant" if near else "", "near_tie_threshold": threshold,
            "top1_relevant": passed, "top1_pure": True, "hit@6": hit6,
            "vector_rank": vector_rank, "vector_raw": 0.87, "vector_raw_at_cut": 0.86, **LEGS_UNSEEN, **extra}


def fake_round(rows, hits):
    return SimpleNamespace(per_query=pd.DataFrame(rows), hits=hits)


def test_differences_give_the_margin_flag_near_ties_and_say_where_each_leg_put_it():
    rows = [row("T1", "suite", passed=False, rank=2, score=0.6074, margin=-0.0009, vector_rank=2),
            row("T3", "suite", passed=True, rank=1, score=0.6084, margin=0.0004, vector_rank=1, threshold=0.0001),
            row("T5", "suite", passed=True, rank=1, score=0.70, margin=0.05, vector_rank=1)]
    hits = {"T1": [{"chunk": "memory/a.md:1-20", "score": 0.6083}], "T3": [{"chunk": "memory/t.md:1-20", "score": 0.6084}],
            "T5": [{"chunk": "memory/f.md:1-9", "score": 0.70}]}
    seed = {("T1", 3): {"seed_status": "pass"}, ("T3", 3): {"seed_status": "fail"}, ("T5", 3): {"seed_status": "pass"}}
    notes = differences({3: fake_round(rows, hits)}, seed)
    assert len(notes) == 2  # T5 agrees with the seed
    t1, t3 = notes
    assert t1.startswith("round 3 T1 query T1: seed passes, ours fails — top-1 memory/a.md:1-20 (0.608); relevant rank 2")
    assert "behind the best other chunk by 0.0009 (a near tie, under 0.001" in t1
    assert t3.startswith("round 3 T3 query T3: seed ✗, ours passes")
    # the threshold follows the query's score scale: 0.0004 is 4x this query's
    assert "ahead of the best other chunk by 0.0004 (4x the near-tie threshold 0.0001)" in t3
    assert t3.endswith("vector rank 1 (raw 0.870; the cut-off candidate 0.860); lexical: no hit at all")


def test_paraphrase_misses_tell_a_near_miss_from_a_record_outside_the_layout():
    rows = [row("P1", "paraphrase", passed=False, rank=None, score=None, margin=None, vector_rank=14, hit6=False),
            row("P2", "paraphrase", passed=False, rank=None, score=None, margin=None, vector_rank=None, hit6=False,
                relevant_indexed=False),
            row("P3", "paraphrase", passed=False, rank=None, score=None, margin=None, vector_rank=3, hit6=False),
            row("P4", "paraphrase", passed=True, rank=1, score=0.9, margin=0.1, vector_rank=1)]
    notes = paraphrase_misses({4: fake_round(rows, {})})
    assert notes == [
        "round 4 P1 query P1: vector rank 14 (raw 0.870; the cut-off candidate 0.860); lexical: no hit at all",
        "round 4 P2 query P2: its record is not in this round's layout",
        "round 4 P3 query P3: vector rank 3 (raw 0.870; the cut-off candidate 0.860); lexical: no hit at all"
        " — within a leg's top 6, so fusion or post-processing pushed it out",
    ]


def test_table_cells_mark_near_ties_only():
    near = pd.Series(row("T3", "suite", passed=True, rank=1, score=0.6084, margin=0.0004, vector_rank=1))
    clear = pd.Series(row("T5", "suite", passed=True, rank=1, score=0.70, margin=0.05, vector_rank=1))
    assert our_cell(near) == "0.608 (near tie: vs best other +0.0004)"
    assert our_cell(clear) == "0.700"


def test_console_and_report_read_the_configured_cutoffs(tmp_path):
    """maxResults 5: the printed figures and report.md say @5 and equal results.json (no fixed @6)."""
    import json
    import re

    from typer.testing import CliRunner

    from harness.cli import app

    out = tmp_path / "r3"
    result = CliRunner().invoke(app, ["run", "experiments/round3.toml", "--out", str(out), "--set",
                                      "search.max_results=5", "--set", "embedder.name=hash"],
                                env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    suite = json.loads((out / "results.json").read_text(encoding="utf-8"))["summary"]["suite"]
    line = next(x for x in result.output.splitlines() if x.startswith("round 3: passed"))
    assert "@6" not in line
    for label, key in (("Recall@5", "recall@5"), ("MRR@5", "mrr@5"), ("nDCG@5", "ndcg@5")):
        printed = re.search(rf"(?<!-level ){label} (\d\.\d{{3}}) \[(\d\.\d{{3}}), (\d\.\d{{3}})\]", line)
        assert printed, (label, line)
        assert [float(x) for x in printed.groups()] == pytest.approx(
            [suite[key], *suite[f"{key}_ci95"]], abs=5e-4)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"MRR@5 {suite['mrr@5']:.3f}" in report and "@6" not in report


def test_a_cutoff_above_max_results_is_an_error_naming_both(tmp_path):
    from typer.testing import CliRunner

    from harness.cli import app

    result = CliRunner().invoke(app, ["run", "experiments/round3.toml", "--out", str(tmp_path), "--set",
                                      "evaluation.cutoffs=[6, 10]", "--set", "embedder.name=hash"])
    assert result.exit_code == 2
    assert "[evaluation] cutoffs: cut-off 10 is above [search] max_results = 6" in result.output
