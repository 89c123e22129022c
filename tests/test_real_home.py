"""The real-home conformance rows (harness.conformance.real_home): the scripted model's own record of
what it did, the documented implicit-judgment rule applied to it, and (slow, when OpenClaw 2026.9.6 is in the
conformance cache) the rows on the home the real release writes."""
from __future__ import annotations

import json
import urllib.request

import pytest

from harness.systems.agent_chat import Get, Reply, ScriptedAgentChat, Search
from harness.conformance import real_home as rh
from harness.conformance.real_home import archives as rh_archives
from harness.conformance.real_home import checks as rh_checks
from harness.conformance.real_home import home as rh_home
from harness.conformance.real_home import variations as rh_variations


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=10) as resp:
        return json.loads(resp.read())


def _tool_message(results: list[dict]) -> dict:
    return {"role": "tool", "content": json.dumps({"results": results})}


A = {"path": "memory/2026-01-05.md", "startLine": 1, "endLine": 4}
B = {"path": "MEMORY.md", "startLine": 3, "endLine": 9}
C = {"path": "memory/2026-02-14.md", "startLine": 2, "endLine": 6}


def test_the_scripted_model_records_its_calls_and_the_results_each_step_saw():
    tools = [{"type": "function", "function": {"name": n}} for n in ("memory_search", "memory_get")]
    with ScriptedAgentChat() as chat:
        chat.begin([Search("早餐"), Search("breakfast tea"), Get(1), Reply("龙井。", cite=1)])
        messages: list[dict] = []
        for results in (None, [A, B], [C, A]):
            if results is not None:
                messages.append(_tool_message(results))
            _post(chat.base_url, {"model": "scripted-agent", "messages": messages, "tools": tools})
        _post(chat.base_url, {"model": "scripted-agent", "messages": messages, "tools": tools})
    did = chat.turns[-1]
    assert [d.get("tool") or "reply" for d in did] == ["memory_search", "memory_search", "memory_get", "reply"]
    assert did[1]["seen"] == [A, B] and did[2]["args"] == {"path": A["path"], "from": 1, "lines": 4}
    assert did[3]["cited"] == {"path": A["path"], "startLine": 1, "endLine": 4}
    script = {"turns": [{"session": "s001", "turn": 0, "at": "2026-01-08T09:00:00+08:00", "did": did}]}
    calls = rh_checks.script_calls(script)
    assert [(c.query, c.results) for c in calls] == [("早餐", (("memory/2026-01-05.md", 1, 4), ("MEMORY.md", 3, 9))),
                                                    ("breakfast tea", (("memory/2026-02-14.md", 2, 6),
                                                                       ("memory/2026-01-05.md", 1, 4)))]
    expected = rh_checks.expected_judgments(script)
    # the first search was reformulated (another query, no read between): what it returned and the agent never
    # read or cited is a 0; the chunk read after the reformulation is a read for the second search only (the
    # latest one whose results held it: session_mining's compound-turn rule), and cited for both
    assert expected == {
        ("早餐", "memory/2026-01-05.md", 1, 4): (1, "cited"),
        ("早餐", "MEMORY.md", 3, 9): (0, "reformulated"),
        ("breakfast tea", "memory/2026-01-05.md", 1, 4): (1, "read+cited"),
    }


def test_a_replayed_difference_is_named_by_its_cause():
    ours = [("MEMORY.md", 1, 5, 0.61), ("memory/2026-01-05.md", 1, 4, 0.5)]
    assert "USER.md" in rh_checks.classify(ours, [("USER.md", 1, 3, 0.7), *ours], {"MEMORY.md", "memory/2026-01-05.md"})
    assert rh_checks.classify(ours, list(reversed(ours)), {"MEMORY.md", "memory/2026-01-05.md"}) == \
        "the same chunks in another order"
    close = [(p, s, e, score + 3e-4) for p, s, e, score in ours]
    assert rh_checks.classify(ours, close, {"MEMORY.md", "memory/2026-01-05.md"}).startswith("same chunks in the same order")


@pytest.mark.slow
def test_on_a_home_the_real_release_wrote_every_gated_row_agrees(tmp_path):
    """The release writes (or the cache holds) the home; mining, judgments, vectors and the as-asked replay
    agree with the script and with the release's own memory_search on every item of every gated row."""
    from harness.conformance.base import RealRuns
    from harness.systems.openclaw_agent import NotInstalled, find_release

    try:
        find_release(rh_home.VERSION)
    except NotInstalled as exc:
        pytest.skip(str(exc))
    checks = rh.compare([], RealRuns(log=lambda s: None))
    by_what = {(c.workspace, c.what): c for c in checks}
    base = [c for c in checks if c.workspace == "home-base"]
    assert base and all(c.total > 0 for c in base)
    assert by_what[("home-base", "mined memory_search calls = the script's (recall)")].total == \
        len(rh_checks.script_calls(rh_home.cached_home(rh_home.VERSION, "base", rh_home.scenario(), rh_home.MEMORY, tmp_path).script))
    edited = [c for c in checks if c.workspace == "home-edited"]
    assert len(edited) == 4 and all(c.gated and c.total > 0 for c in edited), [(c.what, c.total) for c in edited]
    assert {c.workspace for c in checks} >= {"home-compaction", "home-edited", "home-user-md", "home-agent-work"}
    failing = [f"{c.workspace} {c.what}: {c.agreed}/{c.total} {[d.cause for d in c.differences][:3]}"
               for c in checks if c.gated and c.agreed < c.total]
    assert failing == []


def test_the_report_puts_the_real_home_rows_in_their_own_table(tmp_path):
    from types import SimpleNamespace

    from harness.reporting.conformance import write_report
    from harness.conformance.base import Check

    rows = [Check("openclaw", "openclaw-2026.09", "openclaw 2026.9.6", "chunk boundaries", "round1", 3, 3),
            Check(rh.NAME, rh_home.PRESET, "openclaw 2026.9.6", "replay as asked: the release's top-6", "home-base", 8, 9)]
    module = SimpleNamespace(NAME=rh.NAME, SYSTEMS=rh.SYSTEMS, NOTES="")
    md, _ = write_report(tmp_path, rows, [module], {"round1": {"files": 1, "queries": 3}})
    text = md.read_text(encoding="utf-8")
    main, homes = text.split("## Agreement on homes the real release wrote")
    assert "| round1 | gated |" in main.split("## Differences")[0] and "home-base" not in main.split("## Differences")[0]
    table = homes.split("## Differences")[0]
    assert "| home-base | gated |" in table and "8/9 ⚠" in table and "3/3" not in table


# --- the edited variation: judgments as the run anchors them ------------------------------------------------

MEMORY_TEXT = "# Memory\n\n- 早上喝龙井。\n- 不吃香菜。\n\n## Work\n- Expense reports go to finance.\n- VPN: Frankfurt.\n"
JUDGED = {"早上 喝什么": [("MEMORY.md", 3, 3, 1), ("MEMORY.md", 4, 5, 0)],
          "expense report": [("MEMORY.md", 7, 7, 1)],
          "vpn node": [("MEMORY.md", 8, 8, 1), ("MEMORY.md", 7, 7, 0)],
          "其他": [("memory/2026-01-05.md", 1, 4, 1)]}


def test_the_edit_rewrites_the_last_judged_positive_line_and_moves_the_rest():
    edit = rh_variations.choose_edit(JUDGED)
    assert (edit.path, edit.rewritten) == ("MEMORY.md", 8)
    after = edit.apply(MEMORY_TEXT).split("\n")
    before = MEMORY_TEXT.split("\n")
    assert after[:len(rh_variations.EDIT_ADDED)] == list(rh_variations.EDIT_ADDED) and rh_variations.EDIT_TEXT in after
    for start, end in ((3, 3), (4, 5), (7, 7)):  # the text of every span the edit did not rewrite is where moved() says
        s, e = edit.moved(start, end)
        assert after[s - 1:e] == before[start - 1:end]
    assert edit.moved(8, 8) is None
    expected, moved, dropped = rh_variations.expected_after_edit(edit, JUDGED)
    assert (moved, dropped) == (4, 1)
    assert expected["vpn node"] is None  # its only positive is gone: the query is not evaluated
    assert expected["早上 喝什么"] == {"MEMORY.md#L7-L7": 1, "MEMORY.md#L8-L9": 0}
    assert expected["其他"] == {"memory/2026-01-05.md#L1-L4": 1}


def test_judgments_applied_unchecked_after_the_edit_fail_the_rows():
    edit = rh_variations.choose_edit(JUDGED)
    before, after = MEMORY_TEXT.split("\n"), edit.apply(MEMORY_TEXT).split("\n")
    expected, _, _ = rh_variations.expected_after_edit(edit, JUDGED)
    notes = [f"q: the implicit judgment of MEMORY.md lines {s}-{e} is re-anchored to lines 1-1" for s, e in
             ((3, 3), (4, 5), (7, 7), (7, 7))] + ["q: the implicit judgment of MEMORY.md lines 8-8 is dropped"]
    good = rh_variations.edited_checks(edit, before, after, JUDGED, expected, notes)
    assert [(c.agreed, c.total) for c in good] == [(6, 6), (3, 3), (2, 2)]
    # today's lines with yesterday's numbers (the stale spans of a run that does not anchor)
    stale = {t: {f"{p}#L{s}-L{e}": g for p, s, e, g in spans} for t, spans in JUDGED.items()}
    bad = rh_variations.edited_checks(edit, before, after, JUDGED, stale, [])
    assert all(c.agreed < c.total for c in bad)
    assert any("never saw" in d.cause for d in bad[1].differences)


def test_the_run_re_anchors_judgments_on_an_edited_file(tmp_path):
    """Through the data set `harness run` loads (harness.inputs.workspace's anchoring), not a copy of it."""
    from harness.inputs.anchors import anchor_of

    ws = tmp_path / "workspace"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(MEMORY_TEXT, encoding="utf-8")
    (ws / "memory" / "2026-01-05.md").write_text("# 5 Jan\n\n- 其他的事。\n- more.\n", encoding="utf-8")
    texts = {"MEMORY.md": MEMORY_TEXT, "memory/2026-01-05.md": (ws / "memory" / "2026-01-05.md").read_text()}
    lines = []
    for n, (text, spans) in enumerate(JUDGED.items(), start=1):
        lines += [f"- id: q{n:04d}", f"  text: \"{text}\"", "  judged:"]
        lines += [f"    - {{path: \"{p}\", lines: [{s}, {e}], grade: {g}, by: implicit, evidence: read, "
                  f"anchor: \"{anchor_of(chr(10).join(texts[p].split(chr(10))[s - 1:e]))}\"}}" for p, s, e, g in spans]
    (tmp_path / "queries.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "experiment.toml").write_text(
        f'name = "t"\npreset = "openclaw-2026.09"\n[dataset]\nname = "workspace"\npath = "{ws}"\nqueries = "{tmp_path / "queries.yaml"}"\n'
        'judgments = "implicit"\n', encoding="utf-8")
    edit = rh_variations.choose_edit(JUDGED)
    path = ws / edit.path
    path.write_text(edit.apply(MEMORY_TEXT), encoding="utf-8")
    applied, notes = rh_variations.applied_judgments(tmp_path / "experiment.toml")
    checks = rh_variations.edited_checks(edit, MEMORY_TEXT.split("\n"), path.read_text().split("\n"), JUDGED, applied, notes)
    assert [(c.agreed, c.total) for c in checks] == [(6, 6), (3, 3), (2, 2)], [c.differences for c in checks]


def test_the_sessions_the_default_maintenance_prunes_are_those_idle_over_30_days():
    turns = [{"session": s, "turn": 0, "at": at, "did": []} for s, at in (
        ("s001", "2026-01-08T09:00:00+08:00"), ("s002", "2026-01-26T09:00:00+08:00"),
        ("s002", "2026-01-27T09:00:00+08:00"), ("s003", "2026-02-25T09:00:00+08:00"))]
    # s001 last updated 48 days before the last turn; s002's last turn 29 days before: kept
    assert rh_archives.expected_pruned({"turns": turns}) == {"s001"}
    turns.append({"session": "s004", "turn": 0, "at": "2026-02-27T10:00:00+08:00", "did": []})
    assert rh_archives.expected_pruned({"turns": turns}) == {"s001", "s002"}


def test_a_reply_can_report_a_long_conversations_usage():
    tools = [{"type": "function", "function": {"name": "memory_search"}}]
    with ScriptedAgentChat() as chat:
        chat.begin([Reply("好的。", usage=120000)])
        first = _post(chat.base_url, {"model": "scripted-agent", "messages": [], "tools": tools})
        chat.begin([Reply("好的。")])
        second = _post(chat.base_url, {"model": "scripted-agent", "messages": [], "tools": tools})
    assert first["usage"]["prompt_tokens"] == 120000 and "prompt_tokens" not in first["choices"][0]["message"]
    assert second["usage"]["prompt_tokens"] == 10


def test_a_compaction_is_placed_by_transcript_order_not_by_clock(tmp_path):
    """Where a compaction fell: after the user turns before it in the transcript (the clock of each turn's
    process is not the order of its entries); a compaction entry stored compressed is read too."""
    import sqlite3

    import zstandard

    db = tmp_path / "agent.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, event_zstd BLOB)")
    user = {"type": "message", "message": {"role": "user", "content": "q"}, "timestamp": "2026-01-08T01:20:00Z"}
    entries = [{"type": "session", "version": 4, "id": "s001"}, user,
               {"type": "message", "message": {"role": "assistant", "content": "a"}},
               {"type": "compaction", "timestamp": "2026-01-08T01:30:00Z", "summary": "s" * 50,
                "firstKeptEntryId": "x", "tokensBefore": 120005, "tokensAfter": 154},
               {**user, "timestamp": "2026-01-08T01:14:00Z"},  # the next turn's clock says earlier
               {"type": "compaction", "timestamp": "2026-01-08T01:15:00Z", "firstKeptEntryId": "y"}]
    for seq, e in enumerate(entries):
        text = json.dumps(e)
        packed = seq == 5
        conn.execute("INSERT INTO transcript_events VALUES (?, ?, ?, ?)",
                     ("s001", seq, None if packed else text,
                      zstandard.ZstdCompressor().compress(text.encode()) if packed else None))
    conn.commit()
    conn.close()
    found = rh_archives.compactions(db)
    assert [(c.seq, c.turns_before, c.entries_before, c.first_kept) for c in found] == [(3, 1, 2, "x"), (5, 2, 4, "y")]
    assert found[0].tokens_before == 120005


@pytest.mark.slow
def test_the_release_compacts_and_prunes_and_every_call_is_still_mined(tmp_path):
    """The compaction home (2026.9.6) and the pruned home (2026.8.1), written by the releases (or cached): one
    compaction where the script's usage crossed the threshold, archives the release wrote, and every row agrees."""
    from harness.systems.openclaw_agent import NotInstalled, find_release

    try:
        find_release(rh_home.VERSION)
    except NotInstalled as exc:
        pytest.skip(str(exc))
    checks = rh_archives.compaction_checks(rh_archives.compaction_home(tmp_path / "c", log=lambda s: None))
    by_what = {c.what: c for c in checks}
    assert by_what["compaction: the release compacted the session after the turn whose usage crossed its "
                   "threshold"].total == 1
    assert all(c.total > 0 and c.agreed == c.total for c in checks), [(c.what, c.differences) for c in checks]
    try:
        find_release(rh_home.PRUNING_VERSION)
    except NotInstalled:
        return
    home = rh_archives.pruned_home(tmp_path / "p", log=lambda s: None)
    assert rh_archives.expected_pruned(home.script)  # the scenario spans more than 30 days
    checks = rh_archives.pruned_checks(home)
    assert all(c.total > 0 and c.agreed == c.total for c in checks), [(c.what, c.differences) for c in checks]


def test_calls_are_split_at_the_compaction_by_turn():
    from types import SimpleNamespace

    turns = [{"session": "s001", "turn": i, "at": "2026-01-08T09:12:00+08:00",
              "did": [{"tool": "memory_search", "args": {"query": f"q{i}"}}]} for i in range(3)]
    turns.append({"session": "s002", "turn": 0, "at": "2026-01-09T09:00:00+08:00",
                  "did": [{"tool": "memory_search", "args": {"query": "other"}}]})
    script = {"turns": turns}
    calls = [SimpleNamespace(session=t["session"], turn=t["turn"], query=t["did"][0]["args"]["query"]) for t in turns]
    found = [rh_archives.Compaction("s001", 18, 1, 17, "x", 120005, 154)]
    parts = rh_archives.split_at_compaction(script, calls, found)
    assert [c.query for c in parts["before"][1]] == ["q0", "other"]
    assert [c.query for c in parts["after"][1]] == ["q1", "q2"]
    assert [t["turn"] for t in parts["after"][0]["turns"]] == [1, 2]
    # a call the transcript lost after the compaction is a recall difference on that side only
    rows = {c.what: c for c in rh_checks.call_checks("compaction", parts["after"][0], parts["after"][1][:1])}
    assert rows["mined memory_search calls = the script's (recall)"].agreed == 1
    assert rows["mined memory_search calls = the script's (recall)"].total == 2
