"""Figures for incomplete judgments: what a pooled (or mined) query's judgments cover of what a run returned.

A query judged by pooling (harness judge) or mined from sessions has judgments only for the chunks some
configuration returned.  Another configuration returns chunks nobody judged, which the usual metrics count as
not relevant.  For such queries (their `judged` extra: doc id -> grade, 0 included), per cut-off c:

    judged@c       the share of the first c returned chunks that overlap a judged line range (any grade): how
                   much of what the figures rest on carries a grade; low values mean the other figures
                   underrate the run, and the chunks should be judged (`harness judge --extend`);
    bpref@c        Buckley & Voorhees (2004), trec_eval's bpref on the first c chunks: only judged chunks
                   count, each relevant one penalised by the judged non-relevant ones above it;
    ndcg_prime@c   condensed-list nDCG (Sakai 2007): nDCG@c on the returned list with its unjudged chunks
                   removed, the grades as gains.
A chunk's grade is the highest grade of the judged line ranges it overlaps (the harness's overlap rule for
every data set); one that overlaps none is unjudged.  bpref and nDCG' need a relevant judgment: a query
whose judgments are all 0 gets no value for them.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import pytrec_eval

from harness.evaluation.metrics import NO_RESULT

CUTOFF = re.compile(r"^mrr@(\d+)$")
INCOMPLETE_COLUMNS = ("judged@{c}", "bpref@{c}", "ndcg_prime@{c}")


def chunk_judgments(docs_of: Mapping[str, frozenset[str]], judged: Mapping[str, int]) -> dict[str, int]:
    """chunk id -> grade for the chunks that overlap a judged line range (grade 0 kept)."""
    keys = set(judged)
    out = {}
    for cid, docs in docs_of.items():
        hit = keys.intersection(docs)
        if hit:
            out[cid] = max(judged[d] for d in hit)
    return out


def incomplete_metrics(ranked: Sequence[str], grades: Mapping[str, int], cutoffs: Sequence[int]) -> dict[str, float]:
    """judged@c, bpref@c and ndcg_prime@c for one query's returned chunk ids (best first) and its chunk
    judgments (module docstring); NaN where a figure is undefined."""
    out: dict[str, float] = {}
    relevant = any(g > 0 for g in grades.values())
    qrels = {"q": {cid: int(g) for cid, g in grades.items()}} if grades else None
    for c in cutoffs:
        top = list(ranked[:c])
        out[f"judged@{c}"] = float(np.mean([cid in grades for cid in top])) if top else float("nan")
        if not relevant or qrels is None:
            out[f"bpref@{c}"] = out[f"ndcg_prime@{c}"] = float("nan")
            continue
        run = {"q": {cid: float(len(top) - i) for i, cid in enumerate(top)} or {NO_RESULT: 0.0}}
        out[f"bpref@{c}"] = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}).evaluate(run)["q"]["bpref"]
        condensed = [cid for cid in ranked if cid in grades][:c]
        crun = {"q": {cid: float(len(condensed) - i) for i, cid in enumerate(condensed)} or {NO_RESULT: 0.0}}
        out[f"ndcg_prime@{c}"] = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{c}"}).evaluate(crun)["q"][f"ndcg_cut_{c}"]
    return out


def frame_cutoffs(frame: pd.DataFrame) -> list[int]:
    return sorted({int(m[1]) for c in frame.columns if (m := CUTOFF.match(str(c)))})


def add_incomplete_columns(frame: pd.DataFrame, index: Any, queries: Sequence[Any], hits: Mapping[str, Sequence[Any]]) -> None:
    """judged@c, bpref@c, ndcg_prime@c for every query with judgments (`judged` extra), when any has them."""
    if not any("judged" in q.extra for q in queries):
        return
    cutoffs = frame_cutoffs(frame)
    docs_of = index.unit_docs
    values: dict[str, dict[str, float]] = {}
    for q in queries:
        judged = q.extra.get("judged")
        if not judged:
            continue
        values[q.id] = incomplete_metrics([h.id for h in hits.get(q.id, [])], chunk_judgments(docs_of, judged), cutoffs)
    for c in cutoffs:
        for name in INCOMPLETE_COLUMNS:
            column = name.format(c=c)
            frame[column] = [values.get(qid, {}).get(column, float("nan")) for qid in frame["query_id"]]
