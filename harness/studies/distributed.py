"""The studies' loops on an executor: matrix cells, ablation rounds, sweep settings.

    >>> from harness.studies.matrix import run_matrix
    >>> with make_executor("ray") as ex:
    ...     cells = run_matrix(load_matrix("experiments/chunkers.toml"), executor=ex)   # as it returns locally

Runs (matrix cells, ablation rounds): every cell is a full `run_experiment` of its configuration.  The
driver first embeds, with `fill_cache`, every chunk and query that any cell needs (spread over the
workers batch by batch, written by the driver alone), then ships each cell the vectors it needs with
the cell and runs the cells on the workers.  Why embed first rather than let each cell embed its own:
cells of one data set share most texts (a tokenizer matrix embeds the same chunks in every cell), so
cells embedding in parallel would compute the same vectors several times, and batches balance across
workers far better than whole cells do.  Why ship the vectors rather than let workers read the cache
file: the cluster then needs no shared filesystem for the cache, and SQLite over a network filesystem
is not safe to share anyway.  A vector a cell still had to compute (none, normally) comes back with
its result and the driver stores it.

Sweep settings ("search once per index, fuse on the workers"): the driver computes the legs once (an
index per tokenizer) and turns them into query x candidate arrays (one `ScoringState`), which travel
once (`ray.put`); each worker scores a contiguous slice of the settings with the fast scorer
(harness.evaluation.fast_scoring) and the slices come back in the settings' order, so the selection,
its test and the cross-validation read exactly the arrays a local sweep computes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from harness.config import Experiment
from harness.pipeline import build_stages
from harness.stages.embedders import EmbeddingCache, text_sha256
from harness.studies.embed import (
    DEFAULT_BATCH_SIZE,
    EmbeddingWork,
    embedder_of_this_process,
    embedding_work,
    fill_cache,
)
from harness.studies.executor import Executor
from harness.studies.experiment import RunResult, run_experiment
from harness.studies.sweep_scoring import score_on_executor as score_settings  # noqa: F401  (docs, tests)
from harness.studies.sweep_scoring import scoring_state

# --- runs: matrix cells and ablation rounds ---------------------------------------------------------


class ShippedVectors:
    """Stands in for the EmbeddingCache on a worker: the vectors the driver sent with the cell, plus
    any the worker computes, which are kept apart (`computed`) for the driver to store."""

    path = "the driver's cache (this worker holds the vectors it was sent)"

    def __init__(self, vectors: dict[tuple[str, str], dict[str, np.ndarray]]):
        self.vectors = vectors
        self.computed: list[tuple[str, str, str, np.ndarray]] = []
        self.token_counts: dict[tuple[str, str], int] = {}

    def get_many(self, model: str, role: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        have = self.vectors.get((model, role), {})
        return {s: have[s] for s in shas if s in have}

    def put_many(self, model: str, role: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        for sha, vec in items:
            vec = np.ascontiguousarray(vec, dtype=np.float32)
            self.vectors.setdefault((model, role), {})[sha] = vec
            self.computed.append((model, role, sha, vec))

    # token counts (the chunk statistics') are not shipped: a worker counts them and keeps them for its cell
    def get_token_count(self, model: str, sha: str) -> int | None:
        return self.token_counts.get((model, sha))

    def put_token_count(self, model: str, sha: str, tokens: int) -> None:
        self.token_counts[(model, sha)] = tokens


@dataclass
class Cell:
    config: Experiment
    vectors: dict[tuple[str, str], dict[str, np.ndarray]]


def run_cell(cell: Cell) -> tuple[RunResult, list[tuple[str, str, str, np.ndarray]]]:
    """On a worker: the full run of one configuration, and the vectors it had to compute."""
    cache = ShippedVectors(cell.vectors)
    stages = build_stages(cell.config, cache=cache, embedder=embedder_of_this_process(cell.config.embedder.as_written()),
                          progress=False)
    return run_experiment(cell.config, stages=stages, progress=False), cache.computed


def _vectors_for(work: EmbeddingWork, cache: EmbeddingCache) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    return {(work.model_id, role): cache.get_many(work.model_id, role, [text_sha256(t) for t in texts])
            for role, texts in work.texts.items()}


def run_configs(configs: Sequence[Experiment], executor: Executor, *, cache: EmbeddingCache | None = None,
                batch_size: int = DEFAULT_BATCH_SIZE,
                on_result: Callable[[int, RunResult], None] | None = None) -> list[RunResult]:
    """run_experiment of every configuration on the executor, results in the configurations' order.

    `on_result(i, result)` is called as each finishes (in any order), so finished runs can be written
    while others are still running."""
    cache = cache if cache is not None else EmbeddingCache()
    works = [embedding_work(c) for c in configs]
    fill_cache(configs, executor=executor, cache=cache, batch_size=batch_size, works=works)

    def cells() -> Iterator[Cell]:  # read lazily: only the cells in flight hold their vectors
        for config, work in zip(configs, works):
            yield Cell(config, _vectors_for(work, cache))

    results: dict[int, RunResult] = {}
    for i, (result, computed) in executor.as_completed(run_cell, cells(), isolate=True):
        for model, role, sha, vec in computed:
            cache.put_many(model, role, [(sha, vec)])
        results[i] = result
        if on_result is not None:
            on_result(i, result)
    return [results[i] for i in range(len(configs))]


# --- sweeps: legs searched once on the driver, settings fused and scored on the workers -------------


def sweep_state(legs: Any, settings: Sequence[Any], cutoffs: Sequence[int]) -> Any:
    """What every worker of a sweep needs (harness.studies.sweep_scoring.ScoringState): the legs of each
    tokenizer as arrays, and the searched legs themselves only when some setting needs the pipeline's
    stages (post-processing besides min_score, a fusion the fast scorer does not know)."""
    return scoring_state(settings, legs, cutoffs)
