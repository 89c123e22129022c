"""Whole commands timed (`make timing`): the measurement; harness.reporting.timings records it."""
from __future__ import annotations

import os
import platform
import resource
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from typing import Any, Sequence


def measure(command: Sequence[str], *, cold: bool = False) -> dict[str, Any]:
    """Run `command` and return its measurement (raises CalledProcessError when it fails)."""
    env = dict(os.environ)
    scratch = tempfile.TemporaryDirectory(prefix="harness-cold-cache-") if cold else None
    if scratch is not None:
        env["HARNESS_CACHE_DIR"] = scratch.name
    before_load = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        subprocess.run(list(command), env=env, check=True)
    finally:
        if scratch is not None:
            scratch.cleanup()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"command": " ".join(command), "cache": "cold (empty)" if cold else "warm", "wall_s": round(wall, 1),
            "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
            "cpu_count": os.cpu_count(), "load_before": [round(x, 2) for x in before_load],
            "load_after": [round(x, 2) for x in os.getloadavg()], "machine": platform.machine(),
            "commit": current_commit(), "date": datetime.now(timezone.utc).date().isoformat()}


def current_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
