"""The dry run of a study file: its kind, the command that runs it and its cells, every configuration
resolved and nothing run (`harness study FILE --dry-run`), and the configurations `harness embed` and
`harness cache-key` read; both asked of the file's kind (harness.study_kinds).  Kept apart from
harness.studies.spec, which every study's loader imports: the kinds it asks import the studies."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.studies.spec import kind_of, study_kind
from harness.config import load_toml
from harness.inputs.layout import project_path
from harness.errors import ConfigError
from harness.studies.spec import STUDY_KINDS


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
    """Load a study file as its declared kind and expand it into cells (each configuration resolved,
    nothing run; StudyKind.plan): what `harness study FILE --dry-run` prints.  `experiment`: the
    experiment a grid sweeps."""
    path = project_path(path)
    kind = study_kind(kind_of(load_toml(path, "study file"), path))
    check_options(kind, path, preset=preset, executor="local", experiment=experiment)
    spec, cells, notes = kind.plan(path, preset=preset, experiment=experiment)
    return StudyPlan(path, kind.name, kind.command, spec, cells, notes)


def configs_of(path: Path | str, *, preset: str | None = None, **overrides: Any) -> list[Any]:
    """The configurations a study file runs, with the --set overrides applied to each: what `harness
    embed` and `harness cache-key` read, as the file's kind gives them (StudyKind.configs: its cells'
    configurations; a language-pairs study's are those of the studies its sources name).  --preset
    replaces the presets a file names."""
    path = project_path(path)
    kind = study_kind(kind_of(load_toml(path, "study file"), path))
    return kind.configs(path, preset=preset, overrides=overrides)


def check_options(kind: Any, path: Path, *, preset: Any, executor: str, experiment: Any) -> None:
    """Refuse an option of `harness study` that the file's kind (a StudyKind) does not take."""
    def taking(option: str) -> str:
        return ", ".join(name for name in STUDY_KINDS.registered() if getattr(STUDY_KINDS.get(name), option))

    if kind.takes_experiment and experiment is None:
        raise ConfigError(f"{path} is a sweep grid: give the experiment it sweeps, e.g. `harness study {path} "
                          "--experiment experiments/round4.toml` (= harness sweep EXPERIMENT --grid FILE)")
    if not kind.takes_experiment and experiment is not None:
        raise ConfigError(f"--experiment: {path} is a {kind.name} file, which names its own experiments; "
                          "--experiment is for a sweep grid")
    if preset is not None and not kind.takes_preset:
        raise ConfigError(f"--preset: {path} is a {kind.name} file, which names its presets itself (--preset applies "
                          f"to {taking('takes_preset')} files)")
    if executor not in (None, "", "local") and not kind.takes_executor:
        raise ConfigError(f"--executor: {path} is a {kind.name} file, which runs in this process (--executor applies "
                          f"to {taking('takes_executor')} files)")
