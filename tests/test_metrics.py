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
from harness.studies.ablation_analysis import legs_note
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
        {"query_id": "T1", "kind": "suite", "in_suite": True, "near_tie": True, "near_tie_on": "relevant"},
        {"query_id": "T2", "kind": "suite", "in_suite": True, "near_tie": True, "near_tie_on": "min_score,cut"},
        {"query_id": "T3", "kind": "suite", "in_suite": True, "near_tie": False, "near_tie_on": ""},
        {"query_id": "T5", "kind": "suite", "in_suite": False, "near_tie": True, "near_tie_on": "relevant"},
        {"query_id": "N1", "kind": "negative", "in_suite": False, "near_tie": True, "near_tie_on": "min_score"},
    ]
    frame = pd.DataFrame([{**r, "passed": True, "returned": 6, "top1_score": 0.6, "top1_relevant": True,
                           "top1_pure": True, "text_score_nonzero": False, **ms} for r in rows])
    suite = summarise(frame, 6, resamples=200)["suite"]
    assert suite["near_ties"] == 2
    assert suite["near_ties_by_margin"] == {"relevant": 1, "min_score": 1, "cut": 1}
    # 3 of 3 passed: Clopper-Pearson's exact interval, never the point a bootstrap collapses to
    assert suite["pass_rate"] == 1.0 and suite["pass_rate_ci95"] == pytest.approx([0.025 ** (1 / 3), 1.0])


def test_near_tie_columns_read_each_margin_against_the_query_scale():
    from harness.evaluation.per_query import near_tie_columns
    from harness.inputs.layout import Query

    docs_of = {c: frozenset({d}) for c, d in (("a", "d1"), ("b", "d2"), ("c", "d3"), ("x", "d4"))}
    candidates = [Hit("b", 0.62), Hit("a", 0.6195), Hit("c", 0.5), Hit("x", 0.30)]
    hits = candidates[:3]  # max_results 3: x is the first chunk below the cut
    query = Query("q", "t", {"d1": 1})
    cols = near_tie_columns(hits, candidates, query, docs_of, pass_threshold=0.35)
    assert cols["score_spread"] == pytest.approx(0.32) and cols["near_tie_threshold"] == pytest.approx(0.0008)
    assert cols["relevant_margin"] == pytest.approx(-0.0005) and cols["near_tie_on"] == "relevant"
    assert cols["cut_margin"] == pytest.approx(0.3195)  # a, returned, against x below the cut
    assert cols["min_score_margin"] == pytest.approx(0.27)
    # a relevant chunk missing the list by a hair at rank 4
    missed = near_tie_columns(hits, candidates[:3] + [Hit("x", 0.4999)], Query("q", "t", {"d4": 1}), docs_of, 0.35)
    assert missed["cut_margin"] == pytest.approx(-0.0001) and missed["near_tie_on"] == "cut"
    # a pass at 0.3502 against minScore 0.35; a negative query silenced by 0.0001
    close = near_tie_columns([Hit("a", 0.3502), Hit("b", 0.2)], [Hit("a", 0.3502), Hit("b", 0.2)],
                             Query("q", "t", {"d1": 1}), docs_of, 0.35)
    assert close["near_tie_on"] == "min_score"
    silent = near_tie_columns([], [Hit("b", 0.3499), Hit("c", 0.1)], Query("n", "t", {}, kind="negative"), docs_of, 0.35)
    assert silent["min_score_margin"] == pytest.approx(-0.0001) and silent["near_tie"]
    # an absolute threshold replaces the relative rule
    assert not near_tie_columns(hits, candidates, query, docs_of, 0.35, absolute=0.0001)["near_tie"]
