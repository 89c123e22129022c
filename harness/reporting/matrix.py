"""A matrix's report (harness matrix): <name>.json (every cell, with config and environment), <name>.md
(one table per metric, paired comparisons against the reference value, what each value rescued) and
<name>.png, laid out from the matrix's Document (harness.studies.matrix.matrix_document computes it)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from harness.evaluation.formatting import difference_text, interval_text, p_cell, units_cell
from harness.reporting.documents import write_study_document
from harness.studies.document import Comparison, Document
from harness.studies.matrix import rescued
from harness.reporting.markdown import markdown_table, resampling_note


def write_matrix(document: Document, out_dir: Path | str) -> pd.DataFrame:
    """reports/<name>/: <name>.json (the Document: every cell, with config and environment), <name>.md,
    <name>.png."""
    write_study_document(Path(out_dir) / f"{document['name']}.json", document)
    return render(document, out_dir)


def render(document: Document, out_dir: Path | str) -> pd.DataFrame:
    """The Markdown and PNG of a matrix from its Document alone (harness.studies.matrix.matrix_document; a
    redraw's from its JSON: `harness matrix SPEC --redraw`); returns the table of cells."""
    out_dir = Path(out_dir)
    doc, spec, metrics = document, document.config, document.config["metrics"]
    frame = pd.DataFrame([c["row"] for c in doc["cells"]])
    parts = [f"# {spec['name']}\n", spec.get("description", "").strip() + "\n"]
    parts.append(METRIC_NOTE)
    if doc["confounds"]:
        parts.append("\n**Confounded comparisons**: these values differ from the reference in more than the value "
                     "(not declared in `intended_confounds`): " + "; ".join(
                         f"{c['run']} / {c['value']}: " + ", ".join(f"{k} {v}" for k, v in c["confounds"].items())
                         for c in doc["confounds"]) + ".\n")
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
        compared = document.comparisons("comparisons", metric) if doc.get("comparisons") else ()
        if compared:
            parts += [f"\nAgainst `{spec['values'][0]['label']}` (paired, the run's suite queries; p (Holm) over "
                      "this table):\n", markdown_table(comparison_frame(compared))]
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
        return interval_text(x, interval)
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def comparison_frame(rows: Sequence[Comparison]) -> pd.DataFrame:
    return pd.DataFrame([{"run": r.tag("run"), "value": r.a, "queries": r.queries, "resampled": units_cell(r),
                          "difference [95% CI]": difference_text(r.difference), "p": p_cell(r),
                          "p (Holm)": p_cell(r, "p_holm")} for r in rows if r.a != r.b])


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
