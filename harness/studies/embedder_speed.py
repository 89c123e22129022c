"""How fast each in-process embedder embeds Chinese passages on this machine (issue 40): the measurement;
harness.reporting.embedder_speed writes it (`make embedders`)."""
from __future__ import annotations

import os
import time

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
