"""A sweep's files: sweep.json (every setting, the selection, its test, the cross-validation, the held-out
check), sweep.md (what to do and why) and sweep.png (the objective against vectorWeight per tokenizer,
with 95% bands).  The openclaw.json snippet is written only for a recommended setting."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.evaluation.statistics import bootstrap_means
from harness.reporting.documents import write_document
from harness.studies.sweep import (
    SweepResult,
    cv_options,
    dimension_columns,
    grid_tables,
    label,
)


def sweep_document(result: SweepResult, config: dict[str, Any]) -> dict[str, Any]:
    """What sweep.json holds."""
    recommended = result.recommended
    snippet, cannot = snippet_of(result, config, result.cv.recommended) if recommended else (None, [])
    selection = result.selection
    kinds = pd.Series(result.objective.kinds).value_counts().to_dict()
    return _plain({
        "experiment": result.experiment, "config": config, "timings": result.timings,
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
        "release": release_document(result, config),
        "stage_link": stage_link(result, config),
        "settings": json.loads(result.settings.to_json(orient="records")),
        "min_score_table": json.loads(result.min_score_table.to_json(orient="records")),
        "reproduction": reproduction_document(result),
        "per_query": per_query_document(result),
    })


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
    from harness.reporting.markdown import noise_limit, reproduction_tolerance

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
    from harness.evaluation.formatting import plural

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


def snippet_of(result: SweepResult, config: dict[str, Any], index: int) -> tuple[str | None, list[str]]:
    """The openclaw.json snippet that changes the configuration into a grid setting, in the block and keys
    of the preset's release (only the values that differ), and what that release cannot express of the
    change; the snippet is None when none of the change can be written."""
    from harness.inputs.openclaw_config import openclaw_snippet, snippet_block

    tables = lambda i: grid_tables(result.grid[i], config, result.tokenizer_tables)  # noqa: E731
    options = {"preset": config.get("preset"), "complete_postprocess": True, "baseline": tables(result.default_index)}
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


COLUMN_WORDS = {"half_life_days": "temporal decay", "mmr_lambda": "MMR", "min_score": "minScore",
                "vector_weight": "vectorWeight", "max_results": "maxResults", "tokenizer": "tokenizer",
                "candidate_multiplier": "candidateMultiplier"}


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


def other_releases(item: str) -> str:
    """Which releases' openclaw.json can set what an item of release_limits names, and where."""
    from harness.inputs.openclaw_releases import LAYOUTS, SETTING_KEYS

    key = item.split(" = ")[0].split(":")[0].strip()
    setting = next((name for name, path in SETTING_KEYS.items() if path == key), None)
    if setting is None:
        return ""
    where = sorted({f"{layout.release} ({layout.block}.{key})" for layout in LAYOUTS.values() if setting in layout.reads})
    return "; set in " + ", ".join(where) if where else ""


def stage_link(result: SweepResult, config: dict[str, Any]) -> dict[str, Any] | None:
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


def release_document(result: SweepResult, config: dict[str, Any]) -> dict[str, Any] | None:
    """What the openclaw.json of the preset's release can set, and the best of those settings: chosen on
    these queries and cross-validated on the same folds as the whole grid (a separate procedure, restricted
    to what can be pasted; the configuration is always part of it)."""
    from harness.evaluation.cross_validation import best_on_average, cross_validate
    from harness.inputs.openclaw_releases import layout_for

    layout = layout_for(config.get("preset"))
    if layout is None or "openclaw_json" not in result.settings.columns:
        return None
    settable = [i for i, ok in enumerate(result.settings["openclaw_json"]) if ok or i == result.default_index]
    doc: dict[str, Any] = {"preset": config.get("preset"), "release": layout.release, "block": layout.block,
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
        doc["snippet"] = snippet_of(result, config, settable[cv.recommended])[0]
    return doc


def stage_link_lines(doc: dict[str, Any]) -> list[str]:
    """The console's lines on the stage that costs the most and what turning it off or softening it does."""
    from harness.evaluation.stage_trace import stage_words

    link = doc.get("stage_link")
    if not link or len(link.get("tied") or []) > 1:
        return []
    lines = [f"the stage that costs this memory the most: {stage_words(link['stage'])}, {link['queries']} of "
             f"{link['failed']} failed queries; what softens it: {link['softened_by']}"]
    configured = doc["configured"]
    for v in link.get("values", []):
        if "objective" not in v:
            continue
        cannot = v.get("cannot") or []
        where = "openclaw.json can set it" if not cannot else "; ".join(c + other_releases(c) for c in cannot)
        lines.append(f"  {COLUMN_WORDS.get(link['column'], link['column'])} {v['text']} (your other settings as they "
                     f"are): objective "
                     f"{configured['objective']:.3f} -> {v['objective']:.3f}, passed {int(configured['passed'])} -> "
                     f"{v['passed']} ({where})")
    return lines


def release_text(result: SweepResult, doc: dict[str, Any]) -> list[str]:
    """sweep.md's section on what the user's release can set."""
    rel = doc.get("release")
    if not rel:
        return []
    lines = [f"\n## What OpenClaw {rel['release']}'s openclaw.json can set ({rel['preset']})\n",
             f"{rel['settable']:,} of the {rel['settings']:,} settings can be written in `{rel['block']}` as they are; "
             "the others need keys this release does not read (they are shown, never put in a snippet)"
             + ("" if rel["configured_settable"] else "; the configuration itself cannot be written as it is (its "
                "openclaw.json sets a value this release ignores, evaluated as written)") + ".\n"]
    if "best" in rel:
        cv = rel["cv"]
        lines.append(f"Best of them on these queries, the configuration included as the reference: {rel['best_label']} "
                     f"(objective {rel['best_objective']:.3f}, "
                     f"{rel['best_passed']} suite queries passed). Chosen and cross-validated on the same folds as "
                     f"the whole grid, restricted to these settings: held-out gain {cv['gain']:+.3f} "
                     f"[{cv['low']:+.3f}, {cv['high']:+.3f}], p = {cv['p_value']:.3g}; {cv['reason']}.\n")
        if rel.get("snippet"):
            lines += ["Its openclaw.json snippet:\n", "```json5\n" + rel["snippet"] + "```\n"]
    return lines


def stage_text(result: SweepResult, doc: dict[str, Any]) -> list[str]:
    """sweep.md's section linking the stage that costs the most queries to the settings that soften it."""
    from harness.evaluation.stage_trace import stage_words

    link = doc.get("stage_link")
    if not link:
        return []
    lines = ["\n## The stage that costs this memory the most\n"]
    if len(link.get("tied") or []) > 1:
        lines.append("With the configuration, " + ", ".join(stage_words(t) for t in link["tied"]) +
                     f" each lost {link['queries']} of the {link['failed']} failed queries (replayed stage by "
                     "stage); no one stage stands out.\n")
        return lines
    lines.append(f"With the configuration, {stage_words(link['stage'])} lost {link['queries']} of the "
                 f"{link['failed']} failed queries (each replayed stage by stage). What turns it off or softens it: "
                 f"{link['softened_by']}.\n")
    if link["stage"] == "temporal_decay" and any(v.get("cannot") for v in link["values"]):
        lines.append("This release builds temporal decay in. What it never decays: MEMORY.md, USER.md and undated "
                     "files under memory/ (OpenClaw's evergreen files), so what must stay findable can live there.\n")
    if not link["values"]:
        lines.append("This grid has no setting that does; add it to the grid (e.g. `temporal_decay = [\"off\", 60]`, "
                     "`mmr = [\"off\", 0.9]`) to see what it would do.\n")
        return lines
    rows = []
    release = (doc.get("release") or {}).get("release")
    for v in link["values"]:
        cannot = v.get("cannot") or []
        rows.append({COLUMN_WORDS.get(link["column"], link["column"]): v["text"],
                     "at your other settings": f"{v['objective']:.3f} ({v['passed']} passed)" if "objective" in v else "—",
                     "best of the grid with it": f"{v['best_label']}: {v['best_objective']:.3f} ({v['best_passed']} passed)",
                     f"openclaw.json{' of ' + release if release else ''}": "yes" if "objective" in v and not cannot
                     else "; ".join(c + other_releases(c) for c in cannot) or "—"})
    from harness.reporting.markdown import markdown_table

    configured = result.default
    lines += [f"The configuration: {label(configured)}: objective {configured['objective']:.3f} "
              f"({int(configured['passed'])} passed).\n", markdown_table(pd.DataFrame(rows))]
    return lines


def _figure(block: dict[str, Any], name: str) -> str:
    from harness.reporting.markdown import figure

    return figure(block, name)


def headline_table(result: SweepResult) -> pd.DataFrame:
    k = result.max_results
    rows = []
    for name, index in (("configured", result.default_index), ("in-sample best", result.best_index)):
        row = result.settings.loc[index].to_dict()
        suite = result.headline["configured" if name == "configured" else "best"].get("suite", {})
        rows.append({"": name, "setting": label(row), "objective": f"{row['objective']:.3f}",
                     "suite passed": f"{int(row['passed'])}/{int(row['suite_queries'])}",
                     "pass rate": _figure(suite, "pass_rate"), f"Recall@{k}": _figure(suite, f"recall@{k}"),
                     f"MRR@{k}": _figure(suite, f"mrr@{k}"), f"nDCG@{k}": _figure(suite, f"ndcg@{k}"),
                     **({f"judged@{k}": _figure(suite, f"judged@{k}"), f"bpref@{k}": _figure(suite, f"bpref@{k}"),
                         f"nDCG'@{k}": _figure(suite, f"ndcg_prime@{k}")} if f"judged@{k}" in suite else {}),
                     "paraphrases found": int(row["paraphrase_hits"]),
                     "negatives answered": int(row["negative_false_recalls"])})
    return pd.DataFrame(rows)


def write_extend(result: SweepResult, out_dir: Path, config: dict[str, Any]) -> Path | None:
    """extend.toml: the setting the sweep would not recommend while its top k is mostly unjudged (and the in-sample
    best), as pool configurations for `harness judge EXPERIMENT --extend extend.toml`."""
    from harness.judging.export import dump_toml
    from harness.studies.sweep import grid_tables

    if result.unjudged is None:
        return None
    picks = dict.fromkeys([result.unjudged["setting"], result.best_index])
    configurations = []
    for index in picks:
        tables = grid_tables(result.grid[index], config, result.tokenizer_tables)
        configurations.append({"label": f"sweep: {label(result.settings.loc[index].to_dict())}", "set": [],
                               "tables": tables})
    path = out_dir / "extend.toml"
    _atomic_write(path, "# Written by `harness sweep`: settings whose top k is mostly unjudged; pool their chunks with\n"
                        f"#   harness judge {config.get('experiment_file', 'EXPERIMENT')} --extend {path}\n"
                  + dump_toml({"configuration": configurations}))
    return path


def per_tokenizer(result: SweepResult) -> pd.DataFrame:
    s = result.settings
    rows = []
    for tok, group in s.groupby("tokenizer", sort=False):
        best = group["objective"].idxmax()
        row = s.loc[best]
        rows.append({"tokenizer": tok, "best setting": label(row.to_dict()), "objective": f"{row['objective']:.3f}",
                     "passed": int(row["passed"]), f"chunk nDCG@{result.max_results}":
                     f"{row[f'chunk_ndcg@{result.max_results}']:.3f}",
                     "adjusted p vs configured": f"{row['p_adjusted']:.3g}"})
    return pd.DataFrame(rows)


def gain_by_kind_table(cv: Any) -> pd.DataFrame:
    """One row per query kind (and 'answerable', and categories): gained / lost / unchanged, the mean gain
    with its interval and p."""
    from harness.reporting.markdown import interval_text

    rows = []
    for name, part in cv.by_kind.items():
        gain = part["gain"]
        rows.append({"queries": name, "n": part["queries"], "gained": part["gained"], "lost": part["lost"],
                     "held-out gain [95% CI]": interval_text(gain["estimate"], gain["ci95"], sign="+"),
                     "p": part["p_text"]})
    return pd.DataFrame(rows)


def write_sweep(result: SweepResult, out_dir: Path | str, config: dict[str, Any]) -> dict[str, Any]:
    from harness.reporting.markdown import interval_text, markdown_table

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if result.unjudged is not None:
        import dataclasses

        result.cv = dataclasses.replace(result.cv, reason=result.cv.reason.replace("SWEEP_OUT/extend.toml",
                                                                                   str(out_dir / "extend.toml")))
        write_extend(result, out_dir, config)
    doc = sweep_document(result, config)
    write_document(out_dir / "sweep.json", "sweep", doc)
    plot_sweep(result, out_dir / "sweep.png")
    cv, sel, t = result.cv, result.selection, result.timings
    fmt = lambda df: df.map(lambda x: f"{x:.3f}" if isinstance(x, float) else x)  # noqa: E731
    md = [
        f"# Sweep: {result.experiment}\n",
        f"{len(result.settings)} settings; legs searched once in {t['search_s']:.1f} s"
        + (f" (lexical legs of {', '.join(t['lexical_legs_cached'])} from the leg cache)" if t["lexical_legs_cached"] else "")
        + f", every setting fused and scored in {t['fuse_and_score_s']:.2f} s ({t['scorer']}), selection, "
          f"test and cross-validation in {t['statistics_s']:.1f} s.\n",
        f"**Objective** (what the selection maximises and what the tests read): {result.objective.description}. "
        f"{len(result.objective.query_ids)} queries count ("
        + ", ".join(f"{n} {kind}" for kind, n in doc["objective"]["by_kind"].items()) + ").\n",
        reproduction_text(result, doc["reproduction"]["checks"]) + "\n",
        "## Recommendation\n",
        recommendation_text(result, doc),
        "\n## Configured and in-sample best\n",
        "Record-level Recall/MRR/nDCG of the suite with 95% bootstrap intervals [low, high]; the objective is "
        "the mean of the per-query objective over every counted query.\n",
        markdown_table(headline_table(result)),
        f"\n**Is the in-sample best better than the configuration?** Max-statistic test over the grid "
        f"(the selection is part of the null): p = {sel.p_text()} ({sel.method}; {sel.informative} "
        f"{'queries' if sel.unit == 'query' else sel.unit + 's'} where some setting differs from the configuration). "
        f"An ordinary paired test of the best against the configuration would ignore that it was picked among "
        f"{sel.settings:,} settings.\n",
        "\n## Cross-validation: the tuning procedure on queries it did not see\n",
        f"{cv_scheme(result)}: on each fold the best setting is chosen on the other queries and scored on the "
        f"held-out ones.\n",
        repeats_text(result),
        markdown_table(pd.DataFrame([{
            "configured (mean objective)": f"{cv.configured_mean:.3f}",
            "in-sample best (optimistic)": f"{cv.in_sample_mean:.3f}",
            "cross-validated (held out)": f"{cv.held_out_mean:.3f}",
            "held-out gain [95% CI]": interval_text(cv.gain.estimate, [cv.gain.low, cv.gain.high], sign="+"),
            "paired sign-flip p": cv.p_text,
            "folds choosing the in-sample best": f"{sum(c == cv.in_sample_best for c in cv.chosen)}/{len(cv.chosen)}"}])),
        f"\n{cv.reason[0].upper() + cv.reason[1:]}.\n",
        "\n**Which queries carry the held-out gain** (held-out minus configured, per query kind; paired "
        f"interval and sign-flip p at the unit above: {cv.gain.method}):\n",
        markdown_table(gain_by_kind_table(cv)),
        *stage_text(result, doc), *release_text(result, doc),
        "\n## Robust or noise\n", robustness_text(result),
        "\n## Best setting per tokenizer (in-sample)\n", markdown_table(per_tokenizer(result)),
        "\n## minScore at the configured weights: suite passes vs negative queries answered\n",
        markdown_table(fmt(result.min_score_table)),
    ]
    if result.holdout:
        md += ["\n## Held-out query set\n", holdout_text(result.holdout)]
    md.append("\n![curves](sweep.png)\n")
    _atomic_write(out_dir / "sweep.md", "\n".join(md))
    return doc


def repeats_text(result: SweepResult) -> str:
    """The held-out gain over repeated grouped splits beside the published split's."""
    r = result.cv_repeats
    if not r:
        return ""
    seeds = r["seeds"]
    return (f"Over {len(seeds)} further grouped splits (seeds {seeds[0]}-{seeds[-1]}; the published split is seed "
            f"0) the held-out gain is {r['mean']:+.4f} on average, from {r['min']:+.4f} to {r['max']:+.4f} "
            f"(published: {result.cv.gain.estimate:+.4f}).\n")


SCORE_FUSIONS = ("weighted", "wsum")  # fused scores move with the embedding's scores (rrf fuses ranks)


def reproduction_checks(result: SweepResult, drift: dict[str, Any] | None) -> dict[str, Any]:
    """Each gain the report states (the in-sample best and the recommended setting over the configuration,
    the held-out set's chosen setting over it) against the flips reproduction noise allows
    (evaluation.reproduction.gain_noise on the settings' deciding margins)."""
    from harness.evaluation.reproduction import gain_noise
    from harness.reporting.markdown import noise_limit

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


def noise_check_sentence(what: str, check: dict[str, Any], n: int) -> str:
    """One stated gain against reproduction noise, in words."""
    if check.get("not_checked"):
        return (f"{what} {check['gain']:+.4f}: not checked against the tolerance: {check['not_checked']} fuses "
                "ranks, so its margins are not in score units (a flip needs the vector leg's candidates to swap "
                "places, which this report does not measure).")
    flips = check["flippable"]
    shown = ", ".join(flips[:8]) + (f" and {len(flips) - 8} more" if len(flips) > 8 else "")
    if not flips:
        return (f"{what} {check['gain']:+.4f}: no counted query of either setting is decided by a margin under "
                f"{check['limit']:.4f}, so the gain is outside reproduction noise.")
    verdict = ("**inside reproduction noise**: another machine can erase it" if check["inside_noise"]
               else "outside reproduction noise")
    return (f"{what} {check['gain']:+.4f}: {len(flips)} of {n} counted queries "
            f"{'is' if len(flips) == 1 else 'are'} decided by a margin under "
            f"{check['limit']:.4f} in one of the two settings ({shown}); flipping them moves the gain by up to "
            f"{check['bound']:.4f}, so it is {verdict}.")


def reproduction_text(result: SweepResult | None = None, checks: dict[str, Any] | None = None) -> str:
    """The reproduction tolerance (reports/drift and the cross-machine change) and what it does to this
    sweep's gains (`checks`: reproduction_checks)."""
    from harness.reporting.markdown import reproduction_tolerance, tolerance_sentence

    text = (tolerance_sentence(reproduction_tolerance()) + " A sweep counts queries: a query whose deciding "
            "margin (its smallest margin that decides pass or fail: the relevant chunk against the best other, "
            "the top-1 against minScore, the relevant chunk against the cut) lies inside that noise can pass in "
            "one run of a setting and fail in the next.")
    if result is None or not checks:
        return text
    n = len(result.objective.query_ids)
    names = {"best": "In-sample best over the configuration:",
             "recommended": "Recommended setting over the configuration:",
             "holdout": "Held-out set, chosen setting over the configuration:"}
    if "recommended" in checks and result.cv.recommended == result.best_index:
        names["best"] = "In-sample best (the recommended setting) over the configuration:"
    lines = [text, ""]
    for name, check in checks.items():
        if name == "recommended" and result.cv.recommended == result.best_index:
            continue  # the same setting as the in-sample best: said once
        count = result.holdout["queries"] if name == "holdout" else n
        lines.append("- " + noise_check_sentence(names[name], check, count))
    return "\n".join(lines)


def recommendation_text(result: SweepResult, doc: dict[str, Any]) -> str:
    if result.recommended is None:
        reason = result.cv.reason.removeprefix("keep the configuration: ")
        return (f"**Keep the configuration** ({label(result.default)}): {reason}. No openclaw.json snippet is "
                "suggested.\n")
    partial = bool(doc["not_expressible_in_openclaw_json"])
    negatives_only = result.cv.carried_by is not None
    text = [f"**{result.cv.verdict[0].upper() + result.cv.verdict[1:]}: change to {label(result.recommended)}**"
            + (" (not a retrieval improvement)" if negatives_only else "") + f": {result.cv.reason}.\n"]
    check = ((doc.get("reproduction") or {}).get("checks") or {}).get("recommended")
    if check and check["inside_noise"]:
        text.append(f"Its gain over the configuration ({check['gain']:+.4f}) is **inside reproduction noise**: "
                    f"{len(check['flippable'])} queries decided by a margin under {check['limit']:.4f} could move it "
                    f"by up to {check['bound']:.4f} on another machine.\n")
    if doc["openclaw_snippet"] is not None:
        what = ("openclaw.json snippet of this abstention change (it changes what is left silent on queries "
                "with nothing relevant, not what is found" if negatives_only else
                "openclaw.json snippet (the settings that change")
        text += [what + ("; what it cannot set follows" if partial else "") + "):\n",
                 "```json5\n" + doc["openclaw_snippet"] + "\n```\n"]
    else:
        text.append("None of the change can be written in this release's openclaw.json.\n")
    if doc["not_expressible_in_openclaw_json"]:
        text.append("Not expressible in openclaw.json (so the snippet alone is not this setting): "
                    + "; ".join(c + other_releases(c) for c in doc["not_expressible_in_openclaw_json"]) + "\n")
    return "\n".join(text)


def robustness_text(result: SweepResult) -> str:
    """Which dimensions of the best setting are robust (every family tying the best shares them) and
    which are noise (many values tie)."""
    r = result.robustness
    families = r.get("families_indistinguishable_from_best", [])
    weights = r.get("weights_indistinguishable_from_best", [])
    s = result.settings
    lines = [f"Max-statistic tests (two-sided, family-wise alpha {r.get('alpha', 0.05)}) on sub-grids; a family is "
             f"tokenizer | fusion | minScore at its best weight ({r.get('families', 0)} families). Families are "
             "chosen at their best weight on the same queries, so \"indistinguishable\" is generous to them.\n"]
    if families:
        shown = sorted(families, key=lambda f: -f["objective"])
        lines.append(f"- {len(families)} of {r['families']} families are statistically indistinguishable from the "
                     "best: " + "; ".join(f"`{f['family']}` ({f['objective']:.3f})" for f in shown[:8])
                     + (f"; and {len(shown) - 8} more" if len(shown) > 8 else "") + ".")
        for position, name, column in ((0, "tokenizer", "tokenizer"), (1, "fusion", "fusion"), (2, "minScore", "min_score")):
            tying = sorted({f["family"].split(" | ")[position] for f in families})
            every = sorted({str(v) if column != "min_score" else f"{v:g}" for v in s[column].unique()})
            if len(every) < 2:
                continue
            if set(tying) == set(every):
                lines.append(f"- {name}: every value ties the best ({', '.join(every)}): not decided by these queries.")
            else:
                worse = [v for v in every if v not in tying]
                lines.append(f"- {name}: {' or '.join(tying)} (robust: {', '.join(worse)} measurably worse).")
    if weights:
        best_family = r["best_family"]
        if len(weights) == 1:
            lines.append(f"- Within `{best_family}`, only vectorWeight {weights[0]:g} reaches the best; every other "
                         "weight of the family is measurably worse.")
        else:
            lines.append(f"- Within `{best_family}`, vectorWeight {weights[0]:g} to {weights[-1]:g} ({len(weights)} "
                         "values) is indistinguishable from its best weight: the exact weight is noise.")
    return "\n".join(lines) + "\n"


def holdout_text(h: dict[str, Any]) -> str:
    from harness.reporting.markdown import (
        difference_text,
        figure,
        markdown_table,
        p_cell,
    )

    gain = h["gain"]
    lines = [f"`{h['experiment']}` ({h['queries']} queries, never used for the selection): the {h['which']} "
             f"({h['setting']}) against the configuration ({h['configured']}).\n",
             f"Objective {h['configured_mean']:.3f} -> {h['chosen_mean']:.3f}: gain {difference_text(gain)}, "
             f"paired sign-flip p = {p_cell(h)} ({h['method']}).\n"]
    rows = []
    for name, block in (("configured", h["headline"]["configured"]), (h["which"], h["headline"]["chosen"])):
        suite = block.get("suite", {})
        rows.append({"": name, "pass rate": figure(suite, "pass_rate"),
                     **{f"{m}@{k}": figure(suite, f"{m}@{k}") for k in h["cutoffs"] for m in ("recall", "mrr", "ndcg")}})
    lines.append(markdown_table(pd.DataFrame(rows)))
    diffs = pd.DataFrame([{"metric": d["metric"], "difference [95% CI]": difference_text(d["difference"]),
                           "p": p_cell(d), "p (Holm)": p_cell(d, "p_holm")} for d in h["differences"]])
    lines += ["\nPer-query differences (paired, Holm over these metrics):\n", markdown_table(diffs)]
    return "\n".join(lines)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def plot_sweep(result: SweepResult, path: Path) -> None:
    """The objective and the suite's chunk nDCG against vectorWeight, one curve per tokenizer at the
    configured fusion and minScore, each with its 95% bootstrap band over queries."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.9), squeeze=False)
    for tok, group in sub.groupby("tokenizer", sort=False):
        group = group.sort_values(along)
        xs = group[along].to_numpy()
        for ax, (column, _, matrix, clusters) in zip(axes[0], panels):
            line = ax.plot(xs, group[column], marker=".", label=tok)[0]
            if matrix is not None and matrix.shape[1] > 1:
                bands = bootstrap_means({str(i): matrix[i] for i in group.index}, resamples=2000,
                                        clusters=clusters, unit=result.objective.unit)
                low = [bands[str(i)].low for i in group.index]
                high = [bands[str(i)].high for i in group.index]
                ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.12, linewidth=0)
    own = default[along]
    for ax, (_, title, _, _) in zip(axes[0], panels):
        ax.set_xlabel("minScore" if along == "min_score" else "vectorWeight (textWeight = 1 - vectorWeight)")
        ax.set_title(title, fontsize=10)
        if not (isinstance(own, float) and math.isnan(own)):
            ax.axvline(own, color="grey", linestyle=":", linewidth=0.8)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fixed = f"minScore {default['min_score']:g}" if along == "vector_weight" else \
        f"vectorWeight {default['vector_weight']:g}"
    fig.suptitle(f"{result.experiment}: fusion {default['fusion']}, {fixed} "
                 f"(bands: 95% intervals at the data set's unit; dotted: configured)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
