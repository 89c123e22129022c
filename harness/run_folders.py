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


def _slug(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_.-]+", "-", name).strip("-.") or "run"


def default_output_dir(name: str, *inputs: str | Path | None) -> Path:
    """./harness-results/<name>-<hash of the inputs>/ (just <name> when nothing is hashed).  Paths among
    the inputs count by their absolute form, so the same file named from two folders is one input."""
    keys = [os.path.abspath(x) if isinstance(x, Path) else str(x) for x in inputs if x is not None]
    folder = _slug(name)
    if keys:
        folder += "-" + hashlib.sha256("\0".join(keys).encode("utf-8")).hexdigest()[:8]
    return Path.cwd() / RESULTS_FOLDER / folder
