"""The fast scorer's post-processing (harness.stages.postprocess.arrays) gives the pipeline's figures:
OpenClaw's temporal decay, importance and MMR, then min_score with each keyword fallback, on random
worlds with dated daily logs, curated MEMORY.md entries, snippets that share words (MMR ties) and legs
with tied scores; and MMR's greedy order equals the stage's own on any list hypothesis finds."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.config import resolve
from harness.evaluation.fast_scoring import Threshold, candidate_legs, score_settings
from harness.evaluation.metrics import evaluate, query_outcome, strict_run
from harness.inputs.layout import Query
from harness.pipeline import Stages, fuse
from harness.stages.fusion import FUSIONS, Hit, Legs
from harness.stages.lexical.base import RankedHits
from harness.stages.postprocess import POSTPROCESSORS, SearchContext
from harness.stages.postprocess.arrays import Diversify, array_steps, mmr_order

MAX_RESULTS = 6
CUTOFFS = (1, 3, 6)
NOW = "2026-04-20"
WORDS = ["备份", "postgres", "护照", "内存", "swap", "博客", "giscus", "OOM", "告警", "周报", "restore", "妈妈"]
PATHS = ["MEMORY.md", "USER.md", "memory/2026-02-19.md", "memory/2026-03-01.md", "memory/2026-03-02-standup.md",
         "memory/2026-04-18.md", "memory/projects/blog.md", "notes/ops.md", "memory/2026-02-30.md"]


def world(seed: int, queries: int = 30, ranked: bool = False):
    """30 chunks over dated logs, curated files (some entries annotated with an importance) and undated
    notes; texts drawn from a dozen words so that MMR's Jaccard similarities tie; legs with tied scores."""
    rng = np.random.default_rng(seed)
    chunks = [f"c{i}" for i in range(30)]
    path_of = {c: PATHS[int(rng.integers(len(PATHS)))] for c in chunks}
    text_of = {}
    for c in chunks:
        words = rng.choice(WORDS, size=int(rng.integers(0, 5)), replace=True)
        text = " ".join(words)
        if path_of[c] in ("MEMORY.md", "USER.md") and rng.random() < 0.6:
            text += f" <!-- importance: {int(rng.integers(1, 11))} -->"
        text_of[c] = text
    docs_of = {c: frozenset({f"d{i % 20}"}) for i, c in enumerate(chunks)}
    cosines = np.array([0.2, 0.45, 0.5, 0.5, 0.61, 0.75, 0.8])
    bm25 = np.array([0.5, 1.0, 1.0, 2.5, 7.0])
    legs, qs, judgments = {}, [], {}
    for q in range(queries):
        qid = f"q{q}"
        vector_ids = rng.choice(chunks, size=int(rng.integers(0, 14)), replace=False)
        lexical_ids = rng.choice(chunks, size=int(rng.integers(0, 9)), replace=False)
        vector = [(c, float(rng.choice(cosines) if rng.random() < 0.7 else rng.uniform(0, 0.9))) for c in vector_ids]
        lexical = [(c, float(rng.choice(bm25) if rng.random() < 0.7 else rng.uniform(0, 20))) for c in lexical_ids]
        if ranked:  # OpenClaw 2026.8's keyword leg: its own (boosted) score of each hit
            lexical = RankedHits(lexical, {c: float(rng.choice([0.4, 0.55, 0.55, 0.9])) for c, _ in lexical})
        legs[qid] = Legs(vector, lexical)
        relevant = {f"d{d}": 1 for d in rng.choice(20, size=int(rng.integers(1, 3)), replace=False)}
        qs.append(Query(qid, f"query {q}", relevant))
        judgments[qid] = {c: 1 for c, docs in docs_of.items() if docs & relevant.keys()} or \
            {"__relevant_but_not_indexed__": 1}
    index = SimpleNamespace(lookup=lambda cid: SimpleNamespace(text=text_of[cid], path=path_of[cid]),
                            document_chunks=lambda path: [], vectors={})
    return legs, qs, judgments, docs_of, index


POSTS = [
    [{"name": "temporal_decay", "half_life_days": 30.0}, {"name": "importance"},
     {"name": "mmr", "lambda": 0.7, "tokens": "cjk"}],                       # openclaw-2026.08's order
    [{"name": "temporal_decay", "half_life_days": 7.0}],
    [{"name": "temporal_decay", "half_life_days": 0.0}, {"name": "mmr", "lambda": 0.5, "tokens": "ascii"}],
    [{"name": "importance"}, {"name": "mmr", "lambda": 1.0}],
    [{"name": "mmr", "lambda": 0.0, "tokens": "cjk"}],
    [{"name": "mmr", "lambda": 0.7}, {"name": "temporal_decay", "half_life_days": 30.0}],  # decay re-ranks MMR's
    [{"name": "mmr", "lambda": 0.7}, {"name": "mmr", "lambda": 0.3, "tokens": "ascii"}],
]
THRESHOLDS = [None, Threshold(0.35, "relaxed"), Threshold(0.5, "none"), Threshold(0.6, "fill"),
              Threshold(0.45, "fill", 0.0), Threshold(0.3, "relaxed", 0.0)]
FUSION_TABLES = [("weighted", {"vector_weight": 0.7, "text_weight": 0.3}),
                 ("weighted", {"vector_weight": 0.4, "text_weight": 0.6}),
                 ("rrf", {}), ("wsum", {"vector_weight": 0.6, "text_weight": 0.4}), ("vector-only", {})]


def slow_figures(fusion, post, threshold, legs, queries, judgments, docs_of, index):
    stages_post = [POSTPROCESSORS.create(p["name"], {k: v for k, v in p.items() if k != "name"}) for p in post]
    if threshold is not None:
        stages_post.append(POSTPROCESSORS.create("min_score", min_score=threshold.min_score,
                                                 keyword_fallback=threshold.keyword_fallback,
                                                 relaxed_floor=threshold.relaxed_floor))
    stages = Stages(resolve({"preset": "openclaw-2026.08", "evaluation": {"now": NOW}}), None, None, None, fusion,
                    stages_post, MAX_RESULTS, 24)
    hits = {q.id: fuse(stages, q, legs[q.id], index)[0] for q in queries}
    run = strict_run({q: [h.id for h in hs] for q, hs in hits.items()})
    trec = evaluate(run, judgments, ["mrr", *(f"ndcg@{k}" for k in CUTOFFS)])
    out = {"rr": [], "passed": [], "returned": [], "top1": [], **{f"ndcg@{k}": [] for k in CUTOFFS}}
    for q in queries:
        outcome = query_outcome(hits[q.id], q.relevant, docs_of, stages.pass_threshold)
        out["rr"].append(trec[q.id]["mrr"])
        out["passed"].append(outcome.passed)
        out["returned"].append(outcome.returned)
        out["top1"].append(hits[q.id][0].score if hits[q.id] else None)
        for k in CUTOFFS:
            out[f"ndcg@{k}"].append(trec[q.id][f"ndcg@{k}"])
    return out


@pytest.mark.slow  # every post-processing combination through both paths (test_mmr_order_is_the_stages_order stays fast)
@pytest.mark.parametrize("seed,ranked", [(0, False), (1, True), (2, False)])
def test_post_processing_on_arrays_equals_the_stages(seed, ranked):
    legs, queries, judgments, docs_of, index = world(seed, ranked=ranked)
    arrays = candidate_legs(legs, judgments, [q.id for q in queries])
    fusions = [FUSIONS.create(name, params) for name, params in FUSION_TABLES]
    for post in POSTS:
        objects = [POSTPROCESSORS.create(p["name"], {k: v for k, v in p.items() if k != "name"}) for p in post]
        steps = array_steps(objects, arrays.chunk_ids, chunk_path=lambda c: index.lookup(c).path,
                            chunk_text=lambda c: index.lookup(c).text, now=NOW)
        fast = score_settings(arrays, fusions, THRESHOLDS, max_results=MAX_RESULTS, cutoffs=CUTOFFS, post=steps)
        for i, (fusion, threshold) in enumerate(fast.settings):
            slow = slow_figures(fusion, post, threshold, legs, queries, judgments, docs_of, index)
            where = f"{[p['name'] for p in post]} {type(fusion).__name__} {fusion.leg_weights} {threshold}"
            assert fast.reciprocal_rank[i].tolist() == slow["rr"], where
            assert fast.passed[i].tolist() == slow["passed"], where
            assert fast.returned[i].tolist() == slow["returned"], where
            top1 = [None if np.isnan(v) else v for v in fast.top1_score[i].tolist()]
            assert top1 == slow["top1"], where  # the same floats: factors multiplied in the stages' order
            for k in CUTOFFS:
                assert fast.ndcg[k][i].tolist() == slow[f"ndcg@{k}"], (where, k)


def test_the_worlds_exercise_decay_importance_mmr_and_fill():
    """The comparison above would be weak if decay never reordered, MMR never changed the order, or fill
    never appended after an MMR order."""
    legs, queries, judgments, _, index = world(0)
    arrays = candidate_legs(legs, judgments, [q.id for q in queries])
    weighted = FUSIONS.create("weighted", vector_weight=0.7, text_weight=0.3)
    kw = {"chunk_path": lambda c: index.lookup(c).path, "chunk_text": lambda c: index.lookup(c).text, "now": NOW}
    plain = score_settings(arrays, [weighted], [None], max_results=MAX_RESULTS)
    for post in POSTS[:1] + POSTS[4:5]:
        objects = [POSTPROCESSORS.create(p["name"], {k: v for k, v in p.items() if k != "name"}) for p in post]
        changed = score_settings(arrays, [weighted], [None], max_results=MAX_RESULTS,
                                 post=array_steps(objects, arrays.chunk_ids, **kw))
        assert (changed.reciprocal_rank != plain.reciprocal_rank).sum() >= 3
    decay = array_steps([POSTPROCESSORS.create("temporal_decay", {})], arrays.chunk_ids, **kw)[0]
    assert 0 < decay.factor.min() < 0.5 and decay.factor.max() == 1.0
    importance = array_steps([POSTPROCESSORS.create("importance", {})], arrays.chunk_ids, **kw)[0]
    assert importance.factor.max() > 1.0 and importance.factor.min() > 0


def test_decay_without_a_reference_day_says_how_to_set_one():
    legs, queries, judgments, _, index = world(3, queries=5)
    arrays = candidate_legs(legs, judgments, [q.id for q in queries])
    with pytest.raises(Exception, match="now = YYYY-MM-DD"):
        array_steps([POSTPROCESSORS.create("temporal_decay", {})], arrays.chunk_ids,
                    chunk_path=lambda c: index.lookup(c).path, chunk_text=lambda c: "", now=None)


def test_stages_the_arrays_do_not_model_are_named():
    with pytest.raises(ValueError, match="CosineDiversity is not supported"):
        array_steps([POSTPROCESSORS.create("cosine_diversity", {})], [["a"]], chunk_path=str, chunk_text=str)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.1, 0.3, 0.3, 0.5, 0.7, 0.7, 0.9]),
                          st.lists(st.sampled_from(["a", "b", "c", "护", "照", "内存"]), max_size=4)),
                min_size=0, max_size=12),
       st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0]), st.sampled_from(["cjk", "ascii"]))
def test_mmr_order_is_the_stages_order(items, lam, tokens):
    """Any list (ties in score and in similarity included): the array greedy picks what the stage picks."""
    hits = sorted([Hit(f"h{i:02d}", score) for i, (score, _) in enumerate(items)], key=lambda h: (-h.score, h.id))
    texts = {f"h{i:02d}": " ".join(words) for i, (_, words) in enumerate(items)}
    stage = POSTPROCESSORS.create("mmr", {"lambda": lam, "tokens": tokens})
    expected = [h.id for h in stage(hits, SearchContext("q", 6, 0.7, 0.3, chunk_text=texts.__getitem__))]
    ids = sorted(texts)  # columns in id order
    steps = array_steps([stage], [ids], chunk_path=lambda c: "x.md", chunk_text=texts.__getitem__)
    width = steps[0].similarity.shape[1]
    score = np.zeros((1, width))
    present = np.zeros((1, width), dtype=bool)
    for c, cid in enumerate(ids):
        score[0, c] = next(h.score for h in hits if h.id == cid)
        present[0, c] = True
    rank = np.full((1, width), width)
    for r, h in enumerate(hits):
        rank[0, ids.index(h.id)] = r
    order = mmr_order(score, present, rank, np.zeros(1, dtype=int), Diversify("mmr", stage.lambda_, steps[0].similarity))
    assert [ids[c] for c in order[0] if c >= 0] == expected
