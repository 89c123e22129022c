"""Benchmarks of the own-agent path (pytest-benchmark medians; `make bench`): mining generated sessions, the
labelling page's answer for a 50-chunk pool, importing stored vectors.  Sizes are small by default so the suite
stays quick; HARNESS_BENCH_SESSIONS (e.g. 10000, ~1 GB) and HARNESS_BENCH_VECTORS (e.g. 100000) give the sizes
the issue names, which `make openclaw-home-speed` measures into reports/openclaw-home/speed.json."""
from __future__ import annotations

import http.client
import os

import pytest

from harness.bundled import REPOSITORY
from harness.studies import openclaw_home_speed as speed

EXAMPLE = REPOSITORY / "datasets" / "example-openclaw-home"
SESSIONS = int(os.environ.get("HARNESS_BENCH_SESSIONS", "300"))
VECTORS = int(os.environ.get("HARNESS_BENCH_VECTORS", "5000"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return speed.generate_sessions(tmp_path_factory.mktemp("speed"), SESSIONS, example=EXAMPLE)


def test_bench_mining_streams_the_sessions(benchmark, generated):
    result = benchmark.pedantic(speed.measure_mining, args=(generated,), rounds=3, iterations=1)
    assert result["sessions"] == SESSIONS and result["calls"] > SESSIONS


def test_bench_page_answers_a_50_chunk_pool(benchmark, tmp_path):
    from harness.judging.page import JudgePage
    from harness.judging.store import LabelStore

    pool = speed.pool_of(50, example=EXAMPLE)
    with JudgePage(pool, LabelStore(tmp_path / "labels.sqlite")) as page:
        port = int(page.url.rsplit(":", 1)[1].strip("/"))

        def load() -> int:
            conn = http.client.HTTPConnection("127.0.0.1", port)
            conn.request("GET", "/api/query?i=0")
            status = conn.getresponse()
            status.read()
            conn.close()
            return status.status

        assert benchmark(load) == 200


def test_bench_import_of_stored_vectors(benchmark, tmp_path):
    from harness.inputs.openclaw_index import MemoryIndex
    from harness.stages.embedders.cache import EmbeddingCache
    from harness.stages.embedders.openclaw_index import import_index_vectors

    path = tmp_path / "main.sqlite"
    speed.write_index(path, VECTORS)

    def run() -> int:
        cache = EmbeddingCache(tmp_path / f"cache-{os.urandom(4).hex()}.sqlite")
        with MemoryIndex(path) as index:
            return import_index_vectors(index, cache).imported

    assert benchmark.pedantic(run, rounds=3, iterations=1) == VECTORS
