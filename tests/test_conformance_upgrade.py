"""The upgrade-in-place rows (harness/conformance/upgrade.py) on documents shaped like the scenario's:
each comparison finds what it is for (a key the upgrade changed, an index that was not rebuilt or was rewritten by
doctor, results in another order or with other scores, a search that answered nothing) and agrees where nothing
changed.  The scenario itself runs against the real releases in `make conformance`."""
from __future__ import annotations

import copy
import sqlite3

import pytest

from harness.conformance import upgrade

ROWS = [{"id": "q1", "text": "早上 喝什么 饮料"}, {"id": "q2", "text": "Atlas budget"}]


def settings(max_results=5, min_score=0.25, tokenizer="trigram", weight=0.7):
    return {"provider": "openai", "model": "e5", "remote": {"baseUrl": "http://127.0.0.1:1/v1", "apiKey": "(set)"},
            "query": {"maxResults": max_results, "minScore": min_score,
                      "hybrid": {"vectorWeight": weight, "textWeight": round(1 - weight, 2)}},
            "store": {"fts": {"tokenizer": tokenizer}, "databasePath": "/x/openclaw-agent.sqlite"},
            "cache": {"enabled": True}, "chunking": {"tokens": 400, "overlap": 80}}


CONFIG = {"memory": {"search": {"provider": "openai", "model": "e5",
                                "remote": {"baseUrl": "http://127.0.0.1:1/v1", "apiKey": "k"},
                                "query": {"maxResults": 8, "minScore": 0.25}, "store": {"fts": {"tokenizer": "trigram"}},
                                "cache": {"enabled": True}}},
          "agents": {"entries": {"main": {"memory": {"search": {"query": {"maxResults": 5}}}}}}}


def index(chunking_version, provider_key, chunks, cache=None, schema=19):
    meta = {"model": "e5", "provider": "openai", "providerKey": provider_key, "chunkingVersion": chunking_version,
            "ftsTokenizer": "trigram", "vectorDims": 384}
    return {"schema": {"primary": {"version": schema, "app": "x"}}, "meta": {"memory_index_meta_v1": meta},
            "chunks": [[f"id-{p}-{s}", p, "memory", s, e, f"h-{p}-{s}", 1] for p, s, e in chunks],
            "cache": cache if cache is not None else {provider_key: sorted(f"h-{p}-{s}" for p, s, _ in chunks)},
            "fts": {"memory": sorted(f"id-{p}-{s}" for p, s, _ in chunks)}}


CHUNKS = [("MEMORY.md", 1, 2), ("MEMORY.md", 3, 4), ("memory/2026-01-06.md", 1, 5)]


def answer(*hits, stale=False):
    return {"results": [{"path": p, "startLine": s, "endLine": e, "score": score, "source": "memory"}
                        for p, s, e, score in hits], "stale": stale, "warning": "stale!" if stale else None}


ANSWERS = {ROWS[0]["text"]: answer(("MEMORY.md", 1, 2, 0.61), ("memory/2026-01-06.md", 1, 5, 0.52)),
           ROWS[1]["text"]: answer(("MEMORY.md", 3, 4, 0.88))}


def scenario_doc():
    old = index(3, "key", CHUNKS)
    new = index(5, "key", CHUNKS, schema=23)
    cli = copy.deepcopy(ANSWERS)
    cli[ROWS[0]["text"]]["sent"] = {"passage": 3, "query": 1}
    upgraded = {"config": CONFIG, "config_after": copy.deepcopy(CONFIG), "settings_before": settings(),
                "settings_after": settings(), "index_before": old, "index_after_doctor": copy.deepcopy(old),
                "index_after": new, "doctor": ["Upgraded agent database schema: v19 -> v23."],
                "status_after_doctor": {"indexIdentity": {"status": "mismatched", "code": "chunking_version",
                                                          "owner": "openclaw", "versionOrder": "older"}},
                "cli": cli, "tool": copy.deepcopy(ANSWERS)}
    fresh = {"index": index(5, "key", CHUNKS, schema=23), "cli": copy.deepcopy(ANSWERS),
             "tool": copy.deepcopy(ANSWERS)}
    return {"queries": ROWS, "upgraded": upgraded, "fresh": fresh, "tool_first": {"tool": copy.deepcopy(ANSWERS)}}


def by_what(checks, fragment, workspace="upgrade"):
    found = [c for c in checks if fragment in c.what and c.workspace == workspace]
    assert len(found) == 1, [c.what for c in checks]
    return found[0]


def test_an_upgrade_that_changed_nothing_agrees_everywhere():
    checks = upgrade.upgrade_checks(scenario_doc())
    assert [c.what for c in checks if c.agreed < c.total] == []
    assert by_what(checks, "embeddings of the 2026.8.1 index reused").gated


def test_the_agents_override_is_the_value_it_should_get():
    keys = upgrade.user_keys(CONFIG)
    assert keys["query.maxResults"] == 5 and keys["query.minScore"] == 0.25 and keys["store.fts.tokenizer"] == "trigram"


def test_a_key_the_upgrade_resolves_otherwise_is_found_and_named():
    doc = scenario_doc()
    doc["upgraded"]["settings_after"] = settings(max_results=8)  # the agent's override lost
    row = by_what(upgrade.upgrade_checks(doc), "each memory-search key the user set")
    assert (row.agreed, row.total) == (row.total - 1, len(upgrade.user_keys(CONFIG)))
    (diff,) = row.differences
    assert diff.item == "query.maxResults" and (diff.ours, diff.theirs) == ("8", "5")
    assert "2026.8.1 applied" in diff.cause
    doc["upgraded"]["settings_before"] = settings(max_results=8)  # the old release lost it too
    (diff,) = by_what(upgrade.upgrade_checks(doc), "each memory-search key the user set").differences
    assert "2026.8.1 did not apply it either" in diff.cause


def test_a_provider_reset_by_the_upgrade_is_found():
    doc = scenario_doc()
    doc["upgraded"]["settings_after"]["provider"] = "none"
    row = by_what(upgrade.upgrade_checks(doc), "each memory-search key the user set")
    assert [d.item for d in row.differences] == ["provider"]


def test_a_key_doctor_removed_from_the_file_and_a_changed_default_are_found():
    doc = scenario_doc()
    del doc["upgraded"]["config_after"]["agents"]["entries"]["main"]["memory"]
    doc["upgraded"]["settings_after"] = settings(weight=0.5)
    checks = upgrade.upgrade_checks(doc)
    in_file = by_what(checks, "in the openclaw.json")
    assert [d.item for d in in_file.differences] == ["agents.entries.main.memory.search.query.maxResults"]
    others = by_what(checks, "the user did not set")
    assert sorted(d.item for d in others.differences) == ["query.hybrid.textWeight", "query.hybrid.vectorWeight"]
    assert "store.databasePath" not in {d.item for d in others.differences}


def test_an_index_that_was_not_rebuilt_is_found():
    doc = scenario_doc()
    doc["upgraded"]["index_after"] = copy.deepcopy(doc["upgraded"]["index_before"])
    doc["upgraded"]["index_after"]["chunks"][0][0] = "an-old-chunk-id"  # the old chunking's id for a chunk
    checks = upgrade.upgrade_checks(doc)
    chunks = by_what(checks, "its chunks (id, path, lines, hash)")
    assert chunks.agreed == len(CHUNKS) - 1 and chunks.total == len(CHUNKS) + 1
    assert all("not rebuilt" in d.cause for d in chunks.differences)
    meta = by_what(checks, "index meta after the first search")
    assert {d.item for d in meta.differences} == {"chunkingVersion"}


def test_doctor_rewriting_the_index_and_another_identity_verdict_are_found():
    doc = scenario_doc()
    doc["upgraded"]["index_after_doctor"]["cache"] = {}
    doc["upgraded"]["status_after_doctor"]["indexIdentity"] = {"status": "valid"}
    checks = upgrade.upgrade_checks(doc)
    kept = by_what(checks, "doctor --fix keeps")
    assert (kept.agreed, kept.total) == (2, 3) and "cache changed" in kept.differences[0].ours
    assert by_what(checks, "calls the 2026.8.1 index older").agreed == 0


def test_embeddings_under_another_provider_key_are_not_reused():
    doc = scenario_doc()
    after = doc["upgraded"]["index_after"]
    after["meta"]["memory_index_meta_v1"]["providerKey"] = "new-key"
    after["cache"] = {"new-key": after["cache"]["key"], **doc["upgraded"]["index_before"]["cache"]}
    row = by_what(upgrade.upgrade_checks(doc), "embeddings of the 2026.8.1 index reused")
    assert (row.agreed, row.total) == (0, len(CHUNKS)) and "provider key changed" in row.differences[0].cause


def test_session_chunks_at_other_lines_and_a_different_keyword_corpus_are_found():
    doc = scenario_doc()
    session = ["s1", "sessions/main/u001.jsonl", "sessions", 5, 8, "h-s", 1]
    doc["upgraded"]["index_after"]["chunks"].append(session)
    doc["upgraded"]["index_after"]["fts"]["sessions"] = ["s1", "gone"]
    doc["fresh"]["index"]["chunks"].append(["s2", "sessions/main/u001.jsonl", "sessions", 5, 10, "h-s", 1])
    doc["fresh"]["index"]["fts"]["sessions"] = ["s2"]
    checks = upgrade.upgrade_checks(doc)
    sessions = by_what(checks, "its sessions chunks")
    assert (sessions.agreed, sessions.total) == (0, 2) and not sessions.gated
    assert {d.cause for d in sessions.differences} == {"the same text at other lines of the transcript"}
    fts = by_what(checks, "full-text rows")
    assert {d.item for d in fts.differences} == {"source sessions", "orphan rows"}
    assert by_what(checks, "its chunks (id, path, lines, hash)").agreed == len(CHUNKS)  # memory chunks only


@pytest.mark.parametrize("path", ["cli", "tool"])
def test_results_in_another_order_are_found_on_each_path(path):
    doc = scenario_doc()
    doc["upgraded"][path][ROWS[0]["text"]]["results"].reverse()
    checks = upgrade.upgrade_checks(doc)
    name = "CLI path (`openclaw" if path == "cli" else "tool path (memory_search"
    entries = [c for c in checks if c.what.startswith(name) and c.what.endswith("(path, lines)")][0]
    assert entries.agreed == 1 and entries.differences[0].cause == "the same entries in another order"
    within = by_what(checks, "upgraded home: tool path = CLI path: ordered")
    assert within.agreed == 1


def test_scores_within_the_tolerance_agree_and_beyond_it_do_not():
    ours, theirs = copy.deepcopy(ANSWERS), copy.deepcopy(ANSWERS)
    ours[ROWS[1]["text"]]["results"][0]["score"] += upgrade.SCORE_TOLERANCE / 2
    entries, scores = upgrade.result_checks("x", ours, theirs, ROWS)
    assert (entries.agreed, scores.agreed) == (2, 2) and entries.gated and not scores.gated
    ours[ROWS[1]["text"]]["results"][0]["score"] += upgrade.SCORE_TOLERANCE * 2
    entries, scores = upgrade.result_checks("x", ours, theirs, ROWS)
    assert (entries.agreed, scores.agreed) == (2, 1)
    assert scores.differences[0].cause.startswith("same entries in the same order; a score differs by")


def test_a_stale_or_empty_first_search_is_found_and_named():
    doc = scenario_doc()
    doc["upgraded"]["cli"][ROWS[0]["text"]] = answer(stale=True)
    checks = upgrade.upgrade_checks(doc)
    cli = by_what(checks, "CLI path (`openclaw memory search --json`): upgraded home = fresh 2026.9.6 home: ordered")
    assert cli.agreed == 1 and "stale index" in cli.differences[0].cause
    answered = by_what(checks, "answered (CLI path)")
    assert answered.agreed == 1 and answered.differences[0].ours.startswith("stale")


def test_a_tool_search_that_answered_unavailable_is_not_its_retry():
    # agent_chat records on each step the results of the search before it: a's first answer (unavailable) on
    # its retry, the retry's answer on b's call, b's answer on the reply
    did = [{"tool": "memory_search", "args": {"query": "a"}, "seen": None},
           {"tool": "memory_search", "args": {"query": "a"}, "seen": [], "retry": True},
           {"tool": "memory_search", "args": {"query": "b"}, "seen": [{"path": "MEMORY.md", "startLine": 1,
                                                                     "endLine": 2, "score": 0.5}]},
           {"reply": "ok", "seen": [{"path": "MEMORY.md", "startLine": 3, "endLine": 3, "score": 0.4}]}]
    got = upgrade.tool_answers(did)
    assert got["a"] == {"results": None, "unavailable": True}
    assert got["b"]["results"][0]["startLine"] == 3 and not got["b"]["unavailable"]
    row = upgrade.answered_check("x", {"a": got["a"], "b": got["b"]}, [{"id": "1", "text": "a"},
                                                                      {"id": "2", "text": "b"}], "upgrade-tool-first")
    assert (row.agreed, row.total) == (1, 2) and row.differences[0].ours == "unavailable"


def test_the_index_state_is_read_from_the_agent_database(tmp_path):
    db = tmp_path / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript("""
        CREATE TABLE schema_meta (meta_key TEXT, role TEXT, schema_version INTEGER, agent_id TEXT, app_version TEXT);
        INSERT INTO schema_meta VALUES ('primary', 'agent', 19, 'main', '2026.8.1');
        CREATE TABLE memory_index_meta (key TEXT, value TEXT);
        INSERT INTO memory_index_meta VALUES ('memory_index_meta_v1', '{"chunkingVersion": 3}'), ('rebuild', 'clean');
        CREATE TABLE memory_index_chunks (id TEXT, path TEXT, source TEXT, start_line INTEGER, end_line INTEGER,
                                          hash TEXT, updated_at INTEGER);
        INSERT INTO memory_index_chunks VALUES ('c2', 'b.md', 'memory', 1, 2, 'h2', 5), ('c1', 'a.md', 'memory', 1, 3, 'h1', 5);
        CREATE TABLE memory_embedding_cache (provider TEXT, model TEXT, provider_key TEXT, hash TEXT);
        INSERT INTO memory_embedding_cache VALUES ('openai', 'e5', 'k', 'h2'), ('openai', 'e5', 'k', 'h1');
        CREATE VIRTUAL TABLE memory_index_chunks_fts USING fts5(text, id UNINDEXED, source UNINDEXED,
                                                                 tokenize='trigram');
        INSERT INTO memory_index_chunks_fts VALUES ('早上喝龙井', 'c1', 'memory'), ('a session', 's1', 'sessions');
    """)
    conn.commit()
    conn.close()
    state = upgrade.index_state(tmp_path / ".openclaw")
    assert state["schema"] == {"primary": {"version": 19, "app": "2026.8.1"}}
    assert state["meta"] == {"memory_index_meta_v1": {"chunkingVersion": 3}, "rebuild": "clean"}
    assert [c[0] for c in state["chunks"]] == ["c1", "c2"] and state["cache"] == {"k": ["h1", "h2"]}
    assert state["fts"] == {"memory": ["c1"], "sessions": ["s1"]}


def test_the_queries_are_the_real_home_scenarios_searches_each_once():
    rows = upgrade.queries()
    texts = [r["text"] for r in rows]
    assert len(texts) == len(set(texts)) and [r["id"] for r in rows] == [f"q{i}" for i in range(1, len(rows) + 1)]
    asked = {str(s["search"]) for session in upgrade.scenario() for t in session["turns"] for s in t["steps"]
             if "search" in s}
    assert set(texts) == asked
