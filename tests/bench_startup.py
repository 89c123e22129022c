"""Whole-process benchmarks of the commands a CI gate job runs (make bench): each command is a new Python
process that pays its imports, so what is timed is the process, from start to exit (subprocess).

The machine unit is `python -c "import numpy"` on the same machine and interpreter: every figure is also
asserted as a ratio of its median to the unit's median, so the targets mean the same on a faster or a
slower machine.  The targets are issue 31's, in seconds on its 2-core machine, turned into units with
that machine's unit: `import numpy` took a median of 0.19 s there (5 runs, warm file cache, lightly
loaded; the same machine then took 0.58 s for `harness --version` and 4.7 s for the round-4 run).

    warm `harness run experiments/round4.toml`  <= 1.5 s  ->  1.5 / 0.19 = 7.9 units, asserted <= 7.5
    `harness gate` on a results file            <= 1.0 s  ->  1.0 / 0.19 = 5.3 units, asserted <= 5.0
    `harness --version`                  (no target given) -> asserted <= 2.0 units: typer and the
        command modules only (~1 unit); importing pydantic and the configuration again (0.45 s, 2.4
        units, before issue 31) fails it

(rounded down: a target met by a hair on one machine is not met on the next).  A warm run is one whose
every vector and token count is already in the embedding cache (the fixture runs it once first); a
heavily loaded machine stretches a long process more than the short unit, so run these on a quiet one.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

ROUNDS = 5
RUN_UNITS = 7.5
GATE_UNITS = 5.0
VERSION_UNITS = 2.0


def _env() -> dict[str, str]:
    # the code under test (this checkout) and its own bytecode cache, as an installed harness has
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _process(*args: str) -> None:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def _harness(*args: str) -> None:
    _process("-m", "harness.cli", *args)


@pytest.fixture(scope="module")
def numpy_unit() -> float:
    """Median seconds of `python -c "import numpy"` on this machine (after one untimed warm-up)."""
    _process("-c", "import numpy")
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        _process("-c", "import numpy")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@pytest.fixture(scope="module")
def warm_run(tmp_path_factory):
    """An output folder of a round-4 run made once, so the timed runs find everything cached."""
    out = tmp_path_factory.mktemp("round4")
    _harness("run", "experiments/round4.toml", "--out", str(out))
    return out


def _median_in_units(benchmark, numpy_unit: float) -> float:
    return benchmark.stats.stats.median / numpy_unit


def test_bench_machine_unit_import_numpy(benchmark):
    benchmark.pedantic(_process, args=("-c", "import numpy"), rounds=ROUNDS, iterations=1, warmup_rounds=1)


def test_bench_version(benchmark, numpy_unit):
    benchmark.pedantic(_harness, args=("--version",), rounds=ROUNDS, iterations=1, warmup_rounds=1)
    assert _median_in_units(benchmark, numpy_unit) <= VERSION_UNITS


def test_bench_round4_run_warm(benchmark, numpy_unit, warm_run):
    benchmark.pedantic(_harness, args=("run", "experiments/round4.toml", "--out", str(warm_run)),
                       rounds=ROUNDS, iterations=1)
    assert _median_in_units(benchmark, numpy_unit) <= RUN_UNITS


def test_bench_gate(benchmark, numpy_unit, warm_run):
    results = str(warm_run / "results.json")
    benchmark.pedantic(_harness, args=("gate", results, "--baseline", results), rounds=ROUNDS, iterations=1,
                       warmup_rounds=1)
    assert _median_in_units(benchmark, numpy_unit) <= GATE_UNITS
