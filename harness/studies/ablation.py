"""The four-round ablation: experiments/round1..4.toml with one preset and one embedder, as cells
(one per round) run by the shared runner (harness.studies.spec.cells.run_cells); its analysis and
files are harness.reporting.markdown.write_ablation's."""
from __future__ import annotations

from typing import Any, Callable

from harness.config import Experiment, load_experiment
from harness.inputs.layout import project_path
from harness.studies.experiment import RunResult
from harness.studies.spec.cells import StudyCell, run_cells

ROUND_EXPERIMENTS = {r: f"experiments/round{r}.toml" for r in (1, 2, 3, 4)}


def ablation_configs(preset: str | None = None, overrides: dict[str, Any] | None = None) -> dict[int, Experiment]:
    """{round: configuration} of the four rounds with one preset and the same overrides."""
    return {r: load_experiment(project_path(path), preset=preset, **(overrides or {}))
            for r, path in ROUND_EXPERIMENTS.items()}


def ablation_cells(preset: str | None = None, overrides: dict[str, Any] | None = None) -> list[StudyCell]:
    """One cell per round, labelled by its configuration's name, labels (round,)."""
    return [StudyCell(config.name, config, (r,)) for r, config in ablation_configs(preset, overrides).items()]


def run_ablation(preset: str | None = None, *, overrides: dict[str, Any] | None = None,
                 on_round: Callable[[int, RunResult], None] | None = None, progress: bool = True,
                 embedder: Any = None, executor: Any = None, cache: Any = None) -> dict[int, RunResult]:
    """Run the four rounds (experiments/round1..4.toml) with one embedder, returning {round: result}.

    `overrides` update every round's experiment, table by table, e.g.
    {"fusion": {"vector_weight": 0.5, "text_weight": 0.5}} or {"embedder": {"name": "openai-compatible", ...}};
    `embedder` is an already built embedder object (tests share one across calls);
    `on_round(round_no, result)` is called as each round finishes, so finished rounds survive a later failure;
    `executor`: the rounds run as its tasks (harness.studies.executor), their texts embedded first into
    `cache` (default: the user's), on_round as each comes back.
    """
    def finished(cell: StudyCell, result: RunResult) -> RunResult:
        if on_round is not None:
            on_round(cell.labels[0], result)
        return result

    cells = ablation_cells(preset, overrides)
    results = run_cells(cells, executor=executor, progress=progress, embedders="one", embedder=embedder,
                        then=finished, cache=cache)
    return {cell.labels[0]: result for cell, result in zip(cells, results)}
