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

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.config import load_experiment, load_toml, merge
from harness.errors import ConfigError
from harness.evaluation.statistics import (
    bootstrap_difference,
    bootstrap_mean,
    cluster_labels,
    sign_flip_test,
)
from harness.inputs.layout import project_path
from harness.pipeline import build_stages
from harness.studies.experiment import run_experiment

GROUPS = {"suite": lambda f: f["in_suite"], "paraphrase": lambda f: f["kind"] == "paraphrase"}


def load_expansion_spec(path: Path | str) -> dict[str, Any]:
    spec = load_toml(path, "expansion spec")
    for key in ("name", "variants", "runs"):
        if key not in spec:
            raise ConfigError(f"{path}: an expansion spec needs '{key}'")
    for i, item in enumerate(spec["variants"] + spec["runs"]):
        if "label" not in item:
            raise ConfigError(f"{path}: every variant and run needs a label (item {i})")
    spec["source"] = str(path)
    return spec


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
                    diff = bootstrap_difference(values, base, **at_unit)
                    test = sign_flip_test(values, base, **at_unit)
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


def run_expansion_study(spec: dict[str, Any], *, progress: bool = True) -> dict[str, Any]:
    embedder = None
    runs = []
    reference = spec["variants"][0]["label"]
    for run in spec["runs"]:
        frames: dict[str, pd.DataFrame] = {}
        configs: dict[str, Any] = {}
        for variant in spec["variants"]:
            overrides = merge(run.get("overrides", {}), variant.get("overrides", {}))
            config = load_experiment(project_path(run["experiment"]), preset=spec.get("preset"), **overrides)
            config = config.with_overrides({"name": f"{spec['name']}: {run['label']} / {variant['label']}"})
            stages = build_stages(config, embedder=embedder, progress=progress)
            embedder = stages.embedder
            result = run_experiment(config, stages=stages, progress=progress)
            frames[variant["label"]] = result.per_query
            written = config.as_written()  # the document records the tables as written
            configs[variant["label"]] = {k: written.get(k) for k in ("fusion", "expansion", "tokenizer", "postprocess")}
        runs.append({"label": run["label"], "metrics": run["metrics"], "configs": configs,
                     "groups": compare(frames, reference, run["metrics"], result.unit)})
    holm_over_study(runs)
    from harness.studies.experiment import environment

    return {"name": spec["name"], "description": spec.get("description", ""), "reference": reference,
            "runs": runs, "environment": environment(), "embedding_cache": dict(embedder.stats) if embedder else {}}


def write_expansion_study(spec: dict[str, Any], doc: dict[str, Any], out_dir: Path | str) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "expansion.json.tmp"
    tmp.write_text(json.dumps(doc, ensure_ascii=False, indent=1, default=_json), encoding="utf-8")
    os.replace(tmp, out_dir / "expansion.json")
    path = out_dir / "expansion.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(expansion_markdown(spec, doc), encoding="utf-8")
    os.replace(tmp, path)
    return path


def holm_over_study(runs: list[dict[str, Any]]) -> None:
    """Holm over every difference the report shows (all runs, groups, variants and metrics: one family),
    written beside each raw p as p_holm."""
    from harness.evaluation.statistics import holm

    differences = [stat["difference"] for run in runs for block in run["groups"].values()
                   for row in block["variants"].values() for stat in row.values()
                   if isinstance(stat, dict) and "difference" in stat]
    for diff, p in zip(differences, holm([d["p"] for d in differences])):
        diff["p_holm"] = p
        diff["holm_family"] = len(differences)


def _json(obj: Any) -> Any:
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    return str(obj)


def _cell(stat: dict[str, Any] | None) -> str:
    from harness.evaluation.formatting import p_text
    from harness.reporting.markdown import interval_text

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
    from harness.reporting.markdown import markdown_table

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
