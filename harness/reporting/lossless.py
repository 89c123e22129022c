"""The Markdown report of the lossless-claw study (studies/lossless.py), drawn from its JSON document
alone (`harness lossless SPEC --redraw` redraws it), as a list of sections like the benchmark report."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from harness.evaluation.formatting import mean_text
from harness.reporting.documents import write_study_document
from harness.reporting.markdown import markdown_table
from harness.studies.document import Document
from harness.reporting.notes import render_notes


def cell(stat: dict[str, Any] | None, digits: int = 3) -> str:
    """`mean [low, high]` of a mean_ci block."""
    return mean_text(stat, digits)


def value(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and x != x):
        return ""
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:,.{digits}f}" if isinstance(x, float) else str(x)


def header(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    return f"# {doc['name']}\n\n{(spec.get('description') or doc.get('description', '')).strip()}\n"


def data(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    d = doc["dataset"]
    tokens = d.get("session_tokens", [])
    queries = d.get("queries", {})
    return ("## Data\n\n"
            f"`{d.get('path')}` (sha256 {str(d.get('sha256'))[:12]}…): {d.get('conversations')} conversations, "
            f"{d.get('messages', 0):,} messages (one per turn), {queries.get('suite', '?')} suite questions with "
            f"evidence turns. Each conversation is one session of lossless-claw; its size by lossless-claw's "
            f"estimator: {min(tokens):,}-{max(tokens):,} tokens (mean {sum(tokens) / len(tokens):,.0f}).\n"
            if tokens else "")


def grep(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    rows = []
    for r in doc["grep"]["rows"]:
        rows.append({"query": r["form"], "mode": r["mode"], "sort": r["sort"] if r["mode"] == "full_text" else "(newest first)",
                     "recall_any": cell(r["recall_any"]), "recall_all": cell(r["recall_all"]),
                     "evidence share": cell(r["evidence_share"]),
                     "with results": value(r["with_results"]), f"at limit {doc['grep']['limit']}": value(r["at_limit"]),
                     "results (mean)": value(r["results_mean"], 1), "tool tokens": cell(r["tool_tokens"], 0),
                     "paths": ", ".join(f"{k} {v}" for k, v in sorted(r["routes"].items()))})
    names = doc.get("category_names", {})
    by_cat = []
    for r in doc["grep"]["rows"]:
        if r["mode"] == "full_text" and r["sort"] != "recency":
            continue
        by_cat.append({"query": r["form"], "mode": r["mode"],
                       **{f"{c} {names.get(c, '')}".strip(): value(v) for c, v in r["by_category"].items()}})
    return ("## lcm_grep over the raw messages\n\n"
            f"Scope `messages`, limit {doc['grep']['limit']}. recall_any: at least one of the question's evidence "
            "turns is among the returned messages; recall_all: all of them are; evidence share: the mean share "
            "of its evidence turns returned. `user` is the question as typed; `agent-k` the question's k rarest "
            "content words present in the conversation (stages/lossless/recall_policy.py): regex `t1|t2`, "
            "full_text `t1 t2` (all must occur). Tool tokens: the tool's reply as the agent reads it "
            "(lossless-claw's estimator). 95% bootstrap intervals over questions.\n\n"
            + markdown_table(pd.DataFrame(rows))
            + "\n\nrecall_any per question category (recency sort):\n\n" + markdown_table(pd.DataFrame(by_cat)) + "\n")


def context(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    rows = []
    for r in [c for c in doc["context"] if c["series"] != "dag"]:
        rows.append({"series": r["series"], "summaries": r["summarizer"], "tokenBudget": value(r["token_budget"]),
                     "leafChunkTokens": value(r["leaf_chunk_tokens"]), "fresh tail": r["fresh_tail_count"],
                     "context tokens (mean)": value(r["context_tokens_mean"], 0),
                     "evidence raw in context": cell(r["raw"]),
                     "raw or under a summary in context": cell(r["raw_or_summarised"]),
                     "evidence text in context": cell(r["text_kept"]),
                     "leaves / condensed (mean)": f"{r['leaves_mean']:.1f} / "
                                                  f"{sum(v for d, v in r['summaries_by_depth_mean'].items() if d != '0'):.1f}"})
    return ("## The assembled context as the budget shrinks\n\n"
            "Each conversation replayed message by message with compaction after every message (leaf trigger, "
            "threshold sweep at 0.75 x tokenBudget, forced sweep at fan-in 2 above tokenBudget), then the context "
            "assembled for a question asked at the end. Per question, the share of its evidence turns that are in "
            "that context as raw messages; raw or under a summary that is in it (lcm_expand could recover them); "
            "and whose every sentence is in the context's text (raw or kept by the summary).\n\n"
            + markdown_table(pd.DataFrame(rows)) + "\n")


def dag(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    rows = []
    for r in doc["context"]:
        depths = r["summaries_by_depth_mean"]
        rows.append({"series": r["series"], "summaries": r["summarizer"], "tokenBudget": value(r["token_budget"]),
                     "leafChunkTokens": value(r["leaf_chunk_tokens"]), "fresh tail": r["fresh_tail_count"],
                     "leaves (mean)": value(r["leaves_mean"], 1),
                     "messages per leaf": value(r["messages_per_leaf_mean"], 1),
                     "summaries by depth (mean)": ", ".join(f"d{d}: {n:.1f}" for d, n in depths.items()) or "none",
                     "max depth": r["max_depth"], "leaf / condensed passes": f"{r['passes']['leaf']} / {r['passes']['condensed']}",
                     "normal / aggressive / fallback": " / ".join(str(r["levels"][k]) for k in
                                                                  ("normal", "aggressive", "fallback"))})
    return ("## DAG shape against leaf size\n\nSummed or averaged over the conversations. Seed 003 says \"every 8 "
            "messages make a leaf\"; in the code a leaf is as many of the oldest messages as fit leafChunkTokens.\n\n"
            + markdown_table(pd.DataFrame(rows)) + "\n")


def markdown_presets(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    if not doc.get("markdown"):
        return ""
    rows = []
    for r in doc["markdown"]:
        ci = {k: r.get(f"{k}_ci95") for k in ("recall_any@5", "recall_any@10", "recall@1000tokens", "context_tokens")}
        rows.append({"preset": r["preset"], "snippet": r.get("snippet"),
                     "recall_any@5": _ci(r.get("recall_any@5"), ci["recall_any@5"]),
                     "recall_any@10": _ci(r.get("recall_any@10"), ci["recall_any@10"]),
                     "recall_all@10": value(r.get("recall_all@10")),
                     "recall@1000tokens": _ci(r.get("recall@1000tokens"), ci["recall@1000tokens"]),
                     "context tokens": _ci(r.get("context_tokens"), ci["context_tokens"], 0),
                     "whole memory tokens": value(r.get("whole_memory_tokens"), 0),
                     "token reduction": value(r.get("token_reduction"))})
    return ("## The Markdown-memory presets on the same conversations\n\n"
            "experiments/locomo.toml (one dated file per session, 10 results): recall over evidence turns in the "
            "top-k chunks; context tokens = the snippets of the 10 results as each system returns them (e5 "
            "tokenizer); token reduction = 1 - context tokens / whole memory tokens.\n\n"
            + markdown_table(pd.DataFrame(rows)) + "\n")


def _ci(mean: Any, interval: Any, digits: int = 3) -> str:
    if mean is None:
        return ""
    return cell({"mean": mean, "ci": interval}, digits)


def notes(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    return f"## Reading the numbers\n\n{render_notes(spec['notes'], doc).strip()}\n" if spec.get("notes") else ""


def environment(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    env, t = doc.get("environment", {}), doc.get("timings_s", {})
    return (f"Run time: grep {t.get('grep', 0):.0f} s, compaction and assembly {t.get('context', 0):.0f} s, "
            f"Markdown presets {t.get('markdown', 0):.0f} s. Summaries: {doc.get('chat') or 'extractive stand-in'}. "
            f"SQLite {env.get('sqlite')}, {env.get('cpu_count')} cores, Python {env.get('python')}.\n")


SECTIONS: tuple[Callable[[dict[str, Any], dict[str, Any]], str], ...] = (
    header, data, grep, context, dag, markdown_presets, notes, environment)


def lossless_markdown(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    return "\n".join(text for section in SECTIONS if (text := section(spec, doc)))


def render(document: Document, out_dir: Path | str) -> Path:
    """lossless.md from the study's Document alone (its config: the spec as loaded); returns its path."""
    path = Path(out_dir) / "lossless.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(lossless_markdown(document.config, document), encoding="utf-8")
    os.replace(tmp, path)
    return path


def write_lossless(document: Document, out_dir: Path | str) -> Path:
    """lossless.json (the Document) and lossless.md; returns the page's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_study_document(out_dir / "lossless.json", document)
    return render(document, out_dir)
