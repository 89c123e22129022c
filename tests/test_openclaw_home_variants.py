"""The readers of an OpenClaw home on the variations a real home has (issue 36): a changed embedding model,
per-agent settings in agents.entries with their own workspace, a JSONL beside the agent database, judgments
whose file changed, USER.md, compound turns and the generic read tool, pruned-session archives, dates in the
configured timezone.  Each home is built here, small, in tmp_path, in 2026.9.6's layout (the agent database
agents/<id>/agent/openclaw-agent.sqlite with its memory index and transcript_events rows of transcript version
4); tests/test_openclaw_home_releases.py has the real release write one."""
from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import ConfigError, DataError
from harness.inputs.anchors import anchor_of, reanchor
from harness.inputs.home_init import init_openclaw_home
from harness.inputs.openclaw_config import read_openclaw_config
from harness.inputs.openclaw_home import locate
from harness.inputs.openclaw_sessions import ReadStats, read_sessions
from harness.inputs.session_mining import mine

runner = CliRunner()
T0 = datetime(2026, 9, 1, 23, 30, tzinfo=timezone.utc)  # 07:30 the next day in Asia/Shanghai
MEMORY = "# 记忆\n\n## 出行\n我下周去杭州出差。\n住在西湖边的酒店。\n\n## 饮食\n我不吃香菜。\n"
USER = "# 用户\n\n名字：小林\n时区：上海\n"


def chunk_lines(text: str) -> list[tuple[int, int, str]]:
    lines = text.split("\n")
    return [(1, len(lines), text)]


SCHEMA = """
CREATE TABLE schema_meta (meta_key TEXT PRIMARY KEY, app_version TEXT, schema_version INTEGER);
CREATE TABLE memory_index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE memory_index_sources (path TEXT, source TEXT, hash TEXT, mtime REAL, size INTEGER);
CREATE TABLE memory_index_chunks (id TEXT UNIQUE, chunk_rowid INTEGER, path TEXT, source TEXT, start_line INTEGER,
  end_line INTEGER, hash TEXT, model TEXT, text TEXT, embedding BLOB);
CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, event_zstd BLOB,
  event_utf8_bytes INTEGER);
CREATE TABLE session_windows (session_id TEXT, agent_harness_id TEXT, acp_owned INTEGER);
"""


def agent_db(path: Path, files: dict[str, str], sessions: dict[str, list[dict[str, Any]]], *,
             model: str = "e5-small", provider: str = "openai", dims: int = 4) -> Path:
    """An agent database as 2026.9.6 writes it: the memory index (one chunk a file, binary64 vectors) and
    each session's transcript events."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO schema_meta VALUES ('primary', '2026.9.6', 9)")
    conn.execute("INSERT INTO memory_index_meta VALUES ('memory_index_meta_v1', ?)", (json.dumps(
        {"provider": provider, "model": model, "providerKey": "k" * 16, "vectorDims": dims, "chunkTokens": 400,
         "chunkOverlap": 80, "sources": ["memory"]}),))
    rng = np.random.default_rng(0)
    n = 0
    for rel, text in files.items():
        sha = hashlib.sha256(text.encode()).hexdigest()
        conn.execute("INSERT INTO memory_index_sources VALUES (?, 'memory', ?, 0, ?)", (rel, sha, len(text)))
        for start, end, body in chunk_lines(text):
            n += 1
            vec = rng.normal(size=dims).astype("<f8").tobytes()
            conn.execute("INSERT INTO memory_index_chunks VALUES (?, ?, ?, 'memory', ?, ?, ?, ?, ?, ?)",
                         (f"c{n}", n, rel, start, end, hashlib.sha256(body.encode()).hexdigest(), model, body, vec))
    for sid, events in sessions.items():
        conn.execute("INSERT INTO session_windows VALUES (?, 'openclaw', 0)", (sid,))
        for seq, event in enumerate(events):
            conn.execute("INSERT INTO transcript_events VALUES (?, ?, ?, NULL, NULL)",
                         (sid, seq, json.dumps(event, ensure_ascii=False)))
    conn.commit()
    conn.close()
    return path


class Transcript:
    """Transcript entries of one session, in the shape 2026.9.6 stores (header version 4)."""

    def __init__(self, sid: str, at: datetime, cwd: Path):
        self.sid, self.at, self.n = sid, at, 0
        self.events: list[dict[str, Any]] = [{"type": "session", "version": 4, "id": sid,
                                               "timestamp": at.isoformat(), "cwd": str(cwd)}]

    def _message(self, message: dict[str, Any]) -> None:
        self.n += 1
        when = self.at + timedelta(seconds=self.n)
        self.events.append({"type": "message", "id": f"e{self.n}", "timestamp": when.isoformat(),
                            "message": {**message, "timestamp": int(when.timestamp() * 1000)}})

    def user(self, text: str) -> "Transcript":
        self._message({"role": "user", "content": [{"type": "text", "text": text}]})
        return self

    def call(self, call_id: str, name: str, args: dict[str, Any]) -> "Transcript":
        self._message({"role": "assistant", "content": [{"type": "toolCall", "id": call_id, "name": name,
                                                         "arguments": args}]})
        return self

    def search(self, call_id: str, query: str, results: list[tuple[str, int, int, str]]) -> "Transcript":
        self.call(call_id, "memory_search", {"query": query})
        rows = [{"path": p, "startLine": s, "endLine": e, "score": 0.5, "snippet": snip, "source": "memory"}
                for p, s, e, snip in results]
        self._message({"role": "toolResult", "toolCallId": call_id, "toolName": "memory_search",
                       "content": [{"type": "text", "text": json.dumps({"results": rows}, ensure_ascii=False)}]})
        return self

    def get(self, call_id: str, path: str, start: int | None = None, lines: int | None = None) -> "Transcript":
        args: dict[str, Any] = {"path": path}
        if start is not None:
            args["from"] = start
        if lines is not None:
            args["lines"] = lines
        self.call(call_id, "memory_get", args)
        self._message({"role": "toolResult", "toolCallId": call_id, "toolName": "memory_get",
                       "content": [{"type": "text", "text": json.dumps({"path": path, "text": "..."})}]})
        return self

    def jsonl(self, path: Path, keep: int | None = None) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        events = self.events if keep is None else self.events[:keep]
        path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), encoding="utf-8")
        return path


def span(text: str, start: int, end: int) -> str:
    return "\n".join(text.split("\n")[start - 1:end])


def whole(text: str) -> tuple[int, int]:
    return 1, len(text.split("\n"))


def simple_home(tmp_path: Path, config: dict[str, Any], *, agent: str = "main", workspace: Path | None = None,
                user_md: bool = False, sessions: list[Transcript] | None = None, **db: Any) -> Path:
    home = tmp_path / ".openclaw"
    ws = workspace or home / "workspace"
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_text(MEMORY, encoding="utf-8")
    files = {"MEMORY.md": MEMORY}
    if user_md:
        (ws / "USER.md").write_text(USER, encoding="utf-8")
        files["USER.md"] = USER
    home.mkdir(parents=True, exist_ok=True)
    (home / "openclaw.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    if sessions is None:
        s, e = whole(MEMORY)
        sessions = [Transcript("s1", T0, ws).user("我住哪").search("c1", "我住在哪家酒店", [("MEMORY.md", s, e, MEMORY)])
                    .get("c2", "MEMORY.md", 4, 2)]
    agent_db(home / "agents" / agent / "agent" / "openclaw-agent.sqlite", files,
             {t.sid: t.events for t in sessions}, **db)
    return home


PROVIDER = {"provider": "openai", "model": "e5-small", "remote": {"baseUrl": "http://127.0.0.1:9/v1"}}


# --- 1. the index's model ------------------------------------------------------------------------------------


def test_a_changed_embedding_model_is_one_line_and_exit_2_naming_the_field(tmp_path):
    home = simple_home(tmp_path, {"memory": {"search": {**PROVIDER, "model": "bge-m3"}}})
    result = runner.invoke(app, ["init", "--openclaw-home", str(home), "--out", str(tmp_path / "eval")])
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert "memory.search.model" in line and "'bge-m3'" in line and "e5-small" in line
    assert "--reembed" in line and "openclaw memory index --force" in line


def test_an_agents_own_model_is_compared_and_reembed_embeds_with_the_configured_model(tmp_path):
    config = {"memory": {"search": PROVIDER},
              "agents": {"entries": {"main": {"memory": {"search": {"model": "bge-m3"}}}}}}
    home = simple_home(tmp_path, config)
    with pytest.raises(DataError, match=r"agents\.entries\.main\.memory\.search\.model"):
        init_openclaw_home(home, tmp_path / "eval", index_vectors=True)
    r = init_openclaw_home(home, tmp_path / "eval", reembed=True)
    text = r.files["experiment.toml"].read_text(encoding="utf-8")
    assert 'name = "openai-compatible"' in text and 'model = "bge-m3"' in text and "openclaw-index" not in text


def test_a_run_stops_when_openclaw_json_changes_model_after_init(tmp_path):
    from harness.inputs.workspace_config import openclaw_layer

    home = simple_home(tmp_path, {"memory": {"search": PROVIDER}})
    config_path = home / "openclaw.json"
    experiment = {"dataset": {"name": "workspace", "config": str(config_path), "follow_config": True},
                  "embedder": {"name": "openclaw-index", "model": "e5-small", "provider": "openai"}}
    assert openclaw_layer(experiment, "openclaw-2026.09", "x.toml") is not None  # the same model: runs
    config_path.write_text(json.dumps({"memory": {"search": {**PROVIDER, "model": "bge-m3"}}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="now configures embedding model 'bge-m3'.*'e5-small'"):
        openclaw_layer(experiment, "openclaw-2026.09", "x.toml")


def test_a_provider_answering_with_another_model_stops_the_run(tmp_path):
    from harness.errors import EmbeddingError
    from harness.stages.embedders.openclaw_index import OpenClawIndexEmbedder

    home = simple_home(tmp_path, {"memory": {"search": PROVIDER}})
    embedder = OpenClawIndexEmbedder(index=str(home / "agents/main/agent/openclaw-agent.sqlite"), model="e5-small",
                                     dims=4, base_url="http://127.0.0.1:9/v1")

    class Answering:
        answered_model = "text-embedding-3-large"

        def embed(self, texts, role):
            return np.ones((len(texts), 4), dtype=np.float32) / 2

    embedder._remote = Answering()
    with pytest.raises(EmbeddingError, match="answered with model 'text-embedding-3-large'"):
        embedder.embed(["你好吗"], "query")
    Answering.answered_model = "E5-Small:latest"  # the same model as another server spells it
    assert embedder.embed(["你好吗"], "query").shape == (1, 4)


# --- 2. per-agent settings -----------------------------------------------------------------------------------


def entries_config(tmp_path: Path) -> dict[str, Any]:
    """What `openclaw agents add work --workspace DIR` leaves: agents.entries.<id> with its workspace and its
    own memory.search over the defaults."""
    return {"memory": {"search": {**PROVIDER, "query": {"maxResults": 6, "minScore": 0.35}}},
            "agents": {"entries": {
                "main": {"default": True},
                "work": {"workspace": str(tmp_path / "elsewhere" / "work-ws"),
                         "memory": {"search": {"query": {"maxResults": 4, "minScore": 0.3}}}}}}}


def test_an_agents_entry_gives_its_workspace_and_its_own_max_results_and_min_score(tmp_path):
    config = entries_config(tmp_path)
    home = simple_home(tmp_path, config, agent="work", workspace=tmp_path / "elsewhere" / "work-ws")
    inst = locate(home, "work")
    assert inst.workspace == tmp_path / "elsewhere" / "work-ws" and inst.entry_field == "agents.entries.work"
    settings = read_openclaw_config(home / "openclaw.json", agent="work")
    assert settings.values["max_results"] == ("agents.entries.work.memory.search.query.maxResults", 4)
    assert settings.values["min_score"] == ("agents.entries.work.memory.search.query.minScore", 0.3)
    assert read_openclaw_config(home / "openclaw.json", agent="main").get("max_results") == 6
    r = init_openclaw_home(home, tmp_path / "eval", agent="work", index_vectors=False)
    text = r.files["experiment.toml"].read_text(encoding="utf-8")
    assert 'agent = "work"' in text and str(tmp_path / "elsewhere" / "work-ws") in text
    from harness.config import load_experiment

    experiment = load_experiment(r.files["experiment.toml"])
    assert experiment.search.max_results == 4
    assert [p for p in experiment.postprocess if p.name == "min_score"][0].params["min_score"] == 0.3


def test_the_release_rule_for_workspaces_and_the_default_agent(tmp_path):
    home = tmp_path / ".openclaw"
    home.mkdir()
    (home / "agents" / "main" / "agent").mkdir(parents=True)
    (home / "agents" / "main" / "agent" / "openclaw-agent.sqlite").write_bytes(b"")
    config = {"agents": {"defaults": {"workspace": str(tmp_path / "ws")}, "entries": {"main": {}, "work": {}}}}
    (home / "openclaw.json").write_text(json.dumps(config), encoding="utf-8")
    # two agents, none marked default: the release asks which, and so does the harness
    with pytest.raises(DataError, match=r"agents\.entries.*pass --agent.*main, work"):
        locate(home)
    # 2026.8.1 and 2026.9.6 (resolveAgentWorkspaceDir): an agent that is not the owner lives under the defaults'
    # workspace, in a folder named by its id
    assert locate(home, "work").workspace == tmp_path / "ws" / "work"
    config["agents"]["entries"]["main"]["default"] = True
    (home / "openclaw.json").write_text(json.dumps(config), encoding="utf-8")
    assert locate(home).agent == "main" and locate(home).workspace == tmp_path / "ws"


def test_a_missing_custom_workspace_names_the_field_it_came_from(tmp_path):
    config = entries_config(tmp_path)
    home = simple_home(tmp_path, config, agent="work", workspace=tmp_path / "other")
    with pytest.raises(DataError, match=r"agents\.entries\.work\.workspace in .*openclaw\.json names it"):
        init_openclaw_home(home, tmp_path / "eval", agent="work", index_vectors=False)


# --- 3. judgments anchored to content ------------------------------------------------------------------------


def test_an_anchor_holds_moves_with_its_text_and_drops_when_the_text_is_gone():
    judged = span(MEMORY, 4, 5)
    anchor = anchor_of(judged)
    assert reanchor(MEMORY, 4, 5, anchor) == (4, 5)
    moved = MEMORY.replace("## 出行\n", "## 出行\n新的一行。\n另一行。\n")
    assert reanchor(moved, 4, 5, anchor) == (6, 7)
    assert reanchor(MEMORY.replace("杭州", "苏州"), 4, 5, anchor) is None
    # 2026.2.22's snippet: trimmed, its citation appended; it is a prefix of the chunk
    assert reanchor(MEMORY, 4, 5, anchor_of(judged[:5] + "\n\nSource: MEMORY.md#L4-L5")) == (4, 5)


def test_a_judgment_on_a_changed_file_is_reanchored_or_dropped_never_applied_stale(tmp_path):
    from harness.pipeline import load_dataset

    s, e = 4, 5
    sessions = [Transcript("s1", T0, tmp_path / ".openclaw/workspace").user("酒店")
                .search("c1", "我住在哪家酒店", [("MEMORY.md", s, e, span(MEMORY, s, e))]).get("c2", "MEMORY.md", 4, 2),
                Transcript("s2", T0 + timedelta(days=1), tmp_path / ".openclaw/workspace").user("香菜")
                .search("c3", "我吃不吃香菜", [("MEMORY.md", 8, 8, span(MEMORY, 8, 8))]).get("c4", "MEMORY.md", 8, 1)]
    home = simple_home(tmp_path, {"memory": {"search": PROVIDER}}, sessions=sessions)
    r = init_openclaw_home(home, tmp_path / "eval", index_vectors=False, tuning_share=1.0)
    queries_yaml = r.files["queries.yaml"].read_text(encoding="utf-8")
    assert queries_yaml.count("anchor:") == 2
    # the user edits MEMORY.md: two lines added above the hotel, the coriander line rewritten
    edited = MEMORY.replace("## 出行\n", "## 出行\n(更新)\n\n").replace("我不吃香菜。", "我现在吃香菜了。")
    (home / "workspace" / "MEMORY.md").write_text(edited, encoding="utf-8")
    from harness.config import load_experiment

    dataset = load_dataset(load_experiment(r.files["experiment.toml"]))
    queries = {q.text: q for q in dataset.queries()}
    notes = " ".join(dataset.notes())
    hotel = queries["我住在哪家酒店"]
    assert list(hotel.relevant) == ["MEMORY.md#L6-L7"]  # where the judged text is now
    assert "re-anchored to lines 6-7" in notes
    assert "我吃不吃香菜" not in queries  # its only judgment no longer holds: dropped, not applied
    assert "lines 8-8 is dropped: the file changed since it was judged" in notes


def test_in_a_git_workspace_a_judgment_is_read_against_the_file_the_agent_saw(tmp_path, tmp_cache):
    """The same edit in a workspace OpenClaw initialised as a git repository and the user committed: replayed as
    asked, each question is searched on MEMORY.md as committed before it was asked, where both judgments hold
    at the lines the agent read; the coriander question, dropped on today's text, is evaluated there."""
    import os
    import subprocess

    from harness.config import load_experiment
    from harness.studies.experiment import run_experiment

    def git(*args: str, when: datetime | None = None) -> None:
        env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"}
        if when is not None:
            env.update(GIT_AUTHOR_DATE=when.isoformat(), GIT_COMMITTER_DATE=when.isoformat())
        subprocess.run(["git", "-C", str(home / "workspace"), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                        *args], env=env, check=True, capture_output=True)

    sessions = [Transcript("s1", T0, tmp_path / ".openclaw/workspace").user("酒店")
                .search("c1", "我住在哪家酒店", [("MEMORY.md", 4, 5, span(MEMORY, 4, 5))]).get("c2", "MEMORY.md", 4, 2),
                Transcript("s2", T0 + timedelta(days=1), tmp_path / ".openclaw/workspace").user("香菜")
                .search("c3", "我吃不吃香菜", [("MEMORY.md", 8, 8, span(MEMORY, 8, 8))]).get("c4", "MEMORY.md", 8, 1)]
    home = simple_home(tmp_path, {"memory": {"search": PROVIDER}}, sessions=sessions)
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "memory", when=T0 - timedelta(days=1))
    edited = MEMORY.replace("## 出行\n", "## 出行\n(更新)\n\n").replace("我不吃香菜。", "我现在吃香菜了。")
    (home / "workspace" / "MEMORY.md").write_text(edited, encoding="utf-8")
    git("commit", "-q", "-am", "edit", when=T0 + timedelta(days=3))
    r = init_openclaw_home(home, tmp_path / "eval", index_vectors=False, tuning_share=1.0)
    run = run_experiment(load_experiment(r.files["experiment.toml"], embedder={"name": "hash"}), cache=tmp_cache,
                         progress=False)
    rows = run.per_query.set_index("text")
    first = subprocess.run(["git", "-C", str(home / "workspace"), "rev-list", "-1", "HEAD~1"], capture_output=True,
                           text=True, check=True).stdout.strip()
    assert set(rows.index) == {"我住在哪家酒店", "我吃不吃香菜"}
    assert all(str(v).startswith(first[:12]) for v in rows["files_as_of"])
    # the judged spans where the agent read them, not where they are today (lines 6-7) or dropped (line 8)
    assert {d for q in run.runs.document_qrels.values() for d in q} == {f"@{first[:12]}/MEMORY.md#L4-L5",
                                                                          f"@{first[:12]}/MEMORY.md#L8-L8"}
    coriander = rows.loc["我吃不吃香菜"]
    assert coriander["passed_one_date"] is None  # not evaluable on today's text
    assert run.summary["replay"]["only_as_of_then"] == [coriander["query_id"]]


def test_the_pool_shows_only_spans_that_still_hold(tmp_path):
    from harness.judging.pool import Pool, PoolItem, PoolQuery, check_items

    pool = Pool([], 10, [], {"q1": PoolQuery("q1", "酒店", "x", "tuning",
                                             [PoolItem("MEMORY.md", 4, 5, span(MEMORY, 4, 5)),
                                              PoolItem("MEMORY.md", 8, 8, span(MEMORY, 8, 8))])})
    edited = MEMORY.replace("我不吃香菜。", "我现在吃香菜了。")
    assert check_items(pool, {"q1"}, {"MEMORY.md": edited}) == (1, 0)
    assert [i.key for i in pool.queries["q1"].items] == ["MEMORY.md#L4-L5"]
    assert check_items(pool, {"q1"}, {"MEMORY.md": MEMORY}) == (0, 1)  # the edit undone: shown again
    assert len(pool.queries["q1"].items) == 2


# --- 4. USER.md ----------------------------------------------------------------------------------------------


def test_user_md_is_in_the_corpus_of_an_agent_database_home(tmp_path):
    from harness.config import load_experiment
    from harness.pipeline import load_dataset

    home = simple_home(tmp_path, {"memory": {"search": PROVIDER}}, user_md=True)
    (home / "workspace" / "memory.md").write_text("# legacy\n", encoding="utf-8")  # 2026.8.1 on skip it
    r = init_openclaw_home(home, tmp_path / "eval", index_vectors=False)
    assert 'root_files = ["MEMORY.md", "USER.md"]' in r.files["experiment.toml"].read_text(encoding="utf-8")
    dataset = load_dataset(load_experiment(r.files["experiment.toml"]))
    assert set(dataset.texts()) == {"MEMORY.md", "USER.md"}
    assert r.report is not None and not r.report.as_dict().get("not_indexed")


# --- 5. transcript precedence --------------------------------------------------------------------------------


def test_the_complete_database_copy_wins_over_a_truncated_jsonl_and_says_so(tmp_path):
    ws = tmp_path / ".openclaw/workspace"
    t = (Transcript("s1", T0, ws).user("酒店").search("c1", "我住在哪家酒店", [("MEMORY.md", 4, 5, span(MEMORY, 4, 5))])
         .user("香菜").search("c2", "我吃不吃香菜", [("MEMORY.md", 8, 8, span(MEMORY, 8, 8))]))
    home = simple_home(tmp_path, {"memory": {"search": PROVIDER}}, sessions=[t])
    t.jsonl(home / "agents/main/sessions/s1.jsonl", keep=4)  # cut after the first search
    inst = locate(home)
    stats = ReadStats()
    m = mine(read_sessions(inst.session_files, inst.agent_db, stats, inst.archives), stats)
    assert {q.text for q in m.queries} == {"我吃不吃香菜", "我住在哪家酒店"} and m.sessions == 1
    assert stats.both_copies == {"the database": 1}
    assert any("both in a JSONL transcript and in the agent database" in n for n in stats.notes())


# --- 6. credit in compound turns, and the read tool ----------------------------------------------------------


def test_a_get_credits_the_search_it_was_made_for_and_read_is_a_judgment(tmp_path):
    ws = tmp_path / ".openclaw/workspace"
    both = [("MEMORY.md", 4, 5, span(MEMORY, 4, 5))]
    t = (Transcript("s1", T0, ws).user("出差")
         .search("c1", "出差去哪", both + [("MEMORY.md", 8, 8, span(MEMORY, 8, 8))])
         .search("c2", "酒店在哪里", both).get("c3", "MEMORY.md", 4, 2)
         .user("用户").search("c4", "我叫什么名字", [("USER.md", 3, 3, "名字：小林")])
         .call("c5", "read", {"path": str(ws / "USER.md"), "offset": 3, "limit": 1}))
    home = simple_home(tmp_path, {"memory": {"search": PROVIDER}}, user_md=True, sessions=[t])
    inst = locate(home)
    stats = ReadStats()
    m = mine(read_sessions(inst.session_files, inst.agent_db, stats), stats)
    labels = {q.text: {(j.path, j.start, j.grade, j.evidence) for j in q.implicit} for q in m.queries}
    # the memory_get follows the second search, which returned that range: it is credited there, not to the first
    assert ("MEMORY.md", 4, 1, "read") in labels["酒店在哪里"]
    assert not any(g == 1 for _, _, g, _ in labels["出差去哪"])
    assert labels["我叫什么名字"] == {("USER.md", 3, 1, "read")}  # through the generic read tool


# --- 7. pruned sessions --------------------------------------------------------------------------------------


def test_pruned_session_archives_are_read_and_counted(tmp_path):
    import zstandard

    ws = tmp_path / ".openclaw/workspace"
    home = simple_home(tmp_path, {"memory": {"search": PROVIDER}})
    sessions = home / "agents/main/sessions"
    sessions.mkdir(parents=True)
    old = Transcript("old1", T0 - timedelta(days=40), ws).user("饮食") \
        .search("c1", "我吃不吃香菜", [("MEMORY.md", 8, 8, span(MEMORY, 8, 8))])
    plain = old.jsonl(tmp_path / "plain.jsonl").read_bytes()
    (sessions / "old1.jsonl.deleted.2026-08-30T00-00-00.000Z.zst").write_bytes(zstandard.ZstdCompressor().compress(plain))
    (sessions / "bad1.jsonl.deleted.2026-08-30T00-00-00.000Z.zst").write_bytes(b"not zstd at all")
    inst = locate(home)
    assert len(inst.archives) == 2
    stats = ReadStats()
    m = mine(read_sessions(inst.session_files, inst.agent_db, stats, inst.archives), stats)
    assert "我吃不吃香菜" in {q.text for q in m.queries} and stats.archives_read == 1
    notes = " ".join(stats.notes())
    assert "1 pruned session(s) read" in notes and "1 pruned session archive(s) could not be read" in notes
    assert "bad1.jsonl.deleted" in notes


# --- 8. smaller ----------------------------------------------------------------------------------------------


def test_dates_are_in_the_configured_timezone_and_version_4_is_named_2026_9_6(tmp_path):
    config = {"memory": {"search": PROVIDER}, "agents": {"defaults": {"userTimezone": "Asia/Shanghai"}}}
    home = simple_home(tmp_path, config)
    t = Transcript("j1", T0, home / "workspace").user("x").search("c1", "我住在哪家酒店", [])
    t.jsonl(home / "agents/other/sessions/j1.jsonl")
    r = init_openclaw_home(home, tmp_path / "eval", index_vectors=False)
    text = r.files["queries.yaml"].read_text(encoding="utf-8")
    assert "first 2026-09-02" in text  # 23:30 UTC on 1 September is 07:30 on the 2nd in Shanghai
    assert 'now = "2026-09-02"' in r.files["experiment.toml"].read_text(encoding="utf-8")
    stats = ReadStats()
    m = mine(read_sessions([home / "agents/other/sessions/j1.jsonl"], None, stats), stats)
    assert dict(m.formats) == {"2026.9.6 JSONL": 1}


def test_a_kappa_interval_that_would_be_0_to_1_is_not_given_and_the_method_says_why():
    from harness.evaluation.agreement import agreement

    # implicit judgments are nearly all positives: its only 0s sit in one of 12 sessions, so a third of the
    # resamples hold the implicit judge constant, and their kappa is 0 whatever the person graded
    pairs = [(1, 1)] * 16 + [(1, 0)] * 6 + [(0, 0), (0, 0)]
    clusters = [f"s{i % 11}" for i in range(22)] + ["s11", "s11"]
    a = agreement("x", pairs, clusters, [0, 1], ("implicit", "explicit"))
    assert a.kappa == a.kappa and all(v != v for v in a.kappa_ci95)
    assert "no interval" in a.method and "one judge gives every item the same label" in a.method
    # the same labels spread over the sessions: an interval, and not [0, 1]
    spread = agreement("x", pairs * 3, [f"s{i}" for i in range(len(pairs) * 3)], [0, 1], ("implicit", "explicit"))
    low, high = spread.kappa_ci95
    assert low <= spread.kappa <= high and (low, high) != (0.0, 1.0)


def test_init_md_suggests_the_qrels_judge_writes(tmp_path):
    home = simple_home(tmp_path, {"memory": {"search": PROVIDER}})
    r = init_openclaw_home(home, tmp_path / "eval", index_vectors=False)
    from harness.judging.run import judge_dir_of
    from harness.reporting.home_report import write_init

    write_init(r)  # init.md: written above the readers of inputs, as `harness init` does
    text = r.files["init.md"].read_text(encoding="utf-8")

    qrels = judge_dir_of([r.files["experiment.toml"]]) / "qrels.trec"
    assert f"--qrels {qrels}" in text or f"--qrels {Path(qrels).relative_to(Path.cwd()) if Path.cwd() in qrels.parents else qrels}" in text


def test_grades_on_spans_that_no_longer_hold_are_not_exported_and_the_others_carry_their_anchor():
    from harness.judging.export import anchor_grades
    from harness.judging.pool import Pool, PoolItem, PoolQuery

    hold, gone = PoolItem("MEMORY.md", 4, 5, span(MEMORY, 4, 5)), PoolItem("MEMORY.md", 8, 8, span(MEMORY, 8, 8))
    pool = Pool([], 10, [], {"q1": PoolQuery("q1", "酒店", "x", "tuning", [hold], [gone])})
    grades = {"explicit": {"q1": {hold.key: {"path": "MEMORY.md", "start": 4, "end": 5, "grade": 3},
                                  gone.key: {"path": "MEMORY.md", "start": 8, "end": 8, "grade": 2}}}}
    assert anchor_grades(grades, pool) == 1
    assert list(grades["explicit"]["q1"]) == [hold.key]
    assert grades["explicit"]["q1"][hold.key]["anchor"] == anchor_of(span(MEMORY, 4, 5))


def test_a_search_answered_unavailable_has_no_results_and_is_counted(tmp_path):
    ws = tmp_path / ".openclaw/workspace"
    t = Transcript("s1", T0, ws).user("酒店").call("c1", "memory_search", {"query": "我住在哪家酒店"})
    t._message({"role": "toolResult", "toolCallId": "c1", "toolName": "memory_search", "content": [{"type": "text",
                "text": json.dumps({"results": [], "disabled": True, "unavailable": True, "timedOut": True})}]})
    home = simple_home(tmp_path, {"memory": {"search": PROVIDER}}, sessions=[t])
    r = init_openclaw_home(home, tmp_path / "eval", index_vectors=False)
    q = r.mining.queries[0]
    assert q.text == "我住在哪家酒店" and q.returned == 0 and r.mining.unavailable == 1
    assert any("answered unavailable" in n for n in r.notes)


def test_the_release_is_read_from_the_databases_primary_row_not_a_migrations_row(tmp_path):
    # 2026.9.6's doctor, upgrading a 2026.8.1 home in place, adds a migration row to schema_meta whose key
    # sorts before 'primary'; the release that wrote the database is the 'primary' row (as 2026.9.6 reads it)
    from harness.inputs.openclaw_index import MemoryIndex

    db = agent_db(tmp_path / "agents" / "main" / "agent.sqlite", {"MEMORY.md": MEMORY}, {})
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO schema_meta VALUES ('historical-transcript-directives-v1', '{\"phase\":\"complete\"}',"
                     " NULL)")
    with MemoryIndex(db) as index:
        assert (index.app_version, index.schema_version) == ("2026.9.6", 9)


def test_a_timed_out_partial_answer_is_mined_but_not_the_release_answer_a_replay_is_compared_with(tmp_path):
    # 2026.9.6 answers a search that ran out of time with its keyword matches (timedOut, partial): the agent saw
    # them, so they are mined; the release's own answer to the question is its next search that ran in full
    from harness.conformance.real_home.checks import asked_questions, mined

    ws = tmp_path / ".openclaw/workspace"
    hit = {"path": "MEMORY.md", "startLine": 1, "endLine": 9, "score": 0.5, "snippet": "住在西湖边的酒店。"}
    t = Transcript("s1", T0, ws).user("酒店").call("c1", "memory_search", {"query": "我住在哪家酒店"})
    t._message({"role": "toolResult", "toolCallId": "c1", "toolName": "memory_search", "content": [{"type": "text",
                "text": json.dumps({"results": [hit], "timedOut": True, "partial": True, "mode": "keyword-only"})}]})
    t.call("c2", "memory_search", {"query": "我住在哪家酒店"})
    t._message({"role": "toolResult", "toolCallId": "c2", "toolName": "memory_search", "content": [{"type": "text",
                "text": json.dumps({"results": [{**hit, "score": 0.9}]})}]})
    home = simple_home(tmp_path, {"memory": {"search": PROVIDER}}, sessions=[t])
    _, calls, mining = mined(home)
    assert [c.partial for c in calls] == [True, False]
    assert [len(c.results) for c in calls] == [1, 1]  # the partial answer's result is mined, not dropped
    (asked,) = asked_questions(mining, calls)
    assert [res.score for res in asked.results] == [0.9]
