"""How fast each in-process embedder embeds Chinese passages on this machine (issue 40: measure a second
embedder's cost before embedding whole data sets with it).

    python -m harness.reporting.embedder_speed --out reports/embedders/speed.json [--texts 24]

Each embedder embeds the same king78 passages (title, summary and facts of the first N records), cold
(no cache), in its own batches, after one warm-up call; the load average is recorded beside the times
because the machine may be shared.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from harness.studies.embedder_speed import measure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--texts", type=int, default=24)
    args = parser.parse_args(argv)
    before = os.getloadavg()[0]
    doc = measure(args.texts)
    doc["load_average_before"] = before
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    for row in doc["embedders"]:
        print(f"{row['embedder']}: {row['texts']} passages in {row['seconds']:.1f} s ({row['texts_per_s']:.2f}/s), "
              f"load {row['load_s']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
