"""Benchmarks: a public data set run with one or more presets, reported per query group (LoCoMo's
categories) beside the figures other projects publish on it.

A benchmark is a TOML file (experiments/benchmark-locomo.toml):

    name = "locomo"
    output = "reports/locomo"                  # where `make locomo` writes (passed as --out)
    presets = ["openclaw-2026.08"]             # every run once per preset
    metrics = ["recall_any@5", "recall_all@5", "mrr@10", "ndcg@10"]
    hits = 0                                   # returned hits kept per query in results.json
    [[runs]]
    label = "turns"
    experiment = "experiments/locomo.toml"
    overrides = { dataset = { granularity = "turn" } }
    # presets = ["openclaw-2026.08"]           # a run's own presets (a diagnostic variant of one preset)
    [paired]                                   # paired differences, Holm over the table
    metrics = ["recall_any@10"]
    # pairs = [["qmd-turns", "openclaw-2026.08-turns"]]   # a minus b; default: per run label, each
    #                                                    # preset against the label's first
    [comparison]                               # the published figures beside ours
    columns = ["R@5", "MRR"]
    [[comparison.ours]]  label = "...", run = "turns", values = { "R@5" = "recall_any@5", "MRR" = "mrr@10" }
    [[comparison.published]]  label = "...", values = { "R@5" = 0.764 }, setup = "...", difference = "..."

Output: <output>/<preset>-<run label>/results.json per run (per-query rows; hits cut to `hits`, without
snippets; compact JSON, so the files stay small enough to commit), <output>/<name>.json (every run's configuration,
data set description, summary and timings: the report is redrawn from it with --redraw) and
<output>/<name>.md (harness.reporting.benchmark).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.config import load_experiment, load_toml
from harness.inputs.layout import project_path
from harness.studies.document import Document
from harness.studies.experiment import RunResult
from harness.studies.spec import validated
from harness.studies.spec.cells import StudyCell, run_cells
from harness.studies.spec.models import BenchmarkRun, BenchmarkStudy, run_slug
from harness.studies.announce import announce
from harness.evaluation.comparison import column_pairs, comparison_rows
from harness.studies.matrix import suite_values

HIT_FIELDS = ("rank", "chunk", "path", "start_line", "end_line", "score", "vector_score", "text_score", "docs")


def load_benchmark(path: Path | str) -> BenchmarkStudy:
    return validated("benchmark", load_toml(path, "benchmark spec"), path)


def benchmark_cells(spec: BenchmarkStudy, *, presets: list[str] | None = None,
                    only_runs: list[str] | None = None) -> list[StudyCell]:
    """Every preset x run, preset by preset, labelled by its results folder ('<preset>-<run label>'),
    labels (run label, preset).  A run's own `presets` list (a diagnostic variant of one preset) replaces
    the spec's for that run; `presets` given here replaces both, as --preset does for `harness embed`."""
    def presets_of(run: BenchmarkRun) -> list[str | None]:
        return list(presets or run.presets or spec.presets or [None])


    cells = []
    runs = [run for run in spec.runs if not only_runs or run.label in only_runs]
    announce(sum(len(presets_of(run)) for run in runs), "cells (presets x runs)", spec.name)
    for preset in dict.fromkeys(p for run in runs for p in presets_of(run)):
        for run in runs:
            if preset not in presets_of(run):
                continue
            config = load_experiment(project_path(run.experiment), preset=preset, **run.overrides)
            slug = run_slug(config.preset, run.label)
            config = config.with_overrides({"name": f"{spec.name}: {slug}"})
            cells.append(StudyCell(slug, config, (run.label, config.preset)))
    return cells


def run_benchmark(spec: BenchmarkStudy, *, presets: list[str] | None = None, progress: bool = True,
                  only_runs: list[str] | None = None) -> list[tuple[str, str | None, RunResult]]:
    """[(run label, preset, result)] for every cell of benchmark_cells; one embedder (and cache) serves
    them all, and each run states its own share of the embedder's counters."""
    cells = benchmark_cells(spec, presets=presets, only_runs=only_runs)
    results = run_cells(cells, progress=progress, embedders="one", count_embeddings=True)
    return [(*cell.labels, result) for cell, result in zip(cells, results)]


def latency_mean_ms(result: RunResult) -> float | None:
    """Mean time per query, query embedding included (what a caller of memory_search waits)."""
    frame = result.per_query
    if frame.empty:
        return None
    return float((frame["ms_query_embedding"] + frame["ms_retrieval"]).mean())


def paired_pairs(spec: BenchmarkStudy, slugs: list[tuple[str, str | None, str]]) -> list[tuple[str, str]]:
    """The (a, b) run slugs the spec's [paired] table compares: its `pairs`, else within each run label
    every preset against the label's first; `slugs` is [(label, preset, slug)] in run order."""
    if spec.paired is not None and spec.paired.pairs is not None:
        return [tuple(pair) for pair in spec.paired.pairs]
    pairs = []
    for label in dict.fromkeys(label for label, _, _ in slugs):
        same = [slug for run_label, _, slug in slugs if run_label == label]
        pairs += [(slug, same[0]) for slug in same[1:]]
    return pairs


def paired_differences(spec: BenchmarkStudy, results: list[tuple[str, str | None, RunResult]]
                       ) -> list[dict[str, Any]]:
    """Paired differences between runs on the queries both scored ([paired]: `metrics`, optional `pairs`
    of run slugs as "a minus b"): paired interval and sign-flip p at the data set's unit (the cluster of
    each query, e.g. its conversation), Holm over every row (all metrics and pairs) -- the family the
    report shows."""
    by_slug = {run_slug(preset, label): result for label, preset, result in results}
    pairs = [pair for pair in paired_pairs(spec, [(label, preset, run_slug(preset, label))
                                                  for label, preset, _ in results])
             if all(slug in by_slug for slug in pair)]  # --preset/--run may leave a pair's runs out
    metrics = list(spec.paired.metrics if spec.paired is not None else [])
    values = {slug: suite_values(result, metrics) for slug, result in by_slug.items()}
    clusters: dict[str, str] = {}
    for result in by_slug.values():
        clusters.update(result.clusters() or {})
    unit = next(iter(by_slug.values())).unit if by_slug else "query"
    family = []
    for metric in metrics:
        columns = {slug: v.get(metric, {}) for slug, v in values.items()}
        family += column_pairs(columns, pairs=pairs, clusters=clusters or None, unit=unit, tags={"metric": metric})
    return comparison_rows(family, family=" (this table)")


def benchmark_document(spec: dict[str, Any], results: list[tuple[str, str | None, RunResult]]) -> Document:
    """The benchmark's Document: each run's label, preset, results file, config, data set, summary, timings
    and mean latency, and (with [paired]) the paired differences between runs.  Its config is the spec."""
    runs = []
    for label, preset, result in results:
        slug = run_slug(preset, label)
        runs.append({"label": label, "preset": preset, "slug": slug, "results": f"{slug}/results.json",
                     "config": result.config, "dataset": result.dataset, "summary": result.summary,
                     "timings": result.timings, "latency_mean_ms": latency_mean_ms(result)})
    doc = {"name": spec.name, "description": spec.description,
           "environment": results[0][2].environment if results else {}, "runs": runs}
    if spec.paired:
        doc["paired"] = paired_differences(spec, results)
    return Document("benchmark", doc, spec)
