"""Executors: the same figures in this process and on a real Ray cluster (a head and a worker node on
127.0.0.1, started and stopped here); the embedding cache keeps every finished batch of an interrupted
run and a rerun embeds only the rest.  king78 round 3 with the hash embedder, so nothing waits on e5."""
from __future__ import annotations

import importlib.util
import json
import math
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.config import load_experiment
from harness.errors import ConfigError, EmbeddingError
from harness.pipeline import build_stages, index_layout, load_dataset
from harness.reporting.compare import compare_json
from harness.reporting.documents import json_value
from harness.stages.embedders import (
    CachedEmbedder,
    EmbeddingCache,
    HashEmbedder,
    text_sha256,
)
from harness.studies.ablation import run_ablation
from harness.studies.distributed import score_settings, sweep_state
from harness.studies.embed import (
    embed_batch,
    embedding_work,
    fill_cache,
    missing_batches,
)
from harness.studies.executor import (
    LocalExecutor,
    make_executor,
    map_partitioned,
    partition,
)
from harness.studies.matrix import run_matrix
from harness.studies.spec.models import Grid, MatrixStudy
from harness.studies.sweep import run_sweep
from harness.studies.sweep_grid import grid_settings, tokenizer_tables
from harness.studies.sweep_scoring import score_grid, search_sweep_legs
from tests.conftest import ROOT

HASH = {"embedder": {"name": "hash"}}
SPEC = MatrixStudy.model_validate({
    "kind": "matrix", "name": "mini", "values": [{"label": "unicode61", "tokenizer": {"name": "unicode61"}},
                                                 {"label": "jieba", "tokenizer": {"name": "jieba"}}],
    "runs": [{"label": "r3", "experiment": "experiments/round3.toml", "overrides": HASH}]})
WEIGHTS, FUSION_NAMES, MIN_SCORES = [0.3, 0.7], ["weighted", "rrf"], [0.0, 0.35]


@pytest.fixture(scope="module")
def round3():
    return load_experiment(ROOT / "experiments/round3.toml", **HASH)


def figures(result) -> dict:
    """A run's results.json as a dict (timings and the environment are skipped by compare_json)."""
    return json.loads(json.dumps(result.to_dict(), default=json_value))


def assert_same_cells(a, b) -> None:
    assert [(r, v) for r, v, _ in a] == [(r, v) for r, v, _ in b]
    for (_, _, x), (_, _, y) in zip(a, b):
        assert list(compare_json(figures(x), figures(y))) == []


# --- executors without Ray ---------------------------------------------------------------------------

def test_partition_keeps_order_and_balances():
    items = list(range(10))
    slices = partition(items, 3)
    assert [len(s) for s in slices] == [4, 3, 3] and sum(slices, []) == items
    assert partition(items[:2], 5) == [[0], [1]] and partition([], 4) == []


def test_local_executor_maps_in_order_with_shared_values():
    with LocalExecutor() as ex:
        assert ex.map(pow, [2, 3, 4], 2) == [4, 9, 16]
        assert list(ex.as_completed(len, ["ab", ""])) == [(0, 2), (1, 0)]
        assert map_partitioned(ex, pow, list(range(7)), 2, parts=3) == [i ** 2 for i in range(7)]


def test_unknown_executor_is_a_config_error():
    with pytest.raises(ConfigError, match="local, ray or ray://"):
        make_executor("spark")


class FailFrom:
    """compute for fill_cache that fails on every batch from the n-th on (a crashing worker)."""

    def __init__(self, batches, n):
        self.bad = {b.texts[0] for b in batches[n:]}

    def __call__(self, batch):
        if batch.texts[0] in self.bad:
            raise RuntimeError("worker lost")
        return embed_batch(batch)


def interrupt(config, cache, executor, batch_size=8, fail_from=3):
    """fill_cache failing from the fail_from-th batch on; checks what the cache kept: (kept, total)."""
    work = embedding_work(config)
    batches, total, _ = missing_batches([work], cache, batch_size)
    with pytest.raises(EmbeddingError, match="a rerun embeds only the rest"):
        fill_cache([config], executor=executor, cache=cache, batch_size=batch_size,
                   compute=FailFrom(batches, fail_from))
    kept = cache.count("hash-v1")
    assert fail_from * batch_size <= kept < total  # every batch that came back is there
    for role, texts in work.texts.items():  # and what is there is right
        have = cache.get_many("hash-v1", role, [text_sha256(t) for t in texts])
        for text in texts:
            if text_sha256(text) in have:
                np.testing.assert_array_equal(have[text_sha256(text)], HashEmbedder().embed([text], role)[0])
    return kept, total


def resume(config, cache, executor, kept, total, batch_size=8):
    """The rerun embeds exactly what the interrupted run had not written."""
    again = fill_cache([config], executor=executor, cache=cache, batch_size=batch_size)
    assert (again.cached, again.computed) == (kept, total - kept)
    assert cache.count("hash-v1") == total


def test_embed_skips_a_configuration_without_vectors(round3, tmp_cache):
    """An FTS-only preset (embedder `none`) has nothing to embed: nothing is computed or stored."""
    fts_only = round3.with_overrides({"embedder": {"name": "none"}})
    report = fill_cache([fts_only], cache=tmp_cache, batch_size=8)
    assert (report.texts, report.computed, report.batches) == (0, 0, 0)
    both = fill_cache([fts_only, round3], cache=tmp_cache, batch_size=8)
    assert both.computed == 78 + 34  # the hash-embedded configuration still is


def test_embed_fills_the_cache_once(round3, tmp_cache):
    report = fill_cache([round3], cache=tmp_cache, batch_size=8)
    assert (report.texts, report.cached, report.computed) == (78 + 34, 0, 78 + 34)
    assert report.batches == math.ceil(78 / 8) + math.ceil(34 / 8)
    assert fill_cache([round3], cache=tmp_cache).computed == 0
    # a run afterwards finds every vector in the cache
    stages = build_stages(round3, cache=tmp_cache, progress=False)
    layout = load_dataset(round3).render(**round3.layout)
    try:
        index_layout(layout, stages)
    finally:
        layout.cleanup()
    assert stages.embedder.stats == {"hits": 78, "computed": 0}


def test_embed_interrupted_keeps_finished_batches_locally(round3, tmp_cache):
    kept, total = interrupt(round3, tmp_cache, LocalExecutor())
    assert kept == 3 * 8  # sequential: exactly the batches before the failing one
    resume(round3, tmp_cache, LocalExecutor(), kept, total)


def test_embed_command(tmp_path):
    result = CliRunner().invoke(app, ["embed", str(ROOT / "experiments/round3.toml"), "--set", "embedder.name=hash",
                                      "--batch-size", "20"], env={"HARNESS_CACHE_DIR": str(tmp_path)})
    assert result.exit_code == 0, result.output
    assert "112 texts (hash-v1): 0 were cached, 112 embedded in 6 batches" in result.output
    assert EmbeddingCache(tmp_path / "embeddings.sqlite").count("hash-v1") == 112
    result = CliRunner().invoke(app, ["embed", str(ROOT / "experiments/round3.toml"), "--executor", "dask"])
    assert result.exit_code == 2 and "expected local, ray or ray://" in result.output


def test_matrix_on_the_local_executor_equals_run_matrix(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))  # run_matrix uses the default cache
    cells = run_matrix(SPEC, executor=LocalExecutor(), cache=EmbeddingCache(tmp_path / "other.sqlite"), progress=False)
    assert_same_cells(cells, run_matrix(SPEC, progress=False))
    assert cells[1][2].config["tokenizer"]["name"] == "jieba"  # a result records its configuration as written


def test_ablation_on_the_local_executor_equals_run_ablation(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    finished = []
    on_executor = run_ablation(overrides=HASH, executor=LocalExecutor(), cache=EmbeddingCache(tmp_path / "other.sqlite"),
                               on_round=lambda r, result: finished.append(r))
    assert finished == [1, 2, 3, 4]
    reference = run_ablation(overrides=HASH, progress=False)
    for r in (1, 2, 3, 4):
        assert list(compare_json(figures(on_executor[r]), figures(reference[r]))) == []


@pytest.fixture(scope="module")
def sweep_slice(round3, tmp_path_factory):
    """Legs searched once, the grid's settings, and their figures scored in this process."""
    cache = EmbeddingCache(tmp_path_factory.mktemp("sweep") / "cache.sqlite")
    grid = Grid(vector_weight=WEIGHTS, fusion=FUSION_NAMES, tokenizer=[{"name": "unicode61"}, {"name": "jieba"}],
                min_score=MIN_SCORES)
    tables = tokenizer_tables(round3, grid)
    legs = search_sweep_legs(round3, tables, embedder=CachedEmbedder(HashEmbedder(), cache), progress=False,
                             leg_cache=False)
    settings = grid_settings(round3, grid, list(tables))
    return settings, sweep_state(legs, settings, [6]), score_grid(settings, legs, [6])


def assert_same_scores(a, b) -> None:
    """Every per-query array equal, setting by setting (NaN equal to NaN)."""
    assert len(a.settings) == len(b.settings)
    for name in ("reciprocal_rank", "passed", "returned", "spread"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(a.top1_score, b.top1_score, equal_nan=True)
    for k in b.hits:
        assert np.array_equal(a.hits[k], b.hits[k]) and np.array_equal(a.ndcg[k], b.ndcg[k])


def test_sweep_slice_on_the_local_executor_equals_scoring_in_process(sweep_slice):
    settings, state, reference = sweep_slice
    assert_same_scores(score_settings(LocalExecutor(), settings, state, parts=3), reference)


def test_sweep_on_an_executor_writes_the_same_sweep(round3, tmp_path):
    grid = Grid(vector_weight=WEIGHTS, fusion=FUSION_NAMES, min_score=MIN_SCORES)
    embedder = CachedEmbedder(HashEmbedder(), EmbeddingCache(tmp_path / "cache.sqlite"))
    here = run_sweep(round3, grid, embedder=embedder, progress=False)
    there = run_sweep(round3, grid, embedder=embedder, progress=False, executor=LocalExecutor())
    pd.testing.assert_frame_equal(here.settings, there.settings, check_exact=True)
    assert here.cv.as_dict() == there.cv.as_dict() and here.selection.p_value == there.selection.p_value


# --- a real Ray cluster: a head and a worker node on 127.0.0.1 ---------------------------------------

def _free_port() -> int:
    with socket.socket() as s:  # an ephemeral port: outside Ray's worker port range (10002-19999)
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _processes_of(groups: set[int]) -> set[int]:
    """Every process in the given process groups and all their descendants (Ray's workers make
    their own process groups, but they are the raylets' children)."""
    parents: dict[int, tuple[int, int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = (int(fields[1]), int(fields[2]))  # ppid, pgrp
    found = {pid for pid, (_, pgrp) in parents.items() if pgrp in groups}
    while True:
        more = {pid for pid, (ppid, _) in parents.items() if ppid in found} - found
        if not more:
            return found
        found |= more


def _stop(groups: set[int]) -> None:
    """Stop the nodes this test started, by process id only (never `ray stop`, which would stop every
    Ray process on the machine, other users' included)."""
    pids = _processes_of(groups)
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
            time.sleep(0.2)
        pids = {p for p in pids if Path(f"/proc/{p}").exists()}
        if not pids:
            return


@pytest.fixture(scope="module")
def ray_cluster():
    """(GCS address, Ray Client address) of a 2-node cluster, one CPU per node, torn down afterwards."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed: pip install 'harness[ray]' (make install does)")
    ray_cli = str(Path(sys.executable).parent / "ray")
    gcs, client = _free_port(), _free_port()
    # Token authentication stated for the nodes and this driver alike: from Ray 2.59 a local `ray.init()`
    # (`--executor ray` without an address) turns it on and leaves ~/.ray/auth_token behind, which a
    # cluster started without it then disagrees with; older Rays ignore both variables.
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **auth}
    env.pop("RAY_ADDRESS", None)
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    saved = {k: os.environ.get(k) for k in (*auth, "RAY_AUTH_TOKEN_PATH")}
    os.environ.update(auth)  # before this process imports Ray: it reads its settings once
    os.environ.pop("RAY_AUTH_TOKEN_PATH", None)
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--object-store-memory=100000000",
              "--disable-usage-stats"]
    nodes = [["--head", f"--port={gcs}", f"--ray-client-server-port={client}", "--include-dashboard=false",
              f"--dashboard-port={_free_port()}"],
             [f"--address=127.0.0.1:{gcs}"]]
    groups: set[int] = set()
    temp_dirs = []
    try:
        for extra in nodes:
            temp_dirs.append(tempfile.mkdtemp(prefix="hray", dir="/tmp"))  # short: socket paths have a limit
            start = subprocess.Popen([ray_cli, "start", *common, *extra, f"--temp-dir={temp_dirs[-1]}",
                                      f"--dashboard-agent-listen-port={_free_port()}"],
                                     env=env, start_new_session=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
            groups.add(start.pid)  # the node's daemons stay in the group of the `ray start` that made them
            output, _ = start.communicate(timeout=180)
            assert start.returncode == 0, output[-3000:]
        yield f"127.0.0.1:{gcs}", f"ray://127.0.0.1:{client}"
    finally:
        import ray

        ray.shutdown()
        _stop(groups)
        for d in temp_dirs:
            subprocess.run(["rm", "-rf", d], check=False)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture()
def ray_executor(ray_cluster, monkeypatch):
    """`--executor ray` with RAY_ADDRESS pointing at the test cluster; waits for both nodes."""
    monkeypatch.setenv("RAY_ADDRESS", ray_cluster[0])
    with make_executor("ray") as ex:
        deadline = time.monotonic() + 60
        while ex.workers < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
            ex.workers = int(ex._ray.cluster_resources().get("CPU", 1))
        assert ex.workers == 2, "the worker node did not join"
        yield ex


SPEC_TOML = """kind = "matrix"
name = "mini"
[[values]]
label = "unicode61"
tokenizer = { name = "unicode61" }
[[values]]
label = "jieba"
tokenizer = { name = "jieba" }
[[runs]]
label = "r3"
experiment = "experiments/round3.toml"
overrides = { embedder = { name = "hash" } }
"""


@pytest.mark.ray
def test_matrix_command_same_figures_on_ray(ray_executor, tmp_path):
    """`harness matrix SPEC --executor ray` writes the figures `harness matrix SPEC` writes."""
    (tmp_path / "mini.toml").write_text(SPEC_TOML, encoding="utf-8")
    docs = {}
    for executor in ("local", "ray"):
        cache_dir = tmp_path / f"cache-{executor}"
        result = CliRunner().invoke(app, ["matrix", str(tmp_path / "mini.toml"), "--out", str(tmp_path / executor),
                                          "--executor", executor], env={"HARNESS_CACHE_DIR": str(cache_dir)})
        assert result.exit_code == 0, result.output
        docs[executor] = json.loads((tmp_path / executor / "mini.json").read_text(encoding="utf-8"))
        # embedded across the cluster, written by the driver alone
        assert EmbeddingCache(cache_dir / "embeddings.sqlite").count("hash-v1") == 112
    assert len(docs["ray"]["cells"]) == 2 and docs["ray"]["cells"][1]["config"]["tokenizer"]["name"] == "jieba"
    assert list(compare_json(docs["local"], docs["ray"])) == []


@pytest.mark.ray
def test_sweep_slice_same_figures_on_ray(ray_executor, sweep_slice):
    settings, state, reference = sweep_slice
    assert_same_scores(score_settings(ray_executor, settings, state), reference)


@pytest.mark.ray
def test_embed_interrupted_on_ray_then_resumed_over_ray_client(ray_executor, ray_cluster, round3, tmp_cache):
    import ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # FailFrom travels by value
    try:
        kept, total = interrupt(round3, tmp_cache, ray_executor)
    finally:
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    ray_executor.close()  # one connection per driver process: now the Ray Client one
    with make_executor(ray_cluster[1]) as client:
        assert client.name == ray_cluster[1] and client.workers == 2
        resume(round3, tmp_cache, client, kept, total)
