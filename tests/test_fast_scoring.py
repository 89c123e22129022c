"""The fast sweep scorer gives the slow path's figures: fusion stage + min_score post-processing, then
query_outcome (rank, pass, hit@k) and pytrec_eval (nDCG@k on chunks), on random legs with many ties."""
from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.config import resolve
from harness.errors import ConfigError
from harness.evaluation.fast_scoring import (
    Threshold,
    candidate_legs,
    fused,
    score_order,
    score_settings,
)
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
    ("wsum", {"vector_weight": 0.3, "text_weight": 0.7, "norm": "zscore"}),
    ("combsum", {"norm": "zscore"}),
    ("combmnz", {"norm": "zscore"}),
    ("multiplicative", {}),
    ("multiplicative", {"vector_to_score": "inverse_distance", "boost": 0.5}),
    ("lancedb-pro", {}),
    ("lancedb-pro", {"vector_weight": 0.4, "text_weight": 0.6, "min_score": 0.0}),
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
        score_settings(candidate_legs(legs, judgments), [FUSIONS.create("qmd-documents", {})], max_results=6)
    with pytest.raises(ValueError, match="breaks ties by more than the chunk id"):
        score_settings(candidate_legs(legs, judgments), [FUSIONS.create("keyword-only", {})], max_results=6)


def test_spread_is_the_fused_score_scale():
    """RRF scores live on a ~0.01 scale, weighted ones on 0-1: the spread says which."""
    legs, queries, judgments, _ = random_world(5)
    cand = candidate_legs(legs, judgments)
    scores = score_settings(cand, [FUSIONS.create("rrf", {}), FUSIONS.create("weighted", {})], max_results=6)
    rrf, weighted = np.median(scores.spread, axis=1)
    assert rrf < 0.05 < weighted


# --- one formula per fusion: the fast path is the stage's own, on every registered fusion ------------------

# Fusions the fast scorer cannot take, and why; the sweep scores their settings through the stage itself.
# A registered fusion must either fuse arrays (fuse_arrays) and be checked below, or be named here.
NOT_VECTORISED = {"qmd-documents": "fuses files, not the chunks of the candidate matrix (QMD's document-level RRF)"}
SCORER_REFUSES = {"keyword-only": "orders equal scores by the leg's tie order, which the post-processing arrays do not model"}

POOL = [f"memory/f{i % 4}.md:{i:03d}" for i in range(10)]
raw_cosine = st.one_of(st.sampled_from([0.0, 0.25, 0.5, 0.5, 0.75]), st.floats(-1.0, 1.0, allow_nan=False))
raw_bm25 = st.one_of(st.sampled_from([0.0, 1.0, 2.5, 7.0]), st.floats(0.0, 40.0, allow_nan=False))


@st.composite
def query_legs(draw):
    vector = draw(st.dictionaries(st.sampled_from(POOL), raw_cosine, max_size=len(POOL)))
    lexical = draw(st.dictionaries(st.sampled_from(POOL), raw_bm25, max_size=len(POOL)))
    ranking = draw(st.one_of(st.none(), st.fixed_dictionaries(
        {cid: st.sampled_from([0.3, 0.5, 0.9]) for cid in lexical})))
    return Legs(draw(st.permutations(list(vector.items()))), draw(st.permutations(list(lexical.items()))),
                lexical_ranking=ranking)


@st.composite
def fusion_parameters(draw, name):
    """Any value of each Literal parameter, and small sets of values (ties, bounds) of the numeric ones."""
    cls = FUSIONS.get(name)
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.name.startswith("_"):
            continue
        kind = hints.get(f.name)
        if typing.get_origin(kind) is typing.Literal:
            out[f.name] = draw(st.sampled_from(typing.get_args(kind)))
        elif f.name.endswith("weight"):
            out[f.name] = draw(st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0, 2.0]))
        elif kind in (float, float | None):
            out[f.name] = draw(st.sampled_from([0.0, 0.3, 0.5, 1.0, 5.0, 60.0]))
    return out


def test_every_registered_fusion_is_vectorised_or_named():
    """A new fusion stage either gives its one formula as fuse_arrays (and is checked below) or says why not."""
    for name in FUSIONS.names():
        has_arrays = hasattr(FUSIONS.get(name), "fuse_arrays")
        assert has_arrays != (name in NOT_VECTORISED), name
    assert set(SCORER_REFUSES) <= set(FUSIONS.names()) - set(NOT_VECTORISED)


@pytest.mark.slow  # every fusion through both paths (test_fast_scores_equal_the_slow_path stays fast)
@pytest.mark.parametrize("name", FUSIONS.names())
@settings(max_examples=80, deadline=None)
@given(data=st.data(), queries=st.lists(query_legs(), min_size=1, max_size=5))
def test_the_fast_path_ranks_and_scores_as_the_stage(name, data, queries):
    """Every registered fusion on random candidate sets of several queries at once (rows of different widths,
    ties, a lexical leg with its own ranking score): the fast scorer's fused scores, in the order it ranks
    them, are the stage's hits and scores, float for float."""
    try:
        fusion = FUSIONS.create(name, **data.draw(fusion_parameters(name)))
    except ConfigError:
        assume(False)  # a parameter combination the stage refuses
    legs = {f"q{i}": q for i, q in enumerate(queries)}
    arrays = candidate_legs(legs, {})
    if name in NOT_VECTORISED or name in SCORER_REFUSES:
        with pytest.raises(ValueError, match="not supported"):
            fused(arrays, fusion)
        if name in NOT_VECTORISED:
            return
        out = fusion.fuse_arrays(arrays)  # still one formula: the stage's call is this, a row at a time
    else:
        out = fused(arrays, fusion)
    order = score_order(out.score, out.present)
    for row, (qid, query) in enumerate(legs.items()):
        stage_hits = fusion(query)
        chunks = arrays.chunk_ids[row]
        columns = [c for c in order[row] if out.present[row, c]]
        if name in SCORER_REFUSES:
            fast = [(h.id, h.score, h.vector_score, h.text_score, h.keyword_hit) for h in out.hits(arrays, row)]
        else:
            fast = [(chunks[c], float(out.score[row, c]), float(out.vector_score[row, c]),
                     float(out.text_score[row, c]), bool(out.keyword[row, c])) for c in columns]
        slow = [(h.id, h.score, h.vector_score, h.text_score, h.keyword_hit) for h in stage_hits]
        assert [f[0] for f in fast] == [s[0] for s in slow], (name, qid)
        for f, s in zip(fast, slow):
            assert f[4] == s[4], (name, qid, f[0])
            for a, b in zip(f[1:4], s[1:4]):
                assert abs(a - b) <= 1e-12 and a == b, (name, qid, f[0], a, b)


# Modules of harness/evaluation that still import a stage's helpers (chunk statistics: the chunkers' line
# splitting and token estimate; the context budget: the token estimators), not retrieval.
STILL_IMPORT_STAGE_HELPERS = {"chunk_stats.py", "context_budget.py"}


def test_evaluation_imports_neither_the_pipeline_nor_the_stages():
    """Retrieval hands evaluation its records (harness.trace); evaluation never runs it."""
    import ast
    from pathlib import Path

    import harness.evaluation

    found = []
    for path in sorted(Path(harness.evaluation.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name == "harness.pipeline" or (name.startswith("harness.stages")
                                                  and path.name not in STILL_IMPORT_STAGE_HELPERS):
                    found.append(f"{path.name}:{node.lineno} {name}")
    assert found == []
