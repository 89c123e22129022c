"""The fast sweep scorer gives the slow path's figures: fusion stage + min_score post-processing, then
query_outcome (rank, pass, hit@k) and pytrec_eval (nDCG@k on chunks), on random legs with many ties."""
from __future__ import annotations

import numpy as np
import pytest

from harness.config import resolve
from harness.evaluation.fast_scoring import Threshold, candidate_legs, score_settings
from harness.evaluation.metrics import evaluate, query_outcome, strict_run
from harness.inputs.layout import Query
from harness.pipeline import Stages, fuse
from harness.stages.fusion import FUSIONS, Legs
from harness.stages.postprocess import POSTPROCESSORS

MAX_RESULTS = 6
CUTOFFS = (1, 3, 6)


def random_world(seed: int, queries: int = 40, graded: bool = False):
    """Legs over 30 chunks of 20 documents (some chunks span two), scores from small sets so that ties
    are common; chunk ids not zero-padded, so id order is string order ("c10" < "c9")."""
    rng = np.random.default_rng(seed)
    chunks = [f"c{i}" for i in range(30)]
    docs_of = {cid: frozenset({f"d{i % 20}"} | ({f"d{(i + 1) % 20}"} if i % 7 == 0 else set()))
               for i, cid in enumerate(chunks)}
    cosines = np.array([0.2, 0.45, 0.5, 0.5, 0.61, 0.75, 0.8, -0.1])
    bm25 = np.array([0.0, 0.5, 1.0, 1.0, 2.5, 7.0, 12.0])
    legs, queries_out, judgments = {}, [], {}
    for q in range(queries):
        qid = f"q{q}"
        vector_ids = rng.choice(chunks, size=rng.integers(0, 13), replace=False)
        lexical_ids = rng.choice(chunks, size=rng.integers(0, 9), replace=False)
        vector = [(c, float(rng.choice(cosines) if rng.random() < 0.7 else rng.uniform(-0.2, 0.9))) for c in vector_ids]
        lexical = [(c, float(rng.choice(bm25) if rng.random() < 0.7 else rng.uniform(0, 20))) for c in lexical_ids]
        legs[qid] = Legs(vector, lexical)
        relevant = {f"d{d}": int(rng.integers(1, 4)) if graded else 1
                    for d in rng.choice(20, size=rng.integers(1, 3), replace=False)}
        if q % 9 == 0:
            relevant = {"d-missing": 1}  # its documents are not indexed: every figure must be 0
        queries_out.append(Query(qid, f"query {q}", relevant))
        judgments[qid] = {c: max(relevant.get(d, 0) for d in docs) for c, docs in docs_of.items()
                          if docs & relevant.keys()} or {"__relevant_but_not_indexed__": 1}
    return legs, queries_out, judgments, docs_of


FUSION_TABLES = [
    ("weighted", {"vector_weight": 0.7, "text_weight": 0.3}),
    ("weighted", {"vector_weight": 0.35, "text_weight": 0.65, "bm25_to_score": "legacy"}),
    ("weighted", {"vector_weight": 0.0, "text_weight": 1.0}),
    ("rrf", {}),
    ("rrf", {"vector_weight": 0.4, "text_weight": 0.6}),
    ("rrf", {"variant": "qmd"}),
    ("rrf", {"variant": "qmd", "vector_weight": 1.0, "text_weight": 3.0, "k": 10.0}),
    ("wsum", {"vector_weight": 0.6, "text_weight": 0.4}),
    ("combsum", {}),
    ("combmnz", {}),
    ("lexical-only", {}),
    ("vector-only", {}),
]
THRESHOLDS = [None, Threshold(0.35, "relaxed"), Threshold(0.5, "none"), Threshold(0.6, "fill"),
              Threshold(0.0, "none"), Threshold(0.03, "relaxed")]


def slow_figures(fusion, threshold, legs, queries, judgments, docs_of):
    post = [] if threshold is None else [POSTPROCESSORS.create(
        "min_score", min_score=threshold.min_score, keyword_fallback=threshold.keyword_fallback)]
    stages = Stages(resolve({"preset": "openclaw-2026.08"}), None, None, None, fusion, post, MAX_RESULTS, 4 * MAX_RESULTS)
    pass_floor = 0.0 if threshold is None else threshold.min_score
    hits = {q.id: fuse(stages, q, legs[q.id])[0] for q in queries}
    out = {"rr": [], "passed": [], "returned": [], **{f"hit@{k}": [] for k in CUTOFFS},
           **{f"ndcg@{k}": [] for k in CUTOFFS}}
    run = strict_run({q: [h.id for h in hs] for q, hs in hits.items()})  # the order as returned
    trec = evaluate(run, judgments, ["mrr", *(f"ndcg@{k}" for k in CUTOFFS), *(f"hit_rate@{k}" for k in CUTOFFS)])
    for q in queries:
        outcome = query_outcome(hits[q.id], q.relevant, docs_of, pass_floor)
        rr = 1.0 / outcome.rank if outcome.rank is not None else 0.0
        assert trec[q.id]["mrr"] == rr
        out["rr"].append(rr)
        out["passed"].append(outcome.passed)
        out["returned"].append(outcome.returned)
        for k in CUTOFFS:
            out[f"hit@{k}"].append(bool(trec[q.id][f"hit_rate@{k}"]))
            out[f"ndcg@{k}"].append(trec[q.id][f"ndcg@{k}"])
    return out


@pytest.mark.parametrize("seed,graded", [(0, False), (1, False), (2, True)])
def test_fast_scores_equal_the_slow_path(seed, graded):
    legs, queries, judgments, docs_of = random_world(seed, graded=graded)
    fusions = [FUSIONS.create(name, params) for name, params in FUSION_TABLES]
    fast = score_settings(candidate_legs(legs, judgments, [q.id for q in queries]), fusions, THRESHOLDS,
                          max_results=MAX_RESULTS, cutoffs=CUTOFFS)
    assert len(fast.settings) == len(fusions) * len(THRESHOLDS)
    for i, (fusion, threshold) in enumerate(fast.settings):
        slow = slow_figures(fusion, threshold, legs, queries, judgments, docs_of)
        where = f"{type(fusion).__name__} {fusion.leg_weights} {threshold}"
        assert fast.reciprocal_rank[i].tolist() == slow["rr"], where
        assert fast.passed[i].tolist() == slow["passed"], where
        assert fast.returned[i].tolist() == slow["returned"], where
        for k in CUTOFFS:
            assert fast.hits[k][i].tolist() == slow[f"hit@{k}"], where
            # the same sums in the same order: equal, not merely close
            assert fast.ndcg[k][i].tolist() == slow[f"ndcg@{k}"], (where, k)


def test_the_worlds_exercise_ties_thresholds_and_fallbacks():
    """The comparison above would be weak if no list had tied scores or no fallback ever fired."""
    legs, queries, judgments, _ = random_world(0)
    cand = candidate_legs(legs, judgments, [q.id for q in queries])
    weighted = FUSIONS.create("weighted", vector_weight=0.7, text_weight=0.3)
    scores = score_settings(cand, [weighted], [Threshold(0.35, "relaxed"), None], max_results=MAX_RESULTS)
    with_floor, without = scores.returned
    assert (with_floor < without).any() and (with_floor > 0).any()
    tied = sum(len({h.score for h in weighted(leg)}) < len(weighted(leg)) for leg in legs.values())
    assert tied >= 10


def test_cutoff_above_max_results_is_an_error_naming_both():
    legs, queries, judgments, _ = random_world(3, queries=3)
    cand = candidate_legs(legs, judgments)
    with pytest.raises(ValueError, match=r"\[6, 10\].*max_results \(6\)"):
        score_settings(cand, [FUSIONS.create("rrf", {})], max_results=6, cutoffs=[6, 10])


def test_legs_must_be_unique_and_finite():
    with pytest.raises(ValueError, match="twice"):
        candidate_legs({"q": Legs([("a", 0.5), ("a", 0.4)], [])}, {})
    with pytest.raises(ValueError, match="not finite"):
        candidate_legs({"q": Legs([], [("a", float("nan"))])}, {})


def test_unsupported_fusion_says_so():
    legs, queries, judgments, _ = random_world(4, queries=2)
    with pytest.raises(ValueError, match="not supported"):
        score_settings(candidate_legs(legs, judgments), [FUSIONS.create("lancedb-pro", {})], max_results=6)
    with pytest.raises(ValueError, match="zscore"):
        score_settings(candidate_legs(legs, judgments), [FUSIONS.create("wsum", norm="zscore")], max_results=6)


def test_spread_is_the_fused_score_scale():
    """RRF scores live on a ~0.01 scale, weighted ones on 0-1: the spread says which."""
    legs, queries, judgments, _ = random_world(5)
    cand = candidate_legs(legs, judgments)
    scores = score_settings(cand, [FUSIONS.create("rrf", {}), FUSIONS.create("weighted", {})], max_results=6)
    rrf, weighted = np.median(scores.spread, axis=1)
    assert rrf < 0.05 < weighted
