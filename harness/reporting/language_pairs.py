"""The report of a language-pairs study (harness.studies.language_pairs), drawn from its JSON document
alone: <name>.md (pairing, the paired differences per system and per category, which stage lost the
questions) and <name>.png (the differences with their intervals)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from harness.evaluation.formatting import difference_text, p_cell
from harness.reporting.documents import write_study_document
from harness.reporting.markdown import markdown_table
from harness.studies.document import Comparison, Document

ALPHA = 0.05


def _share(value: float) -> str:
    return f"{value:.3f}"


def pairing_section(doc: dict[str, Any]) -> str:
    p, a, b = doc["pairing"], doc["a"], doc["b"]
    t = p["total"]
    rows = [{"conversation": r["conversation"], f"sessions ({a} / {b})": f"{r['sessions'][0]} / {r['sessions'][1]}",
             "sessions matched": r["sessions_matched"], f"turns ({a} / {b})": f"{r['turns'][0]} / {r['turns'][1]}",
             "turns matched": r["turns_matched"], "turns with the same text": r["turns_with_the_same_text"],
             f"questions ({a} / {b})": f"{r['questions'][0]} / {r['questions'][1]}",
             "questions paired": r["questions_paired"]} for r in p["conversations"]]
    mismatch = ("No mismatch." if not p["mismatch_count"] else
                f"{p['mismatch_count']} mismatches, the first ones: " + "; ".join(p["mismatches"]) + ".")
    return (f"## Pairing\n\n`{p['a']}` ({a}) against `{p['b']}` ({b}): conversations by sample id, sessions by "
            f"number and date, turns by position (same dia_id, speaker and image caption), questions by position "
            f"(same evidence ids and category). **{t['questions_paired']} of {t['questions'][1]} questions pair**; "
            f"{t['turns_matched']} of {t['turns'][1]} turns match ({t['turns_with_the_same_text']} with the same "
            f"text in both languages), {t['sessions_matched']} of {t['sessions'][1]} sessions. {mismatch}\n\n"
            + markdown_table(pd.DataFrame(rows)))


def unit_section(doc: dict[str, Any]) -> str:
    n = doc["statistics"]["conversations"]
    st = doc["statistics"]
    return (f"\n**Only {n} conversations exist.** The questions of one conversation share its memory, so "
            f"LoCoMo's resampling unit is the conversation; with {n} units no interval over conversations can "
            f"be computed. Every interval below resamples questions as if they were independent (paired BCa "
            f"bootstrap, {st['bootstrap_resamples']:,} resamples, seed {st['seed']}) and is narrower than the "
            f"data can support: read it as the spread over these questions of these {n} conversations, not as "
            f"what another conversation would show. p: paired sign-flip test ({st['sign_flips']:,} random sign "
            f"flips beyond 20 questions, so the smallest p it can give is 1/{st['sign_flips'] + 1:,}: shown as "
            f"\"< floor\"), Holm over the rows of each metric's table.\n")


def difference_table(doc: dict[str, Any], metric: str) -> pd.DataFrame:
    a, b = doc["a"], doc["b"]
    rows = [Comparison.from_dict(row) for row in doc["tables"][metric]]
    return pd.DataFrame([{"group": r.tag("group"), "system": r.tag("system"), "questions": r.queries,
                          a: f"{r.mean_a:.3f}", b: f"{r.mean_b:.3f}",
                          f"{a} − {b} [95% CI]": difference_text(r.difference), "p": p_cell(r),
                          "p (Holm)": p_cell(r, "p_holm")} for r in rows])


def verdict_section(doc: dict[str, Any], metric: str) -> str:
    """Which systems lose (and gain) on b: at the data's unit (the conversation) only when an exact
    sign-flip over the conversations can reach the level (else "cannot decide with G conversations");
    the question-level lists (a Holm p below 0.05 and an interval that excludes 0) are descriptive."""
    a, b = doc["a"], doc["b"]
    st = doc["statistics"]
    g = st["conversations"]
    floor = st.get("conversation_floor", 2.0 / 2 ** g)
    lose, gain, level = [], [], []
    for r in doc["tables"][metric]:
        low, high = r["difference"]["ci95"]
        name = f"{r['group']}: {r['system']} ({difference_text(r['difference'])})"
        if r["p_holm"] == r["p_holm"] and r["p_holm"] < ALPHA and low > 0:
            lose.append(name)
        elif r["p_holm"] == r["p_holm"] and r["p_holm"] < ALPHA and high < 0:
            gain.append(name)
        else:
            level.append(f"{r['group']}: {r['system']}")
    decided = floor < ALPHA
    lines = [f"### Which systems lose {metric} on {b}\n"]
    if not decided:
        lines.append(f"**Verdict at the data's unit: cannot decide with {g} conversations** (an exact sign-flip "
                     f"over {g} conversations cannot give p below {floor:.3g}, and the level is {ALPHA}). What "
                     f"follows is descriptive: the {a} − {b} differences with a question-level Holm p below {ALPHA} "
                     "and an interval that excludes 0, the questions treated as independent (see the note on the "
                     "unit above); it says what these questions of these conversations show, not what another "
                     "conversation would.\n")
        words = (f"larger on {a} at the question level", f"larger on {b} at the question level",
                 "no question-level difference")
    else:
        lines.append(f"A system loses on {b} when its {a} − {b} difference has a Holm p below {ALPHA} and an "
                     "interval above 0.\n")
        words = (f"lose on {b}", f"gain on {b}", "no difference the test can tell")
    lines += [f"- **{words[0]}** ({len(lose)}): " + ("; ".join(lose) or "none"),
              f"- **{words[1]}** ({len(gain)}): " + ("; ".join(gain) or "none"),
              f"- **{words[2]}** ({len(level)}): " + ("; ".join(level) or "none")]
    return "\n".join(lines) + "\n"


def category_table(doc: dict[str, Any], names: dict[str, str], means: bool = False) -> pd.DataFrame:
    """Per system and category: the difference [CI], or (means) the two languages' means "a / b"."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in doc["by_category"]:
        key = (r["group"], r["system"])
        row = rows.setdefault(key, {"group": r["group"], "system": r["system"]})
        label = f"{r['category']} {names.get(str(r['category']), '')} ({r['queries']})".strip()
        row[label] = f"{r['mean_a']:.3f} / {r['mean_b']:.3f}" if means else difference_text(r["difference"])
    return pd.DataFrame(list(rows.values()))


def stage_table(doc: dict[str, Any]) -> pd.DataFrame:
    a, b = doc["a"], doc["b"]
    k = doc["metrics"][0].split("@")[1]
    rows = []
    for r in doc["stages"]:
        if r["lost"] is None:
            continue
        d = r["diagnostics"]

        def cell(name: str) -> str:
            if name not in d:
                return ""
            x = d[name]
            return f"{_share(x['mean_a'])} / {_share(x['mean_b'])} ({difference_text(x['difference'])})"

        lost = r["lost_by_stage"]
        rows.append({"group": r["group"], "system": r["system"], f"lost on {b}": r["lost"],
                     f"gained on {b}": r["gained"], "lost: vector leg": lost.get("vector only", 0),
                     "lexical leg": lost.get("lexical only", 0), "both": lost.get("both legs", 0),
                     "neither": lost.get("neither leg", 0),
                     f"any lexical hit ({a} / {b}, a − b)": cell("lexical_hit"),
                     f"evidence in lexical top {k}": cell(f"lexical_top{k}"),
                     f"evidence in vector top {k}": cell(f"vector_top{k}")})
    return pd.DataFrame(rows)


def language_pairs_markdown(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    a, b, metrics = doc["a"], doc["b"], doc["metrics"]
    headline = metrics[0]
    k = headline.split("@")[1]
    names = {str(key): value for key, value in (spec.get("category_names") or {}).items()}
    parts = [f"# {spec.get('title') or doc['name']}\n", (spec.get("description") or "").strip() + "\n", pairing_section(doc),
             unit_section(doc)]
    if spec.get("notes"):
        parts += ["\n## Reading the numbers\n", spec["notes"].strip() + "\n"]
    for metric in metrics:
        parts += [f"\n## {metric}: {a} minus {b}, per question\n",
                  f"Per system, the suite questions both runs scored; `{a}` and `{b}`: the means; the difference is "
                  f"{a} minus {b} (positive: {b} loses).\n", markdown_table(difference_table(doc, metric))]
        parts.append("\n" + verdict_section(doc, metric))
    parts += [f"\n## {headline} per category: {a} minus {b}\n",
              "Difference [95% CI] per question category (questions in brackets); descriptive, no test.\n",
              markdown_table(category_table(doc, names)),
              f"\n{headline} per category in each language ({a} / {b}):\n",
              markdown_table(category_table(doc, names, means=True))]
    parts += ["\n## Which stage loses the evidence\n",
              f"Per system: the questions {headline} finds in {a} and not in {b} (and the reverse), the lost ones "
              f"put down to the leg whose own top {k} candidates held an evidence chunk in {a} and not in {b} "
              f"(`vector leg`, `lexical leg`, `both`), or to `neither` (both legs still held it, or neither did: "
              f"fusion, post-processing or the chunk cut decided). Then, per language, the share of questions "
              f"whose lexical leg returned anything at all, whose lexical top {k} held an evidence chunk, and "
              f"whose vector top {k} did ({a} / {b}, and the paired difference).\n",
              markdown_table(stage_table(doc))]
    return "\n".join(parts)


def plot_language_pairs(doc: dict[str, Any], path: Path, metrics: list[str] | None = None) -> None:
    """One forest panel (a minus b with its interval, per system) per metric, then the two languages' means
    of the first metric side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a, b = doc["a"], doc["b"]
    metrics = [m for m in (metrics or doc["metrics"][:1]) if doc["tables"].get(m)]
    rows = doc["tables"][metrics[0]]
    labels = [f"{r['group']}: {r['system']}" for r in rows]
    y = list(range(len(rows)))[::-1]
    at = {(r["group"], r["system"]): yi for yi, r in zip(y, rows)}
    groups = list(dict.fromkeys(r["group"] for r in rows))
    colours = {g: f"C{i}" for i, g in enumerate(groups)}
    fig, axes = plt.subplots(1, len(metrics) + 1, figsize=(6 * (len(metrics) + 1), 0.32 * len(rows) + 1.8),
                             sharey=True)
    for ax, metric in zip(axes, metrics):
        for r in doc["tables"][metric]:
            yi = at.get((r["group"], r["system"]))
            est, (low, high) = r["difference"]["estimate"], r["difference"]["ci95"]
            if yi is not None and est == est:
                ax.errorbar(est, yi, xerr=[[max(0.0, est - low)], [max(0.0, high - est)]], fmt="o",
                            color=colours[r["group"]], capsize=2, markersize=4)
        ax.axvline(0, color="#333", linewidth=0.8)
        ax.set_xlabel(f"{metric}: {a} minus {b}\n(95% CI over questions)")
    right = axes[-1]
    for yi, r in zip(y, rows):
        right.plot([r["mean_b"], r["mean_a"]], [yi, yi], color="#bbb", linewidth=1, zorder=1)
        right.scatter([r["mean_a"]], [yi], color="C0", s=16, zorder=2, label=a if yi == y[0] else None)
        right.scatter([r["mean_b"]], [yi], color="C3", s=16, zorder=2, label=b if yi == y[0] else None)
    axes[0].set_yticks(y)
    axes[0].set_yticklabels(labels, fontsize=7)
    right.set_xlabel(f"{metrics[0]} per language")
    right.legend(fontsize=8, loc="lower left")
    for ax in axes:
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(f"{doc['name']}: what {b} costs each system, paired by question "
                 f"({doc['statistics']['conversations']} conversations: intervals resample questions)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def render(document: Document, out_dir: Path | str) -> Path:
    """<name>.md and <name>.png from the study's Document alone (its config: the spec as loaded)."""
    spec, doc = document.config, document
    out_dir = Path(out_dir)
    path = out_dir / f"{doc['name']}.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(language_pairs_markdown(spec, doc), encoding="utf-8")
    os.replace(tmp, path)
    plot_language_pairs(doc, out_dir / f"{doc['name']}.png", spec.get("plot_metrics"))
    return path


def write_language_pairs(document: Document, out_dir: Path | str) -> Path:
    """<name>.json (the Document), <name>.md and <name>.png; returns the JSON's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = write_study_document(out_dir / f"{document.config['name']}.json", document)
    render(document, out_dir)
    return path
