"""Per-query columns added after the core metrics, in one call from per_query.evaluate_queries:

    context_tokens, whole_memory_tokens, context_share, recall@{B}tokens   (context_budget.py)
    expansion_skipped, expansion_terms, expansion_lists                    (query expansion, when configured)
    judged@{c}, bpref@{c}, ndcg_prime@{c}                                   (incomplete.py: pooled or mined judgments)
    keyword_zero, keyword_recall@{c}, vector_recall@{c}; current_above_stale@{c}, stale_in_top@{c}
                                                     (knowledge_update.py: queries with a form / a stale list)
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from harness.evaluation.context_budget import add_context_columns
from harness.evaluation.incomplete import add_incomplete_columns
from harness.evaluation.knowledge_update import add_suite_columns


def add_columns(frame: pd.DataFrame, index: Any, stages: Any, queries: Sequence[Any], hits: dict[str, list[Any]],
                traces: dict[str, Any]) -> None:
    """`traces`: each query's harness.trace.QueryTrace (its expansion's statistics and lists)."""
    add_context_columns(frame, index, stages, queries, hits)
    add_incomplete_columns(frame, index, queries, hits)
    add_suite_columns(frame, index, queries, hits, traces)
    if getattr(stages, "expansion", None) is not None:
        frame["expansion_skipped"] = [traces[qid].expansion.get("expansion_skipped") for qid in frame["query_id"]]
        frame["expansion_terms"] = [traces[qid].expansion.get("expansion_terms") for qid in frame["query_id"]]
        frame["expansion_lists"] = [traces[qid].extra_lists for qid in frame["query_id"]]
