"""`harness study FILE`: any study file of experiments/, run by its kind (harness.studies.spec)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from harness.cli.common import EXECUTOR_HELP, command


@command()
def study(file: Path = typer.Argument(..., help="any study file: an experiment, matrix, benchmark, abstention, "
                                       "lossless, expansion or language-pairs spec, or a sweep grid"),
          out: Optional[Path] = typer.Option(None, help="output folder (default: the kind's command's)"),
          preset: Optional[str] = typer.Option(None, help="override the preset (experiment, grid, matrix and "
                                               "benchmark files)"),
          executor: str = typer.Option("local", help=EXECUTOR_HELP + " (matrix and grid files)"),
          experiment: Optional[Path] = typer.Option(None, help="a sweep grid's experiment (required for a grid: "
                                                    "`harness sweep EXPERIMENT --grid FILE`)"),
          dry_run: bool = typer.Option(False, "--dry-run", help="print the file's kind and cells (every "
                                       "configuration resolved), run nothing")) -> None:
    """Run any study file by its kind, as the kind's own command does (same output): an experiment as
    `harness run`, a matrix as `harness matrix`, a benchmark, abstention, lossless, expansion or
    language-pairs spec as its command, a sweep grid as `harness sweep EXPERIMENT --grid FILE`.  The kind is
    the file's `kind` key, else read from its tables (docs/reference/studies.md)."""
    from harness.studies.plan import plan

    if dry_run:
        planned = plan(file, experiment=experiment, preset=preset)
        typer.echo(f"{file}: {planned.kind} (harness {planned.command}), {len(planned.cells)} "
                   f"cell{'' if len(planned.cells) == 1 else 's'}")
        for cell in planned.cells:
            typer.echo(f"  {cell.label}")
        for note in planned.notes:
            typer.echo(f"  ({note})")
        return
    run_study(file, out=out, preset=preset, executor=executor, experiment=experiment)


def run_study(path: Path | str, *, out: Path | str | None = None, preset: str | None = None,
              executor: str = "local", experiment: Path | str | None = None) -> str:
    """Run a study file by its kind, exactly as the kind's own command runs it (the same function, with
    these options and the command's defaults for the rest): it writes what `harness <command> FILE`
    writes and prints what it prints.  Returns the kind.  `preset` applies to experiment, grid, matrix
    and benchmark files; `executor` ("local", "ray", "ray://HOST:PORT") to matrix and grid files;
    `experiment` is the experiment a grid sweeps (required for a grid, refused otherwise)."""
    from harness.inputs.layout import project_path
    from harness.studies.plan import check_options
    from harness.studies.spec import kind_of_file

    given = Path(path)
    kind = kind_of_file(given)
    check_options(kind, project_path(given), preset=preset, executor=executor, experiment=experiment)
    out = Path(out) if out is not None else None
    command, arguments = _command_call(kind, given, out=out, preset=preset, executor=executor,
                                       experiment=Path(experiment) if experiment is not None else None)
    _undecorated(command)(**arguments)
    return kind


def _command_call(kind: str, path: Path, *, out: Path | None, preset: str | None, executor: str,
                  experiment: Path | None) -> tuple[Any, dict[str, Any]]:
    """The kind's command function (without the CLI's error handling: a HarnessError is raised as itself)
    and every one of its arguments: these options, the command's defaults for the rest."""
    from harness.cli import (  # the kinds' own commands: a study runs exactly as its command
        runs,
        studies,
    )

    if kind == "experiment":
        return runs.run, dict(experiment=path, preset=preset, out=out, profile=None, set_=None, system=None)
    if kind == "grid":
        return studies.sweep, dict(experiment=experiment, grid=path, preset=preset, out=out, set_=None, holdout=None,
                                   folds=5, objective="pass", abstention_weight=0.5, executor=executor)
    if kind == "matrix":
        return studies.matrix, dict(spec=path, preset=preset, run=None, out=out, redraw=False, executor=executor)
    if kind == "benchmark":
        return studies.benchmark, dict(spec=path, preset=[preset] if preset else None, run=None, out=out, redraw=False)
    command = {"abstention": studies.abstention, "lossless": studies.lossless, "expansion": studies.expansion,
               "language-pairs": studies.language_pairs}[kind]
    return command, dict(spec=path, out=out, redraw=False)


def _undecorated(command: Any) -> Any:
    return getattr(command, "__wrapped__", command)
