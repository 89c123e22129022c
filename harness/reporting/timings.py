"""Measured durations of whole commands, committed so the docs can quote them (`make timing`).

    python -m harness.reporting.timings --label "make locomo (warm)" -- make locomo
    python -m harness.reporting.timings --label "make round4 (cold)" --cold -- make round4

Runs the command, then records in reports/timings/timings.json (one entry per label, replaced when measured
again): the wall and CPU time of the command and its children, whether the embedding cache started empty
(--cold points HARNESS_CACHE_DIR at a fresh folder for the command), the machine's core count and its load
average before and after (a loaded machine stretches wall time: read it beside the figure), the commit,
and the date.  A command that fails is not recorded.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from harness.reporting.documents import write_document
from harness.studies.timings import measure

DEFAULT = Path("reports/timings/timings.json")


def record(label: str, entry: dict[str, Any], path: Path = DEFAULT) -> Path:
    doc = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    doc[label] = entry
    return write_document(path, "timings", dict(sorted(doc.items())))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="time a command and commit the measurement")
    parser.add_argument("--label", required=True)
    parser.add_argument("--cold", action="store_true", help="start the command with an empty embedding cache")
    parser.add_argument("--out", type=Path, default=DEFAULT)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    try:
        entry = measure(command, cold=args.cold)
    except subprocess.CalledProcessError as exc:
        print(f"not recorded: {' '.join(command)} exited {exc.returncode}", file=sys.stderr)
        return exc.returncode or 1
    print(f"{args.label}: {entry['wall_s']} s wall, {entry['cpu_s']} s CPU (load {entry['load_before'][0]} -> "
          f"{entry['load_after'][0]}); wrote {record(args.label, entry, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
