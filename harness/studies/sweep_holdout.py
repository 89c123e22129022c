"""`harness sweep --holdout FILE`: the sweep's recommendation scored on a query set it never saw.

The held-out experiment (e.g. experiments/cmrc2018-trial.toml beside cmrc2018-dev.toml) gets its own
legs; the recommended setting (or, when the sweep recommends nothing, its in-sample best, marked as
such) and the configured setting are applied to them as they were applied in the sweep, and compared
query by query: the objective's gain with a paired bootstrap interval and sign-flip test, and the
record-level Recall/MRR/nDCG of both with intervals and Holm-corrected paired tests."""
from __future__ import annotations

from typing import Any

import numpy as np

from harness.config import Experiment
from harness.evaluation.metrics import checked_cutoffs
from harness.evaluation.statistics import (
    bootstrap_difference,
    paired_comparisons,
    sign_flip_test,
)
from harness.studies.sweep import SweepResult, objective_of
from harness.studies.sweep_scoring import (
    headline_frame,
    leg_needs,
    score_grid,
    search_sweep_legs,
)


def score_holdout(result: SweepResult, config: Experiment, *, embedder: Any = None,
                  progress: bool = True) -> dict[str, Any]:
    chosen_index = result.cv.recommended if result.cv.recommended is not None else result.best_index
    which = "recommended setting" if result.cv.recommended is not None else "in-sample best (not recommended)"
    configured, chosen = result.grid[result.default_index], result.grid[chosen_index]
    tables = {label: table for label, table in result.tokenizer_tables.items()
              if label in (configured.tokenizer, chosen.tokenizer)}
    legs = search_sweep_legs(config, tables, embedder=embedder, progress=progress,
                             needs=leg_needs(config, [configured, chosen]))
    source = config.experiment_file or "<holdout>"
    cutoffs = checked_cutoffs(config.evaluation.cutoffs, legs.max_results, source=source)
    scores = score_grid([configured, chosen], legs, cutoffs)
    round_no = config.evaluation.round
    objective = objective_of(scores, legs.queries, round_no, legs.max_results, result.objective.kind,
                             result.objective.weight, legs.unit)
    base, tuned = objective.matrix[0], objective.matrix[1]
    at_unit = dict(clusters=objective.clusters(), unit=objective.unit)
    gain = bootstrap_difference(tuned, base, **at_unit)
    test = sign_flip_test(tuned, base, **at_unit)
    clusters = dict(zip(objective.query_ids, objective.clusters() or objective.query_ids))
    frames, headline = {}, {}
    for name, setting in (("configured", configured), ("chosen", chosen)):
        frames[name], headline[name] = headline_frame(setting, legs, cutoffs)
    metrics = [f"{m}@{k}" for k in cutoffs for m in ("recall", "mrr", "ndcg")]
    differences = []
    for metric in metrics:
        columns = {name: dict(zip(f[f["in_suite"]]["query_id"], f[f["in_suite"]][metric].astype(float)))
                   for name, f in frames.items()}
        differences += [{"metric": metric, **c.as_dict()}
                        for c in paired_comparisons(columns, pairs=[("chosen", "configured")], clusters=clusters,
                                                    unit=objective.unit)]
    from harness.evaluation.statistics import holm

    for row, p in zip(differences, holm([d["p_value"] for d in differences])):
        row["p_holm"] = p
    from harness.studies.sweep_report import label

    return {"experiment": config.name or source, "file": source, "which": which,
            "setting": label(result.settings.loc[chosen_index].to_dict()),
            "configured": label(result.settings.loc[result.default_index].to_dict()),
            "queries": int(len(base)), "objective": objective.description,
            "configured_mean": float(np.mean(base)) if len(base) else float("nan"),
            "chosen_mean": float(np.mean(tuned)) if len(tuned) else float("nan"),
            "gain": gain.as_dict(), "p_value": test.p_value, "p_floor": test.floor, "monte_carlo": test.monte_carlo,
            "units": test.units, "unit": test.unit, "method": test.method, "cutoffs": cutoffs,
            "headline": headline, "differences": differences}
