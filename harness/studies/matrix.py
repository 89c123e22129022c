"""Stage matrices: one stage varied over several runs (e.g. tokenizer x round, chunker x data set).

A matrix is a TOML file (experiments/tokenizers.toml, experiments/chunkers.toml):

    name = "tokenizers"
    output = "reports/tokenizers"    # where `make tokenizers` writes (the Makefile passes it as --out)
    per_query_columns = ["vector_rank"]   # per-query columns kept in <name>.json, not tested (optional)
    [[values]]                       # the implementations compared; the first is the reference
    label = "unicode61"
    tokenizer = { name = "unicode61" }
    [[runs]]                         # where they are compared
    label = "king78 r3"
    experiment = "experiments/round3.toml"
    overrides = { tokenizer = { join = "or" } }   # applied after the value
    vary = true                      # false: run once with the experiment's own stages

Every cell is a full `run_experiment`; cells with the same [embedder] table share one embedder (and its
cache), so only the first cell of a data set pays for embedding, and a cell whose [embedder] table
differs gets its own model.  The report compares every value with the first (the reference) on the
same queries: paired sign-flip tests and bootstrap intervals, Holm-corrected over each table.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd

from harness.config import Experiment, load_experiment, load_toml, merge
from harness.errors import ConfigError
from harness.inputs.layout import project_path
from harness.pipeline import build_stages
from harness.studies.experiment import RunResult, run_experiment


def load_matrix(path: Path | str) -> dict[str, Any]:
    """A matrix file; `values_from = "experiments/tokenizers.toml"` takes the values of another matrix
    file, so the same tokenizers or chunkers are compared on another data set without a copy."""
    spec = load_toml(path, "matrix spec")
    if "values_from" in spec and "values" not in spec:
        source = project_path(spec["values_from"])
        if not Path(source).is_file():
            raise ConfigError(f"{path}: values_from: no file {spec['values_from']}")
        spec["values"] = load_toml(source).get("values") or []
        if not spec["values"]:
            raise ConfigError(f"{path}: values_from: {spec['values_from']} has no [[values]]")
    for key in ("name", "values", "runs"):
        if key not in spec:
            raise ConfigError(f"{path}: matrix needs '{key}'")
    for i, value in enumerate(spec["values"]):
        if "label" not in value:
            raise ConfigError(f"{path}: values[{i}] needs a label")
    for i, run in enumerate(spec["runs"]):
        if "label" not in run or "experiment" not in run:
            raise ConfigError(f"{path}: runs[{i}] needs a label and an experiment")
    return spec


def matrix_configs(spec: dict[str, Any], *, preset: str | None = None,
                   only_runs: list[str] | None = None) -> list[tuple[str, str, Experiment]]:
    """[(run label, value label, configuration)] of every cell of a matrix, in order."""
    out = []
    for run in spec["runs"]:
        if only_runs and run["label"] not in only_runs:
            continue
        values = spec["values"] if run.get("vary", True) else [{"label": run.get("value_label", "—")}]
        for value in values:
            overrides = merge({k: v for k, v in value.items() if k != "label"}, run.get("overrides", {}))
            # a value may be a whole preset (experiments/presets.toml); it wins over --preset, which would
            # otherwise make every cell the same
            cell_preset = overrides.pop("preset", None) or preset
            config = load_experiment(project_path(run["experiment"]), preset=cell_preset, **overrides)
            config = config.with_overrides({"name": f"{spec['name']}: {run['label']} / {value['label']}"})
            out.append((run["label"], value["label"], config))
    return out


def configs_of(path: Path | str, *, preset: str | None = None, **overrides: Any) -> list[Experiment]:
    """The configurations a TOML file of experiments/ runs, with the --set overrides applied to each:
    what `harness embed` and `harness cache-key` read.  Understood: an experiment; a matrix (`runs` and
    `values`); a study that runs presets x runs (benchmark, abstention, context budget, expansion:
    `runs`, each with an `experiment`, presets from the run, the file or the file's `preset`); a study
    of presets on one experiment (lossless: `presets`, `experiment`, `dataset`); a language-pairs study
    (`pairing`: the studies its sources name as `spec`).  --preset replaces the presets a file names."""
    spec = load_toml(path, "matrix spec")
    if "runs" in spec and ("values" in spec or "values_from" in spec):
        configs = [config for _, _, config in matrix_configs(load_matrix(path), preset=preset)]
    elif "runs" in spec:
        configs = []
        for i, run in enumerate(spec["runs"]):
            if "experiment" not in run:
                raise ConfigError(f"{path}: runs[{i}] needs an experiment")
            presets = [preset] if preset else run.get("presets") or spec.get("presets") or [spec.get("preset")]
            configs += [load_experiment(project_path(run["experiment"]), preset=p, **run.get("overrides", {}))
                        for p in presets]
    elif "pairing" in spec:  # a language-pairs study: what the studies it reads run (each source's `spec`)
        configs = [c for source in spec.get("sources", []) if source.get("spec")
                   for c in configs_of(project_path(source["spec"]), preset=preset)]
    elif "experiment" in spec and "presets" in spec:
        extra = {"dataset": spec["dataset"]} if "dataset" in spec else {}
        configs = [load_experiment(project_path(spec["experiment"]), preset=p, **extra)
                   for p in ([preset] if preset else spec["presets"])]
    else:
        return [load_experiment(path, preset=preset, **overrides)]
    return [config.with_overrides(overrides) for config in configs]


def run_matrix(spec: dict[str, Any], *, preset: str | None = None, progress: bool = True,
               only_runs: list[str] | None = None) -> list[tuple[str, str, RunResult]]:
    """Every (run, value) cell: [(run label, value label, result)].  A cell reuses an embedder only when
    its [embedder] table is identical to an earlier cell's."""
    cells: list[tuple[str, str, RunResult]] = []
    embedders: dict[str, Any] = {}  # the [embedder] table (canonical JSON) -> its embedder, loaded once
    for run_label, value_label, config in matrix_configs(spec, preset=preset, only_runs=only_runs):
        key = json.dumps(config.embedder.as_written(), sort_keys=True, default=str)
        stages = build_stages(config, embedder=embedders.get(key), progress=progress)
        embedders[key] = stages.embedder
        cells.append((run_label, value_label, run_experiment(config, stages=stages)))
    return cells


def cell_row(run_label: str, value_label: str, result: RunResult) -> dict[str, Any]:
    suite = result.summary["suite"]
    index_ms = result.summary["index"]["timings_ms"]
    row = {
        "run": run_label, "value": value_label,
        "queries": suite.get("queries", 0), "passed": suite.get("passed", 0),
        "pass_rate": suite.get("pass_rate"), "pass_rate_ci95": suite.get("pass_rate_ci95"),
        **{k: v for k, v in suite.items() if "@" in k},
        "context_tokens": suite.get("context_tokens"),  # what the results cost in the agent's context
        "text_score_nonzero_share": suite.get("text_score_nonzero", 0) / max(1, suite.get("queries", 0)),
        "chunks": result.summary["index"]["chunks"],
        "index_ms_without_embedding": index_ms["chunking"] + index_ms["inserts"],
        "embedding_ms": index_ms["embedding"],
        "lexical_p50_ms": result.summary["latency_ms"]["lexical"]["p50"],
        "retrieval_p50_ms": result.summary["latency_ms"]["retrieval"]["p50"],
        "passed_ids": sorted(result.per_query.loc[result.per_query["in_suite"] & result.per_query["passed"],
                                                  "query_id"].tolist(), key=_qid_key),
        "negative_returned": result.summary["negative"]["returned_anything"],
        "top1_pure": suite.get("top1_pure", 0),
    }
    stats = result.summary["index"].get("chunk_stats") or {}
    if stats:
        row["mixed_chunk_share"] = stats["mixed"]["share"]
        row["tokens_beyond_input_limit_share"] = (stats.get("input_limit") or {}).get("share_tokens_beyond")
        row["chunk_tokens_p50"] = (stats.get("real_tokens") or stats["est_tokens"])["p50"]
    return row


def _qid_key(qid: str) -> tuple[str, int]:
    head = qid.rstrip("0123456789")
    tail = qid[len(head):]
    return head, int(tail) if tail else 0


def _id_list(ids: set[str], most: int = 12) -> str:
    """Query ids when a reader can take them in, else how many."""
    if not ids:
        return "—"
    return " ".join(sorted(ids, key=_qid_key)) if len(ids) <= most else f"{len(ids)} queries"


def rescued(frame: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Per run and value: suite queries passed that the reference value failed, and the reverse."""
    rows = []
    for run, group in frame.groupby("run", sort=False):
        ref = group[group["value"] == reference]
        if ref.empty:
            continue
        ref_ids = set(ref.iloc[0]["passed_ids"])
        for _, row in group.iterrows():
            ids = set(row["passed_ids"])
            rows.append({"run": run, "value": row["value"],
                         "rescued": _id_list(ids - ref_ids), "lost": _id_list(ref_ids - ids)})
    return pd.DataFrame(rows)


def compared_metrics(spec: dict[str, Any], metrics: list[str]) -> list[str]:
    """The per-query figures the report tests between values: the spec's `compare` list, else passes and
    every Recall/MRR/nDCG of the tables (records and chunks)."""
    if "compare" in spec:
        return list(spec["compare"])
    return [m for m in metrics if m == "passed" or PER_QUERY_METRIC.match(m)]


PER_QUERY_METRIC = re.compile(r"^(recall|recall_any|recall_all|pure_recall|chunk_recall|chunk_mrr|chunk_ndcg|mrr|ndcg)@\d+$")


def suite_values(result: RunResult, metrics: list[str]) -> dict[str, dict[str, float]]:
    """{metric: {query id: value}} over a cell's suite queries (passes as 0/1), for paired tests."""
    frame = result.per_query[result.per_query["in_suite"]]
    out = {}
    for m in metrics:
        if m in frame.columns:
            values = pd.to_numeric(frame[m].astype(float) if frame[m].dtype == bool else frame[m], errors="coerce")
            out[m] = {qid: float(v) for qid, v in zip(frame["query_id"], values) if v == v}
    return out


def value_comparisons(spec: dict[str, Any], cells: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Every value against the reference value (the first) within each run, on the queries both have,
    for one metric: paired sign-flip test and bootstrap interval, Holm over the table (every run)."""
    from harness.evaluation.statistics import holm_over_rows, paired_comparisons

    reference = spec["values"][0]["label"]
    rows = []
    for run in dict.fromkeys(c["run"] for c in cells):
        columns = {c["value"]: c.get("per_query", {}).get(metric, {}) for c in cells if c["run"] == run}
        if reference not in columns or len(columns) < 2 or not columns[reference]:
            continue  # the metric is not computed on this run (e.g. recall@10 where the cut-offs stop at 6)
        first = next(c for c in cells if c["run"] == run)
        for comparison in paired_comparisons(columns, baseline=reference, clusters=first.get("clusters"),
                                             unit=first.get("unit", "query")):
            rows.append({"run": run, "metric": metric, **comparison.as_dict()})
    return holm_over_rows(rows, " (this table)")


def write_matrix(spec: dict[str, Any], cells: list[tuple[str, str, RunResult]], out_dir: Path | str,
                 metrics: list[str]) -> pd.DataFrame:
    """reports/<name>/: <name>.json (every cell, with config and environment), <name>.md, <name>.png."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    first = cells[0][2]
    compared = compared_metrics(spec, metrics)
    # `per_query_columns`: per-query diagnostics kept in the JSON for later studies, not tested between values
    kept = compared + [c for c in spec.get("per_query_columns", []) if c not in compared]
    doc = {"name": spec["name"], "description": spec.get("description", ""), "environment": first.environment,
           "cells": [{"run": r, "value": v, "config": res.config, "summary": res.summary,
                      "row": cell_row(r, v, res), "per_query": suite_values(res, kept),
                      "clusters": res.clusters(), "unit": res.unit} for r, v, res in cells]}
    doc["comparisons"] = {m: value_comparisons(spec, doc["cells"], m) for m in compared}
    tmp = out_dir / f"{spec['name']}.json.tmp"
    tmp.write_text(json.dumps(doc, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, out_dir / f"{spec['name']}.json")
    return write_matrix_report(spec, doc, out_dir, metrics)


def write_matrix_report(spec: dict[str, Any], doc: dict[str, Any], out_dir: Path | str,
                        metrics: list[str]) -> pd.DataFrame:
    """The Markdown and PNG of a matrix from its JSON document (so a report can be redrawn without
    re-running: `harness matrix SPEC --redraw`)."""
    from harness.reporting.markdown import markdown_table, resampling_note

    out_dir = Path(out_dir)
    frame = pd.DataFrame([c["row"] for c in doc["cells"]])
    parts = [f"# {spec['name']}\n", spec.get("description", "").strip() + "\n"]
    parts.append(METRIC_NOTE)
    comparisons = doc.get("comparisons") or {}
    for metric in metrics:
        if metric not in frame.columns:
            continue
        frame["_shown"] = [_cell_text(row.get(metric), metric in COUNT_METRICS, row.get(f"{metric}_ci95"))
                           for row in frame.to_dict("records")]
        pivot = frame.pivot_table(index="value", columns="run", values="_shown", sort=False, aggfunc="first")
        pivot = pivot.reindex(index=[v["label"] for v in spec["values"] if v["label"] in pivot.index])
        shown = pivot.fillna("")
        shown.insert(0, spec.get("vary_label", "value"), shown.index)
        parts += [f"\n## {metric}\n", markdown_table(shown.reset_index(drop=True))]
        if comparisons.get(metric):
            parts += [f"\nAgainst `{spec['values'][0]['label']}` (paired, the run's suite queries; p (Holm) over "
                      "this table):\n", markdown_table(comparison_frame(comparisons[metric]))]
    notes = {}
    for cell in doc["cells"]:  # what each run's intervals rest on (its data set's unit)
        note = resampling_note(cell["summary"].get("suite") or {})
        if note:
            notes.setdefault(note, []).append(cell["run"])
    if notes:
        parts.append("\nIntervals, per run: " + "; ".join(f"{', '.join(dict.fromkeys(runs))}: {note}"
                                                         for note, runs in notes.items()) + ".\n")
    reference = spec["values"][0]["label"]
    parts += [f"\n## Suite queries rescued (and lost) relative to `{reference}`\n",
              markdown_table(rescued(frame, reference))]
    if spec.get("notes"):
        from harness.reporting.notes import render_notes

        parts += ["\n## Reading the numbers\n", render_notes(spec["notes"], doc).strip() + "\n"]
    env = doc["environment"]
    parts.append(f"\nEnvironment: SQLite {env['sqlite']}, sqlite-vec {env['sqlite_vec']}, jieba {env['jieba']}, "
                 f"model {env.get('embedding_model')}, {env['cpu_count']} cores.\n")
    tmp = out_dir / f"{spec['name']}.md.tmp"
    tmp.write_text("\n".join(parts), encoding="utf-8")
    os.replace(tmp, out_dir / f"{spec['name']}.md")
    plot_matrix(frame, spec, out_dir / f"{spec['name']}.png", spec.get("plot_metrics", metrics[:2]))
    return frame


COUNT_METRICS = {"passed", "queries", "chunks", "top1_pure", "negative_returned"}
METRIC_NOTE = ("\nRecall, MRR and nDCG are on records (documents; a record scores its best returned chunk); "
               "pure_recall counts a record 1/m when its chunk holds m records; chunk_* figures are on chunks and "
               "compare runs of one chunker only. [low, high]: 95% interval over the run's suite queries, at the data "
               "set's unit (clusters of queries where it has them; the method is in each cell's summary).\n")


def _cell_text(x: Any, count: bool = False, interval: Any = None) -> str:
    if x is None or (isinstance(x, float) and pd.isna(x)):
        return ""
    if count:
        return str(int(x))
    if isinstance(x, float) and isinstance(interval, (list, tuple)) and len(interval) == 2:
        from harness.reporting.markdown import interval_text

        return interval_text(x, interval)
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def comparison_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    from harness.reporting.markdown import difference_text, p_cell, units_cell

    return pd.DataFrame([{"run": r["run"], "value": r["a"], "queries": r["queries"], "resampled": units_cell(r),
                          "difference [95% CI]": difference_text(r["difference"]), "p": p_cell(r),
                          "p (Holm)": p_cell(r, "p_holm")} for r in rows if r["a"] != r["b"]])


def plot_matrix(frame: pd.DataFrame, spec: dict[str, Any], path: Path, metrics: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [m for m in metrics if m in frame.columns]
    fig, axes = plt.subplots(len(metrics), 1, figsize=(12, 3.6 * len(metrics)), squeeze=False)
    values = [v["label"] for v in spec["values"]]
    runs = list(dict.fromkeys(frame["run"]))
    width = 0.8 / max(1, len(values))
    for ax, metric in zip(axes[:, 0], metrics):
        for i, value in enumerate(values):
            ys, errors = [], [[], []]
            for r in runs:
                cell = frame[(frame["run"] == r) & (frame["value"] == value)]
                y = float(cell[metric].max()) if len(cell) else float("nan")
                interval = cell[f"{metric}_ci95"].iloc[0] if len(cell) and f"{metric}_ci95" in cell else None
                ys.append(y)
                ok = isinstance(interval, (list, tuple)) and len(interval) == 2 and y == y
                errors[0].append(max(0.0, y - interval[0]) if ok else 0.0)
                errors[1].append(max(0.0, interval[1] - y) if ok else 0.0)
            ax.bar([x + i * width for x in range(len(runs))], ys, width=width, label=value,
                   yerr=errors, capsize=2, error_kw={"elinewidth": 0.8, "ecolor": "#333"})
        ax.set_xticks([x + width * (len(values) - 1) / 2 for x in range(len(runs))])
        ax.set_xticklabels(runs, fontsize=8)
        ax.set_ylabel(metric)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(ncol=min(4, len(values)), fontsize=8)
    fig.suptitle(f"{spec['name']} (error bars: 95% bootstrap intervals over each run's suite queries)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
