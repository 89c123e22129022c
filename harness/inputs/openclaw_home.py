"""An OpenClaw installation on disk (the state folder, ~/.openclaw by default): where one agent's config,
workspace, memory index and session transcripts are, and in which release's format.

    home/openclaw.json                                     the config (JSON5), optional
    agents:    agents.entries (an object keyed by id: what `openclaw agents add` writes in 2026.8.1 and
               2026.9.6), else agents.list (2026.2.22's array)              [openclaw_config.agent_roster]
    workspace: the agent entry's workspace, else (rule of 2026.8.1 and 2026.9.6, a home with an agent
               database or agents.entries) the owner agent: agents.defaults.workspace or home/workspace; any
               other: agents.defaults.workspace/<id>, else home/workspace-<id>.  (2026.2.22: the default
               agent agents.defaults.workspace, else home/workspace; any other home/workspace-<id>.)
                                                                            [resolveAgentWorkspaceDir]
    index:     home/agents/<id>/agent/openclaw-agent.sqlite (2026.8.1 on), else memorySearch.store.path
               ({agentId} replaced) or home/memory/<id>.sqlite (2026.2.22)         [harness.inputs.openclaw_index]
    sessions:  home/agents/<id>/sessions/*.jsonl (2026.2.22) and/or the transcript_events table of the agent
               database (2026.8.1 on), and the archives session maintenance leaves (<id>.jsonl.deleted.<time>,
               zstd-compressed as .zst by 2026.8.1)                                 [harness.inputs.openclaw_sessions]

Read from the releases' own code: resolveAgentWorkspaceDir, resolveAgentConfig and tryResolveDefaultAgentId
(2026.2.22 dist/agents-*.js; 2026.8.1 dist/agent-scope-config-*.js; 2026.9.6
dist/agent-scope-config-*.mjs, where the owner agent is the one entry marked default, else the sole agent,
else none: several agents and none marked means `--agent` must choose), resolveStorePath (the legacy index
path), resolveOpenClawAgentSqlitePath (2026.8.1 dist/openclaw-agent-db.paths-*.js, 2026.9.6
dist/state/openclaw-state-read.worker.js).  Nothing here writes to the installation.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.errors import DataError
from harness.inputs.openclaw_config import RosterEntry, agent_roster, load_openclaw_json
from harness.inputs.openclaw_env import plain_string

DEFAULT_HOME = Path("~/.openclaw")
DEFAULT_AGENT = "main"
AGENT_DB = Path("agent") / "openclaw-agent.sqlite"


def normalise_agent_id(agent: str) -> str:
    """OpenClaw's normalizeAgentId: lower case, anything but [a-z0-9_-] becomes '-', trimmed."""
    value = re.sub(r"[^a-z0-9_-]+", "-", agent.strip().lower()).strip("-")
    return value or DEFAULT_AGENT


@dataclass
class Installation:
    home: Path
    agent: str
    config_path: Path | None
    config: dict[str, Any]
    workspace: Path
    index_path: Path | None
    session_files: list[Path]  # the agent's *.jsonl transcripts (2026.2.22)
    agent_db: Path | None  # the agent database (2026.8.1 on), if there
    other_agents: dict[str, int] = field(default_factory=dict)  # other agents' ids -> transcripts seen (ignored)
    notes: list[str] = field(default_factory=list)
    archives: list[Path] = field(default_factory=list)  # sessions/<id>.jsonl.deleted.<time>[.zst]: pruned sessions
    entry_field: str | None = None  # the agent's entry in openclaw.json ("agents.entries.<id>", "agents.list[0]")
    workspace_field: str | None = None  # the field the workspace came from (None: the release's default place)
    rule: str = "2026.2.22"  # whose agent rules the home follows (2026.2.22, or 2026.8.1 and later)
    references: dict[str, str] = field(default_factory=dict)  # config field path -> the ${NAME} it was written as

    def describe(self) -> list[str]:
        return [f"OpenClaw home {self.home}, agent {self.agent!r}",
                f"config: {self.config_path or 'none (OpenClaw defaults)'}",
                f"workspace: {self.workspace}",
                f"memory index: {self.index_path or 'none'}",
                f"sessions: {len(self.session_files)} transcript files" + (
                    f" and the agent database {self.agent_db}" if self.agent_db else "") + (
                    f"; {len(self.archives)} pruned-session archives" if self.archives else "")]


def _read_config(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """openclaw.json as OpenClaw loads it (JSON5, ${VAR} substituted) and where a string was one ${NAME}."""
    sub = load_openclaw_json(path)
    if not isinstance(sub.doc, dict):
        raise DataError(path, None, None, "must be a JSON5 object")
    return sub.doc, sub.references


def _roster(config: dict[str, Any]) -> list[RosterEntry]:
    return agent_roster(config)


def default_agent(config: dict[str, Any], *, rule: str = "2026.2.22") -> str | None:
    """The agent OpenClaw uses when none is named.  2026.2.22 (resolveDefaultAgentId): the entry marked
    default, else the first, else main.  2026.8.1 and 2026.9.6 (tryResolveDefaultAgentId, and the legacy
    owner of the workspace): exactly one entry marked default (unless agents.ownership is "explicit", where
    agents.defaults.systemAgent.agentId names it), else the sole agent, else main when no roster is
    configured at all; None when several agents are configured and none is the owner."""
    entries = _roster(config)
    if rule == "2026.2.22":
        marked = [e for e in entries if e.entry.get("default") is True]
        chosen = marked[0] if marked else entries[0] if entries else None
        return normalise_agent_id(chosen.id) if chosen else DEFAULT_AGENT
    agents = config.get("agents") if isinstance(config.get("agents"), dict) else {}
    ids = [normalise_agent_id(e.id) for e in entries]
    if agents.get("ownership") == "explicit":
        system = (agents.get("defaults") or {}).get("systemAgent") if isinstance(agents.get("defaults"), dict) else None
        named = system.get("agentId") if isinstance(system, dict) and isinstance(system.get("agentId"), str) else None
        if named and normalise_agent_id(named) in ids:
            return normalise_agent_id(named)
    else:
        marked = [e for e in entries if e.entry.get("default") is True]
        if len(marked) == 1:
            return normalise_agent_id(marked[0].id)
    if not entries:
        return None if agents.get("entries") is not None or agents.get("list") is not None else DEFAULT_AGENT
    return ids[0] if len(set(ids)) == 1 else None


def user_timezone(config: dict[str, Any]) -> Any:
    """The timezone OpenClaw shows the user's dates in (resolveUserTimezone, 2026.9.6 dist/date-time-*.mjs):
    agents.defaults.userTimezone when it names a zone, else the machine's."""
    agents = config.get("agents") if isinstance(config.get("agents"), dict) else {}
    defaults = agents.get("defaults") if isinstance(agents.get("defaults"), dict) else {}
    name = defaults.get("userTimezone")
    if isinstance(name, str) and name.strip():
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            return ZoneInfo(name.strip())
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return datetime.now().astimezone().tzinfo


def _user_path(value: str, home: Path) -> Path:
    """resolveUserPath: ~ is the user's home, which for an installation in `home` is home's parent."""
    value = value.strip()
    if "\x00" in value:  # no file system takes it (and pathlib raises ValueError, not OSError, on it)
        raise DataError(home / "openclaw.json", None, None, f"a path holds a NUL character ({value[:40]!r}...); "
                                                            "check agents' workspace and memorySearch.store.path")
    if value.startswith("~"):
        return Path(str(home.parent) + value[1:]) if home.name == ".openclaw" else Path(value).expanduser()
    path = Path(value)
    return path if path.is_absolute() else (home / path)


def _rule(home: Path, config: dict[str, Any]) -> str:
    """Whose agent rules the home follows: 2026.8.1's (kept by 2026.9.6) once any agent has its database or
    the config has agents.entries or memory.search, else 2026.2.22's."""
    agents = config.get("agents") if isinstance(config.get("agents"), dict) else {}
    if agents.get("entries") is not None or isinstance(config.get("memory"), dict) and "search" in config["memory"]:
        return "2026.8.1"
    if any((home / "agents").glob(f"*/{AGENT_DB.as_posix()}")):
        return "2026.8.1"
    return "2026.2.22"


def _check_workspaces(config: dict[str, Any], path: Path) -> None:
    """A workspace that is not a path string (a number, an object, a SecretRef) is refused by name, as OpenClaw's
    schema refuses it, rather than ignored for the default folder."""
    agents = config.get("agents") if isinstance(config.get("agents"), dict) else {}
    places = [("agents.defaults.workspace", agents.get("defaults"))]
    places += [(f"{e.field}.workspace", e.entry) for e in _roster(config)]
    for where, holder in places:
        if isinstance(holder, dict) and holder.get("workspace") is not None:
            value = holder["workspace"]
            if plain_string(value, path, where) is None:
                raise DataError(path, None, where, f"must be a folder path (a string), got {type(value).__name__}")


def locate(home: Path | str = DEFAULT_HOME, agent: str | None = None) -> Installation:
    """The installation in `home` for `agent` (default: the config's default agent, else main).  A home
    that is not a folder, or an agent that the config does not list and that has no data, is a DataError."""
    home = Path(os.path.abspath(Path(home).expanduser()))
    if not home.is_dir():
        raise DataError(home, None, None, "not a folder: --openclaw-home names OpenClaw's state folder "
                                          "(~/.openclaw by default), the one holding openclaw.json")
    if (home / ".openclaw").is_dir() and not (home / "openclaw.json").exists():
        home = home / ".openclaw"  # the user's home folder was given
    config_path = home / "openclaw.json"
    config, references = _read_config(config_path) if config_path.is_file() else ({}, {})
    rule = _rule(home, config)
    roster = _roster(config)
    roster_field = "agents.list" if (roster[0].field.startswith("agents.list") if roster else rule == "2026.2.22") \
        else "agents.entries"
    entries: dict[str, RosterEntry] = {}
    for e in roster:
        entries.setdefault(normalise_agent_id(e.id), e)  # the first entry with an id wins, as in the release
    agents_dir = home / "agents"
    on_disk = {p.name for p in agents_dir.iterdir() if p.is_dir()} if agents_dir.is_dir() else set()
    default = default_agent(config, rule=rule)
    if agent is None and default is None:
        raise DataError(config_path, None, roster_field,
                        f"{len(entries)} agents are configured and none is the default: pass --agent (one of "
                        f"{', '.join(sorted(entries))}), as OpenClaw {rule} on asks for one")
    agent_id = normalise_agent_id(agent) if agent else default
    entry = entries[agent_id].entry if agent_id in entries else {}
    if agent and agent_id not in entries and agent_id not in on_disk and agent_id != default:
        known = sorted(set(entries) | on_disk)
        raise DataError(config_path if config_path.is_file() else home, None, roster_field,
                        f"no agent {agent_id!r} in this installation; agents: {', '.join(known) or 'none'}")
    defaults = config.get("agents", {}).get("defaults", {}) if isinstance(config.get("agents"), dict) else {}
    _check_workspaces(config, config_path)
    fallback = defaults.get("workspace") if isinstance(defaults, dict) and isinstance(defaults.get("workspace"), str) \
        and defaults["workspace"].strip() else None
    configured = entry.get("workspace") if isinstance(entry.get("workspace"), str) and entry["workspace"].strip() \
        else None
    workspace_field = f"{entries[agent_id].field}.workspace" if configured else None
    if configured:
        workspace = _user_path(configured, home)
    elif agent_id == default:
        workspace = _user_path(fallback, home) if fallback else home / "workspace"
        workspace_field = "agents.defaults.workspace" if fallback else None
    elif fallback and rule != "2026.2.22":
        workspace = _user_path(fallback, home) / agent_id
        workspace_field = "agents.defaults.workspace"
    else:
        workspace = home / f"workspace-{agent_id}"

    notes: list[str] = []
    agent_db = agents_dir / agent_id / AGENT_DB
    agent_db = agent_db if agent_db.is_file() else None
    legacy_index = _legacy_index_path(config, entry, home, agent_id)
    index_path: Path | None = None
    if agent_db is not None and _has_table(agent_db, "memory_index_chunks"):
        index_path = agent_db
        if legacy_index.is_file():
            notes.append(f"{legacy_index} (a 2026.2.22 index) is there too; the agent database {agent_db} is the "
                         "one OpenClaw 2026.8.1 and later read, so it is used")
    elif legacy_index.is_file():
        index_path = legacy_index
    elif agent_db is not None:
        index_path = agent_db  # opened to say what it lacks

    sessions_dir = agents_dir / agent_id / "sessions"
    session_files = sorted(sessions_dir.glob("*.jsonl")) if sessions_dir.is_dir() else []
    archives = sorted(p for p in sessions_dir.glob("*.jsonl.deleted.*")) if sessions_dir.is_dir() else []
    others: dict[str, int] = {}
    if agents_dir.is_dir():
        for other in sorted(p for p in agents_dir.iterdir() if p.is_dir() and p.name != agent_id):
            count = len(list((other / "sessions").glob("*.jsonl"))) if (other / "sessions").is_dir() else 0
            if (other / AGENT_DB).is_file():
                count += _count_rows(other / AGENT_DB, "session_windows")
            others[other.name] = count
    return Installation(home, agent_id, config_path if config_path.is_file() else None, config, workspace,
                        index_path, session_files, agent_db, others, notes, archives=archives,
                        entry_field=entries[agent_id].field if agent_id in entries else None,
                        workspace_field=workspace_field, rule=rule, references=references)


def _legacy_index_path(config: dict[str, Any], entry: dict[str, Any], home: Path, agent_id: str) -> Path:
    raw = None
    agents = config.get("agents") if isinstance(config.get("agents"), dict) else {}
    defaults = agents.get("defaults") if isinstance(agents.get("defaults"), dict) else {}
    for block in (entry.get("memorySearch"), defaults.get("memorySearch")):
        store = block.get("store") if isinstance(block, dict) else None
        if isinstance(store, dict) and isinstance(store.get("path"), str) and store["path"].strip():
            raw = store["path"]
            break
    if raw is None:
        return home / "memory" / f"{agent_id}.sqlite"
    return _user_path(raw.replace("{agentId}", agent_id), home)


def _has_table(path: Path, table: str) -> bool:
    import sqlite3

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
        try:
            return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone() is not None
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return True  # unreadable: let the index reader name the problem


def _count_rows(path: Path, table: str) -> int:
    import sqlite3

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
        try:
            return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return 0
