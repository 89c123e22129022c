"""Metrics: per-query outcomes on chunks (rank, score, pass, purity) and standard IR metrics on documents.

Chunks are judged through the layout's provenance map: a chunk is relevant when it overlaps a relevant
document's lines and pure when it overlaps exactly one document.  Standard metrics come from pytrec_eval,
after ties are broken by (score desc, id) and turned into strictly decreasing scores, so no library's own
tie rule can change a number:
  MRR@k, nDCG@k  on chunks (qrels: the chunks overlapping a relevant document), so a mixed chunk counts
                 at its own rank rather than at an arbitrary place among the documents it mixes;
  Recall@k       on documents: the share of relevant documents that some returned chunk overlaps.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import pytrec_eval

from harness.stages.fusion import Hit

Run = dict[str, dict[str, float]]  # query id -> doc id -> score
Qrels = dict[str, dict[str, int]]  # query id -> doc id -> grade


def strict_run(ranked: dict[str, list[str]]) -> Run:
    """Ranked id lists -> a run whose scores strictly decrease with rank (n, n-1, ..., 1)."""
    return {qid: {doc: float(len(ids) - i) for i, doc in enumerate(ids)} for qid, ids in ranked.items()}


def max_passage(hits: list[Hit], docs_of: dict[str, frozenset[str]]) -> list[str]:
    """Documents in the order of their best chunk; documents of one chunk tie and break by id."""
    order: list[str] = []
    seen: set[str] = set()
    for hit in hits:  # hits are already ranked (score desc, id)
        for doc in sorted(docs_of.get(hit.id, ())):
            if doc not in seen:
                seen.add(doc)
                order.append(doc)
    return order


# Our metric name -> trec_eval measure (pytrec_eval spelling) and the key it reports under.
TREC_MEASURES = {
    "mrr": ("recip_rank", "recip_rank"),
    "ndcg": ("ndcg_cut.{k}", "ndcg_cut_{k}"),
    "recall": ("recall.{k}", "recall_{k}"),
}


def evaluate_run(qrels: Qrels, ranked: dict[str, list[str]], k: int,
                 metrics: tuple[str, ...] = ("recall", "mrr", "ndcg")) -> dict[str, dict[str, float]]:
    """Per judged query, `<metric>@k` by trec_eval's definitions (pytrec_eval); runs are cut at k."""
    judged = {q: rel for q, rel in qrels.items() if rel}
    if not judged:
        return {}
    run = strict_run({q: ranked.get(q, [])[:k] for q in judged})
    for q in judged:  # trec_eval skips queries absent from the run; an empty result must score 0
        run[q] = run[q] or {"__no_result__": 0.0}
    measures = {m: (TREC_MEASURES[m][0].format(k=k), TREC_MEASURES[m][1].format(k=k)) for m in metrics}
    evaluator = pytrec_eval.RelevanceEvaluator(judged, {trec for trec, _ in measures.values()})
    return {q: {f"{m}@{k}": vals[key] for m, (_, key) in measures.items()}
            for q, vals in evaluator.evaluate(run).items()}


@dataclass
class QueryOutcome:
    rank: int | None  # 1-based rank of the best relevant chunk among the returned hits
    score: float | None  # its fused score
    top1_relevant: bool
    top1_pure: bool
    top1_docs: list[str]
    passed: bool
    reciprocal_rank: float
    hits_at: dict[int, bool]
    returned: int


def query_outcome(hits: list[Hit], relevant: Iterable[str], docs_of: dict[str, frozenset[str]],
                  min_score: float, cutoffs: tuple[int, ...] = (1, 3, 6)) -> QueryOutcome:
    relevant = set(relevant)
    rank = score = None
    for i, hit in enumerate(hits, start=1):
        if docs_of.get(hit.id, frozenset()) & relevant:
            rank, score = i, hit.score
            break
    top_docs = sorted(docs_of.get(hits[0].id, frozenset())) if hits else []
    top1_relevant = bool(hits) and bool(set(top_docs) & relevant)
    return QueryOutcome(
        rank=rank,
        score=score,
        top1_relevant=top1_relevant,
        top1_pure=bool(hits) and len(top_docs) == 1,
        top1_docs=top_docs,
        passed=top1_relevant and hits[0].score >= min_score,
        reciprocal_rank=1.0 / rank if rank else 0.0,
        hits_at={k: rank is not None and rank <= k for k in cutoffs},
        returned=len(hits),
    )


def leg_rank(candidates: list[tuple[str, float]], relevant: Iterable[str],
             docs_of: dict[str, frozenset[str]]) -> tuple[int | None, float | None]:
    """Where one leg (vector or lexical, best first) put the first chunk of a relevant document:
    (1-based rank, the leg's raw score), or (None, None) when it is not among the candidates.
    Answers "which leg found it, and how far from the cut?" for a failed query."""
    relevant = set(relevant)
    for i, (cid, raw) in enumerate(candidates, start=1):
        if docs_of.get(cid, frozenset()) & relevant:
            return i, raw
    return None, None


NEAR_TIE = 0.001  # a pass or failure decided by less than this is reported as a near tie


def relevant_margin(hits: list[Hit], relevant: Iterable[str], docs_of: dict[str, frozenset[str]]) -> float | None:
    """How far the best relevant chunk is ahead of (+) or behind (-) the best other chunk among the
    returned hits; None when either is missing.  A pass or a failure by less than a few thousandths is
    a near tie: another embedding model, or a small change to the corpus, can flip it.  The margin is in
    the units of the final score, so it means little after a rank transform (QMD's 1/rank)."""
    relevant = set(relevant)
    best_relevant = best_other = None
    for hit in hits:
        is_relevant = bool(docs_of.get(hit.id, frozenset()) & relevant)
        if is_relevant and best_relevant is None:
            best_relevant = hit.score
        elif not is_relevant and best_other is None:
            best_other = hit.score
    if best_relevant is None or best_other is None:
        return None
    return best_relevant - best_other
