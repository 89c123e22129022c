"""Summaries of a run's per-query rows: the suite, paraphrase and negative blocks, latency percentiles."""
from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np
import pandas as pd

from harness.evaluation.context_budget import add_context_summary
from harness.evaluation.metrics import (
    NEAR_TIE,
)


def percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0}
    arr = np.asarray(values, dtype=float)
    return {f"p{p}": float(np.percentile(arr, p)) for p in (50, 95, 99)}


METRIC_COLUMN = re.compile(r"^(recall|recall_any|recall_all|mrr|ndcg)@\d+$")


def summarise(frame: pd.DataFrame, k: int, near_tie: float = NEAR_TIE) -> dict[str, Any]:
    suite = frame[frame["in_suite"]]
    negative = frame[frame["kind"] == "negative"]
    paraphrase = frame[frame["kind"] == "paraphrase"]
    metric_cols = [c for c in frame.columns if METRIC_COLUMN.match(c)]

    def block(df: pd.DataFrame) -> dict[str, Any]:
        if df.empty:
            return {"queries": 0}
        return {
            "queries": int(len(df)), "passed": int(df["passed"].sum()),
            **{c: float(df[c].mean()) for c in metric_cols},
            "top1_pure": int((df["top1_relevant"] & df["top1_pure"]).sum()),
            "text_score_nonzero": int(df["text_score_nonzero"].sum()),
            # queries whose outcome hangs on a near tie (see metrics.relevant_margin)
            "near_ties": int((pd.to_numeric(df["relevant_margin"], errors="coerce").abs() < near_tie).sum()),
            "near_tie": near_tie,
            **({"skipped": int(df["skipped"].sum())} if "skipped" in df.columns else {}),
        }

    out = {
        "suite": block(suite),
        "paraphrase": block(paraphrase),
        "negative": {"queries": int(len(negative)), "returned_anything": int((negative["returned"] > 0).sum()),
                     "max_top1_score": float(negative["top1_score"].max()) if len(negative) else None,
                     # not searched at all (adaptive retrieval), a subset of those returning nothing
                     **({"skipped": int(negative["skipped"].sum())} if "skipped" in negative.columns else {})},
        "latency_ms": {
            "retrieval": percentiles(frame["ms_retrieval"].tolist()),
            **{stage: percentiles(frame[f"ms_{stage}"].tolist())
               for stage in ("query_embedding", "vector", "lexical", "fusion", "postprocess")},
        },
    }
    if "category" in frame.columns:  # the suite per query category (LoCoMo)
        out["by_category"] = {str(cat): block(suite[suite["category"] == cat])
                              for cat in sorted(suite["category"].dropna().unique())}
    add_context_summary(out, frame)  # context tokens and recall@{B}tokens, with bootstrap intervals
    return out
