"""The ablation's page (harness ablation): ablation.md and ablation.png, laid out from its Document
(harness.studies.ablation_analysis computes it)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping, Sequence

import pandas as pd

from harness.evaluation.formatting import difference_text, figure, p_cell, units_cell
from harness.reporting.markdown import (
    cutoffs_of,
    HEADLINE,
    markdown_table,
    our_cell,
    seed_cell,
    tolerance_sentence,
)
from harness.reporting.plots import plot_ablation
from harness.studies.ablation_analysis import max_results_of
from harness.studies.document import Comparison, Document
from harness.studies.experiment import RunResult
from harness.text_files import write_text_atomic
from harness.reporting.documents import write_study_document


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


def _paraphrase_hits(res: RunResult) -> str:
    para = res.per_query[res.per_query["kind"] == "paraphrase"]
    return f"{int(pd.to_numeric(para['rank'], errors='coerce').notna().sum())}/{len(para)}"


def seed_passed(seed: dict[tuple[str, int], dict[str, str]], round_no: int) -> str:
    """The seed's pass count for a round ("6/7"), from its per-query statuses."""
    rows = [row for (_, r), row in seed.items() if r == round_no and row["seed_status"] != "not_in_suite"]
    if not rows:
        return ""
    return f"{sum(row['seed_status'] in ('pass', 'pass_no_figure') for row in rows)}/{len(rows)}"


def comparison_table(rows: Sequence[Comparison]) -> pd.DataFrame:
    return pd.DataFrame([{"metric": r.tag("metric") if r.tag("metric") != "passed" else "pass",
                          "comparison": f"{r.a} vs {r.b}", "queries": r.queries, "resampled": units_cell(r),
                          "mean a": f"{r.mean_a:.3f}", "mean b": f"{r.mean_b:.3f}",
                          "difference [95% CI]": difference_text(r.difference), "p": p_cell(r),
                          "p (Holm)": p_cell(r, "p_holm")} for r in rows])


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


def rounds_of(ablation: Mapping[str, Any]) -> dict[int, SimpleNamespace]:
    """{round: what the page reads of its results (per_query, summary, config, environment)}, from an
    ablation's Document (or its JSON read back): each round's per-query rows, summary and config."""
    runs = {int(key): SimpleNamespace(per_query=pd.DataFrame(list(rnd["queries"].values())), summary=rnd["summary"],
                                      config=rnd.get("config") or {}, environment=ablation.get("environment") or {})
            for key, rnd in ablation["rounds"].items()}
    return dict(sorted(runs.items()))


def render(document: Document, out_dir: Path | str) -> Path:
    """ablation.md and ablation.png from the ablation's Document alone (harness.studies.ablation_analysis;
    its config: the seed's scores and the reproduction tolerance).  Computes nothing: the comparisons,
    differences and noise counts are the document's."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    doc, seed, drift = document, document.config["seed"], document.config["drift"]
    results = rounds_of(document)
    first = next(iter(results.values()))
    k = max_results_of(first)
    frame = ablation_frame(results, seed, drift)
    noisy = doc["reproduction"]["cells_inside_noise"]
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
           "corrected over every comparison of this table.\n\n" + markdown_table(comparison_table(document.comparisons("round_comparisons")))
           if doc["round_comparisons"] else "")
        + "\n## Where ours differs from the seed (pass/fail), with the deciding margin\n\n" + diff_lines + "\n"
        + f"\n## Paraphrases whose record is not in the top {k}, and where each leg put it\n\n"
          "Raw scores: cosine similarity on the vector leg, positive BM25 on the lexical leg; the cut-off "
          f"candidate is the leg's {k}th.\n\n" + miss_lines + "\n"
        + f"\n![per-query score by round](ablation.png)\n\nEnvironment: SQLite {env['sqlite']}, sqlite-vec "
          f"{env['sqlite_vec']}, jieba {env['jieba']}, model {env.get('embedding_model')}, {env['cpu_count']} cores.\n"
    )
    write_text_atomic(out_dir / "ablation.md", md)
    return out_dir / "ablation.md"


def write_ablation(document: Document, out_dir: Path | str) -> Path:
    """ablation.json (the Document) and its page: ablation.md and ablation.png."""
    write_study_document(Path(out_dir) / "ablation.json", document)
    return render(document, out_dir)
