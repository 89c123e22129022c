"""The real-home conformance rows (harness.studies.conformance.real_home): the scripted model's own record of
what it did, the documented implicit-judgment rule applied to it, and (slow, when OpenClaw 2026.9.6 is in the
conformance cache) the rows on the home the real release writes."""
from __future__ import annotations

import json
import urllib.request

import pytest

from harness.studies.agent_chat import Get, Reply, ScriptedAgentChat, Search
from harness.studies.conformance import real_home as rh


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
    calls = rh.script_calls(script)
    assert [(c.query, c.results) for c in calls] == [("早餐", (("memory/2026-01-05.md", 1, 4), ("MEMORY.md", 3, 9))),
                                                    ("breakfast tea", (("memory/2026-02-14.md", 2, 6),
                                                                       ("memory/2026-01-05.md", 1, 4)))]
    expected = rh.expected_judgments(script)
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
    assert "USER.md" in rh.classify(ours, [("USER.md", 1, 3, 0.7), *ours], {"MEMORY.md", "memory/2026-01-05.md"})
    assert rh.classify(ours, list(reversed(ours)), {"MEMORY.md", "memory/2026-01-05.md"}) == \
        "the same chunks in another order"
    close = [(p, s, e, score + 3e-4) for p, s, e, score in ours]
    assert rh.classify(ours, close, {"MEMORY.md", "memory/2026-01-05.md"}).startswith("same chunks in the same order")


@pytest.mark.slow
def test_on_a_home_the_real_release_wrote_every_gated_row_agrees(tmp_path):
    """The release writes (or the cache holds) the home; mining, judgments, vectors and the as-asked replay
    agree with the script and with the release's own memory_search on every item of every gated row."""
    from harness.studies.conformance.base import RealRuns
    from harness.studies.openclaw_agent import NotInstalled, find_release

    try:
        find_release(rh.VERSION)
    except NotInstalled as exc:
        pytest.skip(str(exc))
    checks = rh.compare([], RealRuns(log=lambda s: None))
    by_what = {(c.workspace, c.what): c for c in checks}
    base = [c for c in checks if c.workspace == "home-base"]
    assert base and all(c.total > 0 for c in base)
    assert by_what[("home-base", "mined memory_search calls = the script's (recall)")].total == \
        len(rh.script_calls(rh.cached_home(rh.VERSION, "base", rh.scenario(), rh.MEMORY, tmp_path).script))
    failing = [f"{c.workspace} {c.what}: {c.agreed}/{c.total} {[d.cause for d in c.differences][:3]}"
               for c in checks if c.gated and c.agreed < c.total]
    assert failing == []


def test_the_report_puts_the_real_home_rows_in_their_own_table(tmp_path):
    from types import SimpleNamespace

    from harness.reporting.conformance import write_report
    from harness.studies.conformance.base import Check

    rows = [Check("openclaw", "openclaw-2026.09", "openclaw 2026.9.6", "chunk boundaries", "round1", 3, 3),
            Check(rh.NAME, rh.PRESET, "openclaw 2026.9.6", "replay as asked: the release's top-6", "home-base", 8, 9)]
    module = SimpleNamespace(NAME=rh.NAME, SYSTEMS=rh.SYSTEMS, NOTES="")
    md, _ = write_report(tmp_path, rows, [module], {"round1": {"files": 1, "queries": 3}})
    text = md.read_text(encoding="utf-8")
    main, homes = text.split("## Agreement on homes the real release wrote")
    assert "| round1 | gated |" in main.split("## Differences")[0] and "home-base" not in main.split("## Differences")[0]
    table = homes.split("## Differences")[0]
    assert "| home-base | gated |" in table and "8/9 ⚠" in table and "3/3" not in table
