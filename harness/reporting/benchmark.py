"""A benchmark's documents (studies/benchmark.py runs it): every run's compact results.json, <name>.json and
the Markdown report, drawn from that JSON document alone.

The report is a list of sections, each a function (spec, doc) -> Markdown text ("" leaves it out):

    SECTIONS = (header, data_set, side_by_side, by_age, paired, per_group, comparison, latency, notes,
                environment)

so that later work adds a section (abstention AUROC and plots, the four presets side by side) by
appending one function, without touching the others.  Every metric cell goes through `metric_cell`,
which shows the 95% interval the summary block holds beside each mean ("<metric>_ci95": [low, high],
harness.evaluation.summary).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from harness.reporting.documents import rounded, write_document, write_study_document
from harness.evaluation.formatting import difference_text, interval_text, p_cell, units_cell
from harness.reporting.markdown import markdown_table, resampling_note
from harness.studies.benchmark import HIT_FIELDS, run_slug
from harness.studies.document import Document
from harness.studies.experiment import RunResult
from harness.reporting.notes import render_notes

METRICS = ["recall_any@5", "recall_all@5", "recall_any@10", "recall_all@10", "mrr@10", "ndcg@10"]
STAGES = ("query_embedding", "vector", "lexical", "fusion", "postprocess", "retrieval")
COUNTS = (("conversations", "conversations"), ("sessions", "sessions"), ("turns", "turns"),
          ("turns_with_image", "turns with an image caption"), ("documents", "documents"), ("passages", "passages"),
          ("questions", "questions"))


QUERY_SETS = (("suite", "suite"), ("paraphrase", "paraphrase"), ("negative", "negative (abstention)"))


def metric_cell(block: dict[str, Any], metric: str) -> str:
    value = block.get(metric)
    if value is None or value != value:
        return ""
    return interval_text(value, block.get(f"{metric}_ci95"))


def _metrics(spec: dict[str, Any], doc: dict[str, Any] | None = None) -> list[str]:
    """The spec's metrics; given the document, only those some run's suite computed (see missing_metrics)."""
    wanted = list(spec.get("metrics", METRICS))
    return wanted if doc is None else [m for m in wanted if m not in missing_metrics(spec, doc)]


def missing_metrics(spec: dict[str, Any], doc: dict[str, Any]) -> list[str]:
    """Metrics the spec asks for that no run computed (a name this harness does not compute, or a cut-off
    beyond the data set's): left out of the tables and named, not shown as empty columns."""
    return [m for m in spec.get("metrics", METRICS)
            if not any(run["summary"]["suite"].get(m) is not None for run in doc["runs"])]


def _group_names(run: dict[str, Any], spec: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (spec.get("group_labels") or run["dataset"].get("category_names") or {}).items()}


def _title(run: dict[str, Any]) -> str:
    return f"{run['preset'] or '(no preset)'} · {run['label']}"


def header(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    description = spec.get("description") or doc.get("description", "")  # the spec's text: --redraw takes edits
    return f"# {doc['name']}\n\n{description.strip()}\n"


def data_set(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    """What was read, once per distinct data set description (file, hash, counts, what was skipped)."""
    seen, parts = set(), ["## Data\n"]
    for run in doc["runs"]:
        d = run["dataset"]
        key = json.dumps(d, sort_keys=True, default=str)  # one line per distinct reading, not per preset
        if key in seen:
            continue
        seen.add(key)
        counts = ", ".join(f"{d[name]:,} {label}" for name, label in COUNTS if isinstance(d.get(name), int))
        summary = run["summary"]
        # the query counts a run scored (a data set may sample its questions), from the summary, not the loader
        queries = ", ".join(f"{block['queries']:,} {label}" for name, label in QUERY_SETS
                            if isinstance(block := summary.get(name), dict) and block.get("queries"))
        source = (f"`{d['path']}` (sha256 {str(d.get('sha256'))[:12]}…, check: {d.get('sha256_check')})"
                  if d.get("path") else f"`{d.get('dataset', '?')}` (the project's own data set)")
        granularity = f", granularity {d['granularity']}" if d.get("granularity") else ""
        read = "; ".join(x for x in (counts, queries and f"{queries} queries") if x)
        parts.append(f"- {_title(run)}: {source}{granularity}: {read or 'nothing counted'}.")
        parts += [f"  - {note}" for note in d.get("notes", [])]
    missing = missing_metrics(spec, doc)
    if missing:
        parts.append(f"\nAsked for by the spec but computed by no run, so not in the tables: {', '.join(missing)}.")
    return "\n".join(parts) + "\n" if len(parts) > 1 else ""


def group_table(run: dict[str, Any], spec: dict[str, Any], metrics: list[str] | None = None) -> pd.DataFrame:
    """One row per query group of the suite (LoCoMo: category 1-4) and one for all of it."""
    summary, names = run["summary"], _group_names(run, spec)
    metrics = _metrics(spec) if metrics is None else metrics
    rows = []
    for group, block in summary.get("by_category", {}).items():
        rows.append({"category": f"{group} {names.get(group, '')}".strip(), "queries": block.get("queries", 0),
                     **{m: metric_cell(block, m) for m in metrics}})
    suite = summary["suite"]
    rows.append({"category": "**all (suite)**", "queries": suite.get("queries", 0),
                 **{m: metric_cell(suite, m) for m in metrics}})
    return pd.DataFrame(rows)


def cluster_table(run: dict[str, Any], metrics: list[str]) -> tuple[pd.DataFrame, str]:
    """The suite per cluster (LoCoMo: per conversation) and a sentence on the spread of the first metric."""
    suite = run["summary"]["suite"]
    clusters = suite.get("by_cluster") or {}
    unit = (suite.get("resampling") or {}).get("unit", "cluster")
    if not clusters:
        return pd.DataFrame(), ""
    frame = pd.DataFrame([{unit: name, "queries": block["queries"],
                           **{m: _number(block.get(m)) for m in metrics}} for name, block in clusters.items()])
    first = next((m for m in metrics if all(m in b for b in clusters.values())), None)
    if first is None:
        return frame, ""
    values = {name: b[first] for name, b in clusters.items()}
    low, high = min(values, key=values.get), max(values, key=values.get)
    return frame, (f"{first} ranges from {values[low]:.3f} ({low}) to {values[high]:.3f} ({high}) across the "
                   f"{len(values)} {unit}s: one {unit}'s figure can sit far from the mean.")


def by_age(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    """The suite by the age of each question's newest evidence (days before the question), one row per
    run: what a temporal decay does to old memories."""
    runs = [r for r in doc["runs"] if r["summary"].get("by_age")]
    if not runs:
        return ""
    metric = next((m for m in ("recall_any@10", "recall_any@5", "recall@10") if m in _metrics(spec, doc)),
                  _metrics(spec, doc)[0])
    bands = list(dict.fromkeys(b for r in runs for b in r["summary"]["by_age"]))
    rows = [{"run": _title(r), **{band: metric_cell(r["summary"]["by_age"].get(band, {}), metric) for band in bands}}
            for r in runs]
    counts = {band: runs[0]["summary"]["by_age"].get(band, {}).get("queries", 0) for band in bands}
    return (f"## {metric} by the age of the evidence\n\nEach question's newest evidence turn, in days before the "
            "question is asked (the conversation's last session): what a temporal decay's half-life reads. "
            "Questions per band: " + ", ".join(f"{band} {n:,}" for band, n in counts.items()) + ".\n\n"
            + markdown_table(pd.DataFrame(rows)) + "\n")


def per_group(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    parts = []
    for run in doc["runs"]:
        neg = run["summary"].get("negative") or {"queries": 0}
        negatives = (f"Negative (adversarial) queries: {neg['queries']}, of which {neg.get('returned_anything', 0)} "
                     f"returned at least one result (highest top-1 score {_number(neg.get('max_top1_score'))}). "
                     if neg.get("queries") else "")
        parts += [f"## {_title(run)}\n", markdown_table(group_table(run, spec, _metrics(spec, doc))),
                  f"\n{negatives}Results: `{run['results']}`.\n"]
        clusters, spread = cluster_table(run, _metrics(spec, doc))
        if not clusters.empty:
            parts += [f"Per {clusters.columns[0]} (the unit intervals resample): {spread}\n", markdown_table(clusters), ""]
    return "\n".join(parts)


def side_by_side(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    """With more than one preset: per run label, one row per preset (the suite, with intervals) and how
    many negative queries got an answer."""
    presets = list(dict.fromkeys(run["preset"] for run in doc["runs"]))
    if len(presets) < 2:
        return ""
    parts = ["## Presets side by side\n", "The suite (all its queries) per preset; the per-run tables follow. "
             "`negatives answered`: negative (adversarial) queries that returned at least one result.\n"]
    for label in dict.fromkeys(run["label"] for run in doc["runs"]):
        rows = []
        for run in (r for r in doc["runs"] if r["label"] == label):
            suite, neg = run["summary"]["suite"], run["summary"].get("negative") or {}
            rows.append({"preset": run["preset"] or "(no preset)", "queries": suite.get("queries", 0),
                         **{m: metric_cell(suite, m) for m in _metrics(spec, doc)},
                         "negatives answered": f"{neg.get('returned_anything', 0)} / {neg.get('queries', 0)}"})
        frame = pd.DataFrame(rows)
        if (frame["negatives answered"] == "0 / 0").all():  # a data set without negative queries
            frame = frame.drop(columns="negatives answered")
        notes = dict.fromkeys(resampling_note(r["summary"]["suite"]) for r in doc["runs"] if r["label"] == label)
        parts += [f"### {label}\n", markdown_table(frame), "", *(f"{n}.\n" for n in notes if n)]
    return "\n".join(parts) + "\n"


def paired(spec: dict[str, Any], doc: Document) -> str:
    """The [paired] differences (studies/benchmark.paired_differences): a minus b per metric, with the
    paired interval and the Holm-corrected p over the whole table."""
    rows = doc.comparisons("paired")
    if not rows:
        return ""
    titles = {run["slug"]: _title(run) for run in doc["runs"]}
    frame = pd.DataFrame([{"metric": r.tag("metric"), "a": titles.get(r.a, r.a), "b": titles.get(r.b, r.b),
                           "queries": r.queries, "resampled": units_cell(r), "mean a": f"{r.mean_a:.3f}",
                           "mean b": f"{r.mean_b:.3f}", "a - b [95% CI]": difference_text(r.difference),
                           "p": p_cell(r), "p (Holm)": p_cell(r, "p_holm")} for r in rows])
    methods = sorted({r.difference.get("method", "") for r in rows if r.difference.get("method")})
    return ("## Paired differences\n\nOn the suite queries both runs scored, resampled at the data set's unit "
            "(whole clusters of queries where it has them: intervals and sign flips move a conversation's "
            "questions together); p (Holm) corrects over every row of this table; a p-value's floor is the "
            "smallest its test can give with these units. Intervals: " + "; ".join(methods) + ".\n\n"
            + markdown_table(frame) + "\n")


def comparison(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    """Published figures beside ours, each with its setup and a sentence on how it differs from ours.
    An `ours` row names a run label and, optionally, a preset; without one it gives a row per preset."""
    comp = spec.get("comparison")
    if not comp:
        return ""
    columns = list(comp["columns"])
    several = len({run["preset"] for run in doc["runs"]}) > 1
    rows = []
    for ours in comp.get("ours", []):
        for run in doc["runs"]:
            if run["label"] != ours["run"] or ours.get("preset", run["preset"]) != run["preset"]:
                continue
            row = {"": f"{run['preset']}: {ours['label']}" if several else ours["label"]}
            for col in columns:
                key = ours.get("values", {}).get(col)
                row[col] = _number(run["latency_mean_ms"], 0) if key == "latency_mean_ms" else \
                    metric_cell(run["summary"]["suite"], key) if key else ""
            rows.append(row)
    for pub in comp.get("published", []):
        rows.append({"": f"[{pub['label']}]({pub['url']})" if pub.get("url") else pub["label"],
                     **{col: _number(pub.get("values", {}).get(col)) for col in columns}})
    parts = [f"## {comp.get('title', 'Published figures beside ours')}\n", comp.get("intro", "").strip() + "\n",
             markdown_table(pd.DataFrame(rows)), ""]
    for pub in comp.get("published", []):
        parts.append(f"- **{pub['label']}**: {pub.get('setup', '').strip()} {pub.get('difference', '').strip()}")
    return "\n".join(parts) + "\n"


def latency(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    rows = []
    for run in doc["runs"]:
        lat, index, t = run["summary"]["latency_ms"], run["summary"]["index"], run["timings"]
        cache = t.get("embedding_cache", {})
        rows.append({
            "run": _title(run),
            **{f"{stage} p50/p95 ms": f"{lat[stage]['p50']:.2f} / {lat[stage]['p95']:.2f}" for stage in STAGES},
            "mean per query ms": _number(run["latency_mean_ms"], 1),
            "index: chunking / embedding / inserts s": " / ".join(
                f"{index['timings_ms'].get(k, 0) / 1e3:.1f}" for k in ("chunking", "embedding", "inserts")),
            "chunks": index["chunks"], "total s": f"{t.get('total_s', 0):.1f}",
            "embeddings computed / cached": f"{cache.get('computed', 0)} / {cache.get('hits', 0)}",
        })
    frame = pd.DataFrame(rows).set_index("run").T.reset_index().rename(columns={"index": "stage"})
    return ("## Latency per stage\n\nPer query: query embedding, vector and lexical search, fusion, "
            "post-processing; `retrieval` is everything after the query embedding. The index figures are "
            "summed over the data set's workspaces (LoCoMo has one per conversation).\n\n" + markdown_table(frame))


def notes(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    return f"## Reading the numbers\n\n{render_notes(spec['notes'], doc).strip()}\n" if spec.get("notes") else ""


def environment(spec: dict[str, Any], doc: dict[str, Any]) -> str:
    env = doc.get("environment") or {}
    if not env:
        return ""
    return (f"Environment: SQLite {env.get('sqlite')}, sqlite-vec {env.get('sqlite_vec')}, model "
            f"{env.get('embedding_model')}, {env.get('cpu_count')} cores, Python {env.get('python')}.\n")


SECTIONS: tuple[Callable[[dict[str, Any], dict[str, Any]], str], ...] = (
    header, data_set, side_by_side, by_age, paired, per_group, comparison, latency, notes, environment)


def _number(value: Any, digits: int = 3) -> str:
    if value is None or value != value:
        return ""
    if isinstance(value, int) or (isinstance(value, float) and digits == 0):
        return f"{value:,.0f}"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def benchmark_markdown(spec: dict[str, Any], doc: Mapping[str, Any]) -> str:
    """The report's text: every section of SECTIONS in turn (`doc`: the Document, or its JSON read back)."""
    doc = doc if isinstance(doc, Document) else Document("benchmark", doc, spec)
    return "\n".join(text for section in SECTIONS if (text := section(spec, doc)))


def render(document: Document, out_dir: Path | str) -> Path:
    """<name>.md from the benchmark's Document alone (its config: the spec as loaded); returns its path."""
    path = Path(out_dir) / f"{document['name']}.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(benchmark_markdown(document.config, document), encoding="utf-8")
    os.replace(tmp, path)
    return path


def compact_result(result: RunResult, keep_hits: int) -> dict[str, Any]:
    """results.json of a benchmark run, small enough to commit: the per-query rows in full (each has
    its top-1 chunk, documents and score) with numbers to 6 significant digits, and the first
    `keep_hits` hits of each query without snippets (`harness render` writes the memory they point to), and
    the chunk run only."""
    doc = result.to_dict()
    doc["hits"] = {qid: [{k: h[k] for k in HIT_FIELDS} for h in hits[:keep_hits]]
                   for qid, hits in result.hits.items()}
    doc["hits_kept"] = keep_hits
    doc["queries"] = rounded(doc["queries"])
    # the document run is MaxP of the chunk run over chunk_documents, which JudgedRuns.from_dict rebuilds;
    # with ~9 turns a chunk it was most of a LoCoMo results.json
    doc["runs"] = {"chunk": doc["runs"]["chunk"]}
    return doc


def write_benchmark(document: Document, results: list[tuple[str, str | None, RunResult]],
                    out_dir: Path | str) -> Document:
    """Every run's compact results.json, the benchmark's Document (<name>.json, harness.studies.benchmark.
    benchmark_document computes it) and its Markdown report; returns the document."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    keep_hits = int(document.config.get("hits", 0))
    for label, preset, result in results:
        write_document(out_dir / run_slug(preset, label) / "results.json", "benchmark-run",
                       compact_result(result, keep_hits))
    write_study_document(out_dir / f"{document['name']}.json", document)
    render(document, out_dir)
    return document
