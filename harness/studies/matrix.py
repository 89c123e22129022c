"""Stage matrices: one stage varied over several runs (e.g. tokenizer x round, chunker x data set).

A matrix is a TOML file (experiments/tokenizers.toml, experiments/chunkers.toml):

    name = "tokenizers"
    output = "reports/tokenizers"    # where `make tokenizers` writes (the Makefile passes it as --out)
    per_query_columns = ["vector_rank"]   # per-query columns kept in <name>.json, not tested (optional)
    [[values]]                       # the implementations compared; the first is the reference
    label = "unicode61"
    tokenizer = { name = "unicode61" }
    [[runs]]                         # where they are compared
    label = "king78 r3"
    experiment = "experiments/round3.toml"
    overrides = { tokenizer = { join = "or" } }   # applied after the value
    vary = true                      # false: run once with the experiment's own stages

Every cell is a full `run_experiment`; cells with the same [embedder] table share one embedder (and its
cache), so only the first cell of a data set pays for embedding, and a cell whose [embedder] table
differs gets its own model.  The report compares every value with the first (the reference) on the
same queries: paired sign-flip tests and bootstrap intervals, Holm-corrected over each table.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from harness.config import Experiment, load_experiment, load_toml, merge
from harness.errors import ConfigError
from harness.inputs.layout import project_path
from harness.studies.document import Document
from harness.studies.experiment import RunResult
from harness.studies.spec import validated
from harness.studies.spec.cells import StudyCell, run_cells
from harness.studies.spec.models import MatrixRun, MatrixStudy, MatrixValue
from harness.inputs.file_relative import spec_paths
from harness.studies.announce import announce
from harness.evaluation.comparison import column_pairs, comparison_rows
from harness.evaluation.confounds import allowed_confounds, config_confounds

if TYPE_CHECKING:
    from harness.stages.embedders import EmbeddingCache


def load_matrix(path: Path | str) -> MatrixStudy:
    """A matrix file, typed; `values_from = "experiments/tokenizers.toml"` takes the values of another
    matrix file, so the same tokenizers or chunkers are compared on another data set without a copy."""
    doc = spec_paths(load_toml(path, "matrix spec"), path)  # the file as parsed, before the model
    if "values_from" in doc and "values" not in doc:
        source = project_path(doc["values_from"])
        if not Path(source).is_file():
            raise ConfigError(f"{path}: values_from: no file {doc['values_from']}")
        doc["values"] = load_toml(source).get("values") or []
        if not doc["values"]:
            raise ConfigError(f"{path}: values_from: {doc['values_from']} has no [[values]]")
    return validated("matrix", doc, path)


def matrix_cells(spec: MatrixStudy, *, preset: str | None = None,
                 only_runs: list[str] | None = None) -> list[StudyCell]:
    """Every cell of a matrix, in order: labelled '<run> / <value>', labels (run label, value label).  Past the
    bound of harness.studies.announce, the count (and an estimate) comes first, and --yes is needed."""
    def cell(run: MatrixRun, value: MatrixValue) -> StudyCell:
        overrides = merge(value.tables(), run.overrides)
        # a value may be a whole preset (experiments/presets.toml); it wins over --preset, which would
        # otherwise make every cell the same
        cell_preset = overrides.pop("preset", None) or preset
        config = load_experiment(project_path(run.experiment), preset=cell_preset, **overrides)
        config = config.with_overrides({"name": f"{spec.name}: {run.label} / {value.label}"})
        return StudyCell(f"{run.label} / {value.label}", config, (run.label, value.label))

    def values_of(run: MatrixRun) -> list[MatrixValue]:
        return list(spec.values or []) if run.vary else [MatrixValue(label=run.value_label)]

    chosen = [run for run in spec.runs if not only_runs or run.label in only_runs]
    count = sum(len(values_of(run)) for run in chosen)
    if count:
        first = next(run for run in chosen if values_of(run))
        announce(count, "cells (runs x values)", spec.name,
                 sample=lambda: cell(first, values_of(first)[0]))
    return [cell(run, value) for run in chosen for value in values_of(run)]


def matrix_configs(spec: MatrixStudy, *, preset: str | None = None,
                   only_runs: list[str] | None = None) -> list[tuple[str, str, Experiment]]:
    """[(run label, value label, configuration)] of every cell of a matrix, in order."""
    return [(*cell.labels, cell.config) for cell in matrix_cells(spec, preset=preset, only_runs=only_runs)]


def run_matrix(spec: MatrixStudy, *, preset: str | None = None, progress: bool = True,
               only_runs: list[str] | None = None, executor: Any = None,
               cache: EmbeddingCache | None = None) -> list[tuple[str, str, RunResult]]:
    """Every (run, value) cell: [(run label, value label, result)].  In this process a cell reuses an
    embedder only when its [embedder] table is identical to an earlier cell's; `executor`: the cells run
    as its tasks, the vectors embedded first into `cache` (harness.studies.spec.cells.run_cells)."""
    cells = matrix_cells(spec, preset=preset, only_runs=only_runs)
    results = run_cells(cells, executor=executor, progress=progress, embedders="same-table", cache=cache)
    return [(*cell.labels, result) for cell, result in zip(cells, results)]


def cell_row(run_label: str, value_label: str, result: RunResult) -> dict[str, Any]:
    suite = result.summary["suite"]
    index_ms = result.summary["index"]["timings_ms"]
    row = {
        "run": run_label, "value": value_label,
        "queries": suite.get("queries", 0), "passed": suite.get("passed", 0),
        "pass_rate": suite.get("pass_rate"), "pass_rate_ci95": suite.get("pass_rate_ci95"),
        **{k: v for k, v in suite.items() if "@" in k or k.startswith("keyword_zero")},  # evaluation/knowledge_update.py
        "context_tokens": suite.get("context_tokens"),  # what the results cost in the agent's context
        "text_score_nonzero_share": suite.get("text_score_nonzero", 0) / max(1, suite.get("queries", 0)),
        "chunks": result.summary["index"]["chunks"],
        "index_ms_without_embedding": index_ms["chunking"] + index_ms["inserts"],
        "embedding_ms": index_ms["embedding"],
        "lexical_p50_ms": result.summary["latency_ms"]["lexical"]["p50"],
        "retrieval_p50_ms": result.summary["latency_ms"]["retrieval"]["p50"],
        "passed_ids": sorted(result.per_query.loc[result.per_query["in_suite"] & result.per_query["passed"],
                                                  "query_id"].tolist(), key=_qid_key),
        "negative_returned": result.summary["negative"]["returned_anything"],
        "top1_pure": suite.get("top1_pure", 0),
    }
    stats = result.summary["index"].get("chunk_stats") or {}
    if stats:
        row["mixed_chunk_share"] = stats["mixed"]["share"]
        row["tokens_beyond_input_limit_share"] = (stats.get("input_limit") or {}).get("share_tokens_beyond")
        row["chunk_tokens_p50"] = (stats.get("real_tokens") or stats["est_tokens"])["p50"]
    return row


def _qid_key(qid: str) -> tuple[str, int]:
    head = qid.rstrip("0123456789")
    tail = qid[len(head):]
    return head, int(tail) if tail else 0


def _id_list(ids: set[str], most: int = 12) -> str:
    """Query ids when a reader can take them in, else how many."""
    if not ids:
        return "—"
    return " ".join(sorted(ids, key=_qid_key)) if len(ids) <= most else f"{len(ids)} queries"


def rescued(frame: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Per run and value: suite queries passed that the reference value failed, and the reverse."""
    rows = []
    for run, group in frame.groupby("run", sort=False):
        ref = group[group["value"] == reference]
        if ref.empty:
            continue
        ref_ids = set(ref.iloc[0]["passed_ids"])
        for _, row in group.iterrows():
            ids = set(row["passed_ids"])
            rows.append({"run": run, "value": row["value"],
                         "rescued": _id_list(ids - ref_ids), "lost": _id_list(ref_ids - ids)})
    return pd.DataFrame(rows)


def compared_metrics(spec: MatrixStudy, metrics: list[str]) -> list[str]:
    """The per-query figures the report tests between values: the spec's `compare` list, else passes and
    every Recall/MRR/nDCG of the tables (records and chunks)."""
    if spec.compare is not None:
        return list(spec.compare)
    return [m for m in metrics if m == "passed" or PER_QUERY_METRIC.match(m)]


PER_QUERY_METRIC = re.compile(r"^(recall|recall_any|recall_all|pure_recall|chunk_recall|chunk_mrr|chunk_ndcg|mrr|ndcg)@\d+$")


def suite_values(result: RunResult, metrics: list[str]) -> dict[str, dict[str, float]]:
    """{metric: {query id: value}} over a cell's suite queries (passes as 0/1), for paired tests."""
    frame = result.per_query[result.per_query["in_suite"]]
    out = {}
    for m in metrics:
        if m in frame.columns:
            values = pd.to_numeric(frame[m].astype(float) if frame[m].dtype == bool else frame[m], errors="coerce")
            out[m] = {qid: float(v) for qid, v in zip(frame["query_id"], values) if v == v}
    return out


def value_comparisons(spec: MatrixStudy, cells: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Every value against the reference value (the first) within each run, on the queries both have,
    for one metric: paired sign-flip test and bootstrap interval, Holm over the table (every run)."""
    reference = spec.reference
    pairs = []
    for run in dict.fromkeys(c["run"] for c in cells):
        columns = {c["value"]: c.get("per_query", {}).get(metric, {}) for c in cells if c["run"] == run}
        if reference not in columns or len(columns) < 2 or not columns[reference]:
            continue  # the metric is not computed on this run (e.g. recall@10 where the cut-offs stop at 6)
        first = next(c for c in cells if c["run"] == run)
        pairs += column_pairs(columns, baseline=reference, clusters=first.get("clusters"),
                              unit=first.get("unit", "query"), tags={"run": run, "metric": metric})
    return comparison_rows(pairs, family=" (this table)")


def matrix_confounds(spec: MatrixStudy, cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every value whose cell differs from the reference value's cell of the same run in embedder, result
    count, candidate pool or corpus (harness.evaluation.confounds) that the spec does not declare the point
    (`intended_confounds`): [{run, value, confounds: {name: "reference vs value"}}], which the report flags."""
    intended = allowed_confounds(spec.intended_confounds, option="intended_confounds")
    reference = spec.reference
    out = []
    for run in dict.fromkeys(c["run"] for c in cells):
        ref = next((c for c in cells if c["run"] == run and c["value"] == reference), None)
        if ref is None:
            continue
        for cell in cells:
            if cell["run"] != run or cell["value"] == reference:
                continue
            found = {k: v for k, v in config_confounds(ref["config"], cell["config"]).items() if k not in intended}
            if found:
                out.append({"run": run, "value": cell["value"], "confounds": found})
    return out



def matrix_document(spec: dict[str, Any], cells: list[tuple[str, str, RunResult]], metrics: list[str]) -> Document:
    """The matrix's Document: every cell (run, value, config, summary, table row, per-query values of the
    compared metrics and `per_query_columns`), the paired comparisons against the reference value per
    compared metric (Holm over each metric's table) and the confounded arms.  Its config is the spec with
    the metrics its tables show."""
    first = cells[0][2]
    compared = compared_metrics(spec, metrics)
    # `per_query_columns`: per-query diagnostics kept in the JSON for later studies, not tested between values
    kept = compared + [c for c in spec.per_query_columns if c not in compared]
    doc = {"name": spec.name, "description": spec.description, "environment": first.environment,
           "cells": [{"run": r, "value": v, "config": res.config, "summary": res.summary,
                      "row": cell_row(r, v, res), "per_query": suite_values(res, kept),
                      "clusters": res.clusters(), "unit": res.unit} for r, v, res in cells]}
    doc["comparisons"] = {m: value_comparisons(spec, doc["cells"], m) for m in compared}
    doc["confounds"] = matrix_confounds(spec, doc["cells"])  # arms that differ in more than the value says
    return Document("matrix", doc, {**spec, "metrics": metrics})


def redrawn_matrix_document(spec: dict[str, Any], body: dict[str, Any], metrics: list[str]) -> Document:
    """The Document an earlier run wrote, for a redraw: its confounds found again from the spec as it is
    now (`intended_confounds` may have been edited since)."""
    return Document("matrix", body, {**spec, "metrics": metrics}).with_body(
        confounds=matrix_confounds(spec, body["cells"]))
