"""Judgments from the provenance map: qrels at chunk and at document granularity.

A query's relevant documents (records) and their grades come with the data set (graded where the data
has grades: BEIR qrels; binary elsewhere); a chunk is relevant when its lines overlap a relevant
document's (the layout's provenance map, `docs_of`), with the highest grade among those documents, so
a mixed chunk counts at its own rank.
"""
from __future__ import annotations

from typing import AbstractSet, Mapping, Sequence

from harness.evaluation.runs import Qrels
from harness.inputs.layout import Query

NOT_INDEXED = "__relevant_but_not_indexed__"  # stands for relevant documents missing from the layout


def chunk_qrels(docs_of: Mapping[str, AbstractSet[str]], queries: Sequence[Query]) -> Qrels:
    """Per judged query, the chunks overlapping a relevant document (built once per index: a sweep
    scores many settings against the same judgments)."""
    out: Qrels = {}
    for q in queries:
        if q.relevant:
            rel = {cid: max(q.relevant.get(d, 0) for d in docs) for cid, docs in docs_of.items()
                   if not docs.isdisjoint(q.relevant)}
            # its relevant documents are not in this layout: the query must score 0, not vanish
            out[q.id] = rel or {NOT_INDEXED: 1}
    return out


def document_qrels(queries: Sequence[Query]) -> Qrels:
    """Per judged query, its relevant documents with their grades."""
    return {q.id: dict(q.relevant) for q in queries if q.relevant}
