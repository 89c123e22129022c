"""Where a command writes when it is given no `--out`: a folder of its own under ./harness-results/.

User runs never write into the harness's repository (or its installed package): the committed reports/
are written only by the make targets, which pass `--out reports/...` explicitly.  A folder's name is the
experiment's name plus a short hash of the experiment file's absolute path and the preset, so two
workspaces with the same folder name (OpenClaw's default is literally `workspace`) or the same
experiment with two presets never share a folder, while running the same experiment again updates
its folder:

    >>> default_output_dir("ws", "/home/me/evals/mine/experiment.toml", "openclaw-2026.08")
    PosixPath('/current/dir/harness-results/ws-3f9a1c2e')
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from harness.errors import ConfigError
from harness.text_files import output_problem

RESULTS_FOLDER = "harness-results"
MAX_NAME_CHARS = 80  # of a default folder's name (before its hash): an experiment name may be any length


def check_output(path: Path | str | None, *, folder: bool, option: str = "--out") -> None:
    """Before any work starts: a path the command will write (a folder, or a file) must be writable, so a
    run never embeds for minutes and then fails to write its results."""
    if path is None:
        return

    problem = output_problem(path, folder=folder, option=option)
    if problem is not None:
        raise ConfigError(problem)


def _slug(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_.-]+", "-", name).strip("-.") or "run"


def default_output_dir(name: str, *inputs: str | Path | None) -> Path:
    """./harness-results/<name>-<hash of the inputs>/ (just <name> when nothing is hashed).  Paths among
    the inputs count by their absolute form, so the same file named from two folders is one input."""
    keys = [os.path.abspath(x) if isinstance(x, Path) else str(x) for x in inputs if x is not None]
    folder = _slug(name)[:MAX_NAME_CHARS].rstrip("-.") or "run"  # a name stays far below the 255-byte limit
    if keys:
        folder += "-" + hashlib.sha256("\0".join(keys).encode("utf-8")).hexdigest()[:8]
    return Path.cwd() / RESULTS_FOLDER / folder


# Files a later command derives from a run's results.json (`harness export` without --out): stale once a
# rerun writes a new results.json into the same folder.
EXPORT_FOLDER = "export"
EXPORT_FILES = ("chunk.run", "chunk.qrels", "chunk-run.json", "chunk-qrels.json",
                "document.run", "document.qrels", "document-run.json", "document-qrels.json")
REPORT_PAGE = "report.html"


def clear_previous_run(out_dir: Path) -> list[str]:
    """Before a run writes results.json into `out_dir`: remove what was derived from the previous results
    there (the export/ files `harness export` writes, half-written *.tmp files of an interrupted run), so
    nothing in the folder describes another run.  report.html is not removed here: the caller redraws it
    (returned as "report.html" when one was there).  Files the harness did not write are left alone.
    Returns what it did, for the console."""
    done: list[str] = []
    export = out_dir / EXPORT_FOLDER
    if export.is_dir():
        removed = [name for name in EXPORT_FILES if (export / name).is_file()]
        for name in removed:
            (export / name).unlink()
        if removed:
            done.append(f"removed {export}/ ({len(removed)} files exported from the previous results; run "
                        "`harness export` again)")
        try:
            export.rmdir()
        except OSError:
            pass  # other files of the user's are in it
    for name in ("results.json.tmp", "report.md.tmp", "report.html.tmp", "results.json.previous"):
        if (out_dir / name).is_file():
            (out_dir / name).unlink()
    if (out_dir / REPORT_PAGE).is_file():
        done.append(REPORT_PAGE)
    return done


@contextmanager
def published(out_dir: Path | str, marker: str) -> Iterator[Path]:
    """Write a results folder so that it never looks complete before it is: the files are written into
    a hidden staging folder beside it (.<name>.partial-<pid>), then moved in, `marker` (the folder's main
    JSON: results.json, sweep.json ...) last.  A run killed while writing leaves the staging folder (and,
    in an existing folder, its previous marker as <marker>.previous), never a folder whose marker is there
    beside files of another run.

        >>> with published(out_dir, "results.json") as folder:
        ...     write_round(result, folder, seed)
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.parent.glob(f".{out_dir.name}.partial-*"):
        pid = stale.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)  # what a killed run was writing
    staging = out_dir.parent / f".{out_dir.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        yield staging
        if not out_dir.exists():
            os.rename(staging, out_dir)  # one step: the folder appears complete or not at all
            return
        previous = out_dir / f"{marker}.previous"
        if (out_dir / marker).exists():
            os.replace(out_dir / marker, previous)  # from here the folder does not look complete
        for item in sorted(staging.iterdir()):
            if item.name != marker:
                target = out_dir / item.name
                if target.is_dir() and item.is_dir():
                    shutil.rmtree(target)
                os.replace(item, target)
        if (staging / marker).exists():
            os.replace(staging / marker, out_dir / marker)
        previous.unlink(missing_ok=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
