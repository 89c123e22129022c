"""Per-query evaluation of a run: read each query's retrieval trace (harness.trace.QueryTrace, which
pipeline.trace_queries records), build the runs and qrels, compute the metrics from them and the
diagnostics from the hits.  Nothing here retrieves: the pipeline did."""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import pandas as pd

from harness.evaluation.evidence import doc_scores, ndcg_any, recall_all, recall_any
from harness.evaluation.extra_columns import add_columns
from harness.evaluation.judgments import NOT_INDEXED, chunk_qrels, document_qrels
from harness.evaluation.metrics import (
    cut_margin,
    evaluate,
    leg_rank,
    min_score_margin,
    query_outcome,
    relevant_margin,
    standard_metrics,
)
from harness.evaluation.runs import JudgedRuns, judged_runs
from harness.evaluation.stage_trace import needs_trace, trace_query
from harness.evaluation.statistics import NEAR_TIE_FRACTION, score_spread
from harness.inputs.layout import Query
from harness.trace import Hit, QueryTrace

HIT_CUTOFFS = (1, 3, 6)  # the hit@k columns: a relevant chunk among the first k returned
# per cut-off c: documents (the headline) first, then chunks (metrics.standard_metrics)
METRICS_AT = ("recall@{c}", "mrr@{c}", "ndcg@{c}", "pure_recall@{c}", "chunk_recall@{c}", "chunk_mrr@{c}",
              "chunk_ndcg@{c}")


EVIDENCE_METRICS = ("recall_any", "recall_all", "ndcg_any")


def evidence_metrics(index: Any, queries: Sequence[Query], hits: dict[str, list[Hit]],
                     cutoffs: Sequence[int], names: Sequence[str] = ("recall_any", "recall_all")
                     ) -> dict[str, dict[str, float]]:
    """recall_any@c and recall_all@c per judged query (evidence.py): are one / all of its relevant
    documents overlapped by the top c returned chunks?  c counts chunks, as memory_search returns them.
    ndcg_any@c (LongMemEval's nDCG, when asked for in `names`) ranks the documents of every returned
    chunk and cuts at c documents."""
    qrels = {q.id: q.relevant for q in queries if q.relevant}
    out: dict[str, dict[str, float]] = {qid: {} for qid in qrels}
    whole = ({qid: doc_scores([(h.id, h.score) for h in hits[qid]], index.unit_docs) for qid in qrels}
             if "ndcg_any" in names else {})
    for c in cutoffs:
        run = {qid: doc_scores([(h.id, h.score) for h in hits[qid][:c]], index.unit_docs) for qid in qrels}
        for name, metric in (("recall_any", recall_any), ("recall_all", recall_all)):
            if name in names:
                for qid, value in metric(run, qrels).items():
                    out[qid][f"{name}@{c}"] = value
        if "ndcg_any" in names:
            for qid, value in ndcg_any(whole, qrels, c).items():
                out[qid][f"ndcg_any@{c}"] = value
    return out


def leg_diagnostics(legs: Any, relevant: Iterable[str], docs_of: dict[str, frozenset[str]],
                    cut: int) -> dict[str, Any]:
    """Per leg (`legs`: anything with .vector and .lexical candidate lists, Legs or a QueryTrace): the rank
    and raw score of the first relevant chunk among its candidates, and the raw
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


def counted_margins(has_relevant: bool, returned: bool, top1_relevant: bool) -> tuple[str, ...]:
    """The margins that decide a query's outcome (near_tie_columns' names): a query with results whose
    top-1 is not relevant fails on rank, whatever its score against minScore."""
    if has_relevant and returned and not top1_relevant:
        return ("relevant", "cut")
    return ("relevant", "min_score", "cut")


def near_tie_columns(hits: list[Hit], candidates: list[Hit], query: Query, docs_of: dict[str, frozenset[str]],
                     pass_threshold: float, fraction: float = NEAR_TIE_FRACTION,
                     absolute: float | None = None) -> dict[str, Any]:
    """The three margins that can decide a query's outcome, and which of them are near ties.

    relevant_margin  the best relevant chunk against the best other returned chunk (rank 1 or not);
    min_score_margin the top-1 against minScore (passes at 0.3502 vs 0.35; a negative query silenced
                     by a hair); counted for queries whose top-1 is relevant, negatives, and empty lists;
    cut_margin       the best relevant chunk against the cut of the returned list (kept by, or missing
                     it by, a hair at rank 7).
    A margin is a near tie below `fraction` x the spread of the query's fused scores (max - min over
    its candidates), so it means the same for RRF scores (~0.01 apart) as for weighted ones (0-1); an
    `absolute` threshold ([evaluation] near_tie) replaces that rule."""
    spread = float(score_spread([[h.score for h in candidates]])[0])
    threshold = absolute if absolute is not None else fraction * spread
    relevant = query.relevant
    margins = {
        "relevant": relevant_margin(hits, relevant, docs_of) if relevant else None,
        "min_score": min_score_margin(hits, candidates, pass_threshold),
        "cut": cut_margin(hits, candidates, relevant, docs_of) if relevant else None,
    }
    top1_relevant = bool(hits) and bool(docs_of.get(hits[0].id, frozenset()) & set(relevant))
    near = [name for name in counted_margins(bool(relevant), bool(hits), top1_relevant)
            if margins[name] is not None and abs(margins[name]) < threshold]
    return {"relevant_margin": margins["relevant"], "min_score_margin": margins["min_score"],
            "cut_margin": margins["cut"], "score_spread": spread, "near_tie_threshold": threshold,
            "near_tie": bool(near), "near_tie_on": ",".join(near)}


def stage_columns(row: dict[str, Any], trace: QueryTrace, query: Query, index: Any,
                  units: dict[str, frozenset[str]]) -> dict[str, Any]:
    """Why the query failed, by stage (evaluation.stage_trace), for the rows that need saying: failed
    queries, near ties and answered negatives; None elsewhere."""
    if not needs_trace(row) or not trace.explainable:
        return {"lost_at": None, "why": None, "stage_ranks": None}  # expansion lists: not in the trace's legs
    explained = trace_query(trace, query, index, units)
    return {"lost_at": explained.lost_at, "why": explained.why, "stage_ranks": [s.as_dict() for s in explained.steps]}


def evaluate_queries(index: Any, stages: Any, queries: Sequence[Query], traces: dict[str, QueryTrace],
                     round_no: int | None, cutoffs: Sequence[int] | None = None,
                     evidence_cutoffs: Sequence[int] | None = None, *, near_tie_fraction: float = NEAR_TIE_FRACTION,
                     near_tie: float | None = None, ties: str = "expected",
                     evidence_names: Sequence[str] = ("recall_any", "recall_all")
                     ) -> tuple[pd.DataFrame, dict[str, list[dict[str, Any]]], JudgedRuns]:
    """Score every query's retrieval (`traces`: pipeline.trace_queries): one row per query, the returned hits
    as records, and the runs and qrels every metric of the rows is computed from.  `index` and `stages` are
    read for the run's units, chunk text and settings (maxResults, the pass threshold), never run.  `evidence_cutoffs`
    ([evaluation] evidence_cutoffs) adds recall_any@c / recall_all@c (and ndcg_any@c if `evidence_names`
    asks for it); queries with a `category` extra
    field (LoCoMo) get a category column, which summaries report by.  Cut-offs are checked against
    max_results by the caller (metrics.checked_cutoffs).  `ties`: the document-level tie rule
    (harness.evaluation.ties); where ties decide a query's figures, its `tie_range` column holds
    {metric: [worst, best]}."""
    cutoffs = sorted(set(cutoffs or [stages.max_results]))
    fused = {q.id: traces[q.id].hits for q in queries}
    # judgments built once: relevant_indexed below reads them too.  The units judged are what the pipeline
    # returns: chunks, or whole files for a document-level pipeline (QMD), each relevant when it overlaps a
    # relevant record, so chunk qrels, MaxP and Recall read a file as a chunk spanning the whole file.
    units = index.unit_docs
    runs = judged_runs(fused, units, chunk_qrels(units, queries), document_qrels(queries))
    tie_ranges: dict[str, dict[str, list[float]]] = {}
    metrics = standard_metrics(runs, cutoffs, ties=ties, tie_ranges=tie_ranges)
    ranks = evaluate(runs.chunk_run, runs.chunk_qrels, ["mrr", *(f"hit_rate@{k}" for k in HIT_CUTOFFS)])
    rows, hit_lists = [], {}
    provenance = index.provenance()
    for q in queries:
        trace = traces[q.id]
        hits = trace.hits
        outcome = query_outcome(hits, q.relevant, units, stages.pass_threshold)
        timings = trace.timings_ms
        rank_metrics = ranks.get(q.id, {})
        rows.append({
            "query_id": q.id, "text": q.text, "kind": q.kind, "in_suite": q.in_suite(round_no), "cluster": q.cluster,
            "joined_round": q.joined_round, "relevant": sorted(q.relevant),
            "passed": outcome.passed, "score": outcome.score, "rank": outcome.rank,
            "top1_relevant": outcome.top1_relevant, "top1_pure": outcome.top1_pure,
            "top1_docs": outcome.top1_docs, "top1_score": hits[0].score if hits else None,
            "top1_chunk": hits[0].id if hits else None,
            "returned": outcome.returned, "reciprocal_rank": rank_metrics.get("mrr", 0.0),
            "skipped": trace.skipped,
            **near_tie_columns(hits, trace.fused, q, units, stages.pass_threshold,
                               near_tie_fraction, near_tie),
            **{f"hit@{k}": bool(rank_metrics.get(f"hit_rate@{k}", 0.0)) for k in HIT_CUTOFFS},
            **leg_diagnostics(trace, q.relevant, provenance, stages.max_results),
            "relevant_indexed": NOT_INDEXED not in runs.chunk_qrels.get(q.id, {}) if q.relevant else None,
            "text_score_nonzero": any(h.text_score > 0 for h in hits),
            **{f"ms_{k}": v for k, v in timings.items()},
            "ms_retrieval": sum(v for k, v in timings.items() if k != "query_embedding"),
        })
        hit_lists[q.id] = trace.records
        rows[-1].update(stage_columns(rows[-1], trace, q, index, units))
    frame = pd.DataFrame(rows)
    for c in cutoffs:
        for name in METRICS_AT:
            frame[name.format(c=c)] = [metrics.get(qid, {}).get(name.format(c=c)) for qid in frame["query_id"]]
    frame["tie_range"] = [tie_ranges.get(qid) for qid in frame["query_id"]]
    if evidence_cutoffs:
        evidence = evidence_metrics(index, queries, fused, sorted(set(evidence_cutoffs)), evidence_names)
        for c in sorted(set(evidence_cutoffs)):
            for name in (f"{n}@{c}" for n in EVIDENCE_METRICS if n in evidence_names):
                frame[name] = [evidence.get(qid, {}).get(name) for qid in frame["query_id"]]
    add_columns(frame, index, stages, queries, fused, traces)  # context tokens and recall@{B}tokens; expansion
    if any("category" in q.extra for q in queries):
        frame["category"] = [q.extra.get("category") for q in queries]
    if any("evidence_age_days" in q.extra for q in queries):  # the summary reports by age (temporal decay)
        frame["evidence_age_days"] = [q.extra.get("evidence_age_days") for q in queries]
    return frame, hit_lists, runs
