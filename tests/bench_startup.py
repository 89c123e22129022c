"""Whole-process benchmarks of the commands a CI gate job runs (make bench): each command is a new Python
process that pays its imports, so what is timed is the process, from start to exit (subprocess).

The machine unit is the dependency floor, `python -c "import numpy, pandas, pydantic, typer"` (the
third-party packages every command of a run or a gate pays for), on the same machine and interpreter,
measured right before each command (5 runs, median), so that both see the same load: every figure is
asserted as a ratio of its median to the unit's median, so the targets mean the same on a faster or a
slower machine.  The unit was `import numpy` until issue 39; that import starts a BLAS thread per core
and moved by 40% when one of the two cores was busy (0.10 -> 0.14 s) while the run did not move
(1.04 -> 1.05 s), so a quiet machine failed the run's target while meeting its seconds.  The floor moved
0.41 -> 0.41 s in the same two measurements (issue 39's closing note).

The targets are issue 31's, in seconds on a 2-core machine, turned into units with this unit's quiet
median on such a machine (0.41 s), rounded down (a target met by a hair on one machine is not met on
the next):

    warm `harness run experiments/round4.toml`  <= 1.5 s  ->  1.5 / 0.41 = 3.7 units, asserted <= 3.5
    `harness gate` on a results file            <= 1.0 s  ->  1.0 / 0.41 = 2.4 units, asserted <= 2.0
    `harness --version`                  (no target given) -> asserted <= 0.4 units: typer and the
        command modules only (~0.2 unit); before issue 31 it imported pydantic and the configuration
        (0.31 s, 0.76 unit), which fails it

Measured quiet at issue 39 (2 cores): the run 1.04 s (2.5 units), the gate 0.26 s (0.6 unit),
--version 0.08 s (0.2 unit).  A warm run is one whose every vector and token count is already in the
embedding cache (the fixture runs it once first).
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
RUN_UNITS = 3.5
GATE_UNITS = 2.0
VERSION_UNITS = 0.4
FLOOR = "import numpy, pandas, pydantic, typer"


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


@pytest.fixture()
def floor_unit() -> float:
    """Median seconds of `python -c FLOOR` on this machine now (after one untimed warm-up)."""
    _process("-c", FLOOR)
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        _process("-c", FLOOR)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@pytest.fixture(scope="module")
def warm_run(tmp_path_factory):
    """An output folder of a round-4 run made once, so the timed runs find everything cached."""
    out = tmp_path_factory.mktemp("round4")
    _harness("run", "experiments/round4.toml", "--out", str(out))
    return out


def _median_in_units(benchmark, floor_unit: float) -> float:
    if benchmark.stats is None:  # --benchmark-disable (pyproject's default): timed once, nothing to compare
        pytest.skip("benchmarks disabled: run `make bench`")
    return benchmark.stats.stats.median / floor_unit


def test_bench_machine_unit_dependency_floor(benchmark):
    benchmark.pedantic(_process, args=("-c", FLOOR), rounds=ROUNDS, iterations=1, warmup_rounds=1)


def test_bench_version(benchmark, floor_unit):
    benchmark.pedantic(_harness, args=("--version",), rounds=ROUNDS, iterations=1, warmup_rounds=1)
    assert _median_in_units(benchmark, floor_unit) <= VERSION_UNITS


def test_bench_round4_run_warm(benchmark, floor_unit, warm_run):
    benchmark.pedantic(_harness, args=("run", "experiments/round4.toml", "--out", str(warm_run)),
                       rounds=ROUNDS, iterations=1)
    assert _median_in_units(benchmark, floor_unit) <= RUN_UNITS


def test_bench_gate(benchmark, floor_unit, warm_run):
    results = str(warm_run / "results.json")
    benchmark.pedantic(_harness, args=("gate", results, "--baseline", results), rounds=ROUNDS, iterations=1,
                       warmup_rounds=1)
    assert _median_in_units(benchmark, floor_unit) <= GATE_UNITS
