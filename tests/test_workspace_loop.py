"""The loop a user goes through on their own workspace, by the CLI: init, run, report, edit openclaw.json,
run again (followed and said; nothing of the previous run left stale), diff (the configuration first)."""
from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from harness.cli import app
from tests.conftest import ROOT

EXAMPLE = ROOT / "datasets" / "example-workspace"
HASH = ["--set", "embedder.name=hash"]


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_edit_openclaw_json_rerun_and_diff(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    work = tmp_path / "ws"
    shutil.copytree(EXAMPLE, work)
    evals, out = tmp_path / "eval", tmp_path / "run"
    invoke("init", str(work), "--out", str(evals), "--queries", str(work / "queries.yaml"), "--now", "2026-03-08")
    first = invoke("run", str(evals / "experiment.toml"), "--out", str(out), *HASH)
    assert "openclaw.json read now" in first and "query.minScore = 0.3" in first
    shutil.copy(out / "results.json", tmp_path / "before.json")
    invoke("report", str(out / "results.json"))
    invoke("export", str(out / "results.json"))
    assert (out / "report.html").exists() and (out / "export" / "chunk.run").exists()
    before_html = (out / "report.html").read_text(encoding="utf-8")

    cfg = work / "openclaw.json"
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("minScore: 0.3", "minScore: 0.6"), encoding="utf-8")
    second = invoke("run", str(evals / "experiment.toml"), "--out", str(out), *HASH)
    assert "query.minScore = 0.6" in second  # followed without re-running init, and said
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["config"]["postprocess"][-1]["min_score"] == 0.6
    # nothing in the folder describes the previous run: the page is redrawn, the export removed
    assert not (out / "export").exists() and "removed" in second and "export" in second
    after_html = (out / "report.html").read_text(encoding="utf-8")
    assert after_html != before_html and "0.6" in after_html

    diff = invoke("diff", str(tmp_path / "before.json"), str(out / "results.json"), "--markdown",
                  str(tmp_path / "diff.md"))
    lines = diff.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("configuration:"))
    assert "[[postprocess]] min_score min_score: 0.3 -> 0.6" in lines[at + 1]
    assert "openclaw.json memory.search.query.minScore: 0.3 -> 0.6" in diff
    assert at < next(i for i, line in enumerate(lines) if "queries moved" in line)  # configuration first
    md = (tmp_path / "diff.md").read_text(encoding="utf-8")
    assert "| query |" in md and md.index("Configuration differences") < md.index("| query |")
