"""The sweep's analysis: what sweep.json holds, computed from the engine's result (harness.studies.sweep):
the selection and its test, the cross-validation (the whole grid's, and a second one restricted to what the
release's openclaw.json can set), the stage that costs the most and the settings that soften it, each
stated gain against the reproduction tolerance, the per-query values behind the verdict; and what the page
shows besides (its "page": each tokenizer's best setting, the minScore table, the plot's curves and their
95% bands).  harness.reporting.sweep lays the Document out and computes nothing, so `harness sweep --redraw`
draws sweep.md and sweep.png again from sweep.json alone."""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from harness.evaluation.statistics import bootstrap_means
from harness.studies.document import Document
from harness.studies.sweep import SweepResult, cv_options, dimension_columns, grid_tables, label
from harness.studies.ablation_analysis import noise_limit, reproduction_tolerance
from harness.evaluation.formatting import plural
from harness.inputs.openclaw_config import openclaw_snippet, snippet_block
from harness.evaluation.cross_validation import best_on_average, cross_validate
from harness.inputs.openclaw_releases import layout_for
from harness.evaluation.reproduction import gain_noise
from harness.studies.ablation_analysis import noise_limit


def sweep_document(result: SweepResult, written: dict[str, Any]) -> Document:
    """The sweep's Document: what sweep.json holds, its "page" (page_document) last; its config is the
    experiment's configuration as written (`written`)."""
    recommended = result.recommended
    snippet, cannot = snippet_of(result, written, result.cv.recommended) if recommended else (None, [])
    selection = result.selection
    kinds = pd.Series(result.objective.kinds).value_counts().to_dict()
    body = _plain({
        "experiment": result.experiment, "config": written, "timings": result.timings,
        "objective": {"kind": result.objective.kind, "description": result.objective.description,
                      "queries": len(result.objective.query_ids), "by_kind": kinds},
        "configured": result.default, "best": result.best, "recommended": recommended,
        "selection_test": {"p_value": selection.p_value, "p_floor": selection.floor,
                           "monte_carlo": selection.monte_carlo, "method": selection.method,
                           "gain": selection.statistic, "informative_queries": selection.informative,
                           "units": selection.units, "unit": selection.unit, "settings": selection.settings,
                           "distinct_settings": selection.distinct},
        "p_value_best_vs_default": selection.p_value,
        "cv": {**result.cv.as_dict(), "scheme": cv_scheme(result)},
        "cv_repeats": result.cv_repeats,
        "robustness": result.robustness,
        "headline": result.headline,
        "holdout": result.holdout,
        "openclaw_snippet": snippet, "not_expressible_in_openclaw_json": cannot,
        "release": release_document(result, written),
        "stage_link": stage_link(result, written),
        "settings": json.loads(result.settings.to_json(orient="records")),
        "min_score_table": json.loads(result.min_score_table.to_json(orient="records")),
        "reproduction": reproduction_document(result),
        "per_query": per_query_document(result),
        "page": page_document(result),
    })
    return Document("sweep", body, written)


def page_document(result: SweepResult) -> dict[str, Any]:
    """sweep.json's "page": what sweep.md and sweep.png show that its other keys do not hold as they show it
    (its `settings` and `min_score_table` are pandas' JSON, rounded to 10 decimals; the bands need every
    plotted setting's per-query values): the cut, each tokenizer's in-sample best setting, the values the
    grid gives each dimension the robustness section names, the minScore table, and the plot's curves with
    their 95% bands.  A redraw reads it back (harness.study.redraw_sweep_file)."""
    s, table = result.settings, result.min_score_table
    return {"max_results": result.max_results,
            "best_per_tokenizer": [s.loc[group["objective"].idxmax()].to_dict()
                                   for _, group in s.groupby("tokenizer", sort=False)],
            "values": {column: s[column].unique().tolist() for column in ("tokenizer", "fusion", "min_score")},
            "min_score_table": {"columns": list(table.columns), "rows": table.to_dict(orient="records")},
            "plot": plot_document(result)}


def plot_document(result: SweepResult) -> dict[str, Any]:
    """sweep.png's data: the column the curves run along, the panels (column, title), per tokenizer its
    points in order along that column with each panel's values, and the bands (plot_bands, as a list of
    {panel, tokenizer, low, high}: JSON has no tuple keys)."""
    along, sub, panels = plotted(result)
    curves = []
    for tok, group in sub.groupby("tokenizer", sort=False):
        group = group.sort_values(along)
        curves.append({"tokenizer": tok, "x": group[along].tolist(),
                       **{column: group[column].tolist() for column, _, _, _ in panels}})
    return {"along": along, "panels": [(column, title) for column, title, _, _ in panels], "curves": curves,
            "bands": [{"panel": column, "tokenizer": tok, "low": low, "high": high}
                      for (column, tok), (low, high) in plot_bands(result).items()]}


def per_query_document(result: SweepResult) -> dict[str, Any]:
    """sweep.json's per-query values behind its verdict (issue 37: a reader re-derives the gain, its interval
    and its test from the report alone): each counted query's id, kind and cluster (the resampling unit), the
    objective of the configured setting, of the in-sample best and of the recommended one, and the held-out
    value cross-validation gave it (the setting chosen without its fold) with that fold's number."""
    objective, cv = result.objective, result.cv
    fold = np.full(len(objective.query_ids), -1)
    for number, members in enumerate(cv.folds):
        fold[np.asarray(members, dtype=int)] = number
    settings = {"configured": result.default_index, "best": result.best_index}
    if cv.recommended is not None:
        settings["recommended"] = int(cv.recommended)
    return {"query_ids": list(objective.query_ids), "kinds": list(objective.kinds),
            "clusters": objective.clusters(), "unit": objective.unit,
            "objective": {name: objective.matrix[i].tolist() for name, i in settings.items()},
            "held_out": cv.held_out.tolist(), "fold": fold.tolist()}


def reproduction_document(result: SweepResult) -> dict[str, Any]:
    """sweep.json's reproduction block: the tolerance, the margin it flags below, each gain's check."""
    drift = reproduction_tolerance()
    return {"tolerance": None if drift is None else drift["tolerance"],
            "threads_tolerance": None if drift is None else drift["threads_tolerance"],
            "cross_machine": None if drift is None else drift["cross_machine"],
            "noise_multiple": None if drift is None else drift["noise_multiple"],
            "noise_limit": noise_limit(drift), "checks": reproduction_checks(result, drift)}


def _plain(obj: Any) -> Any:
    return json.loads(json.dumps(obj, ensure_ascii=False, default=lambda o: o.item() if hasattr(o, "item")
                                 else o.tolist() if hasattr(o, "tolist") else str(o)))


def cv_scheme(result: SweepResult) -> str:
    cv = result.cv
    folds, n = len(cv.folds), len(result.objective.query_ids)
    grouped = cv.unit != "query"
    if folds == n:
        return f"leave-one-out over {n} queries (the suite has 20 queries or fewer)"
    if grouped and folds == cv.units:
        return (f"leave-one-{cv.unit}-out over {plural(cv.unit, cv.units)} ({n} queries; a {cv.unit}'s queries are "
                f"held out together; the suite has 20 queries or fewer, or there are fewer {cv.unit}s than folds), "
                f"so nearly every fold sees the same training queries and agreement between folds is expected")
    return (f"{folds}-fold over {n} queries" + (f" in {plural(cv.unit, cv.units)} (held out whole)" if grouped else "")
            + ", stratified by query kind")


def snippet_of(result: SweepResult, written: dict[str, Any], index: int) -> tuple[str | None, list[str]]:
    """The openclaw.json snippet that changes the configuration into a grid setting, in the block and keys
    of the preset's release (only the values that differ), and what that release cannot express of the
    change; the snippet is None when none of the change can be written."""
    tables = lambda i: grid_tables(result.grid[i], written, result.tokenizer_tables)  # noqa: E731
    options = {"preset": written.get("preset"), "complete_postprocess": True, "baseline": tables(result.default_index)}
    snippet, cannot = openclaw_snippet(tables(index), **options)
    return (snippet if snippet_block(tables(index), **options)[0] else None), cannot


# --- what the user's release can set, and the settings that soften the stage that costs the most ---------

# per stage that loses queries: the settings column that softens it, and which of its values do
SOFTENING = {
    "temporal_decay": ("half_life_days", lambda v, own: v == 0 or v > own, "turned off or with a longer half-life"),
    "mmr": ("mmr_lambda", lambda v, own: v != v or (own == own and v > own), "turned off or with a higher lambda"),
    "min_score": ("min_score", lambda v, own: v < own, "lower"),
    "fusion": ("vector_weight", lambda v, own: v != own, "other weights"),
    "cut": ("max_results", lambda v, own: v > own, "more results"),
    "legs": ("tokenizer", lambda v, own: v != own, "another tokenizer"),
    "retrieval": ("candidate_multiplier", lambda v, own: v > own, "more candidates"),
}


def _value_text(column: str, value: Any) -> str:
    if column == "half_life_days":
        return "off" if not value else f"half-life {value:g} d"
    if column == "mmr_lambda":
        return "off" if value != value else f"lambda {value:g}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _at_configured(frame: pd.DataFrame, default: dict[str, Any], column: str, value: Any) -> int | None:
    """The setting that differs from the configured one in `column` only."""
    same = frame
    for c in ("tokenizer", "fusion", "vector_weight", "min_score", *dimension_columns(frame)):
        target = value if c == column else default[c]
        same = same[same[c].isna()] if (isinstance(target, float) and target != target) else same[same[c] == target]
    return int(same.index[0]) if len(same) else None


def stage_link(result: SweepResult, written: dict[str, Any]) -> dict[str, Any] | None:
    """The stage that costs the configured setting the most queries (its failed queries replayed stage by
    stage, harness.evaluation.stage_trace) and the grid's settings that turn it off or soften it: each
    such value at the configured other settings, the grid's best with it, and whether the release's
    openclaw.json can set it."""
    stages = (result.headline.get("configured") or {}).get("stages") or {}
    top = stages.get("costliest")
    if not top:
        return None
    out: dict[str, Any] = {"stage": top["stage"], "queries": top["queries"], "tied": top.get("tied", []),
                           "failed": sum(stages.get(k, {}).get("failed", 0) for k in ("suite", "paraphrase")),
                           "softened_by": top["settings"], "by_stage": stages, "values": []}
    if top["stage"] not in SOFTENING or SOFTENING[top["stage"]][0] not in result.settings.columns:
        return out
    column, softens, words = SOFTENING[top["stage"]]
    frame, default = result.settings, result.default
    out.update(column=column, words=words)
    values = [v for v in frame[column].drop_duplicates().tolist() if softens(v, default[column])]
    for v in values:
        here = _at_configured(frame, default, column, v)
        rows = frame[frame[column].isna()] if (isinstance(v, float) and v != v) else frame[frame[column] == v]
        best = int(rows["objective"].idxmax())
        entry = {"value": v, "text": _value_text(column, v), "best": best, "best_label": label(frame.loc[best].to_dict()),
                 "best_objective": float(frame.loc[best, "objective"]), "best_passed": int(frame.loc[best, "passed"])}
        if here is not None:
            entry.update(setting=here, objective=float(frame.loc[here, "objective"]),
                         passed=int(frame.loc[here, "passed"]), cannot=result.release_limits[here]
                         if result.release_limits else [])
        out["values"].append(entry)
    return out


def release_document(result: SweepResult, written: dict[str, Any]) -> dict[str, Any] | None:
    """What the openclaw.json of the preset's release can set, and the best of those settings: chosen on
    these queries and cross-validated on the same folds as the whole grid (a separate procedure, restricted
    to what can be pasted; the configuration is always part of it)."""
    layout = layout_for(written.get("preset"))
    if layout is None or "openclaw_json" not in result.settings.columns:
        return None
    settable = [i for i, ok in enumerate(result.settings["openclaw_json"]) if ok or i == result.default_index]
    doc: dict[str, Any] = {"preset": written.get("preset"), "release": layout.release, "block": layout.block,
                           "settable": len(settable) - (0 if result.settings["openclaw_json"][result.default_index]
                                                        else 1),
                           "settings": len(result.settings), "configured_settable":
                           bool(result.settings["openclaw_json"][result.default_index])}
    if len(settable) < 2 or result.objective.matrix.shape[1] == 0:
        return doc
    matrix = result.objective.matrix[settable]
    configured = settable.index(result.default_index)
    cv = cross_validate(best_on_average(prefer=configured), None, matrix, configured=configured,
                        **(result.cv_options or cv_options(result.objective)))  # the same folds and groups
    best = settable[cv.in_sample_best]
    doc.update(best=best, best_label=label(result.settings.loc[best].to_dict()),
               best_objective=float(result.settings.loc[best, "objective"]),
               best_passed=int(result.settings.loc[best, "passed"]),
               cv={"gain": cv.gain.estimate, "low": cv.gain.low, "high": cv.gain.high, "p_value": cv.p_value,
                   "reason": cv.reason},
               recommended=None if cv.recommended is None else settable[cv.recommended])
    if cv.recommended is not None:
        doc["snippet"] = snippet_of(result, written, settable[cv.recommended])[0]
    return doc


SCORE_FUSIONS = ("weighted", "wsum")  # fused scores move with the embedding's scores (rrf fuses ranks)


def reproduction_checks(result: SweepResult, drift: dict[str, Any] | None) -> dict[str, Any]:
    """Each gain the report states (the in-sample best and the recommended setting over the configuration,
    the held-out set's chosen setting over it) against the flips reproduction noise allows
    (evaluation.reproduction.gain_noise on the settings' deciding margins)."""
    limit = noise_limit(drift)
    matrix = np.asarray(result.objective.matrix, dtype=float)
    span = float(np.nanmax(matrix) - np.nanmin(matrix)) if matrix.size else 1.0
    counted = [str(q) for q in result.objective.query_ids]
    objective = result.settings["objective"]
    base = float(objective.loc[result.default_index])
    configured = (result.headline.get("configured") or {}).get("deciding_margins")
    checks: dict[str, Any] = {}
    indices = {"best": result.best_index, "recommended": result.cv.recommended}
    fusions = result.settings["fusion"] if "fusion" in result.settings else None

    def rank_fused(*rows: int) -> list[str]:
        """The rank fusions among `rows`' settings: their fused margins are not in score units."""
        if fusions is None:
            return []
        return sorted({str(fusions.loc[r]) for r in rows if str(fusions.loc[r]) not in SCORE_FUSIONS})

    def unchecked(gain: float, ranked: list[str]) -> dict[str, Any]:
        return {"gain": gain, "limit": limit, "not_checked": ", ".join(ranked), "inside_noise": None}

    for name, index in indices.items():
        if index is None or configured is None:
            continue
        ranked = rank_fused(result.default_index, index)
        if ranked:
            checks[name] = unchecked(float(objective.loc[index]) - base, ranked)
            continue
        block = result.headline.get(name) or result.headline.get("best" if index == result.best_index else "")
        margins = (block or {}).get("deciding_margins")
        if margins is None:
            continue
        checks[name] = gain_noise(float(objective.loc[index]) - base, len(counted), span, configured, margins,
                                  limit=limit, queries=counted)
    h = result.holdout
    chosen = result.cv.recommended if result.cv.recommended is not None else result.best_index
    if h and rank_fused(result.default_index, chosen):
        checks["holdout"] = unchecked(h["chosen_mean"] - h["configured_mean"], rank_fused(result.default_index, chosen))
    elif h and all("deciding_margins" in h["headline"].get(k, {}) for k in ("configured", "chosen")):
        checks["holdout"] = gain_noise(h["chosen_mean"] - h["configured_mean"], h["queries"], span,
                                       h["headline"]["configured"]["deciding_margins"],
                                       h["headline"]["chosen"]["deciding_margins"], limit=limit)
    return checks




def plotted(result: SweepResult) -> tuple[str, pd.DataFrame, list[tuple[str, str, Any, Any]]]:
    """What the plot draws: the column its curves run along (minScore for an abstention sweep, else
    vectorWeight), the settings at the configured other values, and its panels (column, title, per-query
    matrix of the settings, clusters)."""
    s, default = result.settings, result.default
    # an abstention sweep tunes minScore: its curves run along minScore at the configured weights
    along = "min_score" if result.objective.kind == "abstention" else "vector_weight"
    held = (["fusion", "vector_weight"] if along == "min_score" else ["fusion", "min_score"]) + dimension_columns(s)
    sub = s[np.logical_and.reduce([(s[c] == default[c]) | (s[c].isna() & pd.isna(default[c])) for c in held])]
    suite = [j for j, kind in enumerate(result.objective.kinds) if kind == "suite"]
    passed = result.scores.passed[:, result.objective.columns[suite]] if suite else None
    everyone = result.objective.clusters()
    suite_clusters = [everyone[j] for j in suite] if everyone else None
    panels = [("objective", "objective (mean over counted queries)", result.objective.matrix, everyone),
              ("pass_rate", "suite pass rate", passed, suite_clusters)]
    if result.settings["negative_false_recalls"].max() > 0:
        panels.append(("negative_false_recalls", "negative queries answered", None, None))
    return along, sub, panels


def plot_bands(result: SweepResult) -> dict[tuple[str, str], tuple[list[float], list[float]]]:
    """{(panel column, tokenizer): (lows, highs)}: each plotted curve's 95% bootstrap band over queries, at
    the data set's unit, in the order of its points."""
    along, sub, panels = plotted(result)
    bands = {}
    for tok, group in sub.groupby("tokenizer", sort=False):
        group = group.sort_values(along)
        for column, _, matrix, clusters in panels:
            if matrix is not None and matrix.shape[1] > 1:
                means = bootstrap_means({str(i): matrix[i] for i in group.index}, resamples=2000,
                                        clusters=clusters, unit=result.objective.unit)
                bands[column, tok] = ([means[str(i)].low for i in group.index], [means[str(i)].high for i in group.index])
    return bands
