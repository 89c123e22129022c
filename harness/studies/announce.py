"""Long work announces itself: a study that would run (or expand) more cells than a bound prints how many and an
estimate, and goes on only when told to (`--yes` on the command, or HARNESS_CONFIRM_ABOVE=N raising the bound).

The count is taken from the file before any cell is expanded (expanding one resolves a whole configuration, tens
of milliseconds each), so a matrix of a million cells is refused in a moment with its size, not after hours.
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from harness.errors import ConfigError

BOUND_ENV = "HARNESS_CONFIRM_ABOVE"
DEFAULT_BOUND = 1000  # cells: the largest shipped study has a few hundred
_confirmed = {"yes": False}


def bound() -> int:
    raw = os.environ.get(BOUND_ENV, "").strip()
    if not raw:
        return DEFAULT_BOUND
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{BOUND_ENV}={raw!r}: must be a whole number of cells (the size above which a study "
                          "asks for --yes)") from None
    if value < 0:
        raise ConfigError(f"{BOUND_ENV}={raw!r}: must be 0 or more")
    return value


@contextmanager
def confirmed(yes: bool) -> Iterator[None]:
    """Within it, work past the bound goes on (the command's --yes)."""
    before = _confirmed["yes"]
    _confirmed["yes"] = before or yes
    try:
        yield
    finally:
        _confirmed["yes"] = before


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} minutes"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} hours"
    return f"{seconds / 86400:,.1f} days"


def announce(count: int, what: str, source: str, *, sample: Callable[[], object] | None = None) -> None:
    """Before `count` cells of `source` are expanded or run: past the bound, print the count and an estimate (the
    time `sample()`, one cell's expansion, takes, times the count: a floor, the runs themselves come on top) and,
    unless confirmed, stop with a one-line error saying how to go on."""
    limit = bound()
    if count <= limit:
        return
    estimate = ""
    if sample is not None:
        start = time.perf_counter()
        sample()
        each = time.perf_counter() - start
        estimate = (f"; resolving them alone takes about {_duration(each * count)} ({each * 1000:.0f} ms a cell here), "
                    "each run comes on top")
    print(f"{source}: {count:,} {what}{estimate}", file=sys.stderr, flush=True)
    if not _confirmed["yes"]:
        raise ConfigError(f"{source}: {count:,} {what}, more than {limit:,}: pass --yes to run them all (or set "
                          f"{BOUND_ENV} to a higher bound), or make the study smaller")
