"""Benchmarks of the ablation's hot paths (make bench).  Medians are what docs/findings/speed.md reports (from reports/bench/)."""
import pytest

from harness.config import load_experiment
from harness.pipeline import build_stages, fuse, index_layout, load_dataset
from harness.stages.fusion import Legs
from harness.studies.experiment import run_experiment
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def warm_embedder():
    config = load_experiment(ROOT / "experiments/round4.toml")
    stages = build_stages(config, progress=False)
    for r in (1, 2, 3, 4):  # fill the cache once so every timed run is warm
        run_experiment(load_experiment(ROOT / f"experiments/round{r}.toml"), embedder=stages.embedder)
    return stages.embedder


def test_round4_warm(benchmark, warm_embedder):
    config = load_experiment(ROOT / "experiments/round4.toml")
    result = benchmark.pedantic(lambda: run_experiment(config, embedder=warm_embedder), rounds=5, iterations=1)
    assert result.summary["suite"]["queries"] == 12


def test_ablation_warm(benchmark, warm_embedder):
    configs = [load_experiment(ROOT / f"experiments/round{r}.toml") for r in (1, 2, 3, 4)]
    benchmark.pedantic(lambda: [run_experiment(c, embedder=warm_embedder) for c in configs], rounds=3, iterations=1)


@pytest.mark.parametrize("round_no", [1, 3, 4])
def test_retrieval_per_query_without_embedding(benchmark, warm_embedder, round_no):
    """Vector leg + lexical leg + fusion + post-processing for one query; the query vector is given."""
    config = load_experiment(ROOT / f"experiments/round{round_no}.toml")
    stages = build_stages(config, embedder=warm_embedder)
    dataset = load_dataset(config)
    layout = dataset.render(**config.layout)
    index = index_layout(layout, stages)
    query = next(q for q in dataset.queries() if q.id == "T4")
    qvec = stages.embedder.embed([query.text], "query")[0]

    def retrieve():
        legs = Legs(index.vector.search(qvec, stages.candidates), index.lexical.search(query.text, stages.candidates))
        return fuse(stages, query, legs)

    hits, _ = benchmark(retrieve)
    layout.cleanup()
    assert hits


def test_sweep_1000_settings_warm(benchmark, warm_embedder):
    """1,008 settings (21 weights x 3 fusions x 4 tokenizers x 4 minScores) on king78 round 3."""
    from harness.studies.sweep import run_sweep
    from harness.studies.sweep_grid import load_grid

    config = load_experiment(ROOT / "experiments/round3.toml")
    grid = load_grid(ROOT / "experiments/sweep.toml")
    result = benchmark.pedantic(lambda: run_sweep(config, grid, embedder=warm_embedder, progress=False),
                                rounds=3, iterations=1)
    assert len(result.settings) == 1008
