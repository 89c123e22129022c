"""Plugins: a package installed beside the harness registers stages (and a kind of study file) through
entry points and runs from a TOML file like a built-in (tests/plugin_example is the complete example the
README shows)."""
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

PLUGIN = ROOT / "tests" / "plugin_example"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory):
    """The example plugin installed (with its entry points) into a folder of its own, not the venv."""
    target = tmp_path_factory.mktemp("plugin-site")
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                             "--no-index", "--target", str(target), str(PLUGIN)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return target


def _harness(args, plugin_path, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(plugin_path), "HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env=env)


def test_plugin_stages_are_listed_with_their_parameters(plugin_path, tmp_path):
    result = _harness(["stages", "--json"], plugin_path, tmp_path)
    assert result.returncode == 0, result.stderr
    found = {(i["table"], i["name"]): i for i in json.loads(result.stdout)}
    chunker = found[("chunker", "paragraph")]
    assert chunker["module"] == "harness_example_plugin"
    assert [(p["name"], p["type"], p["default"]) for p in chunker["parameters"]] == [("max_lines", "int", 40)]
    assert ("fusion", "max-leg") in found and ("fusion", "weighted") in found


def test_plugin_stages_run_from_a_toml_file(plugin_path, tmp_path):
    experiment = tmp_path / "plugin.toml"
    experiment.write_text(f'''
preset = "openclaw-2026.08"
[dataset]
name = "king78"
path = "{(ROOT / 'datasets' / 'king78').as_posix()}"
[layout]
daily_logs = false
combined = false
records = "all"
keywords = false
tags = false
[evaluation]
round = 3
[chunker]
name = "paragraph"
max_lines = 8
[fusion]
name = "max-leg"
[embedder]
name = "hash"
''', encoding="utf-8")
    out = tmp_path / "out"
    result = _harness(["run", str(experiment), "--out", str(out)], plugin_path, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["config"]["chunker"] == {"name": "paragraph", "max_lines": 8}
    assert doc["config"]["fusion"] == {"name": "max-leg"}
    # the paragraph chunker cuts every record file (blank-line separated sections) into several chunks
    assert doc["summary"]["index"]["chunks"] > doc["summary"]["index"]["files"]
    assert doc["summary"]["suite"]["queries"] == 10


def test_a_bad_plugin_parameter_names_the_file_table_and_key(plugin_path, tmp_path):
    experiment = tmp_path / "bad.toml"
    experiment.write_text('preset = "openclaw-2026.08"\n[chunker]\nname = "paragraph"\nmax_lines = 0\n',
                          encoding="utf-8")
    result = _harness(["run", str(experiment), "--out", str(tmp_path / "o")], plugin_path, tmp_path)
    assert result.returncode == 2
    assert f"{experiment} [chunker] max_lines: Input should be greater than or equal to 1 (got 0)" in result.stderr


def test_without_the_plugin_its_name_is_unknown(tmp_path):
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYTHONPATH", None)
    experiment = tmp_path / "x.toml"
    experiment.write_text('preset = "openclaw-2026.08"\n[chunker]\nname = "paragraph"\n', encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(experiment), "--out", str(tmp_path / "o")],
                            capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert result.returncode == 2 and "unknown chunker 'paragraph'; available:" in result.stderr


def test_a_plugin_adds_a_study_kind_that_harness_study_runs(plugin_path, tmp_path):
    """The plugin's study kind (harness_example_plugin.study_kind, one entry point; nothing in harness/
    names it): `harness study` resolves a file declaring it, dry-runs its cells, runs it, and `harness
    schema` knows it."""
    spec = tmp_path / "passes.toml"
    spec.write_text('kind = "preset-passes"\nname = "passes"\nexperiment = "experiments/round3.toml"\n'
                    'presets = ["openclaw-2026.02", "qmd"]\noverrides = { embedder = { name = "hash" } }\n',
                    encoding="utf-8")
    dry = _harness(["study", str(spec), "--dry-run"], plugin_path, tmp_path)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert dry.stdout.splitlines() == [f"{spec}: preset-passes (harness study), 2 cells", "  openclaw-2026.02", "  qmd"]
    out = tmp_path / "out"
    result = _harness(["study", str(spec), "--out", str(out)], plugin_path, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == f"wrote {out / 'passes.json'} and {out / 'passes.md'} (2 cells)"
    doc = json.loads((out / "passes.json").read_text(encoding="utf-8"))
    assert [(row["preset"], row["queries"]) for row in doc["rows"]] == [("openclaw-2026.02", 10), ("qmd", 10)]
    assert "| qmd | " in (out / "passes.md").read_text(encoding="utf-8")
    schema = _harness(["schema", "--kind", "preset-passes"], plugin_path, tmp_path)
    assert json.loads(schema.stdout)["properties"]["kind"]["const"] == "preset-passes"
    refused = _harness(["study", str(spec), "--preset", "qmd"], plugin_path, tmp_path)  # it takes no --preset
    assert refused.returncode == 2 and "--preset" in refused.stderr


def test_without_the_plugin_its_study_kind_is_unknown(tmp_path):
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYTHONPATH", None)
    spec = tmp_path / "passes.toml"
    spec.write_text('kind = "preset-passes"\nname = "p"\n', encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "harness.cli", "study", str(spec), "--dry-run"],
                            capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert result.returncode == 2 and "kind: 'preset-passes' is not a kind of study file; one of experiment, " \
        "matrix" in result.stderr
