"""Variations on copies of the home (a changed model, a memory file edited after it was judged, a JSONL beside
the database, a turn killed midway) and the second home (USER.md and a second agent with its own settings)."""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

from harness.config import load_experiment
from harness.conformance.base import Check, Difference
from harness.conformance.real_home.checks import asked_questions, call_checks, home_check, mined, replay, replay_checks
from harness.conformance.real_home.home import HERE, Home, MEMORY, VERSION, cached_home
from harness.errors import HarnessError
from harness.inputs.home_init import init_openclaw_home
from harness.inputs.openclaw_home import locate
from harness.inputs.query_files import load_query_specs
from harness.pipeline import dataset_parts, load_dataset
from harness.stages.embedders import EmbeddingCache
from harness.studies.experiment import run_experiment

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
        return [home_check("the variation could be measured", variation, 0, 1,
                       [Difference(variation, "", f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
                                   "its rows", "the variation failed before its rows were measured")], gated=False)]


def changed_model(home: Home, tmp: Path) -> list[Check]:
    """openclaw.json names another embedding model than the index was built with: the documented outcome is
    one line naming both (exit 2), never queries embedded by one model against another's vectors."""

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
    return [home_check("changed embedding model: init refuses in one line", "changed-model", int(ok), 1, diffs,
                   gated=ok)]


def edited_after_judged(home: Home, tmp: Path) -> list[Check]:
    """The memory file with the most implicit judgments is edited after the sessions (EDIT: lines added at its
    top, the first line of its last judged positive span rewritten), and the judgments are read as `harness
    run` applies them to today's files (the experiments init wrote, their data set's queries and notes).  The
    documented outcome, computed from the edit alone (expected_after_edit): a span whose text is still there is
    re-anchored to its new lines, a span whose text is gone is dropped and counted, a query left with no
    positive is not evaluated, and no span is applied to lines other than the text the agent saw."""

    _, _, base = mined(home.root)
    judged = {q.text: [(j.path, j.start, j.end, j.grade) for j in q.implicit] for q in base.queries if q.implicit}
    what = "memory file edited after it was judged"
    edit = choose_edit(judged)
    if edit is None:
        return [home_check(f"{what}: the run re-anchors or drops every judged span", "edited", 0, 0)]
    root = _copy(home, tmp, "edited")
    path = root / "workspace" / edit.path
    before = path.read_text(encoding="utf-8")
    after = edit.apply(before)
    path.write_text(after, encoding="utf-8")
    out = tmp / "edited-evals"
    try:
        init_openclaw_home(root, out, cache=EmbeddingCache(tmp / "edited.sqlite"), index_vectors=False)
    except HarnessError as exc:
        return [home_check(f"{what}: the run re-anchors or drops every judged span", "edited", 0, 1,
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

    _, _, base = mined(home.root)
    judged = {q.text: [(j.path, j.start, j.end, j.grade) for j in q.implicit] for q in base.queries if q.implicit}
    edit = choose_edit(judged)
    what = "memory file edited after it was judged: harness run as asked"
    if edit is None:
        return [home_check(f"{what} counts the files changed since each question", "edited", 0, 0)]
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
    return [home_check(f"{what} says it searched today's files and counts the files changed since each question",
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
    return [home_check(f"{what}: each judged span re-anchored to its text's new lines or dropped (as the run applies "
                   "them)", "edited", agreed, total, diffs),
            home_check(f"{what}: no span applied to text the agent did not see", "edited", applied_spans - len(stale),
                   applied_spans, stale),
            home_check(f"{what}: the run counts the spans re-anchored and dropped", "edited", 2 - len(counted), 2, counted)]


def _span(doc: str) -> tuple[int, int]:
    lines = doc.rsplit("#L", 1)[1]
    start, _, end = lines.partition("-L")
    return int(start), int(end)


def jsonl_beside_database(home: Home, tmp: Path) -> list[Check]:
    """A truncated JSONL copy of one session beside the agent database (what an export or an older release
    leaves): the complete record is the one to read, so every script call is still mined."""
    import sqlite3


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
        checks.append(home_check("second agent: init reads agents.entries.work (workspace, settings)", "agent-work", 0, 1,
                             [Difference("agents.entries.work", "", str(exc).splitlines()[0], "its workspace and settings",
                                         "per-agent settings are not read (issue 36 point 5, i36-inputs)")],
                             gated=False))
        return checks

    config = load_experiment(wout / "experiment.toml")
    stages_mr = int(config.search.max_results) if hasattr(config, "search") else None
    min_score = next((float(t.params.get("min_score")) for t in config.postprocess
                      if t.name == "min_score" and t.params.get("min_score") is not None), None)
    want = {"maxResults": 4, "minScore": 0.3}
    got = {"maxResults": stages_mr, "minScore": min_score}
    diffs = [Difference(k, "", str(got[k]), str(v), "the agent's own memory.search.query setting is not applied "
                        "(issue 36 point 5, i36-inputs)") for k, v in want.items() if got[k] != v]
    checks.append(home_check("second agent: its own maxResults / minScore (agents.entries.work)", "agent-work",
                         len(want) - len(diffs), len(want), diffs, gated=not diffs))
    windexed = set(_discovered(wout / "experiment.toml"))
    wquestions = asked_questions(wmining, wcalls)
    rows = replay_checks("agent-work", wquestions, replay(wout / "experiment.toml", wquestions, cache, "as-asked"),
                         windexed, "replay as asked")
    checks += _as_it_stands(rows, "", "the agent's own settings are not applied (issue 36 point 5, i36-inputs)")
    return checks


def _discovered(experiment: Path) -> list[str]:
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
    checks.append(home_check("turn killed mid-write: the cut search has no results (not an empty list)", "killed",
                         int(ok), 1, [] if ok else [Difference(sid, last.query if last else "",
                                                               str(last.results if last else None), "None",
                                                               "the cut call is read as a search that found nothing")],
                         gated=ok))
    return checks
