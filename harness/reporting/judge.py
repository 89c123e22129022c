"""`harness judge`'s report: judge/judge.json and judge.md, the pool, the progress and the agreement tables
(the document harness.judging.export.export returns, after the labels' own files are written)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.redact import maybe
from harness.reporting.documents import write_document


def write_judge_report(doc: dict[str, Any], judge_dir: Path, redact: bool = False) -> dict[str, Any]:
    """judge.json and judge.md into `judge_dir`; the document's files then list judge.md too."""
    write_document(judge_dir / "judge.json", "judge", doc)
    (judge_dir / "judge.md").write_text(judge_markdown(doc, redact), encoding="utf-8")
    doc["files"]["judge.md"] = str(judge_dir / "judge.md")
    return doc


def _kappa_text(a: dict[str, Any]) -> str:
    low, high = a["kappa_ci95"]
    value = "—" if a["kappa"] != a["kappa"] else f"{a['kappa']:.3f}"
    interval = " (n too small)" if low != low else f" [{low:.3f}, {high:.3f}]"
    return value + ("" if value == "—" else interval)


def judge_markdown(doc: dict[str, Any], redact: bool = False) -> str:
    parts = ["# Pooled judgments\n",
             f"{doc['queries']} queries, {doc['items']} pooled chunks (top {doc['depth']} of each configuration, plus the "
             f"chunks the agent read), {doc['graded']} graded by a person ({doc['queries_fully_graded']} queries fully); "
             "grades " + ", ".join(f"{g}: {n}" for g, n in doc["grades"].items()) + ".\n",
             "Configurations pooled: " + "; ".join(f"{c['label']} ({' '.join(c['set']) or 'as configured'}, depth "
                                                    f"{c['depth']})" for c in doc["configurations"]) + ".\n"]
    if doc.get("stale_items") or doc.get("stale_grades"):
        parts.append(f"{doc.get('stale_items', 0)} pooled chunks no longer hold (their file changed since they were "
                     f"pooled: the text is not at those lines now); they are not shown, and the "
                     f"{doc.get('stale_grades', 0)} grades given on them are not exported.\n")
    if doc.get("llm"):
        parts.append(f"LLM judge: {doc['llm']['model']}, prompt {doc['llm']['prompt']}.\n")
    for a in doc["agreement"]:
        first, second = a["labels"]
        parts += [f"## {a['name']}\n", f"{a['items']} items judged by both, {a['clusters']} clusters; observed agreement "
                  f"{a['observed']:.3f}; Cohen's kappa {_kappa_text(a)} ({a['method']}).\n",
                  f"| {first} \\ {second} | " + " | ".join(str(c) for c in a["categories"]) + " |",
                  "|---|" + "---|" * len(a["categories"])]
        parts += [f"| {c} | " + " | ".join(str(v) for v in row) + " |" for c, row in zip(a["categories"], a["table"])]
        parts.append("")
    parts += ["## Files\n", *(f"- {k}: {maybe(v, False)}" for k, v in doc["files"].items()), ""]
    return "\n".join(parts)
