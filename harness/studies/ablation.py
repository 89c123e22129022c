"""The four-round ablation: experiments/round1..4.toml with one preset and one embedder."""
from __future__ import annotations

from typing import Any

from harness.config import Experiment, load_experiment
from harness.inputs.layout import project_path
from harness.pipeline import build_stages
from harness.studies.experiment import RunResult, run_experiment

ROUND_EXPERIMENTS = {r: f"experiments/round{r}.toml" for r in (1, 2, 3, 4)}


def ablation_configs(preset: str | None = None, overrides: dict[str, Any] | None = None) -> dict[int, Experiment]:
    """{round: configuration} of the four rounds with one preset and the same overrides."""
    return {r: load_experiment(project_path(path), preset=preset, **(overrides or {}))
            for r, path in ROUND_EXPERIMENTS.items()}


def run_ablation(preset: str | None = None, *, overrides: dict[str, Any] | None = None, on_round: Any = None,
                 progress: bool = True, embedder: Any = None) -> dict[int, RunResult]:
    """Run the four rounds (experiments/round1..4.toml) with one embedder, returning {round: result}.

    `overrides` update every round's experiment, table by table, e.g.
    {"fusion": {"vector_weight": 0.5, "text_weight": 0.5}} or {"embedder": {"name": "openai-compatible", ...}};
    `embedder` is an already built embedder object (tests share one across calls);
    `on_round(round_no, result)` is called as each round finishes, so finished rounds survive a later failure.
    """
    results: dict[int, RunResult] = {}
    for r, config in ablation_configs(preset, overrides).items():
        stages = build_stages(config, embedder=embedder, progress=progress)
        embedder = stages.embedder  # the model is loaded once for all rounds
        results[r] = run_experiment(config, stages=stages)
        if on_round is not None:
            on_round(r, results[r])
    return results
