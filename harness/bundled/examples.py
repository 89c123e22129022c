"""`harness example NAME [DEST]`: a writable copy of an example the harness ships, so that every tutorial runs
from the installed wheel in an empty folder (no clone).

    workspace       DEST/datasets/example-workspace/                 the own-memory tutorial's workspace
    openclaw-home   DEST/datasets/example-openclaw-home/             the your-agent tutorial's OpenClaw installation
                    DEST/datasets/example-openclaw-home-labels/      and its grades file (`harness judge --import`)
    ci              DEST/ci/memory/experiment.toml, gate.toml        the CI gate's files, laid out as the workflow
                    DEST/ci/memory/workspace/, queries.yaml          expects them in a plugin's repository, with the
                    DEST/.github/workflows/memory-gate.yml           example workspace as a stand-in for yours
                    DEST/ci/memory-gate.sh                           (the workflow's shell twin)

The data sets land where a clone has them (`datasets/...`), so a tutorial's commands are the same in a clone and
outside one.  Nothing is overwritten: a file already there stops the copy before anything is written (exit 2),
unless `force`.
"""
from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from harness.bundled import bundled_dir
from harness.errors import ConfigError, OutputExistsError


class Part(NamedTuple):
    bundled: str  # a bundled folder (harness.bundled.SOURCES), or one file inside it: "ci/memory/gate.toml"
    dest: str  # where it goes under DEST
    skip: tuple[str, ...] = ()  # file names left out of a folder


EXAMPLES: dict[str, tuple[str, tuple[Part, ...]]] = {
    "workspace": ("the example OpenClaw workspace of the own-memory tutorial",
                  (Part("example-workspace", "datasets/example-workspace"),)),
    "openclaw-home": ("the example OpenClaw installation of the your-agent tutorial, and its grades file",
                      (Part("example-openclaw-home", "datasets/example-openclaw-home"),
                       Part("example-openclaw-home-labels", "datasets/example-openclaw-home-labels"))),
    "ci": ("a CI memory gate in a plugin's repository layout: experiment, rules, workflow, a stand-in workspace",
           (Part("ci/memory/experiment.toml", "ci/memory/experiment.toml"),
            Part("ci/memory/gate.toml", "ci/memory/gate.toml"),
            Part("example-workspace", "ci/memory/workspace", skip=("queries.yaml",)),
            Part("example-workspace/queries.yaml", "ci/memory/queries.yaml"),
            Part("ci/github-actions.yml", ".github/workflows/memory-gate.yml"),
            Part("ci/memory-gate.sh", "ci/memory-gate.sh"))),
}


def _source(bundled: str) -> Path:
    head, *rest = PurePosixPath(bundled).parts
    return bundled_dir(head).joinpath(*rest)


def example_files(name: str) -> list[tuple[Path, str]]:
    """(bundled file, destination relative to DEST) for every file of the example `name`."""
    if name not in EXAMPLES:
        raise ConfigError(f"no example {name!r}; one of {', '.join(EXAMPLES)}")
    files = []
    for part in EXAMPLES[name][1]:
        src = _source(part.bundled)
        if src.is_dir():
            for path in sorted(p for p in src.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
                if path.name not in part.skip:
                    files.append((path, (PurePosixPath(part.dest) / path.relative_to(src).as_posix()).as_posix()))
        else:
            files.append((src, part.dest))
    return files


def copy_example(name: str, dest: Path | str, *, force: bool = False) -> list[Path]:
    """Copy the example `name` under `dest`; returns the top-level paths written (one per part)."""
    dest = Path(dest)
    files = example_files(name)
    existing = [rel for _, rel in files if (dest / rel).exists()]
    if existing and not force:
        raise OutputExistsError(f"{dest / existing[0]} already exists" + (f" (and {len(existing) - 1} more of the "
                                f"example's files)" if len(existing) > 1 else "") + "; pass --force to replace them")
    for src, rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        if src.stat().st_mode & 0o111:
            target.chmod(target.stat().st_mode | 0o111)
    return [dest / part.dest for part in EXAMPLES[name][1]]
