"""QMD's query side measured (`make expansion`, `harness expansion`): variants of the qmd preset - no
expansion (what QMD does offline), LLM-free expansions (RM3-style terms, the top results' centroid)
with and without the BM25 probe, and single legs (vector only, lexical only) - on king78 and CMRC, each
metric with a bootstrap interval and each variant's paired difference from the first one (bootstrap
interval and sign-flip p), per query group (suite, paraphrases).

A spec is a TOML file (experiments/expansion.toml):

    name = "qmd-expansion"
    output = "reports/qmd-expansion"
    preset = "qmd"
    [[variants]]                     # the first is the reference
    label = "no expansion"
    [[variants]]
    label = "RM3 + centroid"
    overrides = { expansion = { name = "prf" } }
    [[runs]]
    label = "king78 r4"
    experiment = "experiments/round4.toml"
    metrics = ["hit@1", "recall@6", "mrr@6"]
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from harness.config import load_experiment, load_toml, merge
from harness.evaluation.comparison import holm_adjusted, paired_difference
from harness.evaluation.statistics import bootstrap_mean, cluster_labels
from harness.inputs.layout import project_path
from harness.studies.experiment import RunResult
from harness.studies.spec.cells import run_cells
from harness.studies.spec.models import ExpansionStudy
from harness.studies.spec import validated
from harness.studies.announce import announce
from harness.studies.spec.cells import StudyCell
from harness.studies.experiment import environment

GROUPS = {"suite": lambda f: f["in_suite"], "paraphrase": lambda f: f["kind"] == "paraphrase"}


def load_expansion_spec(path: Path | str) -> ExpansionStudy:
    return validated("expansion", load_toml(path, "expansion spec"), path)


def per_query_values(frame: pd.DataFrame, metric: str) -> pd.Series:
    """A metric's per-query value (hit@k as 0/1)."""
    return pd.to_numeric(frame[metric].astype(float) if frame[metric].dtype == bool else frame[metric],
                         errors="coerce").fillna(0.0)


def compare(frames: dict[str, pd.DataFrame], reference: str, metrics: list[str], unit: str = "query") -> dict[str, Any]:
    """Per group and variant: each metric's mean with its interval, and the paired difference from the
    reference variant (same queries) with its interval and sign-flip p, at the data set's unit (the rows'
    `cluster` column: a CMRC article's questions move together)."""
    out: dict[str, Any] = {}
    ref = frames[reference]
    for group, select in GROUPS.items():
        mask = select(ref)
        if not mask.any():
            continue
        ids = ref.loc[mask, "query_id"].tolist()
        chosen = ref.set_index("query_id").loc[ids]
        clusters = cluster_labels(chosen["cluster"].tolist() if "cluster" in chosen.columns else None, ids)
        at_unit = dict(clusters=clusters, unit=unit)
        block: dict[str, Any] = {"queries": len(ids), "variants": {}}
        for label, frame in frames.items():
            frame = frame.set_index("query_id").loc[ids].reset_index()
            row: dict[str, Any] = {}
            for metric in metrics:
                if metric not in frame.columns:
                    continue
                values = per_query_values(frame, metric).to_numpy()
                interval = bootstrap_mean(values, **at_unit)
                row[metric] = {"mean": float(values.mean()), "ci": [interval.low, interval.high]}
                if label != reference:
                    base = per_query_values(ref.set_index("query_id").loc[ids].reset_index(), metric).to_numpy()
                    paired = paired_difference(values, base, **at_unit)
                    diff, test = paired.interval, paired.test
                    row[metric]["difference"] = {"mean": diff.estimate, "ci": [diff.low, diff.high],
                                                 "p": test.p_value, "p_floor": test.floor,
                                                 "monte_carlo": test.monte_carlo, "units": test.units,
                                                 "unit": test.unit, "informative": test.informative}
            if "expansion_skipped" in frame.columns:
                row["skipped_by_probe"] = float(frame["expansion_skipped"].fillna(False).astype(bool).mean())
            if "context_tokens" in frame.columns:
                row["context_tokens"] = float(pd.to_numeric(frame["context_tokens"]).mean())
            block["variants"][label] = row
        out[group] = block
    return out


def expansion_cells(spec: ExpansionStudy) -> list[Any]:
    """Every run x variant, run by run: labelled '<run label> / <variant label>', labels (run label,
    variant label), extra["run"] the run's position."""
    announce(len(spec.runs) * len(spec.variants), "cells (runs x variants)", spec.name)
    cells = []
    for i, run in enumerate(spec.runs):
        for variant in spec.variants:
            overrides = merge(run.overrides, variant.overrides)
            config = load_experiment(project_path(run.experiment), preset=spec.preset, **overrides)
            config = config.with_overrides({"name": f"{spec.name}: {run.label} / {variant.label}"})
            cells.append(StudyCell(f"{run.label} / {variant.label}", config, (run.label, variant.label), {"run": i}))
    return cells


def run_expansion_study(spec: ExpansionStudy, *, progress: bool = True) -> dict[str, Any]:
    """Every cell run (one embedder serves them all), then analysed: expansion_document."""
    cells = expansion_cells(spec)
    results = run_cells(cells, progress=progress, embedders="one", count_embeddings=True)
    return expansion_document(spec, cells, results)


def expansion_document(spec: ExpansionStudy, cells: Sequence[Any], results: Sequence[RunResult]) -> dict[str, Any]:
    """The study's document from its cells' results (in expansion_cells' order): per run, each variant's
    figures and its paired differences from the reference variant, Holm over the whole study."""
    reference = spec.variants[0].label
    runs = []
    for i, run in enumerate(spec.runs):
        frames: dict[str, pd.DataFrame] = {}
        configs: dict[str, Any] = {}
        unit = "query"
        for cell, result in zip(cells, results):
            if cell.extra["run"] != i:
                continue
            variant = cell.labels[1]
            frames[variant] = result.per_query
            written = cell.config.as_written()  # the document records the tables as written
            configs[variant] = {k: written.get(k) for k in ("fusion", "expansion", "tokenizer", "postprocess")}
            unit = result.unit
        runs.append({"label": run.label, "metrics": run.metrics, "configs": configs,
                     "groups": compare(frames, reference, run.metrics, unit)})
    holm_over_study(runs)
    return {"name": spec.name, "description": spec.description, "reference": reference,
            "runs": runs, "environment": environment(), "embedding_cache": embedding_counts(results)}


def embedding_counts(results: Sequence[RunResult]) -> dict[str, int]:
    """The shared embedder's counters over the whole study: the sum of each run's own
    (run_cells(count_embeddings=True))."""
    total: dict[str, int] = {}
    for result in results:
        for key, value in result.timings.get("embedding_cache", {}).items():
            total[key] = total.get(key, 0) + value
    return total


def holm_over_study(runs: list[dict[str, Any]]) -> None:
    """Holm over every difference the report shows (all runs, groups, variants and metrics: one family),
    written beside each raw p as p_holm."""
    differences = [stat["difference"] for run in runs for block in run["groups"].values()
                   for row in block["variants"].values() for stat in row.values()
                   if isinstance(stat, dict) and "difference" in stat]
    for diff, p in zip(differences, holm_adjusted([d["p"] for d in differences])):
        diff["p_holm"] = p
        diff["holm_family"] = len(differences)
