"""Scoring many fusion settings at once, for sweeps: the legs held as query x candidate arrays.

A sweep searches each leg once and then fuses and scores hundreds of settings.  Here each query's
candidates (the union of its two legs) are one row of a matrix, its columns in chunk-id order, so one
fusion setting is a few array operations over all queries, and a stable sort of each row by score
breaks ties by chunk id exactly as harness.ranking orders every list:

    >>> legs = candidate_legs({qid: Legs(vector, lexical), ...}, chunk_judgments(index, queries))
    >>> scores = score_settings(legs, [FUSIONS.create("weighted", vector_weight=w, text_weight=1 - w)
    ...                                for w in weights], [None, Threshold(0.35)], max_results=6)
    >>> scores.reciprocal_rank      # settings x queries, settings in (fusion, threshold) order

The figures are the slow path's (fusion stage, min_score post-processing, query_outcome and pytrec_eval),
checked in tests/test_fast_scoring.py: reciprocal rank within the returned list, pass (top-1 relevant
and >= minScore), hit@k, nDCG@k on chunks with the judgments' grades.  Fusions: each fusion stage's own
`fuse_arrays` (harness.stages.fusion, the one formula its per-query call uses too), every registered
fusion but qmd-documents (files, not chunks) and keyword-only (ties by the leg's tie order), which the
sweep scores through the stages; this module imports neither the stages nor the pipeline and reads the
stage objects it is given through their methods.  Post-processing: OpenClaw's temporal decay, importance and MMR as array steps
(harness.stages.postprocess.arrays, `post=`), then its min_score with its keyword fallbacks, in the
order the stages return hits (after MMR, `fill`'s keyword-only hits come after the passing ones).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from itertools import product
from typing import Any, Mapping, Sequence

import numpy as np

from harness.selection import Threshold, positions, selection_needs
from harness.trace import FusedArrays, LegArrays, leg_arrays

ArrayStep = Any  # a post-processing array step (harness.stages.postprocess.arrays: Rescale or Diversify)


@dataclass
class CandidateLegs(LegArrays):
    """Both legs of every query over one candidate set per query (harness.trace.LegArrays: row q, columns in
    chunk-id order, padded with slots no leg found), with the judgments of every candidate."""

    gain: np.ndarray | None = None  # judged grade of each candidate (0: not relevant)
    ideal_gains: list[np.ndarray] = field(default_factory=list)  # per query, every judged grade > 0, best first
    judged: np.ndarray | None = None  # bool: the candidate carries a judgment (pooled queries; None: not tracked)


def candidate_legs(legs: Mapping[str, Any], judgments: Mapping[str, Mapping[str, int]],
                   query_ids: Sequence[str] | None = None,
                   judged: Mapping[str, Any] | None = None) -> CandidateLegs:
    """Legs per query (as search_legs returns them) and chunk judgments ({query: {chunk: grade}}, e.g.
    harness.evaluation.judgments.chunk_judgments) -> arrays.  A leg must list a chunk at most once and
    its raw scores must be finite (ValueError otherwise, naming the query).  `judged` ({query: chunk ids
    that carry a judgment, grade 0 included}) makes the scores count judged@k (incomplete judgments)."""
    arrays = leg_arrays(legs, query_ids)
    shape = arrays.shape
    gain = np.zeros(shape)
    ideal = []
    for q, (qid, chunks) in enumerate(zip(arrays.query_ids, arrays.chunk_ids)):
        grades = judgments.get(qid, {})
        for c, cid in enumerate(chunks):
            gain[q, c] = max(0, grades.get(cid, 0))
        ideal.append(np.array(sorted((g for g in grades.values() if g > 0), reverse=True), dtype=float))
    judged_mask = None
    if judged is not None:
        judged_mask = np.zeros(shape, dtype=bool)
        for q, (qid, chunks) in enumerate(zip(arrays.query_ids, arrays.chunk_ids)):
            marked = judged.get(qid, ())
            for c, cid in enumerate(chunks):
                judged_mask[q, c] = cid in marked
    legs_fields = {f.name: getattr(arrays, f.name) for f in fields(LegArrays) if f.init}
    return CandidateLegs(**legs_fields, gain=gain, ideal_gains=ideal, judged=judged_mask)


# --- fused scores ---------------------------------------------------------------------------------------

def fused(legs: CandidateLegs, fusion: Any) -> FusedArrays:
    """One fusion stage's scores over the candidate matrix: its own `fuse_arrays` (the formula its
    per-query call uses too, harness.stages.fusion).  ValueError for a fusion without one (qmd-documents:
    use the slow path) and for one that orders equal scores by more than the id (keyword-only), whose
    order the post-processing arrays do not model."""
    fuse_arrays = getattr(fusion, "fuse_arrays", None)
    if fuse_arrays is None:
        raise ValueError(f"fast scoring: fusion {type(fusion).__name__} is not supported (use the slow path)")
    out = fuse_arrays(legs)
    if out.tiebreak is not None:
        raise ValueError(f"fast scoring: fusion {type(fusion).__name__} breaks ties by more than the chunk id: "
                         "not supported (use the slow path)")
    return out


# --- scoring -----------------------------------------------------------------------------------------

@dataclass
class SettingScores:
    """Per-setting, per-query figures: every array is settings x queries."""

    settings: list[tuple[object, Threshold | None]]  # (fusion stage, threshold) of each row
    query_ids: list[str]
    reciprocal_rank: np.ndarray  # 1/rank of the first relevant chunk among the returned hits, else 0
    passed: np.ndarray  # top-1 relevant and its score >= minScore (0.0 without a min_score stage)
    hits: dict[int, np.ndarray]  # k -> a relevant chunk among the first k returned
    ndcg: dict[int, np.ndarray]  # k -> nDCG@k on chunks (trec_eval's ndcg_cut, grades as gains)
    top1_score: np.ndarray  # fused score of the first returned hit (NaN when nothing is returned)
    returned: np.ndarray  # number of hits returned
    spread: np.ndarray  # max - min of the fused scores over the query's candidates (near-tie scale)
    found: np.ndarray | None = None  # a relevant chunk among the returned hits (whatever max_results is)
    judged: dict[int, np.ndarray] | None = None  # k -> share of the first k returned that is judged (NaN: none returned)


_BATCH_CELLS = 1 << 21  # settings fused and sorted together: ~2M candidate cells (16 MB per array)


def score_settings(legs: CandidateLegs, fusions: Sequence, thresholds: Sequence[Threshold | None] = (None,), *,
                   max_results: int, cutoffs: Sequence[int] | None = None, post: Sequence[ArrayStep] = (),
                   short_lists: bool = False) -> SettingScores:
    """Every fusion stage x every threshold (None: no min_score stage), fusion-major, each after the
    post-processing array steps `post` (harness.stages.postprocess.arrays: decay, importance, MMR, in
    the stages' order, before min_score); nDCG and hit@k at each cut-off (default: max_results).  A
    cut-off above max_results is an error (the returned list has only max_results hits, so "@k" would
    silently mean "@max_results"), unless `short_lists`: a sweep over maxResults scores every setting
    at the same cut-offs, a shorter list being what that setting returns."""
    cutoffs = sorted(set(cutoffs or [max_results]))
    if (max(cutoffs) > max_results and not short_lists) or min(cutoffs) < 1:
        raise ValueError(f"cut-offs {cutoffs} must lie in 1..max_results ({max_results}): the returned list "
                         f"has only {max_results} hits")
    q, c = legs.shape
    settings = list(product(fusions, thresholds))
    shape = (len(settings), q)
    out = SettingScores(settings, legs.query_ids, np.zeros(shape), np.zeros(shape, dtype=bool),
                        {k: np.zeros(shape, dtype=bool) for k in cutoffs}, {k: np.zeros(shape) for k in cutoffs},
                        np.full(shape, np.nan), np.zeros(shape, dtype=int), np.zeros(shape),
                        np.zeros(shape, dtype=bool))
    if legs.judged is not None:
        out.judged = {k: np.full(shape, np.nan) for k in cutoffs}
    ranks = _RankScorer(legs, max_results, cutoffs)
    batch = max(1, _BATCH_CELLS // max(1, q * c))
    gain = legs.gain.astype(np.float32)  # grades are small integers: exact in float32, half the memory moved
    fill = any(t is not None and t.keyword_fallback == "fill" for t in thresholds)
    for first in range(0, len(fusions), batch):
        part = fusions[first:first + batch]
        group = [fused(legs, f) for f in part]
        fused_score = np.stack([g.score for g in group])
        present = np.stack([g.present for g in group])
        keyword = np.stack([g.keyword & g.present for g in group])
        # OpenClaw's keyword floor reads the fusion's text weight (post-processing's SearchContext)
        text_weight = np.array([f.leg_weights[1] for f in part])[:, None, None]
        # what min_score's `fill` calls a keyword-only hit: vector_score 0
        no_vector = np.stack([g.vector_score == 0 for g in group]) if fill else None
        score, order = _post_processed(fused_score, present, keyword, no_vector, text_weight, post, thresholds,
                                       max_results)
        # the ranked lists: sort key -score, absent candidates last; a stable sort keeps chunk-id order among
        # ties, i.e. (score desc, id); an order a stage chose (MMR) instead when there is one
        if order is None:
            order = score_order(score, present)
            s_key = np.take_along_axis(np.where(present, -score, np.inf), order, axis=-1)
            s_present = s_key != np.inf
            s_score = -s_key  # -(-x) is x exactly
        else:
            picked = order >= 0
            order = np.where(picked, order, 0)
            s_present = picked & np.take_along_axis(present, order, axis=-1)
            s_score = np.where(s_present, np.take_along_axis(score, order, axis=-1), -np.inf)
        s_keyword = np.take_along_axis(keyword, order, axis=-1) & s_present
        s_gain = gain[np.arange(q)[None, :, None], order]
        s_judged = None if legs.judged is None else legs.judged[np.arange(q)[None, :, None], order]
        spread = _spread(fused_score, present)
        s_no_vector = None if no_vector is None else np.take_along_axis(no_vector, order, axis=-1)
        for t, threshold in enumerate(thresholds):
            rows = (first + np.arange(len(group))) * len(thresholds) + t
            position = positions(s_score, s_present, s_keyword, threshold, text_weight, s_no_vector)
            ranks.score(out, rows, s_score, s_gain, position, 0.0 if threshold is None else threshold.min_score,
                        s_judged)
            out.spread[rows] = spread
    return out


def score_order(score: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Each row's candidate columns ranked as every list is ranked (score desc, then chunk id: a stable sort
    of the id-ordered columns), the absent ones last."""
    return np.argsort(np.where(present, -score, np.inf), axis=-1, kind="stable")


def _spread(score: np.ndarray, present: np.ndarray) -> np.ndarray:
    """max - min of each query's fused scores over its candidates (0 with fewer than two)."""
    high = np.where(present, score, -np.inf).max(axis=-1)
    low = np.where(present, score, np.inf).min(axis=-1)
    with np.errstate(invalid="ignore"):  # a row with no candidate: -inf - inf, replaced by 0
        return np.where(present.sum(axis=-1) > 1, high - low, 0.0)


def _post_processed(score: np.ndarray, present: np.ndarray, keyword: np.ndarray, no_vector: np.ndarray | None,
                    text_weight: np.ndarray, post: Sequence[ArrayStep], thresholds: Sequence[Threshold | None],
                    max_results: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The scores after the post-processing steps and, when the last reordering step was MMR, its order
    (settings x queries x ranked positions -> candidate column, -1 after the last one; None: the
    (score desc, id) order of the scores)."""
    order = None
    b, q, c = score.shape
    for i, step in enumerate(post):
        if step.kind == "rescale":
            score = score * step.factor[None]
            order = None  # the stage re-ranks by (score desc, id)
            continue
        flat = lambda a: a.reshape(b * q, c)  # noqa: E731
        if order is None:
            rank = _ranks_in(np.where(present, -score, np.inf))
        else:
            rank = _rank_of_order(order, c)
        needs = None
        if not any(later.kind in ("diversify", "rescale") for later in post[i + 1:]):
            tw = np.broadcast_to(text_weight[:, :, 0], (b, q)).reshape(b * q)
            needs = selection_needs(flat(score), flat(present), flat(keyword),
                                    None if no_vector is None else flat(no_vector), thresholds, tw, max_results)
        query = np.tile(np.arange(q), b)
        order = step.order(flat(score), flat(present), flat(rank), query, needs,
                           score_ordered=order is None).reshape(b, q, c)
    return score, order


def _ranks_in(key: np.ndarray) -> np.ndarray:
    """Each candidate's 0-based place when the rows are sorted by `key` (stable: ties in column order)."""
    order = np.argsort(key, axis=-1, kind="stable")
    return _rank_of_order(order, key.shape[-1])


def _rank_of_order(order: np.ndarray, width: int) -> np.ndarray:
    ranks = np.full(order.shape, width, dtype=np.int64)  # candidates the order does not hold come last
    picked = order >= 0
    idx = np.nonzero(picked)
    ranks[idx[:-1] + (order[idx],)] = idx[-1]
    return ranks


_NOT_RETURNED = np.iinfo(np.int32).max  # the "rank" of a relevant chunk that is not returned, above any cut-off


class _RankScorer:
    """The figures of returned lists given as masks over candidates in ranked order."""

    def __init__(self, legs: CandidateLegs, max_results: int, cutoffs: list[int]) -> None:
        self.max_results = max_results
        self.depth = min(max_results, legs.shape[1])
        # libm's log2 (as trec_eval's), not numpy's vectorised one, so every discount is the same float
        self.discounts = np.array([math.log2(p + 1) for p in range(1, self.depth + 1)])
        self.ideal = {k: _ideal_dcg(legs.ideal_gains, k) for k in cutoffs}

    def score(self, out: SettingScores, rows: np.ndarray, score: np.ndarray, gain: np.ndarray,
              position: np.ndarray, pass_floor: float, judged: np.ndarray | None = None) -> None:
        """`position`: 1-based place of each candidate in the returned list before the cut (0: dropped);
        `judged` (same shape): the candidate carries a judgment, for judged@k."""
        returned = (position > 0) & (position <= self.max_results)
        out.returned[rows] = returned.sum(axis=-1)
        first_relevant = np.where(returned & (gain > 0), position, _NOT_RETURNED).min(axis=-1)
        out.reciprocal_rank[rows] = np.where(first_relevant <= self.max_results, 1.0 / first_relevant, 0.0)
        out.found[rows] = first_relevant <= self.max_results
        for k, hits in out.hits.items():
            hits[rows] = first_relevant <= k
        # the returned list as rank columns: the p-th returned hit's gain and score, p = 1..depth
        shape = score.shape[:-1] + (self.depth,)
        ranked_gain, ranked_score = np.zeros(shape), np.full(shape, np.nan)
        b, q, c = np.nonzero(returned)
        ranked_gain[b, q, position[b, q, c] - 1] = gain[b, q, c]  # float32 -> float64: exact
        ranked_score[b, q, position[b, q, c] - 1] = score[b, q, c]
        out.top1_score[rows] = ranked_score[..., 0]
        if judged is not None and out.judged is not None:
            ranked_judged = np.zeros(shape)
            ranked_judged[b, q, position[b, q, c] - 1] = judged[b, q, c]
            for k, share in out.judged.items():
                depth = min(k, self.depth)
                shown = np.minimum(returned.sum(axis=-1), depth)
                with np.errstate(divide="ignore", invalid="ignore"):
                    share[rows] = np.where(shown > 0, ranked_judged[..., :depth].sum(axis=-1) / shown, np.nan)
        out.passed[rows] = (ranked_gain[..., 0] > 0) & (ranked_score[..., 0] >= pass_floor)
        dcg_at = []  # DCG after 1, 2, ..., depth ranks, summed in rank order as trec_eval sums it
        dcg = np.zeros(shape[:-1])
        for p in range(self.depth):
            dcg = dcg + ranked_gain[..., p] / self.discounts[p]
            dcg_at.append(dcg)
        for k, ndcg in out.ndcg.items():
            ideal = self.ideal[k]
            with np.errstate(divide="ignore", invalid="ignore"):
                ndcg[rows] = np.where(ideal > 0, dcg_at[min(k, self.depth) - 1] / ideal, 0.0)


def _ideal_dcg(ideal_gains: list[np.ndarray], k: int) -> np.ndarray:
    out = np.zeros(len(ideal_gains))
    for q, gains in enumerate(ideal_gains):
        total = 0.0
        for p, g in enumerate(gains[:k], start=1):
            total += g / math.log2(p + 1)
        out[q] = total
    return out
