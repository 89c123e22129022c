"""lossless-claw on LoCoMo (`make lossless`, `harness lossless`): each conversation replayed as one
session into lossless-claw's store, then

  grep      lcm_grep over the raw messages, for every suite question, as a user would type it and as
            an agent would (1-3 key terms, stages/lossless/recall_policy.py), per mode and sort:
            which evidence turns come back, and what the tool's reply costs in tokens;
  context   compaction as the session grows (after every message), then the context lossless-claw
            assembles at the end under a token budget: which evidence turns are in it raw, under a
            summary in it, or gone, as the budget (and leaf size, fresh tail) shrinks;
  dag       the DAG's shape against leaf size;
  markdown  the Markdown-memory presets on the same conversations (experiments/locomo.toml), with
            their context cost (evaluation/context_budget.py).

A spec is a TOML file (experiments/lossless-locomo.toml); the report goes to its `output` folder
(lossless.json, lossless.md: harness.reporting.lossless).  Summaries come from the extractive stand-in
unless the spec has a [chat] table (then a chat model, through the completion cache).
"""
from __future__ import annotations

import hashlib
import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from harness.config import load_experiment, load_toml
from harness.errors import ConfigError
from harness.evaluation.statistics import bootstrap_mean
from harness.inputs.layout import project_path
from harness.inputs.locomo import (
    CATEGORY_NAMES,
    Conversation,
    LoCoMo,
    conversation_queries,
)
from harness.stages.lossless import (
    Compactor,
    ExtractiveSummarizer,
    LosslessSettings,
    LosslessStore,
    assemble,
    dag_shape,
    estimate_tokens,
    lcm_grep,
    tool_tokens,
)
from harness.stages.lossless.assemble import item_text
from harness.stages.lossless.recall_policy import (
    agent_pattern,
    document_frequencies,
    key_terms,
)
from harness.stages.lossless.summarize import sentences
from harness.studies.spec.models import LCM_GREP_SORTS, ContextSeries, GrepSettings, LosslessStudy
from harness.studies.spec.cells import StudyCell
from harness.studies.spec import validated
from harness.config import StageTable
from harness.pipeline import chat_model
from harness.studies.spec.cells import run_cells
from harness.studies.experiment import environment

TURN_SPACING = timedelta(minutes=1)  # turns of a session get increasing times, one minute apart
SORTS = LCM_GREP_SORTS


# --- the session ------------------------------------------------------------------------------------

def message_content(turn: Any) -> str:
    """A turn as the message the agent stored: `Speaker: text`, a shared image as `[shares <caption>]`."""
    text = " ".join(turn.text.strip().split("\n"))
    if turn.caption:
        text = f"{text} [shares {turn.caption}]".strip()
    return f"{turn.speaker}: {text}"


def load_session(conv: Conversation, store: LosslessStore, after_each=None) -> None:
    """Every turn, in time order, as a message (speaker_a -> user, speaker_b -> assistant)."""
    for session in sorted(conv.sessions, key=lambda s: (s.when, s.number)):
        for i, turn in enumerate(session.turns):
            role = "user" if turn.speaker == conv.speakers[0] else "assistant"
            store.add_message(role, message_content(turn), session.when + i * TURN_SPACING, ref=turn.dia_id)
            if after_each is not None:
                after_each()


def suite_questions(conv: Conversation) -> list[Any]:
    return [q for q in conversation_queries(conv, "turn").queries if q.kind == "suite"]


# --- grep -------------------------------------------------------------------------------------------

def grep_forms(spec: GrepSettings) -> list[dict[str, Any]]:
    """Every (query form, mode, sort) the grep study runs."""
    forms = []
    for who in ["user", *[f"agent-{k}" for k in spec.agent_terms]]:
        for mode in spec.modes:
            for sort in (SORTS if mode == "full_text" else ("recency",)):
                if sort in spec.sorts:
                    forms.append({"form": who, "mode": mode, "sort": sort})
    return forms


def grep_conversation(conv: Conversation, spec: GrepSettings) -> list[dict[str, Any]]:
    store = LosslessStore()
    load_session(conv, store)
    df = document_frequencies(m.content for m in store.messages.values())
    limit = spec.limit
    rows = []
    for q in suite_questions(conv):
        evidence = set(q.relevant)
        for form in grep_forms(spec):
            if form["form"] == "user":
                pattern = q.text
            else:
                terms = key_terms(q.text, df, int(form["form"].split("-")[1]))
                pattern = agent_pattern(terms, form["mode"]) if terms else ""
            result = lcm_grep(store, pattern, form["mode"], "messages", limit, form["sort"]) if pattern else None
            found = set(store.refs(int(h.ident) for h in result.messages)) if result else set()
            rows.append({**form, "query_id": q.id, "cluster": q.cluster, "category": q.extra["category"], "pattern": pattern,
                         "results": len(result.messages) if result else 0,
                         "recall_any": float(bool(found & evidence)), "recall_all": float(evidence <= found),
                         "evidence_share": len(found & evidence) / len(evidence),
                         "tool_tokens": tool_tokens(store, pattern, form["mode"], "messages", result)
                         if result else 0,
                         "route": (result.routes.get("messages") if result else "no key term")})
    return rows


# --- compaction and the assembled context -------------------------------------------------------------

def summarizer_for(name: str, chat: Any = None) -> Any:
    if name == "chat":
        from harness.stages.lossless import ChatSummarizer

        if chat is None:
            raise ConfigError("summarizer 'chat' needs a [chat] table in the lossless spec")
        return ChatSummarizer(chat)
    return ExtractiveSummarizer(name)


def simulate(conv: Conversation, settings: LosslessSettings, summarizer: Any) -> tuple[LosslessStore, Compactor]:
    store = LosslessStore()
    compactor = Compactor(store, settings, summarizer)
    load_session(conv, store, after_each=compactor.after_turn)
    return store, compactor


def context_conversation(conv: Conversation, setting: dict[str, Any], chat: Any = None) -> dict[str, Any]:
    """One conversation under one setting: the DAG, the assembled context, each question's evidence."""
    settings = LosslessSettings(token_budget=setting["token_budget"], leaf_chunk_tokens=setting["leaf_chunk_tokens"],
                                fresh_tail_count=setting["fresh_tail_count"])
    store, compactor = simulate(conv, settings, summarizer_for(setting["summarizer"], chat))
    context = assemble(store, settings.token_budget, settings.fresh_tail_count)
    raw = {store.messages[m].ref for m in context.message_ids()}
    summarised = {store.messages[m].ref for s in context.summary_ids() for m in store.descendant_messages(s)}
    context_text = " ".join("\n".join(item_text(store, item) for item in context.items).split())
    questions = []
    for q in suite_questions(conv):
        evidence = sorted(q.relevant)
        kept_text = [e for e in evidence if all(s in context_text for s in sentences(turn_text(store, e)))]
        questions.append({"query_id": q.id, "cluster": q.cluster, "category": q.extra["category"],
                          "raw": sum(e in raw for e in evidence) / len(evidence),
                          "raw_or_summarised": sum(e in raw or e in summarised for e in evidence) / len(evidence),
                          "text_kept": len(kept_text) / len(evidence)})
    export = json.dumps(store.export(), sort_keys=True, ensure_ascii=False)
    return {"shape": dag_shape(store), "passes": dict(compactor.passes), "context_tokens": context.tokens,
            "dropped_items": context.dropped, "session_tokens": sum(m.token_count for m in store.messages.values()),
            "dag_sha256": hashlib.sha256(export.encode("utf-8")).hexdigest(), "questions": questions}


def turn_text(store: LosslessStore, ref: str) -> str:
    """The words of a turn (without the speaker prefix): its sentences are what "its text is in the
    context" looks for (an extractive summary keeps whole sentences)."""
    message = next(m for m in store.messages.values() if m.ref == ref)
    return message.content.split(": ", 1)[-1]


# --- aggregation ---------------------------------------------------------------------------------------

def mean_ci(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The mean of rows[key] with its interval at the conversation level (each row's `cluster`)."""
    kept = [r for r in rows if r.get(key) is not None]
    x = np.asarray([r[key] for r in kept], dtype=float)
    if len(x) == 0:
        return {"mean": None, "ci": None, "n": 0}
    clusters = [r.get("cluster") or r["query_id"] for r in kept]
    interval = bootstrap_mean(x, clusters=clusters, unit="conversation")
    return {"mean": float(x.mean()), "ci": [interval.low, interval.high], "n": int(len(x)),
            "units": interval.units, "method": interval.method}


def aggregate_grep(rows: list[dict[str, Any]], spec: GrepSettings) -> list[dict[str, Any]]:
    out = []
    for form in grep_forms(spec):
        sel = [r for r in rows if all(r[k] == form[k] for k in ("form", "mode", "sort"))]
        routes: dict[str, int] = {}
        for r in sel:
            routes[r["route"]] = routes.get(r["route"], 0) + 1
        out.append({**form, "questions": len(sel), "recall_any": mean_ci(sel, "recall_any"),
                    "recall_all": mean_ci(sel, "recall_all"),
                    "evidence_share": mean_ci(sel, "evidence_share"),
                    "with_results": float(np.mean([r["results"] > 0 for r in sel])) if sel else None,
                    "at_limit": float(np.mean([r["results"] >= spec.limit for r in sel])) if sel else None,
                    "results_mean": float(np.mean([r["results"] for r in sel])) if sel else None,
                    "tool_tokens": mean_ci(sel, "tool_tokens"), "routes": routes,
                    "by_category": {str(c): mean_ci([r for r in sel if r["category"] == c], "recall_any")["mean"]
                                    for c in sorted({r["category"] for r in sel})}})
    return out


def aggregate_context(setting: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    questions = [q for r in runs for q in r["questions"]]
    shapes = [r["shape"] for r in runs]
    depth_counts: dict[str, float] = {}
    for shape in shapes:
        for depth, n in shape["summaries_by_depth"].items():
            depth_counts[depth] = depth_counts.get(depth, 0) + n / len(shapes)
    per_leaf = [s["messages_per_leaf_mean"] for s in shapes if s["messages_per_leaf_mean"] is not None]
    return {**setting, "conversations": len(runs), "questions": len(questions),
            "raw": mean_ci(questions, "raw"),
            "raw_or_summarised": mean_ci(questions, "raw_or_summarised"),
            "text_kept": mean_ci(questions, "text_kept"),
            "context_tokens_mean": float(np.mean([r["context_tokens"] for r in runs])),
            "session_tokens_mean": float(np.mean([r["session_tokens"] for r in runs])),
            "leaves_mean": float(np.mean([s["leaves"] for s in shapes])),
            "summaries_by_depth_mean": dict(sorted(depth_counts.items())),
            "max_depth": max(s["max_depth"] for s in shapes),
            "messages_per_leaf_mean": float(np.mean(per_leaf)) if per_leaf else None,
            "passes": {k: int(sum(r["passes"][k] for r in runs)) for k in runs[0]["passes"]},
            "levels": {k: int(sum(s["levels"][k] for s in shapes)) for k in shapes[0]["levels"]},
            "dag_sha256": {str(i): r["dag_sha256"] for i, r in enumerate(runs)}}


# --- the Markdown-memory presets -------------------------------------------------------------------------

MARKDOWN_FIGURES = ("recall_any@5", "recall_all@5", "recall_any@10", "recall_all@10", "context_tokens",
                    "recall@500tokens", "recall@1000tokens", "recall@2000tokens", "recall@4000tokens")


def markdown_cells(spec: LosslessStudy) -> list[Any]:
    """The Markdown-memory presets beside lossless-claw: one cell per preset, labelled by it."""
    return [StudyCell(preset, load_experiment(project_path(spec.experiment), preset=preset, dataset=spec.dataset),
                      (preset,))
            for preset in spec.presets]


def markdown_row(cell: Any, result: Any) -> dict[str, Any]:
    """What the report keeps of a Markdown-memory preset's run: its suite figures and context cost."""
    suite, context = result.summary["suite"], result.summary.get("context", {})
    return {"preset": cell.label, "queries": suite.get("queries"),
            **{k: suite.get(k) for k in MARKDOWN_FIGURES}, **{f"{k}_ci95": suite.get(f"{k}_ci95")
                                                            for k in MARKDOWN_FIGURES},
            "whole_memory_tokens": suite.get("whole_memory_tokens"),
            "token_reduction": suite.get("token_reduction"),
            "snippet": context.get("snippet"), "estimator": context.get("estimator"),
            "total_s": result.timings.get("total_s")}


# --- the study -----------------------------------------------------------------------------------------

def load_lossless(path: Path | str) -> LosslessStudy:
    return validated("lossless", load_toml(path, "lossless spec"), path)


def context_settings(spec: LosslessStudy) -> list[dict[str, Any]]:
    """Every compaction setting of the spec: each [[context]] series (a summarizer, a fresh tail and a
    list of [tokenBudget, leafChunkTokens] pairs) and the [dag] leaf-size sweep at one budget."""
    out = []
    for series in spec.context:
        for budget, leaf in series.settings:
            out.append({"summarizer": series.summarizer, "fresh_tail_count": series.fresh_tail_count,
                        "token_budget": int(budget), "leaf_chunk_tokens": int(leaf), "series": series.label})
    fresh_tail = ContextSeries.model_fields["fresh_tail_count"].default  # the DAG sweep's tail: a series' default
    for leaf in spec.dag.leaf_chunk_tokens:
        out.append({"summarizer": spec.dag.summarizer, "fresh_tail_count": fresh_tail,
                    "token_budget": spec.dag.token_budget, "leaf_chunk_tokens": int(leaf), "series": "dag"})
    return out


def run_lossless(spec: LosslessStudy, *, progress: bool = True) -> dict[str, Any]:
    t0 = time.perf_counter()
    dataset = LoCoMo(**{k: v for k, v in spec.dataset.items() if k != "name"})
    conversations = [part.conversation for _, part in dataset.scopes()]
    chat = chat_model(StageTable.of(spec.chat), f"{spec.source} [chat]") if spec.chat else None
    grep_spec = spec.grep
    grep_rows = [row for conv in conversations for row in grep_conversation(conv, grep_spec)]
    t_grep = time.perf_counter()
    context = []
    for setting in context_settings(spec):
        runs = [context_conversation(conv, setting, chat) for conv in conversations]
        context.append(aggregate_context(setting, runs))
    t_context = time.perf_counter()

    markdown = run_cells(markdown_cells(spec), progress=progress, then=markdown_row)
    sessions = [sum(estimate_tokens(m) for m in messages_of(conv)) for conv in conversations]
    return {"name": spec.name, "description": spec.description,
            "dataset": {**dataset.describe(), "session_tokens": sessions,
                        "messages": sum(len(messages_of(c)) for c in conversations)},
            "category_names": {str(k): v for k, v in CATEGORY_NAMES.items()},
            "grep": {"limit": grep_spec.limit, "rows": aggregate_grep(grep_rows, grep_spec)},
            "context": context, "markdown": markdown,
            "chat": chat.model_id if chat is not None else None,
            "timings_s": {"grep": t_grep - t0, "context": t_context - t_grep,
                          "markdown": time.perf_counter() - t_context},
            "environment": _environment()}


def messages_of(conv: Conversation) -> list[str]:
    return [message_content(t) for s in conv.sessions for t in s.turns]


def _environment() -> dict[str, Any]:
    return environment()
