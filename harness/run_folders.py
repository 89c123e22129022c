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
from pathlib import Path

RESULTS_FOLDER = "harness-results"
MAX_NAME_CHARS = 80  # of a default folder's name (before its hash): an experiment name may be any length


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
    for name in ("results.json.tmp", "report.md.tmp", "report.html.tmp"):
        if (out_dir / name).is_file():
            (out_dir / name).unlink()
    if (out_dir / REPORT_PAGE).is_file():
        done.append(REPORT_PAGE)
    return done
