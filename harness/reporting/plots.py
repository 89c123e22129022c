"""The charts of the reports, drawn with matplotlib: the per-query score chart of a run's HTML page and
the four-round ablation chart (ablation.png beside ablation.md, and embedded in the HTML pages).

Chart labels use an installed CJK-capable font when one is found; no font is ever downloaded."""
from __future__ import annotations

import base64
import functools
import io
import math
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterable

from harness.evaluation.formatting import missing

if TYPE_CHECKING:
    from harness.studies.experiment import RunResult

# Tried first, in order; any other installed font that covers the text is accepted after these.
PREFERRED_CJK_FONTS = (
    "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN", "WenQuanYi Micro Hei",
    "WenQuanYi Zen Hei", "Droid Sans Fallback", "AR PL UMing CN", "AR PL UKai CN", "Microsoft YaHei",
    "SimHei", "PingFang SC", "Hiragino Sans GB", "Heiti SC", "Noto Sans CJK JP", "Noto Serif CJK SC",
)


# --- fonts ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _charmap(path: str) -> frozenset[int]:
    from matplotlib.ft2font import FT2Font

    try:
        return frozenset(FT2Font(path).get_charmap())
    except (OSError, RuntimeError, ValueError):  # unreadable font files are simply not candidates
        return frozenset()


def chart_font(text: str) -> str | None:
    """Family name of an installed font matplotlib can draw every character of `text` with, or None.

    Only non-ASCII characters are checked: matplotlib's bundled DejaVu draws ASCII anyway.  Fonts
    installed after matplotlib built its font cache are found too (the cache is not refreshed by apt)."""
    needed = frozenset(ord(c) for c in text if ord(c) > 127 and not c.isspace())
    if not needed:
        return "DejaVu Sans"
    return _font_covering(needed)


@functools.lru_cache(maxsize=64)
def _font_covering(needed: frozenset[int]) -> str | None:
    from matplotlib import font_manager

    manager = font_manager.fontManager
    name = _best_covering(manager.ttflist, needed)
    if name is None:
        known = {f.fname for f in manager.ttflist}
        new = [p for p in sorted(font_manager.findSystemFonts()) if p not in known and needed <= _charmap(p)]
        for path in new:
            manager.addfont(path)  # adds every face of a .ttc collection
        name = _best_covering(manager.ttflist, needed) if new else None
    return name


def _best_covering(entries: Iterable[Any], needed: frozenset[int]) -> str | None:
    ordered = sorted((f for f in entries if not _placeholder_font(f.name)),
                     key=lambda f: (PREFERRED_CJK_FONTS.index(f.name) if f.name in PREFERRED_CJK_FONTS
                                    else len(PREFERRED_CJK_FONTS), f.name, f.fname))
    # FT2Font reads a collection's first face; the faces of one CJK collection share their coverage
    return next((f.name for f in ordered if needed <= _charmap(f.fname)), None)


def _placeholder_font(name: str) -> bool:
    """Last Resort (bundled with matplotlib >= 3.10) maps every code point to a placeholder box."""
    return name.lower().startswith("last resort")


def png_data_uri(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


# --- the run page's chart -------------------------------------------------------------------------------


def query_scores_chart(queries: list[dict[str, Any]], hits: dict[str, list[dict[str, Any]]],
                       min_score: float | None) -> tuple[str, str | None]:
    """Dot plot, one line per query: every returned chunk's score (grey), the top-1 (green when passed,
    red when failed, amber for a negative query that returned anything) and the best relevant chunk
    (hollow diamond).  Returns (data URI, note about fonts or None)."""
    import matplotlib
    from matplotlib.figure import Figure

    labels_full = [f"{q['query_id']} {q.get('text', '')}" for q in queries]
    font = chart_font("".join(labels_full))
    labels = labels_full if font else [str(q["query_id"]) for q in queries]
    note = None if font else ("No installed font can draw the query texts, so the chart labels queries by id "
                              "(install e.g. Debian's fonts-noto-cjk for Chinese labels).")
    rc = {"font.family": "sans-serif", "font.sans-serif": [font or "DejaVu Sans", "DejaVu Sans"]}
    with matplotlib.rc_context(rc):
        fig = Figure(figsize=(11, 1.2 + 0.32 * max(len(queries), 1)), layout="constrained")
        ax = fig.subplots()
        ys = list(range(len(queries)))[::-1]  # first query at the top
        for y, q in zip(ys, queries):
            scores = [h["score"] for h in hits.get(q["query_id"], []) if not missing(h.get("score"))]
            if scores:
                ax.plot([min(scores), max(scores)], [y, y], color="#d5d9e0", linewidth=1, zorder=1)
                ax.scatter(scores[1:], [y] * (len(scores) - 1), s=14, color="#9aa3b2", zorder=2)
                ax.scatter([scores[0]], [y], s=46, zorder=3, color=_top1_colour(q))
            if not missing(q.get("rank")) and q["rank"] != 1 and not missing(q.get("score")):
                ax.scatter([q["score"]], [y], s=70, marker="D", facecolors="none", edgecolors="#1f5fbf",
                           linewidths=1.5, zorder=4)
        if min_score is not None:
            ax.axvline(min_score, color="#555", linestyle=":", linewidth=1)
        ax.set_yticks(ys, labels)
        ax.set_ylim(-0.7, len(queries) - 0.3)
        ax.set_xlabel("hybrid score")
        ax.grid(axis="x", alpha=0.3)
        ax.set_title("Scores of the returned chunks per query")
        from matplotlib.lines import Line2D

        legend = [
            Line2D([], [], marker="o", linestyle="", color="#2e9e4f", label="top-1, passed"),
            Line2D([], [], marker="o", linestyle="", color="#d0352b", label="top-1, failed"),
            Line2D([], [], marker="o", linestyle="", color="#e09a1a", label="top-1 of a negative query"),
            Line2D([], [], marker="o", linestyle="", color="#9aa3b2", label="other returned chunks"),
            Line2D([], [], marker="D", linestyle="", markerfacecolor="none", markeredgecolor="#1f5fbf",
                   label="best relevant chunk (when not top-1)"),
        ]
        if min_score is not None:
            legend.append(Line2D([], [], color="#555", linestyle=":", label=f"minScore {min_score:g}"))
        fig.legend(handles=legend, loc="outside lower center", ncol=3, fontsize=8, frameon=False)
        return png_data_uri(fig), note


def _top1_colour(q: dict[str, Any]) -> str:
    if q.get("kind") == "negative" or not q.get("relevant"):
        return "#e09a1a"
    return "#2e9e4f" if q.get("passed") else "#d0352b"


# --- the ablation chart ---------------------------------------------------------------------------------


def plot_ablation(results: dict[int, RunResult], seed: dict[tuple[str, int], dict[str, str]],
                  path: Path | IO[bytes]) -> None:
    """Per-query score of the best relevant hit by round, ours beside the seed, and per round the suite's
    pass rate and MRR (records) with their 95% intervals as error bars, the seed's pass rate beside them
    (`results` need .per_query, .environment and .summary)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rounds = list(results)
    first = next(iter(results.values())).per_query
    suite_ids = first[first["kind"] == "suite"]["query_id"].tolist()
    fig, axes = plt.subplots(1, 3, figsize=(18, 5), gridspec_kw={"width_ratios": [1, 1, 0.8]})
    axes[1].sharey(axes[0])
    cmap = plt.get_cmap("tab20")
    for i, qid in enumerate(suite_ids):
        ours, theirs = [], []
        for r in rounds:
            q = results[r].per_query.set_index("query_id").loc[qid]
            ours.append(q["score"] if q["in_suite"] and q["passed"] else float("nan"))
            s = seed.get((qid, r))
            theirs.append(float(s["seed_score"]) if s and s["seed_status"] == "pass" else float("nan"))
        axes[0].plot(rounds, ours, marker="o", color=cmap(i), label=qid)
        axes[1].plot(rounds, theirs, marker="s", linestyle="--", color=cmap(i), label=qid)
    env = next(iter(results.values())).environment or {}
    model = str(env.get("embedding_model") or "embedding")
    model = model.split("/")[-1].split("@")[0]  # short: the model name without its version or endpoint
    for ax, title in zip(axes[:2], (f"ours ({model}, passed queries)", "seed (ZAI embedding-3)")):
        ax.set_xticks(rounds)
        ax.set_xlabel("round")
        ax.set_title(title)
        ax.axhline(0.35, color="grey", linewidth=0.8, linestyle=":")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("hybrid score of the best relevant hit")
    axes[1].legend(ncol=1, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: no point hidden
    _per_round_panel(axes[2], results, seed, rounds)
    fig.suptitle("King78 four-round ablation: per-query score by round (gaps = failed or not in suite); "
                 "suite figures with 95% intervals")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _per_round_panel(ax: Any, results: dict[int, Any], seed: dict[tuple[str, int], dict[str, str]],
                     rounds: list[int]) -> None:
    """Pass rate and MRR (records) per round with their bootstrap intervals, the seed's pass rate beside."""
    summaries = [getattr(results[r], "summary", None) or {} for r in rounds]
    suites = [s.get("suite", {}) for s in summaries]
    k = next((key for key in suites[0] if key.startswith("mrr@") and not key.endswith("_ci95")), None)
    for offset, (name, label, colour) in zip((-0.12, 0.12), (("pass_rate", "pass rate", "#2e9e4f"),
                                                            (k, f"MRR{k[3:]} (records)" if k else "", "#1f5fbf"))):
        if name is None:
            continue
        values = [s.get(name, float("nan")) for s in suites]
        intervals = [s.get(f"{name}_ci95") or [v, v] for s, v in zip(suites, values)]
        below = [max(0.0, v - lo) for v, (lo, _) in zip(values, intervals)]
        above = [max(0.0, hi - v) for v, (_, hi) in zip(values, intervals)]
        ax.errorbar([r + offset for r in rounds], values, yerr=[below, above], fmt="o", capsize=4, color=colour,
                    label=f"ours: {label} [95% CI]")
    seed_rates = []
    for r in rounds:
        rows = [row for (_, rr), row in seed.items() if rr == r and row["seed_status"] != "not_in_suite"]
        seed_rates.append(sum(row["seed_status"] in ("pass", "pass_no_figure") for row in rows) / len(rows)
                          if rows else float("nan"))
    if any(not math.isnan(v) for v in seed_rates):
        ax.scatter(rounds, seed_rates, marker="s", facecolors="none", edgecolors="#555", s=60,
                   label="seed: pass rate", zorder=3)
    ax.set_xticks(rounds)
    ax.set_xlabel("round")
    ax.set_ylim(-0.05, 1.08)
    ax.set_title("suite per round")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")


def ablation_chart(runs: dict[int, Any], seed: dict[tuple[str, int], dict[str, str]]) -> str:
    """plot_ablation's chart as a PNG data URI, for the HTML pages."""
    buf = io.BytesIO()
    plot_ablation(runs, seed, buf)  # the same chart as ablation.png
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")

