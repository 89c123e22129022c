"""Per-query metrics of the robustness and knowledge-update suites, added by extra_columns.add_columns
when the queries ask for them (their extra fields, as `category` asks for per-category summaries):

  queries with a `form` (datasets/robustness-zh, each leg apart from the fusion):
    keyword_zero         1 when the keyword leg returns no candidate at all, else 0
    keyword_recall@k     share of the relevant records among the keyword leg's first k candidates
    vector_recall@k      the same for the vector leg
  queries with a `stale` list (datasets/knowledge-update, on the returned results):
    current_above_stale@k  1 when a chunk of the current (relevant) record is in the first k results and
                           ranks above every chunk of a stale record (a chunk holding both is not above)
    stale_in_top@k         1 when a chunk of a stale record is in the first k results
    (None for a question without a stale record: a stable fact)

k runs over the run's cut-offs (the recall@k columns of the frame).  Records are the leg's or result's
chunks by provenance (a chunk counts for every record it overlaps), as Recall@k reads them.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import pandas as pd


def frame_cutoffs(frame: pd.DataFrame) -> list[int]:
    """The run's cut-offs: those of its recall@k columns."""
    return sorted({int(c.split("@", 1)[1]) for c in frame.columns
                   if c.startswith("recall@") and c.split("@", 1)[1].isdigit()})


def first_rank(ids: Sequence[str], records: Iterable[str], docs_of: dict[str, frozenset[str]]) -> int | None:
    """1-based rank of the first id whose records meet `records`, None when none does."""
    wanted = set(records)
    for rank, ident in enumerate(ids, start=1):
        if docs_of.get(ident, frozenset()) & wanted:
            return rank
    return None


def recall_at(ids: Sequence[str], relevant: Iterable[str], docs_of: dict[str, frozenset[str]], k: int) -> float | None:
    relevant = set(relevant)
    if not relevant:
        return None
    found = set().union(*(docs_of.get(i, frozenset()) for i in ids[:k])) if ids[:k] else set()
    return len(found & relevant) / len(relevant)


def leg_columns(ids_vector: Sequence[str], ids_lexical: Sequence[str], relevant: Iterable[str],
                docs_of: dict[str, frozenset[str]], cutoffs: Sequence[int]) -> dict[str, Any]:
    relevant = list(relevant)
    out: dict[str, Any] = {"keyword_zero": float(len(ids_lexical) == 0)}
    for k in cutoffs:
        out[f"keyword_recall@{k}"] = recall_at(ids_lexical, relevant, docs_of, k)
        out[f"vector_recall@{k}"] = recall_at(ids_vector, relevant, docs_of, k)
    return out


def update_columns(ids: Sequence[str], relevant: Iterable[str], stale: Iterable[str],
                   docs_of: dict[str, frozenset[str]], cutoffs: Sequence[int]) -> dict[str, Any]:
    stale = list(stale)
    if not stale:
        return {**{f"current_above_stale@{k}": None for k in cutoffs}, **{f"stale_in_top@{k}": None for k in cutoffs}}
    current, old = first_rank(ids, relevant, docs_of), first_rank(ids, stale, docs_of)
    out: dict[str, Any] = {}
    for k in cutoffs:
        above = current is not None and current <= k and (old is None or old > k or current < old)
        out[f"current_above_stale@{k}"] = float(above)
        out[f"stale_in_top@{k}"] = float(old is not None and old <= k)
    return out


def add_suite_columns(frame: pd.DataFrame, index: Any, queries: Sequence[Any], hits: dict[str, list[Any]],
                      traces: dict[str, Any]) -> None:
    """The columns above, for the queries that ask for them (a `form`, a `stale` list)."""
    if frame.empty:
        return
    cutoffs = frame_cutoffs(frame) or [len(next(iter(hits.values()), []))]
    by_id = {q.id: q for q in queries}
    if any("form" in q.extra for q in queries):
        provenance = index.provenance()
        rows = [leg_columns([i for i, _ in traces[qid].vector], [i for i, _ in traces[qid].lexical],
                            by_id[qid].relevant, provenance, cutoffs) for qid in frame["query_id"]]
        for column in rows[0] if rows else []:
            frame[column] = [r[column] for r in rows]
    if any("stale" in q.extra for q in queries):
        units = index.unit_docs
        rows = [update_columns([h.id for h in hits[qid]], by_id[qid].relevant, by_id[qid].extra.get("stale", []),
                               units, cutoffs) for qid in frame["query_id"]]
        for column in rows[0] if rows else []:
            frame[column] = [r[column] for r in rows]
