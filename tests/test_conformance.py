"""The conformance runner (harness/conformance/runner.py) without the real systems: the skip when
npm is unreachable, the gate against the committed report, the cache of real runs, the report, and the
OpenClaw module's comparisons on hand-made driver documents.  `make conformance` runs the real thing."""
from __future__ import annotations

import json
import sys
import types

import pytest

from harness.cli.conformance import run_conformance
from harness.conformance import base, openclaw, runner
from harness.conformance.base import Check, Difference, RealRuns


def _check(agreed, total=34, gated=True, what="FTS-only results: top-5 files", workspace="round3"):
    return Check("openclaw", "openclaw-2026.08-fts", "openclaw 2026.8.1", what, workspace, agreed, total, gated)


def test_skips_with_a_clear_line_when_npm_is_unreachable(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(runner, "install", lambda *a, **k: runner.SKIP_EXIT_CODE)
    assert run_conformance(tmp_path / "out") == 0
    assert capsys.readouterr().out.startswith("conformance: SKIPPED (")
    assert not (tmp_path / "out").exists()


def test_an_install_failure_fails(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(runner, "install", lambda *a, **k: 1)
    assert run_conformance(tmp_path / "out") == 1
    assert "FAILED to install" in capsys.readouterr().err


def test_gate_fails_on_a_drop_or_a_lost_check_and_ignores_information():
    committed = {"checks": [
        {**_check(34).as_dict()},
        {**_check(30, gated=False, what="info").as_dict()},
        {**_check(20, 20, workspace="cmrc20").as_dict()},
    ]}
    assert runner.gate([_check(34), _check(0, gated=False, what="info"), _check(20, 20, workspace="cmrc20")],
                       committed) == []
    failures = runner.gate([_check(33)], committed)
    assert failures == [f"{_check(33).key}: 33/34, committed 34/34",
                        f"{_check(20, 20, workspace='cmrc20').key}: no longer measured (committed 20/20)"]
    assert runner.gate([_check(1)], None) == []  # nothing committed yet: nothing to fall below


def _fake_module(agreed: int, differences: list[Difference]):
    """A comparison module whose one check agrees on `agreed` of 34 queries in every workspace."""
    module = types.ModuleType("fake_conformance")
    module.NAME = "fake"
    module.SYSTEMS = [("openclaw", "0.0.1")]
    module.NOTES = "- a note"
    module.compare = lambda workspaces, real: [
        Check(module.NAME, "openclaw-2026.08", "openclaw 0.0.1", "keyword leg: top-5 files", ws.name, agreed, 34, True,
              list(differences)) for ws in workspaces]
    return module


@pytest.mark.slow  # the conformance suite's machinery end to end
def test_a_run_writes_the_report_and_keeps_the_committed_one_on_a_drop(monkeypatch, tmp_path):
    monkeypatch.setattr(runner, "install", lambda *a, **k: 0)
    out = tmp_path / "reports"
    diff = Difference("T3", "美国手机号", "a:1-2 0.9000", "b:1-2 0.9000",
                      "the same chunks and scores; equal scores in another order (tie order)")
    monkeypatch.setitem(sys.modules, "fake_conformance", _fake_module(33, [diff]))
    assert run_conformance(out, modules=("fake_conformance",)) == 0
    md = (out / "conformance.md").read_text(encoding="utf-8")
    assert "| openclaw-2026.08 | openclaw 0.0.1 | keyword leg: top-5 files | 33/34 ⚠ |" in md
    assert "equal scores in another order (tie order)" in md and "## Notes: fake" in md
    assert "## SPEC.md behaviours per preset" in md
    doc = json.loads((out / "conformance.json").read_text(encoding="utf-8"))
    assert {c["workspace"] for c in doc["checks"]} == {"round1", "round2", "round3", "round4", "cmrc20",
                                                        "cmrc-sample", "locomo-conv-26", "locomo-conv-30"}
    assert doc["workspaces"]["cmrc-sample"] == {"files": 120, "queries": 20, "now": None}
    assert doc["workspaces"]["locomo-conv-26"]["queries"] == runner.LOCOMO_QUESTIONS
    assert doc["workspaces"]["locomo-conv-30"]["now"].startswith("2023-")  # asked as of its last session
    assert doc["workspaces"]["cmrc20"] == {"files": 848, "queries": 20, "now": None}
    # one fewer agreeing item: fails, and the committed report stays as it was
    monkeypatch.setitem(sys.modules, "fake_conformance", _fake_module(32, [diff, diff]))
    assert run_conformance(out, modules=("fake_conformance",)) == 1
    assert (out / "conformance.md").read_text(encoding="utf-8") == md
    assert "32/34" in (out / "conformance.new.md").read_text(encoding="utf-8")
    assert run_conformance(out, modules=("fake_conformance",), accept=True) == 0  # on purpose
    assert "32/34" in (out / "conformance.md").read_text(encoding="utf-8")


def test_real_runs_are_cached_per_input(monkeypatch, tmp_path):
    calls = []

    def fake_run_real(system, version, workspace, queries, *, now=None, max_results=50):
        calls.append((system, version, max_results))
        return {"system": system, "version": version, "queries": []}

    monkeypatch.setattr(base, "run_real", fake_run_real)
    [ws] = runner.render_workspaces(tmp_path / "ws", ["round3"])
    real = RealRuns(tmp_path / "cache", log=lambda message: None)
    first = real.get("openclaw", "2026.8.1", ws, max_results=6)
    assert real.get("openclaw", "2026.8.1", ws, max_results=6) == first and len(calls) == 1
    real.get("openclaw", "2026.8.1", ws, max_results=10)  # another input: another run
    (ws.layout.root / ws.layout.files[0]).write_text("changed\n", encoding="utf-8")
    real.get("openclaw", "2026.8.1", ws, max_results=6)  # the workspace changed: run again
    assert len(calls) == 3
    RealRuns(tmp_path / "cache", refresh=True, log=lambda message: None).get("openclaw", "2026.8.1", ws,
                                                                              max_results=6)
    assert len(calls) == 4


@pytest.fixture(scope="module")
def round3(tmp_path_factory):
    [ws] = runner.render_workspaces(tmp_path_factory.mktemp("ws"), ["round3"])
    return ws


def test_openclaw_chunk_check_against_a_stored_chunk_list(round3):
    chunks = openclaw.preset_chunks("openclaw-2026.08", round3)
    doc = {"chunks": [{"path": c.path, "startLine": c.start_line, "endLine": c.end_line, "hash": c.hash}
                      for c in chunks]}
    check, files = openclaw.chunk_check("openclaw-2026.08", "2026.8.1", round3, doc, gated=True)
    assert (check.agreed, check.total, files) == (len(chunks), len(chunks), set())
    doc["chunks"][0] = {**doc["chunks"][0], "endLine": doc["chunks"][0]["endLine"] - 1}
    check, files = openclaw.chunk_check("openclaw-2026.08", "2026.8.1", round3, doc, gated=True)
    assert check.agreed == len(chunks) - 1 and files == {chunks[0].path}
    assert check.differences[0].cause == "boundaries differ"


def test_openclaw_lists_are_compared_file_by_file_and_explained(round3):
    ours = openclaw.lexical_leg("openclaw-2026.08", round3)
    theirs = {qid: list(hits) for qid, hits in ours.items()}
    swapped = next(qid for qid, hits in ours.items() if len(hits) >= 2 and hits[0][0] != hits[1][0])
    theirs[swapped] = [theirs[swapped][1], theirs[swapped][0], *theirs[swapped][2:]]
    top5, whole = openclaw.list_checks("openclaw-2026.08", "2026.8.1", round3, ours, theirs, "keyword leg",
                                       gated=True, chunk_files=set())
    assert (top5.agreed, top5.total) == (33, 34) and (whole.agreed, whole.total) == (33, 34)
    cause = top5.differences[0].cause
    assert cause.startswith("the same chunks") and top5.differences[0].item == swapped
    hits = ours[swapped]
    assert openclaw.explain(hits, hits[:1], {hits[1][0]}, "unexplained").startswith("chunk boundaries differ in")


def test_a_real_system_that_fails_writes_nothing(monkeypatch, tmp_path, capsys):
    from harness.systems.real import DriverFailed

    monkeypatch.setattr(runner, "install", lambda *a, **k: 0)
    module = types.ModuleType("failing_conformance")
    module.NAME, module.SYSTEMS, module.NOTES = "failing", [("openclaw", "0.0.1")], ""

    def compare(workspaces, real):
        raise DriverFailed("openclaw", "0.0.1", "indexing (sync)", "fetch failed")

    module.compare = compare
    monkeypatch.setitem(sys.modules, "failing_conformance", module)
    assert run_conformance(tmp_path / "out", modules=("failing_conformance",), workspaces=["round3"]) == 1
    assert "FAILED, nothing written: openclaw 0.0.1 failed while indexing (sync): fetch failed" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # the conformance suite's machinery end to end
def test_the_default_size_gates_what_it_measures_and_leaves_the_committed_report(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(runner, "install", lambda *a, **k: 0)
    out = tmp_path / "reports"
    monkeypatch.setitem(sys.modules, "fake_conformance", _fake_module(33, []))
    full_only = _fake_module(34, [])
    full_only.NAME, full_only.SIZE = "slow", "full"
    monkeypatch.setitem(sys.modules, "slow_conformance", full_only)
    both = ("fake_conformance", "slow_conformance")
    assert run_conformance(out, modules=both) == 0  # the full size writes the committed report
    committed = (out / "conformance.json").read_text(encoding="utf-8")
    assert run_conformance(out, modules=both, size="default") == 0
    doc = json.loads((out / "conformance.default.json").read_text(encoding="utf-8"))
    assert {c["workspace"] for c in doc["checks"]} == {"round1", "round2", "round3", "round4", "cmrc20", "cmrc-sample"}
    assert {c["module"] for c in doc["checks"]} == {"fake"}  # the full-size module did not run
    assert (out / "conformance.json").read_text(encoding="utf-8") == committed
    # 2 LoCoMo rows of the fake module and 8 of the full-size one are not measured, and said so
    assert "10 gated rows of the committed report were not measured by this run (size default" in \
        capsys.readouterr().out
    # a drop in a row the default size measures still fails it
    monkeypatch.setitem(sys.modules, "fake_conformance", _fake_module(32, []))
    assert run_conformance(out, modules=both, size="default") == 1
    assert (out / "conformance.json").read_text(encoding="utf-8") == committed


@pytest.mark.slow  # the conformance suite's machinery end to end
def test_a_module_that_skips_for_a_stated_reason_is_not_measured_rather_than_failed(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(runner, "install", lambda *a, **k: 0)
    out = tmp_path / "reports"
    module = _fake_module(34, [])
    monkeypatch.setitem(sys.modules, "fake_conformance", module)
    assert run_conformance(out, modules=("fake_conformance",)) == 0
    module.SKIPPED = "no source of the plugin here"  # e.g. lancedb_pro without ../shared/vendor or LANCEDB_PRO_SRC
    module.compare = lambda workspaces, real: []
    assert run_conformance(out, modules=("fake_conformance",)) == 0
    assert "8 gated rows of the committed report were not measured" in capsys.readouterr().out
    assert (out / "conformance.incomplete.json").is_file()  # the committed report keeps the module's rows
    module.SKIPPED = None  # measuring nothing without a reason still fails
    assert run_conformance(out, modules=("fake_conformance",)) == 1


def test_a_run_through_the_front_is_run_again_when_the_cache_holds_other_vectors(monkeypatch, tmp_path):
    """The run's key names the model, not the vectors: a cache folder filled by another build answers the same
    texts with other vectors, and a run made with those must not be reused."""
    import numpy as np

    from harness.stages.embedders import EmbeddingCache, text_sha256

    calls = []
    monkeypatch.setattr(base, "run_real", lambda *a, **k: calls.append(1) or {"queries": []})
    sha = text_sha256("query: 美国手机号")

    class Front:
        base_url, model = "http://127.0.0.1:9/v1", "e5-test"

        def __init__(self, cache):
            self.cache = cache

        def take_requests(self):
            return [{"role": "query", "count": 1, "texts": ["query: 美国手机号"]}]

    [ws] = runner.render_workspaces(tmp_path / "ws", ["round3"])
    mine = EmbeddingCache(tmp_path / "mine.sqlite")
    mine.put_many("e5-test", "query", [(sha, np.ones(4, dtype=np.float32))])
    real = RealRuns(tmp_path / "runs", log=lambda message: None)
    real._front = Front(mine)
    provider = {"model": "multilingual-e5-small-q4"}
    doc = real.get("openclaw", "2026.9.6", ws, max_results=6, provider=provider)
    assert doc["vectors"] and len(calls) == 1
    real.get("openclaw", "2026.9.6", ws, max_results=6, provider=provider)
    assert len(calls) == 1  # the same cache: the cached run
    other = EmbeddingCache(tmp_path / "other.sqlite")  # another build's vector of the same text
    other.put_many("e5-test", "query", [(sha, np.full(4, 1.0001, dtype=np.float32))])
    real._front = Front(other)
    real.get("openclaw", "2026.9.6", ws, max_results=6, provider=provider)
    assert len(calls) == 2
