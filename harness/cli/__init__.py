"""Command line: each command is a thin layer over a documented function of the library.

Errors: the harness's own errors (harness.errors.HarnessError: a wrong config, bad input data, a failed
embedding call, a broken memory cap) are printed as one line naming the file, line or key, exit code 2.
Anything else is a bug in the harness: it is reported as such (exit code 3), with its traceback under
`harness --debug ...`.
"""
from __future__ import annotations

import sys

from harness.cli import judge, runs, studies, study, workspace  # noqa: F401  (each module adds its commands to `app`)
from harness.cli.common import app

__all__ = ["app", "main"]


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
