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
import time
from pathlib import Path

from harness.inputs.king78 import load_records
from harness.inputs.layout import project_path
from harness.stages.embedders import EMBEDDERS

EMBEDDER_TABLES = (("e5-small-q4", {"threads": 1}), ("use-multilingual-v3", {"threads": 1}))


def passages(n: int) -> list[str]:
    records = load_records(project_path("datasets/king78") / "records.jsonl")[:n]
    return [f"{r['title']}\n{r['summary']}\n" + "\n".join(r["facts"]) for r in records]


def measure(n: int) -> dict:
    texts = passages(n)
    rows = []
    for name, params in EMBEDDER_TABLES:
        embedder = EMBEDDERS.create(name, params)
        t0 = time.perf_counter()
        embedder.embed(["warm-up"], "passage")
        load_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        for i in range(0, len(texts), embedder.batch_size):
            embedder.embed(texts[i:i + embedder.batch_size], "passage")
        seconds = time.perf_counter() - t1
        rows.append({"embedder": name, "model_id": embedder.model_id, "params": params, "dim": embedder.dim,
                     "texts": len(texts), "chars": sum(map(len, texts)), "load_s": load_s, "seconds": seconds,
                     "texts_per_s": len(texts) / seconds, "load_average_after": os.getloadavg()[0]})
    return {"name": "embedder-speed", "cpu_count": os.cpu_count(), "load_average_before": None, "embedders": rows}


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
