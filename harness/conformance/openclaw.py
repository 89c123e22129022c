"""OpenClaw's half of `make conformance`: the openclaw-* presets against the releases they model.

    preset                 release      checked (each on king78 rounds 1-4 and the CMRC sample)
    openclaw-2026.02       2026.2.22    chunk boundaries; the lexical leg = hybrid mode's lexical list
                                        (2026.2.22's FTS-only mode indexes nothing, so this list is its
                                        model-free search): ordered chunks, text scores, top-5 files
    openclaw-2026.08       2026.8.1     chunk boundaries; the keyword leg = searchKeywordWithFallback:
                                        ordered chunks, boosted and text scores, top-5 files
    openclaw-2026.08-fts   2026.8.1     the FTS-only results memory_search returns: top-5 files, and
                                        ordered chunks with scores (temporal decay, importance, selection)
    openclaw-2026.08-fts   2026.9.6     (information, never gates) the same, and chunk boundaries; gated:
                                        the 2026.08 chunker with overlap_cap and long_lines "2026.09" (the
                                        options that model 2026.9.3+) against its stored chunks
    openclaw-2026.09-fts   2026.9.6     chunk boundaries; the FTS-only results memory_search returns
                                        (the hybrid presets with a real embedding: hybrid.py)

Every preset runs at its own [search] settings (maxResults 6, 24 candidates) and the real systems with
the same maxResults; the harness side builds no embedding model (the hybrid presets' lexical legs alone,
the FTS-only preset whole, its embedder being `none`).
"""
from __future__ import annotations

import json
from typing import Any

from harness.config import resolve
from harness.inputs.openclaw_releases import release_of
from harness.pipeline import build_stages, chunk_layout, fuse, index_layout, search_legs
from harness.stages.chunkers import CHUNKERS, Chunk
from harness.stages.embedders import EmbeddingCache
from harness.stages.lexical import LEXICAL_BACKENDS, RANK_TO_SCORE
from harness.stages.tokenizers import TOKENIZERS
from harness.conformance.base import (
    Check,
    Difference,
    RealRuns,
    Workspace,
    fmt_hits,
    params,
    preset_config,
    scores_agree,
    short,
)

WORKSPACES = ("round1", "round2", "round3", "round4", "cmrc20")  # model-free: king78 and CMRC
NAME = "openclaw"
# the release the study ran, the one the 2026.08 presets model, the newest (harness.inputs.openclaw_releases)
STUDY_RELEASE, PRESET_RELEASE, NEWEST_RELEASE = (release_of(p).version for p in
                                                 ("openclaw-2026.02", "openclaw-2026.08", "openclaw-2026.09"))
SYSTEMS = [("openclaw", v) for v in (STUDY_RELEASE, PRESET_RELEASE, NEWEST_RELEASE)]
# The chunker options that model 2026.9.3+ (NOTES.md 4c): the only release read whose carry is capped
NEWEST_CHUNKER = {"overlap_cap": True, "long_lines": "2026.09"}
NEWER_CAUSE = "a change after 2026.8.1 (NOTES.md 4b-4c)"
CARRY_CAUSE = "2026.9.3's overlap carry and long-line cut (reproduced by overlap_cap = true, long_lines = \"2026.09\")"

Hit = tuple[str, int, int, float, float]  # path, start line, end line, score, text score


def _release(version: str) -> str:
    return f"openclaw {version}"


# --- the harness side ---------------------------------------------------------------------------------


def preset_chunks(preset: str, ws: Workspace, overrides: dict[str, Any] | None = None) -> list[Chunk]:
    table = {**preset_config(preset)["chunker"], **(overrides or {})}
    return chunk_layout(ws.layout, CHUNKERS.create(table["name"], params(table), where=f"preset {preset} [chunker]"))


def lexical_leg(preset: str, ws: Workspace) -> dict[str, list[Hit]]:
    """The preset's lexical leg for every query: (path, lines, ranking score, text score) best first, the
    ranking score being the keyword fallback's boosted score when the leg has one, else the text score."""
    config = resolve({"preset": preset})
    chunks = preset_chunks(preset, ws)
    by_id = {c.id: c for c in chunks}
    tok = TOKENIZERS.create(config.tokenizer.name, dict(config.tokenizer.params))
    lexical = LEXICAL_BACKENDS.create(config.lexical.name, dict(config.lexical.params), tokenizer=tok, conn=None)
    lexical.add(chunks)
    k = min(200, int(config.search.max_results) * int(config.search.candidate_multiplier))
    to_score = RANK_TO_SCORE[config.fusion.params.get("bm25_to_score", "current")]
    out: dict[str, list[Hit]] = {}
    for q in ws.queries:
        hits = lexical.search(q.text, k)
        ranking = getattr(hits, "ranking", None)
        rows = []
        for cid, raw in hits:
            c, text = by_id[cid], to_score(-raw)
            rows.append((c.path, c.start_line, c.end_line, ranking[cid] if ranking is not None else text, text))
        out[q.id] = rows
    return out


def pipeline_results(preset: str, ws: Workspace) -> dict[str, list[Hit]]:
    """What the preset's whole pipeline returns per query (for a preset without an embedding model)."""
    config = resolve({"preset": preset, "evaluation": {"now": ws.now} if ws.now else {}},
                     source=f"conformance {ws.name}")
    stages = build_stages(config, cache=EmbeddingCache(":memory:"), progress=False)
    index = index_layout(ws.layout, stages)
    legs = search_legs(index, stages, ws.queries)
    out: dict[str, list[Hit]] = {}
    for q in ws.queries:
        hits, _ = fuse(stages, q, legs[q.id].legs, index, legs[q.id].query_vector)
        out[q.id] = [(index.by_id[h.id].path, index.by_id[h.id].start_line, index.by_id[h.id].end_line, h.score,
                      h.text_score) for h in hits]
    return out


# --- the real side -------------------------------------------------------------------------------------


def real_hits(rows: list[dict[str, Any]]) -> list[Hit]:
    return [(r["path"], r["startLine"], r["endLine"], float(r["score"]),
             float(r["textScore"]) if r.get("textScore") is not None else float(r["score"])) for r in rows]


def real_lists(doc: dict[str, Any], field: str) -> dict[str, list[Hit]]:
    return {str(q["id"]): real_hits(q[field]) for q in doc["queries"]}


# --- comparing -----------------------------------------------------------------------------------------


def chunk_keys(chunks: list[Chunk]) -> set[tuple[str, int, int, str]]:
    return {(c.path, c.start_line, c.end_line, c.hash) for c in chunks}


def chunk_check(preset: str, version: str, ws: Workspace, doc: dict[str, Any], *, gated: bool,
                overrides: dict[str, Any] | None = None,
                explained_by: set[tuple[str, int, int, str]] | None = None) -> tuple[Check, set[str]]:
    """Chunk boundaries and texts: (path, start, end, sha256) of the preset's chunks (with chunker
    `overrides`) against the stored ones.  A file whose stored chunks `explained_by` reproduces is put down
    to 2026.9.3's carry.  Also returns the files whose chunks differ (to explain ranking differences)."""
    ours = chunk_keys(preset_chunks(preset, ws, overrides))
    theirs = {(c["path"], c["startLine"], c["endLine"], c["hash"]) for c in doc["chunks"]}
    files = sorted({c[0] for c in ours ^ theirs})
    diffs = []
    for path in files:
        mine = sorted((s, e) for p, s, e, _ in ours if p == path)
        real = sorted((s, e) for p, s, e, _ in theirs if p == path)
        real_keys = {c for c in theirs if c[0] == path}
        if explained_by is not None and real_keys == {c for c in explained_by if c[0] == path}:
            why = CARRY_CAUSE
        else:
            why = "same line ranges, different text" if mine == real else "boundaries differ"
        diffs.append(Difference(path, "", ", ".join(f"{s}-{e}" for s, e in mine),
                                ", ".join(f"{s}-{e}" for s, e in real), why))
    what = "chunk boundaries (path, lines, sha256)"
    if overrides:
        what += " with " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in overrides.items())
    check = Check(NAME, preset, _release(version), what, ws.name, len(ours & theirs), len(ours | theirs), gated, diffs)
    return check, set(files)


def explain(ours: list[Hit], theirs: list[Hit], chunk_files: set[str], fallback: str) -> str:
    """Why two ranked lists differ, from what the lists themselves show."""
    touched = sorted({h[0] for h in ours + theirs} & chunk_files)
    if touched:
        return "chunk boundaries differ in " + ", ".join(short(p) for p in touched[:3])
    key = lambda h: h[:3]  # noqa: E731
    if sorted(map(key, ours)) == sorted(map(key, theirs)):
        mine, real = {key(h): h for h in ours}, {key(h): h for h in theirs}
        if all(scores_agree(mine[k][3], real[k][3]) for k in mine):
            return "the same chunks and scores; equal scores in another order (tie order)"
        worst = max(abs(mine[k][3] - real[k][3]) for k in mine)
        return f"the same chunks, scores differ (up to {worst:.3g})"
    return fallback


def list_checks(preset: str, version: str, ws: Workspace, ours: dict[str, list[Hit]],
                theirs: dict[str, list[Hit]], what: str, *, gated: bool, chunk_files: set[str],
                with_text_scores: bool = True, fallback: str = "unexplained") -> list[Check]:
    """Two checks per list: the first five files in order, and the whole list (chunks and scores)."""
    top5 = Check(NAME, preset, _release(version), f"{what}: top-5 files", ws.name, 0, 0, gated)
    whole = Check(NAME, preset, _release(version), f"{what}: ordered chunks and scores", ws.name, 0, 0, gated)
    texts = {q.id: q.text for q in ws.queries}
    for qid, mine in ours.items():
        real = theirs.get(qid, [])
        files_agree = [h[0] for h in mine[:5]] == [h[0] for h in real[:5]]
        same = [h[:3] for h in mine] == [h[:3] for h in real] and all(
            scores_agree(a[3], b[3]) and (not with_text_scores or scores_agree(a[4], b[4]))
            for a, b in zip(mine, real))
        for check, ok in ((top5, files_agree), (whole, same)):
            check.total += 1
            check.agreed += ok
            if not ok:
                check.differences.append(Difference(qid, texts[qid], fmt_hits([h[:4] for h in mine]),
                                                    fmt_hits([h[:4] for h in real]),
                                                    explain(mine, real, chunk_files, fallback)))
    return [top5, whole]


def compare(workspaces: list[Workspace], real: RealRuns) -> list[Check]:
    checks: list[Check] = []
    for ws in workspaces:
        # openclaw-2026.02 against 2026.2.22: what the study could have run
        max_results = int(preset_config("openclaw-2026.02")["search"]["max_results"])
        doc = real.get("openclaw", STUDY_RELEASE, ws, max_results=max_results)
        check, files = chunk_check("openclaw-2026.02", STUDY_RELEASE, ws, doc, gated=True)
        checks.append(check)
        checks += list_checks("openclaw-2026.02", STUDY_RELEASE, ws, lexical_leg("openclaw-2026.02", ws),
                              real_lists(doc, "hybrid_lexical"), "lexical leg (hybrid mode's lexical list)",
                              gated=True, chunk_files=files)

        # openclaw-2026.08 (hybrid) and openclaw-2026.08-fts (FTS-only) against 2026.8.1
        max_results = int(preset_config("openclaw-2026.08")["search"]["max_results"])
        doc = real.get("openclaw", PRESET_RELEASE, ws, max_results=max_results)
        check, files = chunk_check("openclaw-2026.08", PRESET_RELEASE, ws, doc, gated=True)
        checks.append(check)
        checks += list_checks("openclaw-2026.08", PRESET_RELEASE, ws, lexical_leg("openclaw-2026.08", ws),
                              real_lists(doc, "keyword"), "keyword leg (searchKeywordWithFallback)",
                              gated=True, chunk_files=files)
        fts = pipeline_results("openclaw-2026.08-fts", ws)
        checks += list_checks("openclaw-2026.08-fts", PRESET_RELEASE, ws, fts, real_lists(doc, "results"),
                              "FTS-only results", gated=True, chunk_files=files)

        # the newest release: the chunker options that model its carry (gated), the presets (information)
        doc = real.get("openclaw", NEWEST_RELEASE, ws, max_results=max_results)
        newest, _ = chunk_check("openclaw-2026.08", NEWEST_RELEASE, ws, doc, gated=True, overrides=NEWEST_CHUNKER)
        checks.append(newest)
        check, files = chunk_check("openclaw-2026.08", NEWEST_RELEASE, ws, doc, gated=False,
                                   explained_by=chunk_keys(preset_chunks("openclaw-2026.08", ws, NEWEST_CHUNKER)))
        checks.append(check)
        checks += list_checks("openclaw-2026.08-fts", NEWEST_RELEASE, ws, fts, real_lists(doc, "results"),
                              "FTS-only results", gated=False, chunk_files=files,
                              fallback=NEWER_CAUSE)
        # ... and the preset that models it (2026.9.x: a 200-candidate keyword leg, 2026.9.3's carry), gated
        check, files = chunk_check("openclaw-2026.09-fts", NEWEST_RELEASE, ws, doc, gated=True)
        checks.append(check)
        checks += list_checks("openclaw-2026.09-fts", NEWEST_RELEASE, ws, pipeline_results("openclaw-2026.09-fts", ws),
                              real_lists(doc, "results"), "FTS-only results", gated=True, chunk_files=files)
    return checks


NOTES = """\
- 2026.2.22 has no FTS-only index: without an embedding provider its sync stores no chunk (the driver
  reports `fts_only_index_chunks`), so its model-free search is hybrid mode's lexical list (the strict
  full query, every text score 1.0), indexed with a stand-in provider that returns no vectors.
- Ties: OpenClaw's keyword lists break equal (score, text score, path, start line) by its stored chunk id,
  sha256("memory:path:start:end:hash:model"); the presets use the same id with model "fts-only" (exact in
  FTS-only mode; in hybrid mode the model name is the embedding model's).
- The clock: temporal decay ages are taken at the workspace's `now` (king78: 2026-02-23, the study's
  report date), frozen in the real system while it searches.
"""
