"""`harness docs`: where the documentation is, wherever the harness was installed from.

The README travels with the package (it is the package's description in its installed metadata), so
`harness docs readme` prints it after a wheel install too.  The guides (docs/: tutorials, how-to, reference,
findings) are files of the repository: in a checkout (or an editable install) `harness docs` lists them with
their paths and `harness docs PAGE` prints one; from a wheel it says they are in a clone of the repository.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import command
from harness.errors import ConfigError


def docs_folder() -> Path | None:
    """The repository's docs/ when the harness runs from a checkout or an editable install, else None."""
    from harness.bundled import REPOSITORY

    folder = REPOSITORY / "docs"
    return folder if (folder / "index.md").is_file() and (REPOSITORY / "pyproject.toml").is_file() else None


def readme_text() -> tuple[str, str]:
    """(where it was read, the README's Markdown): the checkout's file, else the installed package's metadata."""
    from harness.bundled import REPOSITORY

    path = REPOSITORY / "README.md"
    if docs_folder() is not None and path.is_file():
        return str(path), path.read_text(encoding="utf-8")
    from importlib import metadata

    try:
        text = metadata.metadata("harness").get_payload() or metadata.metadata("harness").get("Description", "")
    except metadata.PackageNotFoundError:
        text = ""
    if not text:
        raise ConfigError("the README is not installed with this harness (no package metadata); it is README.md in "
                          "the repository")
    return "the installed package's metadata", str(text)


def pages(folder: Path) -> dict[str, Path]:
    """The pages by name: 'tutorials/your-agent' (and its bare stem when that is unique) -> the file."""
    out: dict[str, Path] = {}
    stems: dict[str, list[Path]] = {}
    for path in sorted(folder.rglob("*.md")):
        rel = path.relative_to(folder).with_suffix("").as_posix()
        if rel.startswith("src/"):
            continue
        out[rel] = path
        stems.setdefault(path.stem, []).append(path)
    for stem, found in stems.items():
        if len(found) == 1:
            out.setdefault(stem, found[0])
    return out


@command()
def docs(page: Optional[str] = typer.Argument(None, help="a page to print: readme, or a guide's name (e.g. "
                                                          "tutorials/your-agent, or your-agent); none: list them")) -> None:
    """Where the documentation is: the README (`harness docs readme` prints it, installed with the package) and
    the guides (tutorials, how-to, reference, findings) with their paths; `harness docs PAGE` prints one."""
    try:
        _docs(page)
    except BrokenPipeError:  # `harness docs readme | head`: the reader has what it wanted
        import os
        import sys

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _docs(page: Optional[str]) -> None:
    folder = docs_folder()
    if page is not None and page.strip().lower() in ("readme", "readme.md"):
        _, text = readme_text()
        typer.echo(text.rstrip("\n"))
        return
    if page is None:
        where, _ = readme_text()
        typer.echo(f"README: {where} (`harness docs readme` prints it)")
        if folder is None:
            typer.echo("guides (tutorials, how-to, reference, findings): docs/ in the harness's repository, which a "
                       "wheel does not install; a clone of the repository has them. Every command documents itself: "
                       "`harness COMMAND --help`.")
            return
        typer.echo(f"guides: {folder} (start at {folder / 'index.md'})")
        for name, path in pages(folder).items():
            if "/" in name or path.parent == folder:
                typer.echo(f"  {name:<34} {path}")
        return
    if folder is None:
        raise ConfigError(f"no page {page!r} here: the guides are docs/ in the harness's repository, which a wheel "
                          "does not install (`harness docs readme` prints the README)")
    found = pages(folder)
    name = page.strip().removesuffix(".md").removeprefix("docs/")
    if name not in found:
        known = sorted(n for n in found if "/" in n or found[n].parent == folder)
        raise ConfigError(f"no page {page!r}; the pages: {', '.join(known)} (and readme)")
    typer.echo(found[name].read_text(encoding="utf-8").rstrip("\n"))
