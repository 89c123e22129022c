"""The upgrade-in-place scenario of harness.conformance.upgrade, run: the homes the real OpenClaw 2026.8.1 and
2026.9.6 write, the upgrade (`openclaw doctor --fix`), and what each release answers through the CLI and the
tool path (cached as one run).  The rows that compare them, and what they mean, are upgrade.py's."""
from __future__ import annotations

import hashlib
import inspect
import json
import shutil
import sqlite3
import subprocess
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from harness.conformance.base import RealRuns
from harness.systems.embedding_front import PROVIDER_MODEL
from harness.inputs.openclaw_releases import RELEASES
from harness.systems.real import DRIVERS
from harness.conformance.real_home.home import MEMORY, scenario, tree_digest

NAME = "openclaw-upgrade"
FROM_VERSION, TO_VERSION = "2026.8.1", "2026.9.6"
SYSTEMS = [("openclaw", FROM_VERSION), ("openclaw", TO_VERSION)]
WORKSPACES: tuple[str, ...] = ()  # none of the runner's: the homes are the module's own
UPGRADED = f"openclaw {FROM_VERSION} home upgraded"  # the "preset" column: the side under test
RELEASE = f"openclaw {TO_VERSION}"
SETTINGS_DRIVER = DRIVERS / RELEASES[TO_VERSION].settings_driver  # the same reader serves both releases
UPGRADE_FORMAT = 1  # bump when what run_upgrade records changes

# What the user set under 2026.8.1, beside the provider block OpenClawHome writes (memory.search): a Chinese
# user's trigram tokenizer, a longer result list with a lower floor, the embedding cache named explicitly, and
# for the agent itself a shorter list (agents.entries.main.memory.search, 2026.8.1 docs/reference/memory-config.md).
USER_SEARCH: dict[str, Any] = {"query": {"maxResults": 8, "minScore": 0.25}, "store": {"fts": {"tokenizer": "trigram"}},
                               "cache": {"enabled": True}}
AGENT = "main"
AGENT_OVERRIDE: dict[str, Any] = {"query": {"maxResults": 5}}

# The clock of the scenario (the example home's last memory file is dated 2026-04-07)
CST = timezone(timedelta(hours=8))
INDEXED_AT = datetime(2026, 4, 8, 9, 0, tzinfo=CST)
USED_AT = datetime(2026, 4, 8, 9, 30, tzinfo=CST)
UPGRADED_AT = datetime(2026, 4, 9, 9, 0, tzinfo=CST)
SEARCHED_AT = datetime(2026, 4, 9, 10, 0, tzinfo=CST)
FIRST_TURN = "早上喝什么？"  # the one turn of the old release (a session in the state it leaves)

LAST: dict[str, Any] = {}  # the last run's document, for report_sections()


def queries() -> list[dict[str, str]]:
    """The real-home scenario's memory_search queries, each once, in the order the agent first asked them."""
    texts: list[str] = []
    for session in scenario():
        for turn in session["turns"]:
            for step in turn["steps"]:
                if "search" in step and str(step["search"]) not in texts:
                    texts.append(str(step["search"]))
    return [{"id": f"q{i}", "text": t} for i, t in enumerate(texts, start=1)]


# --- what the release left on disk and what it answered -----------------------------------------------------------


def index_state(root: Path, agent: str = AGENT) -> dict[str, Any]:
    """The agent database's schema version, memory index meta, chunks (id, path, source, lines, hash, updated_at),
    embedding cache rows (provider key -> chunk hashes) and full-text rows (source -> chunk ids; BM25's statistics
    are over every row of the table, whatever source a search keeps): the index's identity as the files hold it."""
    db = root / "agents" / agent / "agent" / "openclaw-agent.sqlite"
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        schema = {r[0]: {"version": r[1], "app": r[2]} for r in
                  conn.execute("SELECT meta_key, schema_version, app_version FROM schema_meta")}
        meta = {k: (json.loads(v) if v.startswith("{") else v) for k, v in
                conn.execute("SELECT key, value FROM memory_index_meta")}
        chunks = [list(r) for r in conn.execute("SELECT id, path, source, start_line, end_line, hash, updated_at "
                                                "FROM memory_index_chunks ORDER BY path, start_line, end_line, id")]
        cache: dict[str, list[str]] = {}
        for key, text_hash in conn.execute("SELECT provider_key, hash FROM memory_embedding_cache ORDER BY 1, 2"):
            cache.setdefault(key, []).append(text_hash)
        fts: dict[str, list[str]] = {}
        for source, chunk_id in conn.execute("SELECT source, id FROM memory_index_chunks_fts ORDER BY 1, 2"):
            fts.setdefault(source, []).append(chunk_id)
    finally:
        conn.close()
    return {"schema": schema, "meta": meta, "chunks": chunks, "cache": cache, "fts": fts}


def _hit(r: dict[str, Any]) -> dict[str, Any]:
    return {"path": r["path"], "startLine": int(r["startLine"]), "endLine": int(r["endLine"]),
            "score": float(r["score"]) if r.get("score") is not None else None, "source": r.get("source")}


def _json_out(text: str, opener: str) -> Any:
    start = text.find(opener)
    if start < 0:
        raise ValueError(f"no JSON document in the output: {text.strip()[:200]}")
    return json.loads(text[start:])


def cli_search(home: Any, text: str, at: datetime) -> dict[str, Any]:
    """`openclaw memory search --query TEXT --json`: the results, and the staleness warning when it gives one."""
    doc = _json_out(home.cli("memory", "search", "--query", text, "--json", at=at), "{")
    return {"results": [_hit(r) for r in doc.get("results") or []], "stale": bool(doc.get("stale")),
            "warning": doc.get("warning")}


def tool_answers(did: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """query text -> the first answer of its memory_search in a scripted turn (agent_chat records a search's
    results on the step after it; a retry after it means that first answer was unavailable)."""
    out: dict[str, dict[str, Any]] = {}
    for i, step in enumerate(did):
        if step.get("tool") != "memory_search" or step.get("retry"):
            continue
        after = did[i + 1] if i + 1 < len(did) else {}
        unavailable = bool(after.get("retry"))
        seen = after.get("seen")
        out.setdefault(str(step["args"]["query"]), {
            "results": None if unavailable or seen is None else [_hit(r) for r in seen], "unavailable": unavailable})
    return out


def tool_search(home: Any, chat: Any, texts: Sequence[str], session: str, at: datetime) -> dict[str, dict[str, Any]]:
    """One agent turn whose model calls memory_search once per text, then answers."""
    from harness.systems.agent_chat import Reply, Search

    chat.begin([*(Search(t) for t in texts), Reply("ok")])
    home.turn(session, "查一下我的记忆 / look these up in my memory", new_session=True, at=at)
    return tool_answers(chat.turns[-1])


def resolved_settings(home: Any, at: datetime) -> dict[str, Any]:
    """The memory-search settings the home's release resolves for the agent (drivers/openclaw_settings.mjs)."""
    from harness.systems.openclaw_agent import PRELOAD, AgentRunFailed

    cmd = [str(home.release.node), "--require", str(PRELOAD), str(SETTINGS_DRIVER), "--pkg", str(home.release.package),
           "--agent", AGENT]
    # the environment of the home's CLI calls (HOME, state folder, config, clock); OpenClawHome keeps it private,
    # and renaming it would change the digest every cached real home is keyed by
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=home._env(at), cwd=home.root)
    try:
        doc = _json_out(proc.stdout, "{")
    except ValueError:
        raise AgentRunFailed(f"OpenClaw {home.release.version}: the settings driver exited {proc.returncode}: "
                             f"{(proc.stderr.strip().splitlines() or ['no output'])[-1]}") from None
    if doc.get("error"):
        raise AgentRunFailed(f"OpenClaw {home.release.version}: the settings driver: {doc['error']}")
    return doc["agents"][AGENT]


def memory_status(home: Any, at: datetime) -> dict[str, Any]:
    """`openclaw memory status --json` for the agent: what the release says of its index (no search, no sync)."""
    rows = _json_out(home.cli("memory", "status", "--json", at=at), "[")
    status = next((r["status"] for r in rows if r.get("agentId") == AGENT), {})
    return {"chunks": status.get("chunks"), "dirty": status.get("dirty"),
            "indexIdentity": (status.get("custom") or {}).get("indexIdentity"),
            "searchMode": (status.get("custom") or {}).get("searchMode"), "provider": status.get("provider")}


def _roles(requests: Sequence[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in requests:
        out[str(r.get("role"))] = out.get(str(r.get("role")), 0) + int(r.get("count", 0))
    return out


# --- the scenario ------------------------------------------------------------------------------------------------


def run_upgrade(front: Any, work: Path, rows: list[dict[str, str]], log: Callable[[str], None] = print
                ) -> dict[str, Any]:
    """The scenario of the module docstring, in `work`; returns what each release left and answered."""
    from harness.systems.agent_chat import ScriptedAgentChat
    from harness.systems.openclaw_agent import OpenClawHome, Provider, find_release
    from harness.conformance.real_home.home import RETRIES, RETRY_WAIT_S

    texts = [q["text"] for q in rows]
    root = work / ".openclaw"
    requests: list[dict[str, Any]] = []

    def sent() -> dict[str, int]:  # texts embedded since the last call, by role
        taken = front.take_requests()
        requests.extend(taken)
        return _roles(taken)

    def home_for(version: str) -> Any:
        return OpenClawHome(find_release(version), root, chat_url=chat.base_url, provider=Provider(front.base_url,
                                                                                                   PROVIDER_MODEL))

    def write_home(version: str) -> tuple[Any, dict[str, Any]]:
        """The release writes the home: config with the user's settings, the memory indexed, one turn."""
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(MEMORY, root / "workspace")
        home = home_for(version)
        home.write_config()
        doc = json.loads(home.config_path.read_text(encoding="utf-8"))
        doc["memory"]["search"].update(USER_SEARCH)  # tables the provider block does not have
        doc["agents"].setdefault("entries", {})[AGENT] = {"memory": {"search": AGENT_OVERRIDE}}
        home.config_path.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        home.cli("memory", "index", "--force", at=INDEXED_AT)
        first = tool_search(home, chat, [texts[0]], "u001", USED_AT)
        return home, {"config": doc, "index_sent": sent(), "first_turn": first}

    def searches(home: Any, tag: str) -> tuple[dict[str, Any], dict[str, Any]]:
        cli = {}
        for i, text in enumerate(texts):
            cli[text] = cli_search(home, text, SEARCHED_AT)
            if i == 0:
                cli[text]["sent"] = sent()  # what the first search embedded (a rebuild re-embeds the chunks)
        log(f"conformance: upgrade, {tag}: {len(texts)} searches through the CLI")
        return cli, tool_search(home, chat, texts, "u002", SEARCHED_AT)

    front.take_requests()
    with ScriptedAgentChat(0, retries=RETRIES, retry_wait=RETRY_WAIT_S) as chat:
        # 1. the old release writes the home
        log(f"conformance: upgrade, OpenClaw {FROM_VERSION} writes the home")
        old, written = write_home(FROM_VERSION)
        upgraded: dict[str, Any] = {**written, "settings_before": resolved_settings(old, USED_AT),
                                    "index_before": index_state(root)}
        # 2. the new release's package over the same folder: doctor --fix first, as its docs say
        new = home_for(TO_VERSION)
        log(f"conformance: upgrade, OpenClaw {TO_VERSION} runs `openclaw doctor --fix` on it")
        report = new.cli("doctor", "--fix", at=UPGRADED_AT)
        upgraded["doctor"] = [line.strip().replace(str(root), "~/.openclaw") for line in report.splitlines()
                              if any(w in line for w in ("Upgraded agent database", "Auto-migrated", "Updated config"))
                              and not line.startswith("│")]  # not the boxed repeat of the same line
        upgraded["config_after"] = json.loads(new.config_path.read_text(encoding="utf-8"))
        upgraded["index_after_doctor"] = index_state(root)
        after_doctor = work / "after-doctor"
        shutil.copytree(root, after_doctor)  # for step 3
        upgraded["settings_after"] = resolved_settings(new, UPGRADED_AT)
        upgraded["status_after_doctor"] = memory_status(new, UPGRADED_AT)
        sent()
        upgraded["cli"], upgraded["tool"] = searches(new, "the upgraded home")
        upgraded["index_after"] = index_state(root)
        # 3. the same folder as doctor left it, the agent searching first
        shutil.rmtree(root)
        shutil.copytree(after_doctor, root)
        sent()
        tool_first = {"tool": tool_search(new, chat, texts, "u002", SEARCHED_AT)}
        tool_first["sent"], tool_first["index_after"] = sent(), index_state(root)
        # 4. a fresh home of the new release at the same path
        log(f"conformance: upgrade, OpenClaw {TO_VERSION} writes a fresh home")
        fresh_home, fresh = write_home(TO_VERSION)
        fresh["settings"] = resolved_settings(fresh_home, USED_AT)
        fresh["index_before_search"] = index_state(root)
        fresh["cli"], fresh["tool"] = searches(fresh_home, "a fresh home")
        fresh["index"] = index_state(root)
    sent()
    return {"from": FROM_VERSION, "to": TO_VERSION, "queries": rows, "upgraded": upgraded, "tool_first": tool_first,
            "fresh": fresh, "requests_raw": requests}


def run_key(rows: list[dict[str, str]]) -> str:
    from harness.systems import agent_chat, openclaw_agent
    from harness.systems.embedding_front import model_id

    identity = {"versions": [FROM_VERSION, TO_VERSION], "queries": rows, "memory": tree_digest([MEMORY]),
                "settings": [USER_SEARCH, AGENT_OVERRIDE], "clock": [str(t) for t in (INDEXED_AT, USED_AT, UPGRADED_AT,
                                                                                     SEARCHED_AT)],
                "drivers": tree_digest([Path(openclaw_agent.__file__), Path(agent_chat.__file__), openclaw_agent.PRELOAD,
                                    SETTINGS_DRIVER]),
                "scenario": hashlib.sha256(inspect.getsource(run_upgrade).encode()).hexdigest(),
                "format": UPGRADE_FORMAT, "vectors": model_id()}
    return hashlib.sha256(json.dumps(identity, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:32]


def upgrade_run(real: RealRuns) -> dict[str, Any]:
    """The scenario's document, run once per input and kept beside the other real runs."""
    rows = queries()
    path = real.root / f"openclaw-upgrade-{FROM_VERSION}-{TO_VERSION}-{run_key(rows)}.json"
    if path.is_file() and not real.refresh:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if real.same_vectors(doc, path):
            return doc
    work = Path(tempfile.mkdtemp(prefix="openclaw-upgrade-"))
    try:
        doc = run_upgrade(real.front(), work, rows, real.log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return real.keep(path, doc, doc.pop("requests_raw"))


# --- the comparisons ---------------------------------------------------------------------------------------------
