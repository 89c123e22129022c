"""What the script did and the documented rule applied to it, and the rows that compare what the harness
mined and replayed from a home with that."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.config import load_experiment
from harness.conformance.base import Check, Difference, fmt_hits
from harness.conformance.real_home.home import NAME, PRESET, SCORE_TOLERANCE, VERSION
from harness.inputs.layout import Query
from harness.inputs.openclaw_home import locate
from harness.inputs.openclaw_sessions import ReadStats, read_sessions
from harness.inputs.session_mining import dedupe_key, drop_reason, mine, normalise
from harness.pipeline import build_stages, index_layout, load_dataset, render_layout, search_legs, trace_queries

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


def home_check(what: str, variation: str, agreed: int, total: int, differences: list[Difference] | None = None,
               gated: bool = True) -> Check:
    return Check(NAME, PRESET, f"openclaw {VERSION}", what, f"home-{variation}", agreed, total, gated,
                 differences or [])


def mined(home: Path, agent: str | None = None) -> tuple[Any, list[Any], Any]:
    """The installation, its sessions' memory_search calls and the mining, as `harness init` reads them."""

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
    return [home_check("mined memory_search calls = the script's (precision)", variation, matched, sum(got.values()), extra),
            home_check("mined memory_search calls = the script's (recall)", variation, matched, sum(want.values()), missing)]


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
    return home_check("implicit judgments = the documented rule on the script's memory_get calls", variation,
                  len(keys) - len(diffs), len(keys), diffs, gated)


def hit_rows(records: list[dict[str, Any]]) -> list[tuple[str, int, int, float]]:
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
    return {qid: hit_rows(t.records) for qid, t in traces.items()}


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
    return [home_check(f"{what}: the release's top-6 (paths, lines, order)", variation, same_chunks, total, chunk_diffs,
                   gated),
            home_check(f"{what}: and its scores (within {SCORE_TOLERANCE:g})", variation, same_scores, total,
                   chunk_diffs + score_diffs, gated),
            home_check(f"{what}: questions the release's search answered (not timed out)", variation,
                   len(questions) - len(timed_out), len(questions), timed_out, gated=False)]


def vector_checks(variation: str, init: Any, run: Any, queries: int) -> list[Check]:
    chunks = init.report.as_dict().get("chunks") if init.report else None
    imported = init.imported.imported if init.imported else 0
    total = int(chunks or 0)
    rows = [home_check("index vectors imported by init", variation, min(imported, total), total,
                   [] if imported >= total else [Difference("index", "", f"{imported} imported", f"{total} chunks",
                                                            "vectors of the index not imported")])]
    computed = int(run.timings["embedding_cache"].get("computed", 0))
    embedded = max(0, computed - queries)
    used = int(run.summary["index"]["chunks"])
    rows.append(home_check("chunk texts the run embeds: none (the index's vectors)", variation, used - min(embedded, used),
                       used, [] if not embedded else [Difference("run", "", f"{embedded} embedded", "0",
                                                                 "chunk texts embedded although the index has them")]))
    return rows
