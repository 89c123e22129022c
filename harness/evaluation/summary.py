"""Summaries of a run's per-query rows: the suite, paraphrase and negative blocks, latency percentiles.

Every mean in a block has its 95% interval beside it (`<metric>_ci95`: [low, high], a BCa bootstrap over
the block's queries, harness.evaluation.statistics.bootstrap_mean; the block's `ci_method` says how it
was computed), and so has the pass rate (`pass_rate`, `pass_rate_ci95`)."""
from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np
import pandas as pd

from harness.evaluation.context_budget import add_context_summary
from harness.evaluation.statistics import (
    BOOTSTRAP_RESAMPLES,
    NEAR_TIE_FRACTION,
    SEED,
    SMALL_CLUSTER,
    bootstrap_means,
    cluster_labels,
)

NEAR_TIE_MARGINS = ("relevant", "min_score", "cut")
# the age of a question's newest evidence when it is asked, in days (what a temporal decay's half-life reads)
AGE_BANDS = (("0-30 days", 0, 30), ("31-90 days", 31, 90), ("91-180 days", 91, 180), ("over 180 days", 181, 10 ** 9))


def percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0}
    arr = np.asarray(values, dtype=float)
    return {f"p{p}": float(np.percentile(arr, p)) for p in (50, 95, 99)}


METRIC_COLUMN = re.compile(r"^(recall|pure_recall|chunk_recall|chunk_mrr|chunk_ndcg|recall_any|recall_all|ndcg_any|mrr|ndcg"
                           r"|judged|bpref|ndcg_prime|keyword_recall|vector_recall|current_above_stale|stale_in_top)@\d+$"
                           r"|^keyword_zero$")  # the last five: evaluation/knowledge_update.py


def query_clusters(df: pd.DataFrame) -> list[str] | None:
    """Each row's cluster (its `cluster` column; a row without one is its own), or None when the rows
    have no clusters at all."""
    return cluster_labels(df["cluster"].tolist() if "cluster" in df.columns else None, df["query_id"].tolist())


def with_intervals(out: dict[str, Any], df: pd.DataFrame, columns: Sequence[str], resamples: int,
                   unit: str = "query") -> None:
    """out[c] = the mean of column c over the block's queries and out[c_ci95] = its 95% interval, for
    every column with values (statistics.bootstrap_means: clusters of the rows' `cluster` column are the
    unit); columns judged on the same queries share their resampled queries.  out["ci_method"] is the
    method of most columns, out["ci_methods"] {column: method} names the others."""
    groups: dict[tuple[bool, ...], dict[str, np.ndarray]] = {}
    methods: dict[str, str] = {}
    clusters = query_clusters(df)
    for c in columns:
        values = pd.to_numeric(df[c], errors="coerce").astype(float).to_numpy()
        mask = ~np.isnan(values)
        if mask.any():
            groups.setdefault(tuple(mask), {})[c] = values[mask]
    for mask, group in groups.items():
        labels = [c for c, keep in zip(clusters, mask) if keep] if clusters is not None else None
        for name, interval in bootstrap_means(group, resamples=resamples, clusters=labels, unit=unit).items():
            out[name] = interval.estimate
            out[f"{name}_ci95"] = [interval.low, interval.high]
            methods[name] = interval.method
    if methods:  # the most common method is the block's; the others are listed by column
        common = max(sorted(set(methods.values())), key=list(methods.values()).count)
        out["ci_method"] = common
        others = {k: v for k, v in methods.items() if v != common}
        if others:
            out["ci_methods"] = others


def tie_ranges(df: pd.DataFrame, columns: Sequence[str]) -> dict[str, list[float]]:
    """{"mrr@6": [mean over the worst orders, mean over the best]} for the document-level
    metrics whose value depends on the order of tied documents (a row's `tie_range` column; a row
    without one has the same value in every order).  Metrics that no tie decides are left out."""
    if "tie_range" not in df.columns:
        return {}
    ranges = df["tie_range"].tolist()
    out = {}
    for c in columns:
        if not any(isinstance(r, dict) and c in r for r in ranges):
            continue
        values = pd.to_numeric(df[c], errors="coerce").tolist()
        worst = [r[c][0] if isinstance(r, dict) and c in r else v for r, v in zip(ranges, values)]
        best = [r[c][1] if isinstance(r, dict) and c in r else v for r, v in zip(ranges, values)]
        pairs = [(w, b) for w, b in zip(worst, best) if w == w and b == b]
        if pairs:
            out[c] = [sum(w for w, _ in pairs) / len(pairs), sum(b for _, b in pairs) / len(pairs)]
    return out


BY_CLUSTER_MAX = 50  # per-cluster figures only for a few large clusters (LoCoMo's conversations)


def by_cluster(df: pd.DataFrame, columns: Sequence[str]) -> dict[str, dict[str, float]]:
    """{cluster: {"queries": n, metric: mean}} when the rows come in a few large clusters (at most
    BY_CLUSTER_MAX of SMALL_CLUSTER queries or more on average): how much one conversation differs from
    another is what a user whose memory is one conversation needs to know."""
    if "cluster" not in df.columns or df["cluster"].isna().any():
        return {}
    groups = df.assign(pass_rate=df["passed"].astype(float)).groupby("cluster", sort=True)
    if not 2 <= groups.ngroups <= BY_CLUSTER_MAX or len(df) / groups.ngroups < SMALL_CLUSTER:
        return {}
    out = {}
    for cluster, rows in groups:
        entry: dict[str, float] = {"queries": int(len(rows))}
        for c in columns:
            values = pd.to_numeric(rows[c], errors="coerce").dropna()
            if len(values):
                entry[c] = float(values.mean())
        out[str(cluster)] = entry
    return out


def resampling(df: pd.DataFrame, unit: str) -> dict[str, Any]:
    """What the block's intervals resample: {"unit": "conversation", "clusters": 10, "queries": 1536}."""
    clusters = query_clusters(df)
    count = len(set(clusters)) if clusters is not None else len(df)
    return {"unit": unit if clusters is not None and count < len(df) else "query", "clusters": count,
            "queries": int(len(df))}


def ci_method(resamples: int = BOOTSTRAP_RESAMPLES) -> str:
    return (f"95% intervals (harness.evaluation.statistics): exact Clopper-Pearson for 0/1 values, Clopper-Pearson "
            f"bounds for small samples of [0, 1] values, else BCa bootstrap over the queries; studentized cluster "
            f"bootstrap where queries come in clusters ({resamples:,} resamples, seed {SEED})")


def near_tie_rule(fraction: float = NEAR_TIE_FRACTION, absolute: float | None = None) -> str:
    if absolute is not None:
        return f"margin below {absolute:g} (absolute, [evaluation] near_tie)"
    return f"margin below {fraction:g} x the query's fused-score spread (max - min over its candidates)"


def summarise(frame: pd.DataFrame, k: int, *, near_tie: str | None = None,
              resamples: int = BOOTSTRAP_RESAMPLES, unit: str = "query") -> dict[str, Any]:
    """The summary of a run's rows.  `near_tie` describes the rule the rows' near_tie column followed;
    `unit` names the rows' clusters (the data set's resampling unit: "conversation", "record")."""
    suite = frame[frame["in_suite"]]
    negative = frame[frame["kind"] == "negative"]
    paraphrase = frame[frame["kind"] == "paraphrase"]
    metric_cols = [c for c in frame.columns if METRIC_COLUMN.match(c)]

    def block(df: pd.DataFrame) -> dict[str, Any]:
        if df.empty:
            return {"queries": 0}
        out: dict[str, Any] = {"queries": int(len(df)), "passed": int(df["passed"].sum())}
        with_intervals(out, df.assign(pass_rate=df["passed"].astype(float)), ["pass_rate", *metric_cols], resamples,
                       unit)
        out["resampling"] = resampling(df, unit)
        if spread := by_cluster(df, ["pass_rate", *metric_cols]):
            out["by_cluster"] = spread
        if ranges := tie_ranges(df, metric_cols):
            out["tie_ranges"] = ranges
        ties = df["near_tie"].astype(bool) if "near_tie" in df else pd.Series(False, index=df.index)
        on = df["near_tie_on"].fillna("") if "near_tie_on" in df else pd.Series("", index=df.index)
        out.update({
            "ci_method": out.get("ci_method", ci_method(resamples)),
            "top1_pure": int((df["top1_relevant"] & df["top1_pure"]).sum()),
            "text_score_nonzero": int(df["text_score_nonzero"].sum()),
            # queries whose outcome hangs on a near tie (per_query.near_tie_columns)
            "near_ties": int(ties.sum()),
            "near_ties_by_margin": {m: int(on.map(lambda s, m=m: m in s.split(",")).sum()) for m in NEAR_TIE_MARGINS},
            "near_tie": near_tie or near_tie_rule(),
            **({"skipped": int(df["skipped"].sum())} if "skipped" in df.columns else {}),
        })
        return out

    negative_block: dict[str, Any] = {
        "queries": int(len(negative)), "returned_anything": int((negative["returned"] > 0).sum()),
        "max_top1_score": float(negative["top1_score"].max()) if len(negative) else None}
    with_intervals(negative_block, negative.assign(returned_rate=(negative["returned"] > 0).astype(float)),
                   ["returned_rate"], resamples, unit)
    if "skipped" in negative.columns:  # not searched at all (adaptive retrieval), a subset of those returning nothing
        negative_block["skipped"] = int(negative["skipped"].sum())
    out = {
        "suite": block(suite),
        "paraphrase": block(paraphrase),
        "negative": negative_block,
        "latency_ms": {
            "retrieval": percentiles(frame["ms_retrieval"].tolist()),
            **{stage: percentiles(frame[f"ms_{stage}"].tolist())
               for stage in ("query_embedding", "vector", "lexical", "fusion", "postprocess")},
        },
    }
    if "category" in frame.columns:  # the suite per query category (LoCoMo)
        out["by_category"] = {str(cat): block(suite[suite["category"] == cat])
                              for cat in sorted(suite["category"].dropna().unique())}
    if "evidence_age_days" in frame.columns:  # the suite by the age of its newest evidence (temporal decay)
        ages = pd.to_numeric(suite["evidence_age_days"], errors="coerce")
        out["by_age"] = {label: block(suite[(ages >= low) & (ages <= high)]) for label, low, high in AGE_BANDS
                         if ((ages >= low) & (ages <= high)).any()}
    add_context_summary(out, frame, unit)  # context tokens and recall@{B}tokens, with bootstrap intervals
    return out
