"""Command line: each command is a thin layer over a documented function of the library.

Errors: the harness's own errors (harness.errors.HarnessError: a wrong config, bad input data, a failed
embedding call, a broken memory cap) are printed as one line naming the file, line or key, exit code 2.
Anything else is a bug in the harness: it is reported as such (exit code 3), with its traceback under
`harness --debug ...`.

Imports: a command imports the library function it wraps when it is called, so `harness --version`, a run
and the gate load only what they use (tests/bench_startup.py's start-up targets).
"""
from __future__ import annotations

import atexit
import os
import sys
import threading

from harness.cli import docs, examples, judge, runs, studies, study, workspace  # noqa: F401  (each module adds its commands to `app`)
from harness.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    """The `harness` command: the app, then an exit without the interpreter's teardown."""
    try:
        app()
    except SystemExit as exc:
        exit_without_teardown(exc.code)
    exit_without_teardown(0)


def exit_without_teardown(code: object) -> None:
    """End the process once the command is done: output flushed and the atexit handlers run (temporary
    folders, Ray, multiprocessing), but not the interpreter's teardown of every module and object, which
    after a run (pandas, scipy, numpy and the run's frames) costs ~0.2 s of each command a CI job runs.
    Nothing the harness writes waits for it: files are closed and SQLite commits on each transaction.
    A thread still working (not a daemon), or an exit code that is not a number, exits the ordinary way."""
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if not (code is None or isinstance(code, int)) or any(not t.daemon for t in others):
        raise SystemExit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe (`harness stages | head`): Python's own exit reports it
        raise SystemExit(code) from None
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):  # what an atexit handler printed
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
