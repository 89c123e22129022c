"""A sweep's files: sweep.json (every setting, the selection, its test, the cross-validation, the held-out
check), sweep.md (what to do and why) and sweep.png (the objective against vectorWeight per tokenizer,
with 95% bands).  The openclaw.json snippet is written only for a recommended setting."""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pandas as pd

from harness.evaluation.formatting import interval_text, p_text
from harness.reporting.documents import write_study_document
from harness.studies.document import Document
from harness.studies.sweep import SweepResult, label
from harness.inputs.openclaw_releases import LAYOUTS, SETTING_KEYS
from harness.evaluation.stage_trace import stage_words
from harness.reporting.markdown import markdown_table
from harness.evaluation.formatting import figure
from harness.judging.export import dump_toml
from harness.studies.sweep import grid_tables
from harness.reporting.markdown import tolerance_sentence
from harness.studies.ablation_analysis import reproduction_tolerance
from harness.evaluation.formatting import difference_text, figure, p_cell


COLUMN_WORDS = {"half_life_days": "temporal decay", "mmr_lambda": "MMR", "min_score": "minScore",
                "vector_weight": "vectorWeight", "max_results": "maxResults", "tokenizer": "tokenizer",
                "candidate_multiplier": "candidateMultiplier"}


def other_releases(item: str) -> str:
    """Which releases' openclaw.json can set what an item of release_limits names, and where."""
    key = item.split(" = ")[0].split(":")[0].strip()
    setting = next((name for name, path in SETTING_KEYS.items() if path == key), None)
    if setting is None:
        return ""
    where = sorted({f"{layout.release} ({layout.block}.{key})" for layout in LAYOUTS.values() if setting in layout.reads})
    return "; set in " + ", ".join(where) if where else ""


def stage_link_lines(doc: dict[str, Any]) -> list[str]:
    """The console's lines on the stage that costs the most and what turning it off or softening it does."""
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


def release_text(doc: Document) -> list[str]:
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


def stage_text(doc: Document) -> list[str]:
    """sweep.md's section linking the stage that costs the most queries to the settings that soften it."""
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

    configured = doc["configured"]
    lines += [f"The configuration: {label(configured)}: objective {configured['objective']:.3f} "
              f"({int(configured['passed'])} passed).\n", markdown_table(pd.DataFrame(rows))]
    return lines


def _figure(block: dict[str, Any], name: str) -> str:
    return figure(block, name)


def headline_table(doc: Document) -> pd.DataFrame:
    k = doc["page"]["max_results"]
    rows = []
    for name, key in (("configured", "configured"), ("in-sample best", "best")):
        row = doc[key]
        suite = doc["headline"][key].get("suite", {})
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


def per_tokenizer(page: dict[str, Any]) -> pd.DataFrame:
    """Each tokenizer's in-sample best setting (page: the Document's page, sweep_analysis.page_document)."""
    k = page["max_results"]
    rows = [{"tokenizer": row["tokenizer"], "best setting": label(row), "objective": f"{row['objective']:.3f}",
             "passed": int(row["passed"]), f"chunk nDCG@{k}": f"{row[f'chunk_ndcg@{k}']:.3f}",
             "adjusted p vs configured": f"{row['p_adjusted']:.3g}"} for row in page["best_per_tokenizer"]]
    return pd.DataFrame(rows)


def gain_by_kind_table(cv: dict[str, Any]) -> pd.DataFrame:
    """One row per query kind (and 'answerable', and categories) of the Document's cross-validation:
    gained / lost / unchanged, the mean gain with its interval and p."""
    rows = []
    for name, part in cv["by_kind"].items():
        gain = part["gain"]
        rows.append({"queries": name, "n": part["queries"], "gained": part["gained"], "lost": part["lost"],
                     "held-out gain [95% CI]": interval_text(gain["estimate"], gain["ci95"], sign="+"),
                     "p": part["p_text"]})
    return pd.DataFrame(rows)


def write_extend_of(result: SweepResult, out_dir: Path | str, config: dict[str, Any]) -> None:
    """With unjudged queries: extend.toml in OUT, and the cross-validation's reason naming where it is
    (before the analysis writes that reason into the Document)."""
    if result.unjudged is None:
        return
    import dataclasses

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    result.cv = dataclasses.replace(result.cv, reason=result.cv.reason.replace("SWEEP_OUT/extend.toml",
                                                                               str(out_dir / "extend.toml")))
    write_extend(result, out_dir, config)


def write_sweep(doc: Document, out_dir: Path | str) -> Document:
    """sweep.json (the Document harness.studies.sweep_analysis.sweep_document computed), sweep.md and
    sweep.png; returns the document."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_study_document(out_dir / "sweep.json", doc)
    render(doc, out_dir)
    return doc


def cv_p_text(cv: dict[str, Any]) -> str:
    """The cross-validation's sign-flip p as reports print it (its floor when the test has one)."""
    if cv["p_floor"] is None:
        return f"{cv['p_value']:.3g}"
    return p_text(cv["p_value"], cv["p_floor"], cv["p_monte_carlo"])


def render(doc: Document, out_dir: Path) -> Path:
    """sweep.md and sweep.png from the sweep's Document alone (a run's, or sweep.json read back by
    `harness sweep --redraw`), its "page" included (harness.studies.sweep_analysis.page_document).  Computes
    nothing: the cross-validations, checks and bands are the analysis'."""
    page = doc["page"]
    plot_sweep(doc, out_dir / "sweep.png")
    cv, sel, t = doc["cv"], doc["selection_test"], doc["timings"]
    gain = cv["gain"]
    fmt = lambda df: df.map(lambda x: f"{x:.3f}" if isinstance(x, float) else x)  # noqa: E731
    md = [
        f"# Sweep: {doc['experiment']}\n",
        f"{len(doc['settings'])} settings; legs searched once in {t['search_s']:.1f} s"
        + (f" (lexical legs of {', '.join(t['lexical_legs_cached'])} from the leg cache)" if t["lexical_legs_cached"] else "")
        + f", every setting fused and scored in {t['fuse_and_score_s']:.2f} s ({t['scorer']}), selection, "
          f"test and cross-validation in {t['statistics_s']:.1f} s.\n",
        f"**Objective** (what the selection maximises and what the tests read): {doc['objective']['description']}. "
        f"{doc['objective']['queries']} queries count ("
        + ", ".join(f"{n} {kind}" for kind, n in doc["objective"]["by_kind"].items()) + ").\n",
        reproduction_text(doc) + "\n",
        "## Recommendation\n",
        recommendation_text(doc),
        "\n## Configured and in-sample best\n",
        "Record-level Recall/MRR/nDCG of the suite with 95% bootstrap intervals [low, high]; the objective is "
        "the mean of the per-query objective over every counted query.\n",
        markdown_table(headline_table(doc)),
        f"\n**Is the in-sample best better than the configuration?** Max-statistic test over the grid "
        f"(the selection is part of the null): p = {p_text(sel['p_value'], sel['p_floor'], sel['monte_carlo'])} "
        f"({sel['method']}; {sel['informative_queries']} "
        f"{'queries' if sel['unit'] == 'query' else sel['unit'] + 's'} where some setting differs from the "
        f"configuration). An ordinary paired test of the best against the configuration would ignore that it was "
        f"picked among {sel['settings']:,} settings.\n",
        "\n## Cross-validation: the tuning procedure on queries it did not see\n",
        f"{doc['cv']['scheme']}: on each fold the best setting is chosen on the other queries and scored on the "
        f"held-out ones.\n",
        repeats_text(doc),
        markdown_table(pd.DataFrame([{
            "configured (mean objective)": f"{cv['configured_mean']:.3f}",
            "in-sample best (optimistic)": f"{cv['in_sample_mean']:.3f}",
            "cross-validated (held out)": f"{cv['held_out_mean']:.3f}",
            "held-out gain [95% CI]": interval_text(gain["estimate"], gain["ci95"], sign="+"),
            "paired sign-flip p": cv_p_text(cv),
            "folds choosing the in-sample best":
                f"{sum(c == cv['in_sample_best'] for c in cv['chosen'])}/{len(cv['chosen'])}"}])),
        f"\n{cv['reason'][0].upper() + cv['reason'][1:]}.\n",
        "\n**Which queries carry the held-out gain** (held-out minus configured, per query kind; paired "
        f"interval and sign-flip p at the unit above: {gain['method']}):\n",
        markdown_table(gain_by_kind_table(cv)),
        *stage_text(doc), *release_text(doc),
        "\n## Robust or noise\n", robustness_text(doc),
        "\n## Best setting per tokenizer (in-sample)\n", markdown_table(per_tokenizer(page)),
        "\n## minScore at the configured weights: suite passes vs negative queries answered\n",
        markdown_table(fmt(pd.DataFrame(page["min_score_table"]["rows"], columns=page["min_score_table"]["columns"]))),
    ]
    if doc["holdout"]:
        md += ["\n## Held-out query set\n", holdout_text(doc["holdout"])]
    md.append("\n![curves](sweep.png)\n")
    _atomic_write(out_dir / "sweep.md", "\n".join(md))
    return out_dir / "sweep.md"


def repeats_text(doc: Document) -> str:
    """The held-out gain over repeated grouped splits beside the published split's."""
    r = doc["cv_repeats"]
    if not r:
        return ""
    seeds = r["seeds"]
    return (f"Over {len(seeds)} further grouped splits (seeds {seeds[0]}-{seeds[-1]}; the published split is seed "
            f"0) the held-out gain is {r['mean']:+.4f} on average, from {r['min']:+.4f} to {r['max']:+.4f} "
            f"(published: {doc['cv']['gain']['estimate']:+.4f}).\n")


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


def reproduction_text(doc: Document | None = None) -> str:
    """The reproduction tolerance (reports/drift and the cross-machine change) and what it does to this
    sweep's gains (the Document's reproduction checks, sweep_analysis.reproduction_checks)."""
    text = (tolerance_sentence(reproduction_tolerance()) + " A sweep counts queries: a query whose deciding "
            "margin (its smallest margin that decides pass or fail: the relevant chunk against the best other, "
            "the top-1 against minScore, the relevant chunk against the cut) lies inside that noise can pass in "
            "one run of a setting and fail in the next.")
    checks = doc["reproduction"]["checks"] if doc is not None else None
    if not checks:
        return text
    n = doc["objective"]["queries"]
    same_setting = doc["cv"]["recommended"] == doc["cv"]["in_sample_best"]
    names = {"best": "In-sample best over the configuration:",
             "recommended": "Recommended setting over the configuration:",
             "holdout": "Held-out set, chosen setting over the configuration:"}
    if "recommended" in checks and same_setting:
        names["best"] = "In-sample best (the recommended setting) over the configuration:"
    lines = [text, ""]
    for name, check in checks.items():
        if name == "recommended" and same_setting:
            continue  # the same setting as the in-sample best: said once
        count = doc["holdout"]["queries"] if name == "holdout" else n
        lines.append("- " + noise_check_sentence(names[name], check, count))
    return "\n".join(lines)


def recommendation_text(doc: Document) -> str:
    cv = doc["cv"]
    if doc["recommended"] is None:
        reason = cv["reason"].removeprefix("keep the configuration: ")
        return (f"**Keep the configuration** ({label(doc['configured'])}): {reason}. No openclaw.json snippet is "
                "suggested.\n")
    partial = bool(doc["not_expressible_in_openclaw_json"])
    negatives_only = cv["carried_by"] is not None
    text = [f"**{cv['verdict'][0].upper() + cv['verdict'][1:]}: change to {label(doc['recommended'])}**"
            + (" (not a retrieval improvement)" if negatives_only else "") + f": {cv['reason']}.\n"]
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


def robustness_text(doc: Document) -> str:
    """Which dimensions of the best setting are robust (every family tying the best shares them) and
    which are noise (many values tie)."""
    r = doc["robustness"]
    families = r.get("families_indistinguishable_from_best", [])
    weights = r.get("weights_indistinguishable_from_best", [])
    values = doc["page"]["values"]
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
            every = sorted({str(v) if column != "min_score" else f"{v:g}" for v in values[column]})
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


def plot_sweep(doc: Document, path: Path) -> None:
    """The objective and the suite's chunk nDCG against vectorWeight, one curve per tokenizer at the
    configured fusion and minScore, each with its 95% bootstrap band over queries (the Document's page's
    plot: harness.studies.sweep_analysis.plot_document)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    default, plot = doc["configured"], doc["page"]["plot"]
    along, panels = plot["along"], plot["panels"]
    bands = {(band["panel"], band["tokenizer"]): (band["low"], band["high"]) for band in plot["bands"]}
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.9), squeeze=False)
    for curve in plot["curves"]:
        tok, xs = curve["tokenizer"], curve["x"]
        for ax, (column, _) in zip(axes[0], panels):
            line = ax.plot(xs, curve[column], marker=".", label=tok)[0]
            if (column, tok) in bands:
                low, high = bands[column, tok]
                ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.12, linewidth=0)
    own = default[along]
    for ax, (_, title) in zip(axes[0], panels):
        ax.set_xlabel("minScore" if along == "min_score" else "vectorWeight (textWeight = 1 - vectorWeight)")
        ax.set_title(title, fontsize=10)
        if not (isinstance(own, float) and math.isnan(own)):
            ax.axvline(own, color="grey", linestyle=":", linewidth=0.8)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fixed = f"minScore {default['min_score']:g}" if along == "vector_weight" else \
        f"vectorWeight {default['vector_weight']:g}"
    fig.suptitle(f"{doc['experiment']}: fusion {default['fusion']}, {fixed} "
                 f"(bands: 95% intervals at the data set's unit; dotted: configured)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
