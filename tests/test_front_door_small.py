"""The front door's small dead ends (issue 35): `harness --help` names what is installed and lists the common
commands first, flags without a value; `--system openclaw@VERSION` checks the release against the npm
registry's list before installing anything; study-file paths read from the file's folder; `harness init` on
OpenClaw's state folder points to --openclaw-home."""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.cli.common import COMMON_COMMANDS
from tests.conftest import ROOT

runner = CliRunner()


# --- harness --help ---------------------------------------------------------------------------------------------


def _help() -> str:
    result = runner.invoke(app, ["--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


def test_help_lists_the_common_commands_first_and_in_order():
    listed = re.findall(r"^│ ([a-z][a-z0-9-]+)\s{2,}", _help(), flags=re.MULTILINE)
    assert listed[:len(COMMON_COMMANDS)] == list(COMMON_COMMANDS), listed
    assert listed.index("init") == 0 and set(listed) > set(COMMON_COMMANDS)  # the others follow, none lost


def test_help_shows_no_value_for_a_flag():
    assert "<bool>" not in _help()
    judge = runner.invoke(app, ["judge", "--help"], terminal_width=200).output
    assert "--no-page" in judge and "<bool>" not in judge and "<int>" in judge  # a real value keeps its type


def test_help_names_no_file_a_wheel_lacks_and_harness_docs_says_where_they_are(monkeypatch, tmp_path):
    text = _help()
    assert "README.md" not in text and "docs/" not in text and not re.search(r"\b[\w/]+\.py\b", text)
    assert "harness docs" in text
    for name in ("study", "presets", "scale"):  # their one-line summaries name no repository file either
        assert "docs/" not in (runner.invoke(app, [name, "--help"], terminal_width=200).output)
    listing = runner.invoke(app, ["docs"])
    assert listing.exit_code == 0 and str(ROOT / "docs" / "index.md") in listing.output
    assert "tutorials/your-agent" in listing.output
    readme = runner.invoke(app, ["docs", "readme"])
    assert readme.exit_code == 0 and readme.output.strip() == (ROOT / "README.md").read_text(encoding="utf-8").strip()
    page = runner.invoke(app, ["docs", "your-agent"])
    assert page.exit_code == 0
    assert page.output.strip() == (ROOT / "docs/tutorials/your-agent.md").read_text(encoding="utf-8").strip()
    missing = runner.invoke(app, ["docs", "no-such-page"])
    assert missing.exit_code == 2 and "no page 'no-such-page'" in missing.output and "tutorials/your-agent" in missing.output
    # installed from a wheel: no repository beside the package; the README still comes from the package metadata
    monkeypatch.setattr("harness.bundled.REPOSITORY", tmp_path)
    wheel = runner.invoke(app, ["docs"])
    assert wheel.exit_code == 0 and "installed package's metadata" in wheel.output and "clone" in wheel.output
    readme = runner.invoke(app, ["docs", "readme"])
    assert readme.exit_code == 0 and "harness" in readme.output.lower() and len(readme.output) > 1000


# --- --system openclaw@VERSION ------------------------------------------------------------------------------------

RELEASES = ["2026.2.22", "2026.3.7", "2026.8.1", "2026.9.6", "2026.9.7", "2026.10.2"]  # a list as npm gives it


def _without_npm(monkeypatch, tmp_path) -> Path:
    """A conformance folder of its own and a PATH on which there is no npm (nothing can be downloaded)."""
    folder = tmp_path / "conformance"
    monkeypatch.setenv("HARNESS_CONFORMANCE_DIR", str(folder))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sed", "head", "mkdir", "dirname", "timeout", "printf", "cat", "chmod"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, bin_dir / tool)
    monkeypatch.setenv("PATH", str(bin_dir))
    return folder


def test_a_typod_release_is_refused_from_the_registry_list_before_anything_is_installed(monkeypatch, tmp_path):
    folder = _without_npm(monkeypatch, tmp_path)
    folder.mkdir()
    cache = folder / "openclaw-versions.json"
    for age, says in ((60, "is not a release on the npm registry"),  # a list fetched a minute ago: not asked again
                      (86400 * 30, "is not in the npm registry's release list as cached")):  # a stale one, offline
        cache.write_text(json.dumps({"package": "openclaw", "fetched": time.time() - age, "versions": RELEASES}),
                         encoding="utf-8")
        result = runner.invoke(app, ["run", str(ROOT / "experiments/round4.toml"), "--system", "openclaw@2026.9.66",
                                     "--out", str(tmp_path / "out")])
        assert result.exit_code == 2, result.output
        (line,) = [x for x in result.output.splitlines() if x.strip()]
        assert line.startswith(f"error: openclaw 2026.9.66 {says}"), line
        nearest = line.split("the nearest: ")[1]
        assert "2026.9.6" in nearest and "2026.9.7" in nearest and "2026.2.22" not in nearest
        assert sorted(p.name for p in folder.iterdir()) == ["openclaw-versions.json"]  # no Node, no release
    assert "npm is not on PATH" in line


def test_offline_the_release_cannot_be_checked_and_it_says_so(monkeypatch, tmp_path):
    folder = _without_npm(monkeypatch, tmp_path)
    result = runner.invoke(app, ["run", str(ROOT / "experiments/round4.toml"), "--system", "openclaw@2026.9.6",
                                 "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    (line,) = [x for x in result.output.splitlines() if x.strip()]
    assert "cannot check the release against the npm registry's list" in line and "npm is not on PATH" in line
    assert "offline" in line and "nothing was downloaded" in line
    assert not folder.exists() or not any(folder.iterdir())


def test_a_listed_release_passes_and_an_unlisted_one_refreshes_the_list(tmp_path):
    from harness.systems.npm_releases import UnknownRelease, check_release, nearest

    asked = []

    def fetch():
        asked.append(1)
        return RELEASES + ["2026.11.1"]

    (tmp_path / "openclaw-versions.json").write_text(json.dumps({"versions": RELEASES}), encoding="utf-8")  # undated: stale
    assert check_release("2026.9.6", tmp_path, fetch=fetch) == "cached list" and not asked
    assert check_release("2026.11.1", tmp_path, fetch=fetch) == "registry" and len(asked) == 1  # newer than the cache
    assert "2026.11.1" in json.loads((tmp_path / "openclaw-versions.json").read_text(encoding="utf-8"))["versions"]
    with pytest.raises(UnknownRelease, match=r"2026\.9\.6"):
        check_release("2026.9.66", tmp_path, fetch=fetch)
    assert nearest("2026.10.1", RELEASES) == ["2026.9.7", "2026.10.2"]


# --- study-file paths ---------------------------------------------------------------------------------------------


def _workspace(folder: Path, text: str) -> None:
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text(f"# Memory\n\n{text}\n", encoding="utf-8")
    (folder / "queries.yaml").write_text('- id: q1\n  text: "budget"\n  path: MEMORY.md\n', encoding="utf-8")


def test_study_file_paths_are_read_from_the_files_folder(tmp_path, monkeypatch):
    from harness.config import load_experiment
    from harness.pipeline import load_dataset
    from harness.studies.matrix import load_matrix

    study = tmp_path / "study"
    _workspace(study / "ws", "the study's own workspace")
    (study / "exp.toml").write_text('name = "mine"\npreset = "openclaw-2026.02"\n[dataset]\nname = "workspace"\npath = "ws"\n'
                                    'queries = "ws/queries.yaml"\n', encoding="utf-8")
    (study / "matrix.toml").write_text('kind = "matrix"\nname = "m"\n[[runs]]\nlabel = "r"\nexperiment = "exp.toml"\n'
                                       '[[values]]\nlabel = "t"\ntokenizer = { name = "trigram" }\n', encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    _workspace(elsewhere / "ws", "a workspace of the same name in the working folder")
    monkeypatch.chdir(elsewhere)  # the same relative names exist here too: the study file's folder wins
    config = load_experiment(study / "exp.toml")
    assert Path(config.dataset.params["path"]) == study / "ws"
    dataset = load_dataset(config)
    assert "the study's own workspace" in "".join(dataset.texts().values())
    assert Path(load_matrix(study / "matrix.toml").runs[0].experiment) == study / "exp.toml"
    # a path that is not beside the file is read as before: the working folder (here), then the shipped files
    (study / "exp.toml").write_text('preset = "openclaw-2026.02"\n[dataset]\nname = "workspace"\npath = "ws2"\nqueries = "ws2/queries.yaml"\n',
                                    encoding="utf-8")
    _workspace(elsewhere / "ws2", "only in the working folder")
    assert load_experiment(study / "exp.toml").dataset.params["path"] == "ws2"
    shipped = load_experiment(ROOT / "experiments/round3.toml")
    assert shipped.dataset.params.get("path", "datasets/king78") == "datasets/king78"


# --- init on the state folder -------------------------------------------------------------------------------------


def test_init_on_openclaws_state_folder_points_to_openclaw_home(tmp_path):
    home = ROOT / "datasets" / "example-openclaw-home"
    result = runner.invoke(app, ["init", str(home), "--out", str(tmp_path / "e")])
    assert result.exit_code == 2, result.output
    (line,) = [x for x in result.output.splitlines() if x.strip()]
    assert "no memory files found" not in line and "state folder" in line
    assert f"--openclaw-home {home}" in line and f"harness init {home / 'workspace'}" in line
    assert not (tmp_path / "e").exists()
    user_home = tmp_path / "user"
    shutil.copytree(home, user_home / ".openclaw", ignore=shutil.ignore_patterns("agents", "*.sqlite"))
    result = runner.invoke(app, ["init", str(user_home), "--out", str(tmp_path / "e")])  # the folder holding it
    assert result.exit_code == 2 and f"--openclaw-home {user_home / '.openclaw'}" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["init", str(empty), "--out", str(tmp_path / "e")])  # an ordinary folder: as before
    assert result.exit_code == 2 and "no memory files found" in result.output


# --- the benchmark files cannot rot -------------------------------------------------------------------------------


def test_ci_runs_every_benchmark_files_assertions():
    """`make bench` runs on a quiet machine now and then; its files' assertions (the 32 folds that became 20)
    must not wait for it: `make bench-check` runs every file `make bench` times, untimed, and CI runs it."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    files = re.search(r"^BENCH_FILES := ((?:.*\\\n)*.*)$", makefile, flags=re.MULTILINE)
    assert files, "no BENCH_FILES in the Makefile"
    listed = set(files.group(1).replace("\\\n", " ").split())
    timed_only = {"tests/bench_executor.py"}  # Ray on this machine, run by hand (its docstring says so)
    assert listed | timed_only == {f"tests/{p.name}" for p in (ROOT / "tests").glob("bench_*.py")}
    check = re.search(r"^bench-check:.*\n\t(.+)$", makefile, flags=re.MULTILINE)
    assert check and "$(BENCH_FILES)" in check.group(1) and "--benchmark-disable" in check.group(1)
    assert "$(BENCH_FILES)" in re.search(r"^BENCH := (.+)$", makefile, flags=re.MULTILINE).group(1)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "make bench-check" in ci and ci.index("make bench-check") > ci.index("make test")


def test_harness_docs_into_head_is_no_internal_error():
    import subprocess
    import sys

    proc = subprocess.run(f"'{sys.executable}' -m harness docs readme | head -n 1", shell=True, capture_output=True,
                          text=True, timeout=120)
    assert proc.stdout.startswith("# ") and "internal error" not in proc.stderr and "Traceback" not in proc.stderr
