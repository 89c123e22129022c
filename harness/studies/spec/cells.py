"""Cells and the one runner: a study expands into cells (a label and a resolved experiment
configuration each), and `run_cells` runs a list of them, in this process or on an executor.

    >>> from harness.studies.matrix import load_matrix, matrix_cells
    >>> cells = matrix_cells(load_matrix("experiments/tokenizers.toml"))
    >>> [c.label for c in cells]                        # '<run label> / <value label>', run by run
    >>> results = run_cells(cells)                      # one RunResult per cell, in the cells' order

In this process the cells share embedders (the model loads once): `embedders="same-table"` (a matrix)
gives a cell the embedder of an earlier cell whose [embedder] table is identical and builds a new one
otherwise; `embedders="one"` (a benchmark, an abstention study) lets the first cell's embedder serve
every cell, as those studies always have.  On an executor (`executor=`, harness.studies.executor) every
cell is a task and the embeddings are computed first, across the workers
(harness.studies.distributed.run_configs).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Sequence, TypeVar
from harness.pipeline import build_stages
from harness.studies.experiment import run_experiment

T = TypeVar("T")


@dataclass
class StudyCell:
    """One run of a study: what the report calls it, the configuration load_experiment resolved (opaque
    here), the labels the study's analysis groups it by (run label, value label, preset ...) and what
    else that analysis needs of the cell (e.g. the threshold an abstention run took out)."""

    label: str
    config: Any  # a harness.config.Experiment
    labels: tuple = ()
    extra: dict[str, Any] = field(default_factory=dict)


def _embedder_table(config: Any) -> str:
    return json.dumps(config.embedder.as_written(), sort_keys=True, default=str)


def run_cells(cells: Sequence[StudyCell], *, executor: Any = None, progress: bool = True,
              embedders: Literal["same-table", "one"] = "same-table", count_embeddings: bool = False,
              then: Callable[[StudyCell, Any], T] | None = None, cache: Any = None, embedder: Any = None) -> list[T]:
    """run_experiment of every cell, results in the cells' order.

    `then(cell, result)` turns each result into what the study keeps as soon as it is done (so a study of
    many large runs holds only its figures, and one that writes each run can write it then, on an
    executor in the order the runs finish); default: the RunResult itself.  `embedder`: an embedder
    already built, which the first cell uses (tests share one across studies).  `count_embeddings` records in
    each result's timings["embedding_cache"] the embedder's counters of that run alone (the embedder is
    shared, so its counters run on).  `executor`: None runs here; an Executor runs the cells as its tasks,
    after embedding what they need into `cache` (default: the user's; `embedders` and `count_embeddings`
    apply in this process only)."""
    keep = then if then is not None else (lambda cell, result: result)
    if executor is not None:
        from harness.studies.distributed import run_configs

        kept: dict[int, T] = {}

        def arrived(i: int, result: Any) -> None:
            kept[i] = keep(cells[i], result)

        run_configs([cell.config for cell in cells], executor, cache=cache, on_result=arrived)
        return [kept[i] for i in range(len(cells))]

    built: dict[str | None, Any] = {}  # the [embedder] table (canonical JSON; None: any) -> its embedder
    if embedder is not None and cells:
        built[_embedder_table(cells[0].config) if embedders == "same-table" else None] = embedder
    out = []
    for cell in cells:
        key = _embedder_table(cell.config) if embedders == "same-table" else None
        stages = build_stages(cell.config, embedder=built.get(key), progress=progress)
        built[key] = stages.embedder
        before = dict(stages.embedder.stats) if count_embeddings else {}
        result = run_experiment(cell.config, stages=stages)
        if count_embeddings:
            result.timings["embedding_cache"] = {k: v - before.get(k, 0) for k, v in stages.embedder.stats.items()}
        out.append(keep(cell, result))
    return out
