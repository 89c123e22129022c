"""The dry run of a study file: its kind, the command that runs it and its cells, every configuration
resolved and nothing run (`harness study FILE --dry-run`).  Kept apart from harness.studies.spec, which
every study's loader imports: this module imports the studies."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.studies.spec import COMMANDS, EXECUTOR_KINDS, PRESET_KINDS, kind_of


@dataclass
class StudyPlan:
    """What a study file would run, without running it: its kind, the command that runs it, the loaded
    spec (as the kind's loader returns it), its cells, and what else it does besides running cells."""

    path: Path
    kind: str
    command: str
    spec: Any
    cells: list[Any]
    notes: list[str] = field(default_factory=list)


def plan(path: Path | str, *, experiment: Path | str | None = None, preset: str | None = None) -> StudyPlan:
    """Load a study file by its kind and expand it into cells (each configuration resolved, nothing
    run): what `harness study FILE --dry-run` prints.  `experiment`: the experiment a grid sweeps."""
    from harness.config import load_experiment, load_toml
    from harness.inputs.layout import project_path
    from harness.studies.spec.cells import StudyCell

    path = project_path(path)
    kind = kind_of(load_toml(path, "study file"), path)
    check_options(kind, path, preset=preset, executor="local", experiment=experiment)
    notes: list[str] = []
    if kind == "experiment":
        config = load_experiment(path, preset=preset)
        spec, cells = config, [StudyCell(config.name, config)]
    elif kind == "matrix":
        from harness.studies.matrix import load_matrix, matrix_cells

        spec = load_matrix(path)
        cells = matrix_cells(spec, preset=preset)
    elif kind == "benchmark":
        from harness.studies.benchmark import benchmark_cells, load_benchmark

        spec = load_benchmark(path)
        cells = benchmark_cells(spec, presets=[preset] if preset else None)
    elif kind == "abstention":
        from harness.studies.abstention import abstention_cells, load_abstention_spec

        spec = load_abstention_spec(path)
        cells = abstention_cells(spec)
    elif kind == "expansion":
        from harness.studies.expansion import expansion_cells, load_expansion_spec

        spec = load_expansion_spec(path)
        cells = expansion_cells(spec)
    elif kind == "lossless":
        from harness.studies.lossless import (
            context_settings,
            load_lossless,
            markdown_cells,
        )

        spec = load_lossless(path)
        cells = markdown_cells(spec)
        notes.append(f"lossless-claw itself: lcm_grep and {len(context_settings(spec))} compaction settings")
    elif kind == "language-pairs":
        from harness.studies.language_pairs import load_pairs_spec

        spec = load_pairs_spec(path)
        cells = []
        notes.append("runs nothing: it reads what its sources wrote (" +
                     ", ".join(source["file"] for source in spec["sources"]) + ")")
    else:  # a grid: the sweep searches the experiment's legs once and scores every setting (its fast path)
        from harness.studies.spec.models import weight_values
        from harness.studies.sweep import load_grid

        config = load_experiment(project_path(experiment), preset=preset)
        spec = load_grid(path)
        cells = [StudyCell(config.name, config)]
        table = load_toml(path, "grid file")["grid"]
        sizes = [f"{key} ({len(values) if key in ('fusion', 'tokenizer') else len(weight_values(values))})"
                 for key, values in table.items() if key != "fusion_params"]
        notes.append(f"sweeps {config.name} over the grid's {', '.join(sizes)}, the configured value of each "
                     "included")
    return StudyPlan(path, kind, COMMANDS[kind], spec, cells, notes)


def check_options(kind: str, path: Path, *, preset: Any, executor: str, experiment: Any) -> None:
    from harness.errors import ConfigError

    if kind == "grid" and experiment is None:
        raise ConfigError(f"{path} is a sweep grid: give the experiment it sweeps, e.g. `harness study {path} "
                          "--experiment experiments/round4.toml` (= harness sweep EXPERIMENT --grid FILE)")
    if kind != "grid" and experiment is not None:
        raise ConfigError(f"--experiment: {path} is a {kind} file, which names its own experiments; "
                          "--experiment is for a sweep grid")
    if preset is not None and kind not in PRESET_KINDS:
        raise ConfigError(f"--preset: {path} is a {kind} file, which names its presets itself (--preset applies "
                          f"to {', '.join(PRESET_KINDS)} files)")
    if executor not in (None, "", "local") and kind not in EXECUTOR_KINDS:
        raise ConfigError(f"--executor: {path} is a {kind} file, which runs in this process (--executor applies "
                          f"to {', '.join(EXECUTOR_KINDS)} files)")
