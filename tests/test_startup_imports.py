"""What a command's start-up imports (issue 31, Speed): every command is a new process, and a CI gate job
runs several, so the heavy libraries are imported by the functions that use them, not by the modules on
the way to the command.  Checked in a fresh interpreter (sys.modules), so a module-level import added
anywhere on the path fails here instead of silently costing every command its import time
(tests/bench_startup.py times the same processes)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

HEAVY = ("scipy", "pandas", "matplotlib", "ray", "jieba", "httpx")


def imported_by(*argv: str) -> set[str]:
    """The top-level packages loaded after `harness ARGV...` ran in a new interpreter."""
    script = ("import json, sys\n"
              "from harness.cli import app\n"
              "try:\n"
              f"    app({list(argv)!r})\n"
              "except SystemExit:\n"
              "    pass\n"
              "print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [("gate", "--help"), ("run", "--help"), ("--help",)])
def test_the_help_of_a_command_imports_no_heavy_library(argv):
    loaded = imported_by(*argv)
    assert loaded & set(HEAVY) == set(), argv


def test_the_version_imports_neither_pydantic_nor_numpy():
    loaded = imported_by("--version")
    assert loaded & {"pydantic", "numpy", *HEAVY} == set()


def test_the_stage_registry_imports_no_pydantic_until_a_stage_is_declared():
    # harness.inputs.layout (project_path, which every command resolves its arguments with) holds a
    # registry: declaring one must not cost pydantic's import
    script = "import sys, harness.inputs.layout, harness.registry; print('pydantic' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr[-2000:]


def test_a_gate_without_a_statistical_rule_imports_neither_scipy_nor_pandas():
    # the default rules compare metrics read from JSON: no interval, no test, so no scipy; a Markdown
    # summary (which shows the baseline's intervals) is only computed when one is written
    results = str(ROOT / "reports" / "round4" / "results.json")
    env_summary = os.environ.pop("GITHUB_STEP_SUMMARY", None)
    try:
        loaded = imported_by("gate", results, "--baseline", results)
    finally:
        if env_summary is not None:
            os.environ["GITHUB_STEP_SUMMARY"] = env_summary
    assert loaded & {"scipy", "pandas", "matplotlib"} == set()


def _python(script: str, tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_command_exits_with_its_code_and_runs_the_atexit_handlers(tmp_path):
    # harness.cli.main skips the interpreter's teardown; the exit code, the output and atexit stay
    script = ("import atexit, sys\n"
              "from harness.cli import main\n"
              "atexit.register(lambda: print('atexit ran'))\n"
              "sys.argv = ['harness'] + sys.argv[1:]\n"
              "main()\n")
    done = _python(script.replace("sys.argv[1:]", "['--version']"), tmp_path)
    assert done.returncode == 0 and done.stdout.split("\n")[:2] == [f"harness {__import__('harness').__version__}",
                                                                     "atexit ran"]
    done = _python(script.replace("sys.argv[1:]", "['run', 'no-such.toml']"), tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and "atexit ran" in done.stdout


def test_a_thread_still_working_is_waited_for(tmp_path):
    marker = tmp_path / "done"
    script = ("import sys, threading, time\n"
              "from harness.cli import main\n"
              f"threading.Thread(target=lambda: (time.sleep(0.5), open({str(marker)!r}, 'w').close())).start()\n"
              "sys.argv = ['harness', '--version']\n"
              "main()\n")
    done = _python(script, tmp_path)
    assert done.returncode == 0 and marker.exists()
