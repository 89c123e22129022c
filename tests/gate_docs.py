"""Small results.json / ablation.json / eval documents for the gate and diff tests, built the way
summary.py builds them (a summary over the per-query rows), so that every figure follows from the rows."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def row(qid: str, *, kind: str = "suite", rank: int | None = 1, passed: bool | None = None,
        margin: float | None = 0.05, returned: int = 6, text: str | None = None, in_suite: bool = True,
        hits: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One per-query row; `rank` is the first relevant chunk's (None: not returned)."""
    rr = 1.0 / rank if rank else 0.0
    relevant = [] if kind == "negative" else [f"rec-{qid}"]
    return {"query_id": qid, "text": text or f"query {qid}", "kind": kind, "in_suite": in_suite,
            "relevant": relevant, "passed": (rank == 1) if passed is None else passed, "rank": rank,
            "relevant_margin": None if kind == "negative" else margin, "returned": returned,
            "top1_relevant": rank == 1, "top1_pure": True, "text_score_nonzero": False,
            "top1_docs": [f"rec-{qid}" if rank == 1 else "rec-other"], "top1_score": 0.6,
            "top1_chunk": f"memory/{qid}.md:1-9" if rank == 1 else "memory/other.md:1-9",
            "hit@6": rank is not None and rank <= 6,
            "recall@6": None if kind == "negative" else float(rank is not None),
            "mrr@6": None if kind == "negative" else rr, "ndcg@6": None if kind == "negative" else rr,
            "_hits": hits}


def hits_for(qid: str, rank: int | None, n: int = 3) -> list[dict[str, Any]]:
    out = []
    for i in range(1, n + 1):
        relevant = rank == i
        doc = f"rec-{qid}" if relevant else f"rec-other{i}"
        out.append({"rank": i, "chunk": f"memory/{doc}.md:1-9", "path": f"memory/{doc}.md", "start_line": 1,
                    "end_line": 9, "score": 0.7 - i * 0.01, "docs": [doc],
                    "snippet": f"# {'the answer to ' + qid if relevant else 'something else ' + str(i)}\nbody"})
    return out


def results(rows: list[dict[str, Any]], *, max_results: int = 6, near_tie: float = 0.001,
            name: str = "run", preset: str = "p") -> dict[str, Any]:
    suite = [r for r in rows if r["kind"] == "suite" and r["in_suite"]]
    neg = [r for r in rows if r["kind"] == "negative"]

    def mean(key: str) -> float:
        values = [r[key] for r in suite if r[key] is not None]
        return sum(values) / len(values) if values else 0.0

    k = max_results
    summary = {
        "suite": {"queries": len(suite), "passed": sum(bool(r["passed"]) for r in suite),
                  f"recall@{k}": mean("recall@6"), f"mrr@{k}": mean("mrr@6"), f"ndcg@{k}": mean("ndcg@6"),
                  "near_ties": sum(r["relevant_margin"] is not None and abs(r["relevant_margin"]) < near_tie
                                   for r in suite), "near_tie": near_tie},
        "negative": {"queries": len(neg), "returned_anything": sum(r["returned"] > 0 for r in neg)},
        "latency_ms": {"retrieval": {"p50": 0.3, "p95": 0.5, "p99": 0.9}},
    }
    queries = {}
    for r in rows:
        clean = {key: v for key, v in r.items() if key != "_hits"}
        if k != 6:  # the row's metric columns carry the configured cut-off, as per_query.py writes them
            for m in ("recall", "mrr", "ndcg"):
                clean[f"{m}@{k}"] = clean.pop(f"{m}@6")
        queries[r["query_id"]] = clean
    hits = {r["query_id"]: r["_hits"] if r["_hits"] is not None else hits_for(r["query_id"], r["rank"])
            for r in rows}
    return {"name": name, "config": {"preset": preset, "name": name, "search": {"max_results": max_results}},
            "summary": summary, "queries": queries, "hits": hits}


def ablation(rounds: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"preset": "p", "rounds": rounds, "differences_from_seed": []}


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path
