"""Reports: round tables beside the seed's figures, the four-round ablation (JSON, Markdown, PNG)."""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from harness.evaluation.metrics import NEAR_TIE
from harness.reporting.plots import plot_ablation
from harness.studies.experiment import RunResult

SEED_FILE = "seed_scores.csv"


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


def our_cell(row: pd.Series, purity: bool = True) -> str:
    """Score of the best relevant hit; ✗ when none is returned; a mark when top-1 is mixed or wrong.
    `purity` is off when targets of different queries overlap by design (`evaluation.report_purity`)."""
    if row["rank"] is None or pd.isna(row["rank"]):
        return "✗"
    cell = f"{row['score']:.3f}"
    if not row["top1_relevant"]:
        cell += f" (wrong top-1; relevant at rank {int(row['rank'])})"
    elif purity and not row["top1_pure"]:
        cell += " (mixed top-1)"
    if row["top1_relevant"] and not row["passed"]:
        cell += " (below minScore)"
    margin = row.get("relevant_margin")
    if margin is not None and margin == margin and abs(margin) < NEAR_TIE:
        cell += f" (near tie, {margin:+.4f})"
    return cell


def round_table(result: RunResult, seed: dict[tuple[str, int], dict[str, str]]) -> pd.DataFrame:
    round_no = result.config.get("evaluation", {}).get("round")
    purity = result.config.get("evaluation", {}).get("report_purity", True)
    frame = result.per_query
    rows = []
    for _, row in frame[frame["kind"] != "negative"].iterrows():
        cells = {"#": row["query_id"], "query": row["text"], "kind": row["kind"],
                 "in suite": "yes" if row["in_suite"] else "no",
                 "ours": our_cell(row, purity), "passed": "✅" if row["passed"] else "❌"}
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


def print_round(result: RunResult, seed: dict[tuple[str, int], dict[str, str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    round_no = result.config.get("evaluation", {}).get("round")
    table = Table(title=f"{result.name} — preset {result.config.get('preset', '?')}")
    df = round_table(result, seed)
    for col in df.columns:
        table.add_column(col)
    for _, row in df.iterrows():
        style = None if row["in suite"] == "yes" else "dim"
        table.add_row(*[str(v) for v in row.values], style=style)
    console.print(table)
    s = result.summary
    suite = s["suite"]
    where = f"round {round_no}" if round_no is not None else result.name
    console.print(
        f"{where}: passed {suite['passed']}/{suite['queries']}  "
        f"Recall@6 {suite.get('recall@6', 0):.3f}  MRR@6 {suite.get('mrr@6', 0):.3f}  "
        f"nDCG@6 {suite.get('ndcg@6', 0):.3f}  | negative queries returning results: "
        f"{s['negative']['returned_anything']}/{s['negative']['queries']}  | "
        f"retrieval p50 {s['latency_ms']['retrieval']['p50']:.2f} ms  | {s['index']['chunks']} chunks"
    )


def round_markdown(result: RunResult, seed: dict[tuple[str, int], dict[str, str]]) -> str:
    s = result.summary
    env = result.environment
    parts = [
        f"# {result.name} ({result.config.get('preset', '')})\n",
        f"{result.config.get('description', '')}\n",
        f"Passed {s['suite']['passed']}/{s['suite']['queries']} · Recall@6 {s['suite'].get('recall@6', 0):.3f} · "
        f"MRR@6 {s['suite'].get('mrr@6', 0):.3f} · nDCG@6 {s['suite'].get('ndcg@6', 0):.3f} · "
        f"{s['index']['chunks']} chunks ({s['index']['mixed_chunks']} overlap two or more records) · "
        f"{s['suite'].get('near_ties', 0)} decided by less than {s['suite'].get('near_tie', NEAR_TIE):g}\n",
        "## T-suite (ours beside the seed)\n",
        markdown_table(round_table(result, seed)),
        "\n## Negative queries (never recorded; a good system returns nothing)\n",
        markdown_table(negative_table(result)),
        f"\nEnvironment: SQLite {env['sqlite']}, sqlite-vec {env['sqlite_vec']}, jieba {env['jieba']}, "
        f"model {env.get('embedding_model')}, {env['cpu_count']} cores, Python {env['python']}.\n",
    ]
    return "\n".join(parts)


def write_round(result: RunResult, out_dir: Path | str, seed: dict[tuple[str, int], dict[str, str]]) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    result.write_json(out_dir / "results.json")
    _write_text(out_dir / "report.md", round_markdown(result, seed))
    return out_dir


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --- ablation -----------------------------------------------------------------------------------


def ablation_frame(results: dict[int, RunResult], seed: dict[tuple[str, int], dict[str, str]]) -> pd.DataFrame:
    """One row per T-query, columns r1..r4 (ours) and seed r1..r4."""
    first = next(iter(results.values())).per_query
    suite_ids = first[first["kind"] == "suite"]["query_id"].tolist()
    rows = []
    for qid in suite_ids:
        row: dict[str, Any] = {"#": qid, "query": first.set_index("query_id").loc[qid, "text"]}
        for r, res in results.items():
            q = res.per_query.set_index("query_id").loc[qid]
            row[f"r{r}"] = our_cell(q) + ("" if q["passed"] else " ❌") if q["in_suite"] else "—"
            row[f"seed r{r}"] = seed_cell(seed.get((qid, r)))
        rows.append(row)
    cols = ["#", "query"] + [f"r{r}" for r in results] + [f"seed r{r}" for r in results]
    return pd.DataFrame(rows)[cols]


def _margin_note(q: Any) -> str:
    margin = q.get("relevant_margin")
    if margin is None or margin != margin:
        return "no other chunk to compare with"
    side = "ahead of" if margin >= 0 else "behind"
    tie = f" (a near tie, under {NEAR_TIE:g}: another embedding can flip it)" if abs(margin) < NEAR_TIE else ""
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


def paraphrase_misses(results: dict[int, RunResult], k: int = 6) -> list[str]:
    """Paraphrase queries whose record is not in the top k, with where each leg put it: tells a
    model's judgement (record found by the vector leg just below the cut) from a record that no leg
    can reach."""
    notes = []
    for r, res in results.items():
        frame = res.per_query
        for _, q in frame[(frame["kind"] == "paraphrase") & ~frame[f"hit@{k}"].astype(bool)].iterrows():
            note = legs_note(q)
            leg_ranks = [q.get(f"{leg}_rank") for leg in ("vector", "lexical")]
            if any(rank is not None and rank == rank and rank <= k for rank in leg_ranks):
                note += f" — within a leg's top {k}, so fusion or post-processing pushed it out"
            notes.append(f"round {r} {q['query_id']} {q['text']}: " + note)
    return notes


def _paraphrase_hits(res: RunResult) -> str:
    para = res.per_query[res.per_query["kind"] == "paraphrase"]
    return f"{int(para['hit@6'].sum())}/{len(para)}"


def write_ablation(results: dict[int, RunResult], out_dir: Path | str,
                   seed: dict[tuple[str, int], dict[str, str]]) -> dict[str, Any]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    first = next(iter(results.values()))
    doc = {
        "preset": first.config.get("preset"),
        "environment": first.environment,
        "rounds": {str(r): {"config": res.config, "summary": res.summary, "timings": res.timings,
                            "queries": res.to_dict()["queries"]} for r, res in results.items()},
        "differences_from_seed": differences(results, seed),
        "paraphrase_misses": paraphrase_misses(results),
    }
    tmp = out_dir / "ablation.json.tmp"
    tmp.write_text(json.dumps(doc, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, out_dir / "ablation.json")
    plot_ablation(results, seed, out_dir / "ablation.png")
    summary_rows = pd.DataFrame([{
        "round": r, "passed": f"{res.summary['suite']['passed']}/{res.summary['suite']['queries']}",
        "Recall@6": f"{res.summary['suite']['recall@6']:.3f}", "MRR@6": f"{res.summary['suite']['mrr@6']:.3f}",
        "nDCG@6": f"{res.summary['suite']['ndcg@6']:.3f}",
        "recall@1000tokens": f"{res.summary['suite'].get('recall@1000tokens', float('nan')):.3f}",
        "near ties": res.summary["suite"].get("near_ties", ""),
        "paraphrases hit@6": _paraphrase_hits(res),
        "negatives returning results": f"{res.summary['negative']['returned_anything']}/{res.summary['negative']['queries']}",
        # adaptive retrieval: queries not searched at all (suite / paraphrases / negatives)
        **({"not searched (suite/para/neg)": f"{res.summary['suite'].get('skipped', 0)}/"
                                              f"{res.summary['paraphrase'].get('skipped', 0)}/"
                                              f"{res.summary['negative']['skipped']}"}
           if "skipped" in res.summary["negative"] and any(p.get("name") == "adaptive_retrieval"
                                                           for p in res.config.get("postprocess", [])) else {}),
        "chunks": res.summary["index"]["chunks"], "mixed chunks": res.summary["index"]["mixed_chunks"],
        "retrieval p50 ms": f"{res.summary['latency_ms']['retrieval']['p50']:.2f}",
    } for r, res in results.items()])
    env = first.environment
    diff_lines = "\n".join(f"- {d}" for d in doc["differences_from_seed"]) or "- none"
    miss_lines = "\n".join(f"- {d}" for d in doc["paraphrase_misses"]) or "- none"
    md = (
        f"# King78 four-round ablation — preset `{doc['preset']}`\n\n"
        f"{first.config.get('preset_description', '')}\n\n"
        "## Per-query score of the best relevant hit, ours beside the seed\n\n"
        "✗ = no relevant chunk among the returned results; ❌ = not passed (top-1 not relevant or below "
        "minScore); 'mixed top-1' = the top-1 chunk is relevant but overlaps other records too; "
        f"'near tie, ±m' = decided by less than {NEAR_TIE:g}: m is the best relevant chunk's lead (+) or "
        "deficit (-) against the best other returned chunk.\n\n"
        + markdown_table(ablation_frame(results, seed))
        + "\n## Per round\n\n" + markdown_table(summary_rows)
        + f"\nNear ties: suite queries whose best relevant chunk leads or trails the best other returned chunk "
          f"by less than {first.summary['suite'].get('near_tie', 0.001):g}; such an outcome says little "
          "about the pipeline: another embedding model, or a small edit to any competing record, can flip it.\n"
        + "\n## Where ours differs from the seed (pass/fail), with the deciding margin\n\n" + diff_lines + "\n"
        + "\n## Paraphrases whose record is not in the top 6, and where each leg put it\n\n"
          "Raw scores: cosine similarity on the vector leg, positive BM25 on the lexical leg; the cut-off "
          "candidate is the leg's 6th.\n\n" + miss_lines + "\n"
        + f"\n![per-query score by round](ablation.png)\n\nEnvironment: SQLite {env['sqlite']}, sqlite-vec "
          f"{env['sqlite_vec']}, jieba {env['jieba']}, model {env.get('embedding_model')}, {env['cpu_count']} cores.\n"
    )
    _write_text(out_dir / "ablation.md", md)
    return doc
