"""`harness study FILE`: any study file of experiments/, run by its declared kind (harness.study.run;
the dry run: harness.studies.plan)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import EXECUTOR_HELP, command


@command()
def study(file: Path = typer.Argument(..., help="any study file: an experiment, matrix, benchmark, abstention, "
                                       "lossless, expansion or language-pairs spec, a sweep grid, or a "
                                       "plugin's kind"),
          out: Optional[Path] = typer.Option(None, help="output folder (default: the kind's command's)"),
          preset: Optional[str] = typer.Option(None, help="override the preset (experiment, grid, matrix and "
                                               "benchmark files)"),
          executor: str = typer.Option("local", help=EXECUTOR_HELP + " (matrix and grid files)"),
          experiment: Optional[Path] = typer.Option(None, help="a sweep grid's experiment (required for a grid: "
                                                    "`harness sweep EXPERIMENT --grid FILE`)"),
          dry_run: bool = typer.Option(False, "--dry-run", help="print the file's kind and cells (every "
                                       "configuration resolved), run nothing"),
          yes: bool = typer.Option(False, "--yes", help="go on past the size bound (more than 1,000 cells, or "
                                   "HARNESS_CONFIRM_ABOVE) after the count and estimate are printed")) -> None:
    """Run any study file by its kind, as the kind's own command does (same output): an experiment as
    `harness run`, a matrix as `harness matrix`, a benchmark, abstention, lossless, expansion or
    language-pairs spec as its command, a sweep grid as `harness sweep EXPERIMENT --grid FILE`, a plugin's kind
    as it says.  The kind is the file's `kind` key (a file without one is an experiment; `harness docs
    studies`)."""
    from harness.studies.announce import confirmed

    with confirmed(yes):
        _study(file, out, preset, executor, experiment, dry_run)


def _study(file: Path, out: Optional[Path], preset: Optional[str], executor: str, experiment: Optional[Path],
           dry_run: bool) -> None:
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
    from harness.cli.common import echo_study
    from harness.study import run

    echo_study(run(file, out=out, preset=preset, executor=executor, experiment=experiment))
