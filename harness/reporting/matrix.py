"""A matrix's report (harness matrix): <name>.json (every cell, with config and environment), <name>.md
(one table per metric, paired comparisons against the reference value, what each value rescued) and
<name>.png; the cells are computed by harness.studies.matrix."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from harness.reporting.documents import write_document
from harness.studies.experiment import RunResult
from harness.studies.matrix import (
    cell_row,
    compared_metrics,
    matrix_confounds,
    rescued,
    suite_values,
    value_comparisons,
)


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
    doc["confounds"] = matrix_confounds(spec, doc["cells"])  # arms that differ in more than the value says
    write_document(out_dir / f"{spec['name']}.json", "matrix", doc)
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
    doc["confounds"] = matrix_confounds(spec, doc["cells"])  # from the spec as it is now (a redraw too)
    if doc["confounds"]:
        parts.append("\n**Confounded comparisons**: these values differ from the reference in more than the value "
                     "(not declared in `intended_confounds`): " + "; ".join(
                         f"{c['run']} / {c['value']}: " + ", ".join(f"{k} {v}" for k, v in c["confounds"].items())
                         for c in doc["confounds"]) + ".\n")
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
