"""Whole-process benchmarks of the commands a CI gate job runs (make bench): each command is a new Python
process that pays its imports, so what is timed is the process, from start to exit (subprocess).

The machine unit is `python -c "import numpy"` on the same machine and interpreter, measured right
before each command (5 runs, median), so that both see the same load: every figure is asserted as a
ratio of its median to the unit's median, so the targets mean the same on a faster or a slower machine.
The targets are issue 31's, in seconds on its 2-core machine, turned into units with that machine's
unit: `import numpy` took a median of 0.18 s there (medians of 5, each command alternating with the
unit, bytecode cached, the machine shared with other jobs).

    warm `harness run experiments/round4.toml`  <= 1.5 s  ->  1.5 / 0.18 = 8.3 units, asserted <= 8.0
    `harness gate` on a results file            <= 1.0 s  ->  1.0 / 0.18 = 5.6 units, asserted <= 5.0
    `harness --version`                  (no target given) -> asserted <= 1.5 units: typer and the
        command modules only (~0.5 unit); before issue 31 it imported pydantic and the configuration
        (0.31 s, 1.8 units), which fails it

(rounded down: a target met by a hair on one machine is not met on the next).  Measured on that machine
before -> after the change: the run 2.56 s -> 1.45 s (14.9 -> 7.3 units), the gate 0.97 s -> 0.37 s
(5.6 -> 1.8 units), --version 0.31 s -> 0.09 s.  A warm run is one whose every vector and token count is
already in the embedding cache (the fixture runs it once first).  The machine's load moves the unit
(0.09-0.28 s seen on that machine in one hour) more than any change here: run these on a quiet machine.
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
RUN_UNITS = 8.0
GATE_UNITS = 5.0
VERSION_UNITS = 1.5


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
def numpy_unit() -> float:
    """Median seconds of `python -c "import numpy"` on this machine now (after one untimed warm-up)."""
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
    if benchmark.stats is None:  # --benchmark-disable (pyproject's default): timed once, nothing to compare
        pytest.skip("benchmarks disabled: run `make bench`")
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
