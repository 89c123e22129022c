"""`harness example NAME [DEST]`: copy an example the wheel ships (harness.bundled.examples) into a folder."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from harness.bundled.examples import EXAMPLES
from harness.cli.common import command

_NAMES = "; ".join(f"{name}: {about}" for name, (about, _) in EXAMPLES.items())


@command()
def example(name: Optional[str] = typer.Argument(None, help=f"which example ({_NAMES}); none: list them"),
            dest: Path = typer.Argument(Path("."), help="folder to copy it into (data sets go to DEST/datasets/, "
                                                        "as in a clone of the harness)"),
            force: bool = typer.Option(False, help="replace files of the example already there")) -> None:
    """Copy an example the harness ships (a workspace, an OpenClaw installation with its grades, a CI gate) into
    a folder, so that the tutorials run from the installed wheel, no clone needed."""
    from harness.bundled.examples import copy_example, example_files

    if name is None:
        for key, (about, _) in EXAMPLES.items():
            typer.echo(f"{key:14s} {about}")
        return
    written = copy_example(name, dest, force=force)
    typer.echo(f"copied {len(example_files(name))} files of the example {name!r}:")
    for path in written:
        typer.echo(f"  {path}")
