"""The evidence metrics (harness/evaluation/evidence.py): by hand, and MRR / nDCG / recall against
trec_eval's definitions (pytrec_eval, through evaluation.metrics.evaluate)."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.evaluation.evidence import (
    doc_scores,
    mean,
    ndcg,
    ranked_docs,
    recall_all,
    recall_any,
    reciprocal_rank,
)
from harness.evaluation.metrics import evaluate, strict_run


def test_ties_break_by_id_and_k_cuts():
    assert ranked_docs({"b": 1.0, "a": 1.0, "c": 2.0}) == ["c", "a", "b"]
    assert ranked_docs({"b": 1.0, "a": 1.0, "c": 2.0}, 2) == ["c", "a"]


def test_reciprocal_rank_and_ndcg_by_hand():
    qrels = {"q": {"d1": 2, "d2": 1, "d9": 0}}
    run = {"q": {"d3": 0.9, "d2": 0.8, "d1": 0.7}}
    assert reciprocal_rank(run, qrels) == {"q": 0.5}
    assert reciprocal_rank(run, qrels, 1) == {"q": 0.0}
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert ndcg(run, qrels, 10) == {"q": pytest.approx(dcg / idcg)}


def test_grade_zero_is_judged_not_relevant():
    qrels = {"q": {"d1": 0, "d2": 1}, "empty": {"d1": 0}}
    run = {"q": {"d1": 1.0}}
    assert recall_any(run, qrels) == {"q": 0.0}  # "empty" has no relevant document: not scored
    assert recall_all({"q": {"d1": 1.0, "d2": 0.5}}, qrels) == {"q": 1.0}


def test_doc_scores_and_means():
    docs_of = {"c1": ["D1:1", "D1:2"], "c2": ["D1:2", "D1:3"], "c3": []}
    assert doc_scores([("c1", 0.9), ("c2", 0.95), ("c3", 0.1)], docs_of) == {"D1:1": 0.9, "D1:2": 0.95, "D1:3": 0.95}
    assert mean({"a": 1.0, "b": 0.0}) == 0.5 and mean({}) is None


docs = st.sampled_from([f"d{i}" for i in range(8)])
runs = st.dictionaries(docs, st.integers(0, 5).map(float), max_size=8)
grades = st.dictionaries(docs, st.integers(0, 3), min_size=1, max_size=6)


@settings(max_examples=60)
@given(run=runs, judged=grades, k=st.integers(1, 8))
def test_mrr_ndcg_recall_agree_with_trec_eval(run, judged, k):
    qrels, ranked = {"q": judged}, {"q": ranked_docs(run)}
    reference = evaluate(strict_run(ranked), qrels, [f"recall@{k}", f"mrr@{k}", f"ndcg@{k}"]).get("q")
    if not any(g > 0 for g in judged.values()):  # nothing to find: not scored here (trec_eval says 0)
        assert reciprocal_rank({"q": run}, qrels) == {} == recall_any({"q": run}, qrels)
        return
    assert reciprocal_rank({"q": run}, qrels, k)["q"] == pytest.approx(reference[f"mrr@{k}"])
    assert ndcg({"q": run}, qrels, k)["q"] == pytest.approx(reference[f"ndcg@{k}"])
    # trec_eval's recall is the share of relevant documents found: 1 exactly when recall_all is
    assert (reference[f"recall@{k}"] == pytest.approx(1.0)) == (recall_all({"q": run}, qrels, k)["q"] == 1.0)
    assert (reference[f"recall@{k}"] > 0) == (recall_any({"q": run}, qrels, k)["q"] == 1.0)
