"""Synthetic candidate worlds for the sweep benchmarks: legs of many queries over a corpus of dated daily
logs, curated MEMORY.md entries and notes, with snippet texts that share words (so MMR has work to do)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from harness.stages.fusion import Legs

WORDS = ["备份", "postgres", "护照", "内存", "swap", "博客", "giscus", "OOM", "告警", "周报", "restore", "妈妈",
         "kafka", "延迟", "签证", "flink", "牙医", "游泳", "NAS", "论文", "deadline", "talk", "airflow", "房东"]


def memory_world(queries: int, chunks: int = 2000, vector: int = 24, lexical: int = 24, seed: int = 0):
    """`queries` queries whose two legs hold `vector` and `lexical` candidates each, over `chunks` chunks of
    a workspace: (legs, judgments, chunk_path, chunk_text)."""
    rng = np.random.default_rng(seed)
    ids = [f"c{i:05d}" for i in range(chunks)]
    paths = {}
    for i, cid in enumerate(ids):
        kind = i % 10
        paths[cid] = "MEMORY.md" if kind == 0 else f"notes/n{i % 37}.md" if kind == 1 else \
            f"memory/2026-{1 + i % 3:02d}-{1 + i % 28:02d}.md"
    texts = {cid: " ".join(rng.choice(WORDS, size=int(rng.integers(3, 30)))) + (
        f" <!-- importance: {int(rng.integers(1, 11))} -->" if paths[cid] == "MEMORY.md" else "") for cid in ids}
    legs, judgments = {}, {}
    for q in range(queries):
        v = rng.choice(chunks, size=vector, replace=False)
        t = rng.choice(chunks, size=lexical, replace=False)
        legs[f"q{q}"] = Legs([(ids[i], float(s)) for i, s in zip(v, np.sort(rng.uniform(0.6, 0.95, vector))[::-1])],
                             [(ids[i], float(s)) for i, s in zip(t, np.sort(rng.uniform(0.5, 20, lexical))[::-1])])
        judgments[f"q{q}"] = {ids[int(rng.choice(v))]: 1}
    index = SimpleNamespace(path=paths.__getitem__, text=texts.__getitem__)
    return legs, judgments, index
