"""`harness abstention SPEC`: abstention calibration of presets on data sets (`make abstention`).

A spec (experiments/abstention.toml) lists runs, each an experiment with the presets to run it under:

    name = "abstention"
    output = "reports/abstention"
    weight = 0.5                                   # the utility's weight of silence (abstention.py)
    [[runs]]
    label = "king78 r4"
    experiment = "experiments/round4.toml"
    presets = ["openclaw-2026.02", "qmd"]
    without = []                                   # further post-processing stages to leave out (by name)

Every run is searched once with OpenClaw's `min_score` stage taken out (the threshold is what is being
calibrated, so the scores below it must be seen; every other stage of the preset stays, lancedb-pro's
own hard minimum included), and harness.evaluation.abstention.calibrate reads, per query, the top-1
score and the score of the first relevant hit: AUROC with its interval, the utility curve over
thresholds, and the threshold choice cross-validated against the preset's own minScore (0 for presets
without one).  Answerable: the round's suite queries and the paraphrases with a record; unanswerable:
the negative queries (king78's N1-N10, LoCoMo's adversarial category 5).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from harness.config import Experiment, load_experiment, load_toml
from harness.evaluation.abstention import ABSTENTION_WEIGHT, Calibration, calibrate
from harness.inputs.layout import project_path
from harness.studies.experiment import RunResult
from harness.studies.spec import validated
from harness.studies.spec.cells import StudyCell, run_cells
from harness.studies.spec.models import AbstentionStudy
from harness.studies.announce import announce
from harness.evaluation.comparison import holm_adjusted


def load_abstention_spec(path: Path | str) -> AbstentionStudy:
    return validated("abstention", load_toml(path, "abstention spec"), path)


def without_min_score(config: Experiment, without: list[str] | tuple = ()) -> tuple[Experiment, float | None]:
    """The configuration without OpenClaw's min_score stage (and the stages named in `without`), and
    that stage's threshold (None: none)."""
    stage = next((p for p in config.postprocess if p.name == "min_score"), None)
    dropped = {"min_score", *without}
    config = config.with_overrides({"postprocess": [p.as_written() for p in config.postprocess
                                                    if p.name not in dropped]})
    return config, None if stage is None else float(stage.params.get("min_score", 0.35))


def query_scores(result: RunResult) -> dict[str, list]:
    """Per counted query: id, kind, answerable, top-1 score and the first relevant hit's score (NaN: none)."""
    frame = result.per_query
    out: dict[str, list] = {"query_id": [], "kind": [], "answerable": [], "top1": [], "relevant_score": [],
                            "cluster": []}
    for row in frame.itertuples(index=False):
        if row.kind == "negative":
            answerable = False
        elif (row.kind == "suite" and row.in_suite) or (row.kind == "paraphrase" and len(row.relevant)):
            answerable = True
        else:
            continue
        relevant = set(row.relevant)
        hits = result.hits.get(row.query_id, [])
        first = next((h["score"] for h in hits if relevant & set(h.get("docs") or [])), None)
        out["query_id"].append(row.query_id)
        out["kind"].append(row.kind)
        out["answerable"].append(answerable)
        out["top1"].append(float(hits[0]["score"]) if hits else math.nan)
        out["relevant_score"].append(math.nan if first is None else float(first))
        cluster = getattr(row, "cluster", None)
        out["cluster"].append(None if cluster is None or cluster != cluster else str(cluster))
    return out


def abstention_cells(spec: AbstentionStudy) -> list[StudyCell]:
    """Every run x preset, with OpenClaw's min_score (and the run's `without` stages) taken out: labelled
    '<run label> / <preset>'; extra holds the threshold taken out (`configured`) and the run."""
    announce(sum(len(run.presets or [None]) for run in spec.runs), "cells (runs x presets)", spec.name)
    cells = []
    for run in spec.runs:
        for preset in run.presets or [None]:
            config = load_experiment(project_path(run.experiment), preset=preset, **run.overrides)
            config, configured = without_min_score(config, run.without)
            config = config.with_overrides({"name": f"{spec.name}: {run.label} / {config.preset}"})
            label = f"{run.label} / {config.preset}"
            cells.append(StudyCell(label, config, (run.label, config.preset),
                                   {"configured": configured, "run": run}))
    return cells


def run_abstention(spec: AbstentionStudy, *, progress: bool = True) -> list[dict[str, Any]]:
    """Every run x preset: its per-query scores and calibration (one embedder serves them all)."""
    weight = float(spec.weight)

    def calibrated(cell: StudyCell, result: RunResult) -> dict[str, Any]:
        run, config = cell.extra["run"], cell.config
        scores = query_scores(result)
        calibration = calibrate(scores["top1"], scores["relevant_score"], scores["answerable"],
                                scores["query_id"], scores["kind"], configured=cell.extra["configured"],
                                weight=weight, groups=scores["cluster"], unit=result.unit)
        return {"label": run.label, "preset": config.preset, "experiment": run.experiment,
                "fusion": config.fusion.name, "without": list(run.without),
                "calibration": calibration, "scores": scores, "config": result.config, "timings": result.timings,
                "environment": result.environment}

    return run_cells(abstention_cells(spec), progress=progress, embedders="one", then=calibrated)


def abstention_document(spec: AbstentionStudy, runs: list[dict[str, Any]]) -> dict[str, Any]:
    rows = []
    for r in runs:
        cal: Calibration = r["calibration"]
        rows.append({"label": r["label"], "preset": r["preset"], "experiment": r["experiment"], "fusion": r["fusion"],
                     "without": r["without"],
                     **cal.as_dict(), "curve": cal.curve.round(6).to_dict(orient="list"),
                     "scores": {k: [None if isinstance(v, float) and math.isnan(v) else v for v in vs]
                                for k, vs in r["scores"].items()},
                     "config": r["config"], "timings": r["timings"]})
    holm_over_table(rows, elsewhere=rows_elsewhere(spec))
    # package and model versions and core count, as every results file carries them (the runs share one)
    return {"name": spec.name, "description": spec.description, "notes": spec.notes,
            "weight": float(spec.weight),
            "environment": runs[0]["environment"] if runs else {}, "runs": rows}


def recalibrated_document(spec: AbstentionStudy, doc: dict[str, Any]) -> dict[str, Any]:
    """`harness abstention SPEC --recalibrate`: every run's calibration computed anew from the per-query
    scores its JSON stores (top-1 score, first relevant score, answerable, kind, cluster), without searching
    again: what a change of the statistics needs (the scores are the search's; the JSON keeps them to 6
    significant digits)."""
    # the spec's weight when it states one, else the one the document was made with
    weight = float(spec.weight if "weight" in spec.model_fields_set else doc.get("weight", ABSTENTION_WEIGHT))
    rows = []
    for old in doc["runs"]:
        s = old["scores"]
        as_float = [math.nan if x is None else float(x) for x in s["top1"]]
        relevant = [math.nan if x is None else float(x) for x in s["relevant_score"]]
        cal = calibrate(as_float, relevant, s["answerable"], s["query_id"], s["kind"],
                        configured=old["configured_threshold"], weight=weight, groups=s.get("cluster"),
                        unit=old["cv"].get("unit", "group"))
        kept = {k: old[k] for k in ("label", "preset", "experiment", "fusion", "without")}
        rows.append({**kept, **cal.as_dict(), "curve": cal.curve.round(6).to_dict(orient="list"), "scores": s,
                     "config": old["config"], "timings": old["timings"]})
    holm_over_table(rows, elsewhere=rows_elsewhere(spec))
    return {**doc, "description": spec.description, "notes": spec.notes, "weight": weight,
            "runs": rows}


ALPHA = 0.05


def hypothesis_key(row: dict[str, Any]) -> tuple:
    """What a row tests: the same data set, preset, fusion and stages left out is the same hypothesis."""
    return (row["label"], row["preset"], row["experiment"], row["fusion"], tuple(row.get("without") or ()))


def rows_elsewhere(spec: AbstentionStudy) -> dict[tuple, dict[str, Any]]:
    """The rows of the reports named by the spec's `holm_elsewhere` (committed abstention.json files whose
    Holm family owns the hypotheses they share with this table), by hypothesis."""
    import json

    out: dict[tuple, dict[str, Any]] = {}
    for name in spec.holm_elsewhere:
        path = project_path(name)
        if not path.is_file():
            continue  # not written yet: its rows stay in this table's family
        for row in json.loads(path.read_text(encoding="utf-8")).get("runs", []):
            if row.get("p_holm") is not None:
                out[hypothesis_key(row)] = {**row, "holm_source": name}
    return out


def holm_over_table(rows: list[dict[str, Any]], alpha: float = ALPHA,
                    elsewhere: dict[tuple, dict[str, Any]] | None = None) -> None:
    """A threshold is recommended in a row only when its cross-validated test also survives Holm over
    its family (each row is one more chance of a false "recommended"): rows get `p_holm`, and a
    recommendation whose p_holm is not below alpha is withdrawn with the reason.  The families are
    disjoint: a row whose hypothesis (hypothesis_key) is also a row of a report in `elsewhere`, with the
    same raw p (to the 6 significant digits a report keeps), is corrected in that report's family (its p_holm and family size, `holm_source` naming
    it); every other row of this table forms this table's family."""
    elsewhere = elsewhere or {}
    owned = {}
    for i, row in enumerate(rows):
        other = elsewhere.get(hypothesis_key(row)) if elsewhere else None  # a table with no other family
        if other is not None and math.isclose(other["cv"]["p_value"], row["cv"]["p_value"], rel_tol=1e-5, abs_tol=1e-9):
            owned[i] = other
    mine = [i for i in range(len(rows)) if i not in owned]
    adjusted = dict(zip(mine, holm_adjusted([rows[i]["cv"]["p_value"] for i in mine])))
    finite = [i for i in mine if adjusted[i] == adjusted[i]]
    family = {i: (adjusted[i], len(finite), "this table") for i in finite}
    family.update({i: (o["p_holm"], o.get("holm_family"), o["holm_source"]) for i, o in owned.items()})
    for i, (p, size, source) in sorted(family.items()):
        row = rows[i]
        row["p_holm"] = p
        row["holm_family"] = size
        if source != "this table":
            row["holm_source"] = source
        where = f"the {size} rows of this table" if source == "this table" else f"the {size} rows of {source}"
        if row["recommended_threshold"] is not None and not p < alpha:
            row["recommended_before_holm"] = row["recommended_threshold"]
            row["recommended_threshold"] = None
            row["verdict"] = f"none: not after Holm over {where} (p {p:.3g}); before: {row['verdict']}"
            row["reason"] = (f"no threshold after Holm over {where} (p = "
                             f"{row['cv']['p_value']:.3g} -> {p:.3g}); before the correction: {row['reason']}")


def score_arrays(run: dict[str, Any]) -> dict[str, np.ndarray]:
    """A document run's per-query scores as arrays (None -> NaN)."""
    s = run["scores"]
    as_float = lambda xs: np.array([math.nan if x is None else x for x in xs], dtype=float)  # noqa: E731
    return {"top1": as_float(s["top1"]), "relevant_score": as_float(s["relevant_score"]),
            "answerable": np.array(s["answerable"], dtype=bool)}
