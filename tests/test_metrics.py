"""Metrics against a hand-worked example, cross-checked with ranx; ties broken by (score desc, id)."""
import math

import pytest

from harness.evaluation.metrics import (
    evaluate,
    leg_rank,
    query_outcome,
    relevant_margin,
    strict_run,
)
from harness.evaluation.per_query import leg_diagnostics
from harness.evaluation.runs import max_passage_run, ranked_ids
from harness.reporting.markdown import legs_note
from harness.stages.fusion import Hit, Legs, rank_hits

METRICS_AT_3 = ["recall@3", "mrr@3", "ndcg@3"]


def test_hand_worked_example():
    qrels = {"q1": {"d1": 1, "d3": 1}, "q2": {"d9": 1}}
    ranked = {"q1": ["d2", "d1", "d4", "d3"], "q2": ["d5"]}
    m = evaluate(strict_run(ranked), qrels, METRICS_AT_3)
    # q1: first relevant at rank 2 -> RR 0.5; Recall@3 = 1/2; DCG@3 = 1/log2(3), IDCG@3 = 1 + 1/log2(3)
    assert m["q1"]["mrr@3"] == pytest.approx(0.5)
    assert m["q1"]["recall@3"] == pytest.approx(0.5)
    assert m["q1"]["ndcg@3"] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert m["q2"] == {"recall@3": 0.0, "mrr@3": 0.0, "ndcg@3": 0.0}


def test_agrees_with_ranx():
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    qrels = {"q1": {"d1": 1, "d3": 1}, "q2": {"d9": 1, "d5": 1}, "q3": {"d7": 1}}
    ranked = {"q1": ["d2", "d1", "d4", "d3", "d8"], "q2": ["d5", "d6", "d9"], "q3": ["d1", "d2"]}
    ours = evaluate(strict_run(ranked), qrels, METRICS_AT_3)
    theirs = ranx_evaluate(Qrels(qrels), Run(strict_run({q: r[:3] for q, r in ranked.items()})),
                           METRICS_AT_3, return_mean=False)
    for i, q in enumerate(sorted(qrels)):
        for metric in METRICS_AT_3:
            assert ours[q][metric] == pytest.approx(float(theirs[metric][i])), (q, metric)


def test_ties_break_by_id_before_evaluation():
    hits = rank_hits([Hit("b", 0.5), Hit("a", 0.5), Hit("c", 0.9)])
    assert [h.id for h in hits] == ["c", "a", "b"]
    docs_of = {"c": frozenset({"D3"}), "a": frozenset({"D2", "D1"}), "b": frozenset({"D1"})}
    run = {"q": {h.id: h.score for h in hits}}
    assert ranked_ids(run["q"]) == ["c", "a", "b"]
    # documents by their best chunk; the two documents of chunk a tie and break by id
    assert ranked_ids(max_passage_run(run, docs_of)["q"]) == ["D3", "D1", "D2"]


def test_query_outcome_pass_purity_and_rank():
    docs_of = {"x": frozenset({"A", "B"}), "y": frozenset({"B"}), "z": frozenset({"C"})}
    mixed_first = query_outcome([Hit("x", 0.6), Hit("y", 0.5)], {"B"}, docs_of, 0.35)
    assert mixed_first.passed and not mixed_first.top1_pure and mixed_first.rank == 1
    wrong_first = query_outcome([Hit("z", 0.6), Hit("y", 0.5)], {"B"}, docs_of, 0.35)
    assert not wrong_first.passed and wrong_first.rank == 2 and wrong_first.score == 0.5
    below = query_outcome([Hit("y", 0.3)], {"B"}, docs_of, 0.35)
    assert below.top1_relevant and below.top1_pure and not below.passed
    nothing = query_outcome([], {"B"}, docs_of, 0.35)
    assert nothing.rank is None and not nothing.passed and nothing.returned == 0


def test_leg_rank_finds_the_first_relevant_chunk_of_one_leg():
    docs_of = {"a": frozenset({"d1"}), "b": frozenset({"d2", "d3"}), "c": frozenset({"d3"})}
    candidates = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    assert leg_rank(candidates, {"d3"}, docs_of) == (2, 0.8)  # a mixed chunk counts at its own rank
    assert leg_rank(candidates, {"d9"}, docs_of) == (None, None)
    assert leg_rank([], {"d1"}, docs_of) == (None, None)


def test_leg_diagnostics_and_their_note():
    docs_of = {f"c{i}": frozenset({f"d{i}"}) for i in range(8)}
    legs = Legs(vector=[(f"c{i}", 0.9 - i / 100) for i in range(8)], lexical=[])
    diag = leg_diagnostics(legs, {"d7"}, docs_of, cut=6)
    assert diag == {"vector_candidates": 8, "vector_rank": 8, "vector_raw": pytest.approx(0.83),
                    "vector_raw_at_cut": pytest.approx(0.85),
                    "lexical_candidates": 0, "lexical_rank": None, "lexical_raw": None,
                    "lexical_raw_at_cut": None}
    assert legs_note(diag) == ("vector rank 8 (raw 0.830; the cut-off candidate 0.850); "
                               "lexical: no hit at all")
    assert legs_note({**diag, "relevant_indexed": False}) == "its record is not in this round's layout"
    short = Legs(vector=[("c0", 0.5)], lexical=[("c1", 3.0), ("c2", 2.0)])
    diag = leg_diagnostics(short, {"d2"}, docs_of, cut=6)
    assert legs_note(diag) == "vector: not among its 1 candidates; lexical rank 2 (raw 2.000)"


def test_relevant_margin_signs_and_missing_sides():
    docs_of = {"a": frozenset({"d1"}), "b": frozenset({"d2"}), "c": frozenset({"d1", "d3"})}
    hits = [Hit("b", 0.62), Hit("a", 0.6195), Hit("c", 0.5)]
    assert relevant_margin(hits, {"d1"}, docs_of) == pytest.approx(-0.0005)  # trails the top-1
    assert relevant_margin(hits, {"d2"}, docs_of) == pytest.approx(0.0005)  # leads the next chunk
    assert relevant_margin([Hit("a", 0.6), Hit("c", 0.5)], {"d1"}, docs_of) is None  # nothing else returned
    assert relevant_margin(hits, {"d9"}, docs_of) is None  # relevant not returned


def test_summary_counts_near_ties_among_suite_queries_only():
    import pandas as pd

    from harness.evaluation.summary import summarise

    ms = {f"ms_{s}": 0.1 for s in ("retrieval", "query_embedding", "vector", "lexical", "fusion", "postprocess")}
    rows = [
        {"query_id": "T1", "kind": "suite", "in_suite": True, "relevant_margin": 0.0004},
        {"query_id": "T2", "kind": "suite", "in_suite": True, "relevant_margin": -0.0009},
        {"query_id": "T3", "kind": "suite", "in_suite": True, "relevant_margin": 0.002},
        {"query_id": "T4", "kind": "suite", "in_suite": True, "relevant_margin": None},
        {"query_id": "T5", "kind": "suite", "in_suite": False, "relevant_margin": 0.0001},
        {"query_id": "N1", "kind": "negative", "in_suite": False, "relevant_margin": None},
    ]
    frame = pd.DataFrame([{**r, "passed": True, "returned": 6, "top1_score": 0.6, "top1_relevant": True,
                           "top1_pure": True, "text_score_nonzero": False, **ms} for r in rows])
    summary = summarise(frame, 6)
    assert summary["suite"]["near_ties"] == 2 and summary["suite"]["near_tie"] == 0.001
    assert summarise(frame, 6, near_tie=0.01)["suite"]["near_ties"] == 3
