"""Per-query evaluation of a run: fuse each query's legs, judge the outcome, compute the metrics."""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import pandas as pd

from harness.evaluation.evidence import doc_scores, recall_all, recall_any
from harness.evaluation.judgments import NOT_INDEXED, chunk_judgments
from harness.evaluation.metrics import (
    evaluate_run,
    leg_rank,
    max_passage,
    query_outcome,
    relevant_margin,
)
from harness.inputs.layout import Query
from harness.pipeline import Index, QueryLegs, Stages, fuse, hit_records
from harness.stages.fusion import Hit, Legs


def standard_metrics(index: Index, queries: Sequence[Query], hits: dict[str, list[Hit]],
                     cutoffs: Sequence[int], chunk_qrels: dict[str, dict[str, int]] | None = None
                     ) -> dict[str, dict[str, float]]:
    """MRR@c and nDCG@c on chunks, Recall@c on documents, for every cut-off c (see metrics.py)."""
    judged = [q for q in queries if q.relevant]
    if chunk_qrels is None:
        chunk_qrels = chunk_judgments(index, judged)
    doc_qrels = {q.id: q.relevant for q in judged}
    out: dict[str, dict[str, float]] = {q.id: {} for q in judged}
    for c in cutoffs:
        chunk_ranked = {q.id: [h.id for h in hits[q.id][:c]] for q in judged}
        for qid, vals in evaluate_run(chunk_qrels, chunk_ranked, c, ("mrr", "ndcg")).items():
            out[qid].update(vals)
        # every document of the top-c chunks counts, so the document cut-off is their number
        doc_ranked = {q.id: max_passage(hits[q.id][:c], index.docs_of) for q in judged}
        depth = max([len(d) for d in doc_ranked.values()] + [c])
        for qid, vals in evaluate_run(doc_qrels, doc_ranked, depth, ("recall",)).items():
            out[qid][f"recall@{c}"] = vals[f"recall@{depth}"]
    return out


def evidence_metrics(index: Index, queries: Sequence[Query], hits: dict[str, list[Hit]],
                     cutoffs: Sequence[int]) -> dict[str, dict[str, float]]:
    """recall_any@c and recall_all@c per judged query (evidence.py): are one / all of its relevant
    documents overlapped by the top c returned chunks?  c counts chunks, as memory_search returns them."""
    qrels = {q.id: q.relevant for q in queries if q.relevant}
    out: dict[str, dict[str, float]] = {qid: {} for qid in qrels}
    for c in cutoffs:
        run = {qid: doc_scores([(h.id, h.score) for h in hits[qid][:c]], index.docs_of) for qid in qrels}
        for name, metric in (("recall_any", recall_any), ("recall_all", recall_all)):
            for qid, value in metric(run, qrels).items():
                out[qid][f"{name}@{c}"] = value
    return out


def leg_diagnostics(legs: Legs, relevant: Iterable[str], docs_of: dict[str, frozenset[str]],
                    cut: int) -> dict[str, Any]:
    """Per leg: the rank and raw score of the first relevant chunk among its candidates, and the raw
    score of the candidate at the result cut-off (rank `cut`), so a report can say how far a missed
    record was from making it on that leg alone."""
    relevant = set(relevant)
    out: dict[str, Any] = {}
    for name, candidates in (("vector", legs.vector), ("lexical", legs.lexical)):
        rank, raw = leg_rank(candidates, relevant, docs_of) if relevant else (None, None)
        out[f"{name}_candidates"] = len(candidates)
        out[f"{name}_rank"] = rank
        out[f"{name}_raw"] = raw
        out[f"{name}_raw_at_cut"] = candidates[cut - 1][1] if len(candidates) >= cut else None
    return out


def evaluate_queries(index: Index, stages: Stages, queries: Sequence[Query], legs: dict[str, QueryLegs],
                     round_no: int | None, cutoffs: Sequence[int] | None = None,
                     evidence_cutoffs: Sequence[int] | None = None
                     ) -> tuple[pd.DataFrame, dict[str, list[dict[str, Any]]]]:
    """Fuse and post-process every query's legs, then score: one row per query.  `evidence_cutoffs`
    ([evaluation] evidence_cutoffs) adds recall_any@c / recall_all@c; queries with a `category` extra
    field (LoCoMo) get a category column, which summaries report by."""
    cutoffs = sorted(set(cutoffs or [stages.max_results]))
    judgments = chunk_judgments(index, queries)  # built once: the metrics below use them too
    rows, hit_lists, fused = [], {}, {}
    for q in queries:
        hits, post_ms = fuse(stages, q, legs[q.id].legs, index, legs[q.id].query_vector)
        fused[q.id] = hits
        outcome = query_outcome(hits, q.relevant, index.docs_of, stages.min_score)
        timings = {**legs[q.id].timings_ms, **post_ms}
        rows.append({
            "query_id": q.id, "text": q.text, "kind": q.kind, "in_suite": q.in_suite(round_no),
            "joined_round": q.joined_round, "relevant": sorted(q.relevant),
            "passed": outcome.passed, "score": outcome.score, "rank": outcome.rank,
            "top1_relevant": outcome.top1_relevant, "top1_pure": outcome.top1_pure,
            "top1_docs": outcome.top1_docs, "top1_score": hits[0].score if hits else None,
            "top1_chunk": hits[0].id if hits else None,
            "returned": outcome.returned, "reciprocal_rank": outcome.reciprocal_rank,
            "relevant_margin": relevant_margin(hits, q.relevant, index.docs_of) if q.relevant else None,
            **{f"hit@{k}": v for k, v in outcome.hits_at.items()},
            **leg_diagnostics(legs[q.id].legs, q.relevant, index.docs_of, stages.max_results),
            "relevant_indexed": NOT_INDEXED not in judgments.get(q.id, {}) if q.relevant else None,
            "text_score_nonzero": any(h.text_score > 0 for h in hits),
            **{f"ms_{k}": v for k, v in timings.items()},
            "ms_retrieval": sum(v for k, v in timings.items() if k != "query_embedding"),
        })
        hit_lists[q.id] = hit_records(index, hits)
    frame = pd.DataFrame(rows)
    metrics = standard_metrics(index, queries, fused, cutoffs, judgments)
    for c in cutoffs:
        for name in (f"recall@{c}", f"mrr@{c}", f"ndcg@{c}"):
            frame[name] = [metrics.get(qid, {}).get(name) for qid in frame["query_id"]]
    if evidence_cutoffs:
        evidence = evidence_metrics(index, queries, fused, sorted(set(evidence_cutoffs)))
        for c in sorted(set(evidence_cutoffs)):
            for name in (f"recall_any@{c}", f"recall_all@{c}"):
                frame[name] = [evidence.get(qid, {}).get(name) for qid in frame["query_id"]]
    if any("category" in q.extra for q in queries):
        frame["category"] = [q.extra.get("category") for q in queries]
    return frame, hit_lists
