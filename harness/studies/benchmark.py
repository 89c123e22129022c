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

import json
import os
import re
from pathlib import Path
from typing import Any

from harness.config import load_experiment, load_toml
from harness.errors import ConfigError
from harness.inputs.layout import project_path
from harness.pipeline import build_stages
from harness.studies.experiment import RunResult, _json_default, run_experiment

HIT_FIELDS = ("rank", "chunk", "path", "start_line", "end_line", "score", "vector_score", "text_score", "docs")


def load_benchmark(path: Path | str) -> dict[str, Any]:
    spec = load_toml(path, "benchmark spec")
    for key in ("name", "runs"):
        if key not in spec:
            raise ConfigError(f"{path}: a benchmark needs '{key}'")
    labels = []
    for i, run in enumerate(spec["runs"]):
        if "label" not in run or "experiment" not in run:
            raise ConfigError(f"{path}: runs[{i}] needs a label and an experiment")
        labels.append(run["label"])
        if "presets" in run and not (isinstance(run["presets"], list) and run["presets"]
                                     and all(isinstance(p, str) for p in run["presets"])):
            raise ConfigError(f"{path}: runs[{i}].presets must be a non-empty list of preset names")
    for i, ours in enumerate(spec.get("comparison", {}).get("ours", [])):
        if ours.get("run") not in labels:
            raise ConfigError(f"{path}: comparison.ours[{i}].run must be one of the run labels {labels}")
    paired = spec.get("paired")
    if paired is not None:
        if not isinstance(paired, dict) or not paired.get("metrics"):
            raise ConfigError(f"{path}: [paired] needs metrics, e.g. metrics = [\"ndcg@10\"]")
        names = [run_slug(p, run["label"]) for run in spec["runs"]
                 for p in run.get("presets") or spec.get("presets") or [None]]
        for i, pair in enumerate(paired.get("pairs", [])):
            if not (isinstance(pair, list) and len(pair) == 2 and all(x in names for x in pair)):
                raise ConfigError(f"{path}: paired.pairs[{i}] must be two run names [a, b] (a minus b), each "
                                  f"'<preset>-<run label>' as the results folders are named: {', '.join(names)}")
    spec["source"] = str(path)
    return spec


def run_slug(preset: str | None, label: str) -> str:
    text = f"{preset}-{label}" if preset else label
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def run_benchmark(spec: dict[str, Any], *, presets: list[str] | None = None, progress: bool = True,
                  only_runs: list[str] | None = None) -> list[tuple[str, str | None, RunResult]]:
    """[(run label, preset, result)] for every preset x run, preset by preset; one embedder (and cache)
    serves them all.  A run's own `presets` list (a diagnostic variant of one preset) replaces the spec's
    for that run; `presets` given here replaces both, as --preset does for `harness embed`."""
    def presets_of(run: dict[str, Any]) -> list[str | None]:
        return list(presets or run.get("presets") or spec.get("presets") or [None])

    out = []
    embedder = None
    runs = [run for run in spec["runs"] if not only_runs or run["label"] in only_runs]
    for preset in dict.fromkeys(p for run in runs for p in presets_of(run)):
        for run in runs:
            if preset not in presets_of(run):
                continue
            config = load_experiment(project_path(run["experiment"]), preset=preset, **run.get("overrides", {}))
            config = config.with_overrides({"name": f"{spec['name']}: {run_slug(config.preset, run['label'])}"})
            stages = build_stages(config, embedder=embedder, progress=progress)
            embedder = stages.embedder
            before = dict(embedder.stats)
            result = run_experiment(config, stages=stages)
            # the embedder is shared: its counters run on, so each run states its own share
            result.timings["embedding_cache"] = {k: v - before.get(k, 0) for k, v in embedder.stats.items()}
            out.append((run["label"], config.preset, result))
    return out


def latency_mean_ms(result: RunResult) -> float | None:
    """Mean time per query, query embedding included (what a caller of memory_search waits)."""
    frame = result.per_query
    if frame.empty:
        return None
    return float((frame["ms_query_embedding"] + frame["ms_retrieval"]).mean())


def compact_result(result: RunResult, keep_hits: int) -> dict[str, Any]:
    """results.json of a benchmark run, small enough to commit: the per-query rows in full (each has
    its top-1 chunk, documents and score) with numbers to 6 significant digits, and the first
    `keep_hits` hits of each query without snippets (`harness render` writes the memory they point to), and
    the chunk run only."""
    doc = result.to_dict()
    doc["hits"] = {qid: [{k: h[k] for k in HIT_FIELDS} for h in hits[:keep_hits]]
                   for qid, hits in result.hits.items()}
    doc["hits_kept"] = keep_hits
    doc["queries"] = _rounded(doc["queries"])
    # the document run is MaxP of the chunk run over chunk_documents, which JudgedRuns.from_dict rebuilds;
    # with ~9 turns a chunk it was most of a LoCoMo results.json
    doc["runs"] = {"chunk": doc["runs"]["chunk"]}
    return doc


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def write_benchmark(spec: dict[str, Any], results: list[tuple[str, str | None, RunResult]],
                    out_dir: Path | str) -> dict[str, Any]:
    """Every run's results.json, the benchmark document and its Markdown report; returns the document."""
    from harness.reporting.benchmark import write_benchmark_report

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = []
    for label, preset, result in results:
        slug = run_slug(preset, label)
        _write_json(out_dir / slug / "results.json", compact_result(result, int(spec.get("hits", 0))), indent=None)
        runs.append({"label": label, "preset": preset, "slug": slug, "results": f"{slug}/results.json",
                     "config": result.config, "dataset": result.dataset, "summary": result.summary,
                     "timings": result.timings, "latency_mean_ms": latency_mean_ms(result)})
    doc = {"name": spec["name"], "description": spec.get("description", ""),
           "environment": results[0][2].environment if results else {}, "runs": runs}
    if spec.get("paired"):
        doc["paired"] = paired_differences(spec, results)
    _write_json(out_dir / f"{spec['name']}.json", doc, indent=1)
    write_benchmark_report(spec, doc, out_dir)
    return doc


def paired_pairs(spec: dict[str, Any], slugs: list[tuple[str, str | None, str]]) -> list[tuple[str, str]]:
    """The (a, b) run slugs the spec's [paired] table compares: its `pairs`, else within each run label
    every preset against the label's first; `slugs` is [(label, preset, slug)] in run order."""
    if "pairs" in spec["paired"]:
        return [tuple(pair) for pair in spec["paired"]["pairs"]]
    pairs = []
    for label in dict.fromkeys(label for label, _, _ in slugs):
        same = [slug for run_label, _, slug in slugs if run_label == label]
        pairs += [(slug, same[0]) for slug in same[1:]]
    return pairs


def paired_differences(spec: dict[str, Any], results: list[tuple[str, str | None, RunResult]]
                       ) -> list[dict[str, Any]]:
    """Paired differences between runs on the queries both scored ([paired]: `metrics`, optional `pairs`
    of run slugs as "a minus b"): paired interval and sign-flip p at the data set's unit (the cluster of
    each query, e.g. its conversation), Holm over every row (all metrics and pairs) -- the family the
    report shows."""
    from harness.evaluation.statistics import holm_over_rows, paired_comparisons
    from harness.studies.matrix import suite_values

    paired = spec["paired"]
    by_slug = {run_slug(preset, label): result for label, preset, result in results}
    pairs = [pair for pair in paired_pairs(spec, [(label, preset, run_slug(preset, label))
                                                  for label, preset, _ in results])
             if all(slug in by_slug for slug in pair)]  # --preset/--run may leave a pair's runs out
    metrics = list(paired.get("metrics", []))
    values = {slug: suite_values(result, metrics) for slug, result in by_slug.items()}
    clusters: dict[str, str] = {}
    for result in by_slug.values():
        clusters.update(result.clusters() or {})
    unit = next(iter(by_slug.values())).unit if by_slug else "query"
    rows = []
    for metric in metrics:
        columns = {slug: v.get(metric, {}) for slug, v in values.items()}
        comparisons = paired_comparisons(columns, pairs=pairs, clusters=clusters or None, unit=unit) if pairs else []
        rows += [{"metric": metric, **c.as_dict()} for c in comparisons]
    return holm_over_rows(rows, " (this table)")


def _write_json(path: Path, doc: Any, indent: int | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    separators = (",", ":") if indent is None else None
    tmp.write_text(json.dumps(doc, ensure_ascii=False, indent=indent, separators=separators, default=_json_default),
                   encoding="utf-8")
    os.replace(tmp, path)
