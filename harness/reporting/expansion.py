"""The expansion study's documents (harness expansion; studies/expansion.py runs it): expansion.json and
expansion.md, one table per run and query group, each variant against the reference with its paired
difference and Holm p."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from harness.evaluation.formatting import interval_text, p_text
from harness.reporting.documents import write_study_document
from harness.reporting.markdown import markdown_table
from harness.studies.document import Document


def write_expansion_study(document: Document, out_dir: Path | str) -> Path:
    """expansion.json (the Document) and expansion.md; returns the page's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_study_document(out_dir / "expansion.json", document)
    return render(document, out_dir)


def render(document: Document, out_dir: Path | str) -> Path:
    """expansion.md from the study's Document alone (its config: the spec as loaded); returns its path."""
    path = Path(out_dir) / "expansion.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(expansion_markdown(document.config, document), encoding="utf-8")
    os.replace(tmp, path)
    return path


def _cell(stat: dict[str, Any] | None) -> str:
    if not stat:
        return ""
    text = interval_text(stat["mean"], stat["ci"])
    diff = stat.get("difference")
    if diff:
        text += (f"; {interval_text(diff['mean'], diff['ci'], sign='+')}, "
                 f"p {p_text(diff['p'], diff.get('p_floor', 0.0), diff.get('monte_carlo', False), 2)}")
        if "p_holm" in diff:
            text += f" (Holm {diff['p_holm']:.2g})"
    return text


def expansion_markdown(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    parts = [f"# {doc['name']}\n", (spec.get("description") or doc.get("description", "")).strip() + "\n",
             f"Each cell: mean [95% interval]; for variants other than `{doc['reference']}`, then the "
             "paired difference from it [interval], the two-sided sign-flip p (same queries) and that p after Holm "
             "over every difference in this report. Intervals and sign flips resample the data set's unit (CMRC: "
             "the article; king78: the record).\n"]
    for run in doc["runs"]:
        for group, block in run["groups"].items():
            rows = []
            for label, row in block["variants"].items():
                rows.append({"variant": label, **{m: _cell(row.get(m)) for m in run["metrics"]},
                             "skipped by probe": f"{row['skipped_by_probe']:.2f}" if "skipped_by_probe" in row else "",
                             "context tokens": f"{row['context_tokens']:.0f}" if "context_tokens" in row else ""})
            parts += [f"\n## {run['label']} · {group} ({block['queries']} queries)\n", markdown_table(pd.DataFrame(rows))]
    if spec.get("notes"):
        from harness.reporting.notes import render_notes

        parts += ["\n## Reading the numbers\n", render_notes(spec["notes"], doc).strip() + "\n"]
    env = doc.get("environment", {})
    parts.append(f"\nEnvironment: SQLite {env.get('sqlite')}, model {env.get('embedding_model', 'e5-small')}, "
                 f"{env.get('cpu_count')} cores, Python {env.get('python')}.\n")
    return "\n".join(parts)
