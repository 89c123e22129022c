"""Benchmarks of the Ray executor on this machine (run explicitly, like the other bench_*.py files):

    .venv/bin/pytest -q -s tests/bench_executor.py --benchmark-enable --benchmark-only

- embedding throughput of real e5 (multilingual-e5-small q4) on 64 passages no cache has seen (king78
  records plus a suffix, a fresh temporary cache), with 1 and with 2 Ray worker processes (one CPU
  each: a head and a worker node on 127.0.0.1, as in test_executor.py); the 2-vs-1 ratio is printed;
- the scheduling overhead per task: a no-op task through RayExecutor.map.

It measures on your machine what docs/how-to/ray.md tells you to measure before sizing a cluster.
"""
from __future__ import annotations

import time

import pytest

from harness.config import load_experiment
from harness.stages.embedders import EmbeddingCache
from harness.studies.embed import (
    EmbedBatch,
    EmbeddingWork,
    embed_batch,
    embedding_work,
    fill_cache,
)
from harness.studies.executor import RayExecutor
from tests.conftest import ROOT
from tests.test_executor import ray_cluster  # noqa: F401  (the fixture: a head and a worker node)

E5 = {"name": "e5-small-q4"}
PASSAGES = 64
BATCH = 8
measured: dict[int, float] = {}


@pytest.fixture(scope="module")
def records():
    config = load_experiment(ROOT / "experiments/round3.toml", embedder=E5)
    work = embedding_work(config)
    return work.model_id, work.texts["passage"][:PASSAGES]


@pytest.fixture(scope="module")
def executor(ray_cluster):  # noqa: F811
    import sys

    import ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # _noop travels by value
    ex = RayExecutor(ray_cluster[0])
    deadline = time.monotonic() + 60
    while int(ex._ray.cluster_resources().get("CPU", 0)) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    ex.workers = 2
    # load the model in both worker processes first: the benchmark measures embedding, not start-up
    ex.window = 2
    ex.map(embed_batch, [EmbedBatch(E5, "", "passage", [f"warm-up {i}"]) for i in range(2)])
    yield ex
    ex.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_embedding_throughput(benchmark, executor, records, tmp_path, workers):
    model_id, texts = records
    executor.window = workers  # tasks in flight = worker processes busy at once
    cold = [f"{t}\n(run {workers} workers)" for t in texts]  # distinct texts: nothing is cached
    work = EmbeddingWork(E5, model_id, {"passage": cold})

    def run():
        return fill_cache([], works=[work], executor=executor, cache=EmbeddingCache(tmp_path / "c.sqlite"),
                          batch_size=BATCH)

    report = benchmark.pedantic(run, rounds=1, iterations=1)
    assert report.computed == PASSAGES
    measured[workers] = PASSAGES / report.seconds
    benchmark.extra_info.update(passages=PASSAGES, passages_per_s=measured[workers],
                                s_per_passage_per_worker=workers * report.seconds / PASSAGES)
    print(f"\n{workers} worker(s): {PASSAGES} passages in {report.seconds:.1f} s = "
          f"{measured[workers]:.2f} passages/s ({workers * report.seconds / PASSAGES:.2f} s per passage per worker)")
    if len(measured) == 2:
        print(f"2 workers / 1 worker throughput: {measured[2] / measured[1]:.2f}x")
        benchmark.extra_info["ratio_2_vs_1"] = measured[2] / measured[1]


def _noop(item):
    return item


def test_scheduling_overhead_per_task(benchmark, executor):
    executor.window = 2 * executor.workers
    n = 200
    benchmark.extra_info["tasks"] = n
    started = time.perf_counter()
    out = benchmark.pedantic(lambda: executor.map(_noop, range(n)), rounds=3, iterations=1)
    assert out == list(range(n))
    print(f"\nno-op task: {(time.perf_counter() - started) / (3 * n) * 1e3:.2f} ms per task "
          f"({n} tasks x 3 rounds through RayExecutor.map, window {executor.window})")
