"""The report of an abstention calibration (studies/abstention.py), drawn from its JSON document alone:
<name>.md (a table per data set and preset, then the spec's notes) and <name>.png (the top-1 score
distributions of answerable and unanswerable queries, one panel per run, with the configured and the
chosen thresholds)."""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from harness.evaluation.formatting import estimate_text, number_text, p_text, plural
from harness.reporting.documents import write_study_document
from harness.reporting.markdown import markdown_table
from harness.studies.document import Document
from harness.studies.abstention import score_arrays


def _threshold(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"


def summary_rows(doc: dict[str, Any]) -> list[dict[str, str]]:
    rows = []
    for run in doc["runs"]:
        cv, best = run["cv"], run["best"]
        folds = run["fold_thresholds"]
        rows.append({
            "data set": run["label"], "preset": run["preset"] or "", "fusion": run["fusion"],
            "answerable / unanswerable": f"{run['answerable']} / {run['unanswerable']}",
            "AUROC [95% CI]": estimate_text(run["auroc"]),
            "configured minScore: answered correctly / silent / U":
                (f"{_threshold(run['configured_threshold'])}: " if run["configured_threshold"] is not None
                 else "none (0): ") + " / ".join(
                    number_text(run["configured"][k]) for k in ("answered_correctly", "silent", "utility")),
            "U answering all / silent on all": f"{number_text(run['answer_all_utility'])} / {number_text(run['silent_all_utility'])}",
            "best minScore (in-sample): answered correctly / silent / U":
                f"{_threshold(run['best_threshold'])}: " + " / ".join(
                    number_text(best[k]) for k in ("answered_correctly", "silent", "utility")),
            "folds chose": f"{folds['min']:.4g}-{folds['max']:.4g}",
            "held-out U vs configured (gain [95% CI], p, p Holm)":
                f"{cv['held_out_mean']:.3f} vs {cv['configured_mean']:.3f} ({estimate_text(cv['gain'], sign='+')}, "
                f"p = {p_text(cv['p_value'], cv.get('p_floor') or 0.0, bool(cv.get('p_monte_carlo')))}, "
                f"Holm {number_text(run.get('p_holm'), 3) or 'n/a'}"
                + (f" in {run['holm_source']}'s family" if run.get("holm_source") else "") + ")",
            "resampled": plural(cv.get("unit", "query"), cv.get("units")),
            "verdict (what carries it)": run.get("verdict") or _threshold(run["recommended_threshold"]),
        })
    return rows


def render(doc: Mapping[str, Any], out_dir: Path | str) -> Path:
    """<name>.md and <name>.png from the calibration's Document alone (its description and notes are in it)."""
    out_dir = Path(out_dir)
    plot = out_dir / f"{doc['name']}.png"
    plot_distributions(doc, plot)
    first = doc["runs"][0] if doc["runs"] else {}
    parts = [f"# {doc['name']}\n", doc.get("description", "").strip() + "\n",
             f"**Utility** (what the threshold maximises): {first.get('utility', '')}.\n",
             "AUROC: the probability that an answerable query's top-1 score exceeds an unanswerable one's (ties "
             "count one half; nothing returned ranks lowest): 0.5 = no signal. The threshold columns read a strict "
             "minScore (hits scoring >= t kept, no keyword fallback). \"held-out U\": the threshold chosen on the "
             "other folds' queries, scored on each held-out query (harness.evaluation.cross_validation), against "
             "the configured minScore on the same queries; a threshold is recommended only when that gain's "
             "interval lies above zero, the paired sign-flip test agrees on units that can reach p < 0.05 (an "
             "exact sign-flip over m units that differ cannot go below 2/2^m: \"cannot decide with m units\"), "
             "its p survives Holm over its family (the rows of this table, except a hypothesis another report "
             "also tests: it is corrected once, in that report's family, named beside its p; the families are "
             "disjoint), and it beats both policies below by the same "
             "rule; the verdict names what carries it. Intervals and tests resample the data set's unit (`resampled`: LoCoMo's "
             "conversations, king78's records). Two policies need no score at all "
             "(answer everything: U = (1 - w) x the share answered correctly at minScore 0; stay silent on "
             "everything: U = w): a threshold is worth setting only where it beats both.\n",
             markdown_table(pd.DataFrame(summary_rows(doc))) + "\n",
             f"![top-1 score distributions]({plot.name})\n"]
    for run in doc["runs"]:
        parts.append(f"- {run['label']} / {run['preset']}: {run['reason']}.")
    parts.append("")
    if doc.get("notes"):
        from harness.reporting.notes import render_notes

        parts.append("## What it means\n\n" + render_notes(doc["notes"], doc).strip() + "\n")
    path = out_dir / f"{doc['name']}.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text("\n".join(parts), encoding="utf-8")
    os.replace(tmp, path)
    return path


def plot_distributions(doc: dict[str, Any], path: Path) -> None:
    """Per run: histograms (densities) of the top-1 scores, answerable against unanswerable; nothing
    returned is counted in the legend, not drawn; dashed: configured minScore, solid: the in-sample best."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np


    runs = doc["runs"]
    columns = min(3, max(1, len(runs)))
    rows = math.ceil(len(runs) / columns) if runs else 1
    fig, axes = plt.subplots(rows, columns, figsize=(4.8 * columns, 3.4 * rows), squeeze=False)
    for ax, run in zip(axes.flat, runs):
        arrays = score_arrays(run)
        top, mask = arrays["top1"], arrays["answerable"]
        finite = top[np.isfinite(top)]
        bins = np.linspace(finite.min(), finite.max(), 31) if len(finite) and np.ptp(finite) > 0 else 10
        for selected, name, colour in ((mask, "answerable", "tab:blue"), (~mask, "unanswerable", "tab:red")):
            values = top[selected]
            shown = values[np.isfinite(values)]
            silent = int((~np.isfinite(values)).sum())
            label = f"{name} ({selected.sum()}" + (f", {silent} returned nothing)" if silent else ")")
            if len(shown):
                ax.hist(shown, bins=bins, density=True, alpha=0.45, color=colour, label=label)
        # the axis spans the scores (and the chosen threshold): a configured 0.35 beside RRF's ~0.03
        # would squeeze every bar into one pixel, so a threshold off the axis is only named
        span = finite if len(finite) else np.array([run["best_threshold"]])
        pad = 0.05 * (np.ptp(span) or 1.0)
        low, high = float(span.min() - pad), float(span.max() + pad)
        ax.set_xlim(low, high)
        for value, name, style in ((run["configured_threshold"], "configured", "--"),
                                   (run["best_threshold"], "best U", "-")):
            if value is None:
                continue
            label = f"{name} {value:.4g}"
            if low <= value <= high:
                ax.axvline(value, color="grey" if style == "--" else "black", linestyle=style, linewidth=1,
                           label=label)
            else:
                ax.plot([], [], " ", label=f"{label} ({'above' if value > high else 'below'} every score)")
        auroc = run["auroc"]
        ax.set_title(f"{run['label']} / {run['preset']}\nAUROC {auroc['estimate']:.3f} "
                     f"[{auroc['ci95'][0]:.3f}, {auroc['ci95'][1]:.3f}]", fontsize=9)
        ax.set_xlabel("top-1 score (the preset's final score)")
        ax.legend(fontsize=6)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(runs):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_abstention(document: Document, out_dir: Path | str) -> Path:
    """<out>/<name>.json (the Document, harness.studies.abstention.abstention_document: every run's
    calibration, curve and per-query scores; --redraw reads it), <name>.md and <name>.png; returns the page."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # compact, numbers to 6 significant digits: per-query scores and curves make the file large otherwise
    write_study_document(out_dir / f"{document['name']}.json", document)
    return render(document, out_dir)
