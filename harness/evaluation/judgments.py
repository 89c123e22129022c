"""Judgments from the provenance map: which chunks are relevant to a query (chunk-level qrels)."""
from __future__ import annotations

from typing import Sequence

from harness.inputs.layout import Query
from harness.pipeline import Index

NOT_INDEXED = "__relevant_but_not_indexed__"  # stands for relevant documents missing from the layout


def chunk_judgments(index: Index, queries: Sequence[Query]) -> dict[str, dict[str, int]]:
    """Per judged query, the chunks overlapping a relevant document (built once per index: a sweep
    scores many settings against the same judgments)."""
    out = {}
    for q in queries:
        if q.relevant:
            rel = {cid: 1 for cid, docs in index.docs_of.items() if docs & q.relevant.keys()}
            # its relevant documents are not in this layout: the query must score 0, not vanish
            out[q.id] = rel or {NOT_INDEXED: 1}
    return out
