"""Benchmarks (studies/benchmark.py, reporting/benchmark.py): runs x presets, per-category tables,
published figures beside ours, compact results.json; the committed LoCoMo spec is well-formed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.reporting.benchmark import (
    SECTIONS,
    benchmark_markdown,
    metric_cell,
    write_benchmark,
)
from harness.studies.benchmark import load_benchmark, run_benchmark
from harness.studies.spec.models import PairedTable

from .conftest import ROOT
from .test_locomo import TINY


def test_metric_cells_show_intervals_when_a_summary_has_them():
    assert metric_cell({"recall_any@5": 0.81234}, "recall_any@5") == "0.812"
    assert metric_cell({"recall_any@5": 0.8, "recall_any@5_ci95": [0.75, 0.85]}, "recall_any@5") == "0.800 [0.750, 0.850]"
    assert metric_cell({}, "mrr@10") == "" and metric_cell({"mrr@10": float("nan")}, "mrr@10") == ""


@pytest.fixture()
def tiny_spec(tmp_path):
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY), encoding="utf-8")
    experiment = tmp_path / "tiny.toml"
    experiment.write_text(f'''
name = "tiny"
preset = "openclaw-2026.08"
postprocess = []
[dataset]
name = "locomo"
path = "{data}"
[tokenizer]
name = "unicode61"
join = "or"
[fusion]
name = "lexical-only"
[embedder]
name = "hash"
[search]
max_results = 10
[evaluation]
cutoffs = [1, 2]
evidence_cutoffs = [1, 2]
''', encoding="utf-8")
    spec = tmp_path / "bench.toml"
    spec.write_text(f'''
kind = "benchmark"
name = "tinybench"
output = "{tmp_path / 'out'}"
presets = ["openclaw-2026.08"]
metrics = ["recall_any@1", "recall_all@2", "mrr@2"]
hits = 1
[[runs]]
label = "turns"
experiment = "{experiment}"
[[runs]]
label = "sessions"
experiment = "{experiment}"
overrides = {{ dataset = {{ granularity = "session" }} }}
[comparison]
columns = ["R@1", "MRR", "latency"]
[[comparison.ours]]
label = "ours"
run = "turns"
values = {{ "R@1" = "recall_any@1", "MRR" = "mrr@2", "latency" = "latency_mean_ms" }}
[[comparison.published]]
label = "a peer"
url = "https://example.org/peer"
values = {{ "R@1" = 0.5 }}
setup = "Their setup."
difference = "How it differs."
''', encoding="utf-8")
    return load_benchmark(spec), tmp_path / "out"


def test_a_benchmark_writes_one_results_json_per_run_and_a_report(tiny_spec, monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    spec, out = tiny_spec
    results = run_benchmark(spec, progress=False)
    assert [(label, preset) for label, preset, _ in results] == [("turns", "openclaw-2026.08"),
                                                                 ("sessions", "openclaw-2026.08")]
    doc = write_benchmark(spec, results, out)
    results_json = json.loads((out / "openclaw-2026.08-turns" / "results.json").read_text(encoding="utf-8"))
    assert results_json["hits_kept"] == 1 and all(len(h) <= 1 for h in results_json["hits"].values())
    assert "snippet" not in next(iter(results_json["hits"].values()))[0]
    assert results_json["queries"]["conv-a/qa001"]["recall_all@2"] == 1.0
    # each run counts its own embeddings, although one embedder serves both
    assert doc["runs"][1]["timings"]["embedding_cache"]["computed"] == 0
    report = (out / "tinybench.md").read_text(encoding="utf-8")
    # category 1: conv-a/qa001, found: each figure 1.000, and one query found is the exact binomial
    # interval [0.025, 1] (P(1 of 1 | p) = p = 0.025 at its lower end), never the point [1, 1]
    assert "| 1 multi-hop | 1 | 1.000 [0.025, 1.000] | 1.000 [0.025, 1.000] |" in report
    assert "[a peer](https://example.org/peer)" in report and "Their setup. How it differs." in report
    assert "## Latency per stage" in report and "check: none" in report
    assert benchmark_markdown(spec, json.loads((out / "tinybench.json").read_text(encoding="utf-8"))) == report


def test_sections_are_a_list_later_work_appends_to():
    assert [s.__name__ for s in SECTIONS] == ["header", "data_set", "side_by_side", "by_age", "paired", "per_group",
                                              "comparison", "latency", "notes", "environment"]


def test_several_presets_side_by_side_and_one_comparison_row_each(tiny_spec, monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    spec, out = tiny_spec
    results = run_benchmark(spec, presets=["openclaw-2026.08", "openclaw-2026.02"], progress=False, only_runs=["turns"])
    doc = write_benchmark(spec, results, out)
    report = benchmark_markdown(spec, doc)
    start = report.index("## Presets side by side")
    side = report[start:report.index("\n## ", start + 1)]
    assert "### turns" in side and side.count("| openclaw-2026.0") == 2 and "negatives answered" in side
    assert "| openclaw-2026.08: ours |" in report and "| openclaw-2026.02: ours |" in report
    one = write_benchmark(spec, results[:1], tmp_path / "one")
    single = benchmark_markdown(spec, one)
    assert "Presets side by side" not in single and "| ours |" in single


def test_a_metric_no_run_computed_is_named_not_shown_as_an_empty_column(tiny_spec, monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    spec, out = tiny_spec
    doc = write_benchmark(spec, run_benchmark(spec, progress=False, only_runs=["turns"]), out)
    report = benchmark_markdown({**spec, "metrics": ["hit@1", "recall_any@1", "mrr@9"]}, doc)
    assert "computed by no run, so not in the tables: hit@1, mrr@9." in report
    table = report[report.index("## openclaw-2026.08 · turns"):]
    assert "| category | queries | recall_any@1 |" in table and "hit@1" not in table
    assert "granularity turn" in report and "suite, 1 negative (abstention) queries." in report


def test_paired_differences_per_label_with_holm_over_the_table(tiny_spec, monkeypatch, tmp_path):
    """Default pairs: within a run label, each preset against the label's first; the p-values are
    Holm-corrected over every row, and a pair naming an unknown run is refused when the spec is read."""
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    spec, out = tiny_spec
    spec = spec.model_copy(update={"paired": PairedTable(metrics=["recall_any@1", "mrr@2"])})
    results = run_benchmark(spec, presets=["openclaw-2026.08", "openclaw-2026.02"], progress=False)
    doc = write_benchmark(spec, results, out)
    pairs = [(r["metric"], r["a"], r["b"]) for r in doc["paired"]]
    assert pairs == [(m, f"openclaw-2026.02-{label}", f"openclaw-2026.08-{label}")
                     for m in ("recall_any@1", "mrr@2") for label in ("turns", "sessions")]
    assert all(r["p_holm"] >= r["p_value"] and "Holm over 4" in r["method"] for r in doc["paired"])
    report = benchmark_markdown(spec, doc)
    assert "## Paired differences" in report and "| recall_any@1 | openclaw-2026.02 · turns |" in report
    bad = tmp_path / "bad.toml"
    bad.write_text(Path(spec.source).read_text(encoding="utf-8")
                   + '\n[paired]\nmetrics = ["mrr@2"]\npairs = [["openclaw-2026.08-turns", "nope"]]\n',
                   encoding="utf-8")
    with pytest.raises(ConfigError, match=r"paired.pairs\[0\].*openclaw-2026.08-turns"):
        load_benchmark(bad)


def test_a_run_with_its_own_presets_runs_only_those(tiny_spec, monkeypatch, tmp_path):
    """A run's `presets` replaces the spec's for that run only; --preset (presets=) replaces both."""
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    spec, _ = tiny_spec
    runs = [spec.runs[0], spec.runs[1].model_copy(update={"presets": ["openclaw-2026.02"]})]
    spec = spec.model_copy(update={"presets": ["openclaw-2026.08", "openclaw-2026.02"], "runs": runs})
    planned = [(label, preset) for label, preset, _ in run_benchmark(spec, progress=False)]
    assert planned == [("turns", "openclaw-2026.08"), ("turns", "openclaw-2026.02"),
                       ("sessions", "openclaw-2026.02")]  # preset by preset; sessions only under its own
    forced = run_benchmark(spec, presets=["openclaw-2026.08"], progress=False)
    assert [(label, preset) for label, preset, _ in forced] == [("turns", "openclaw-2026.08"),
                                                               ("sessions", "openclaw-2026.08")]
    assert load_benchmark(ROOT / "experiments/benchmark-t2ranking.toml").runs[1].presets == ["openclaw-2026.08"]


def test_the_locomo_benchmark_spec():
    spec = load_benchmark(ROOT / "experiments/benchmark-locomo.toml")
    assert spec.presets == ["openclaw-2026.02", "openclaw-2026.08", "qmd", "lancedb-pro"] and [r.label for r in spec.runs] == ["turns", "sessions"]
    columns = spec.comparison["columns"]
    for published in spec.comparison["published"]:  # a peer's figures: sourced, explained, in the table's columns
        assert published.get("url", "").startswith("https://") and published.get("setup") and published.get("difference")
        assert published["values"] and set(published["values"]) <= set(columns), published["label"]
        for column, value in published["values"].items():
            assert isinstance(value, (int, float)) and (0 <= value <= 1 or "latency" in column), (column, value)


def test_a_comparison_must_name_a_run(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('kind = "benchmark"\nname = "x"\n[[runs]]\nlabel = "a"\nexperiment = "e.toml"\n'
                    '[[comparison.ours]]\nlabel = "o"\nrun = "b"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="run labels"):
        load_benchmark(path)


def test_embedding_work_of_a_scoped_data_set_covers_every_workspace(tiny_spec, tmp_path):
    """`harness embed experiments/locomo.toml` renders each conversation (it stopped with a TypeError)."""
    from harness.config import load_experiment
    from harness.studies.embed import embedding_work

    work = embedding_work(load_experiment(tmp_path / "tiny.toml"))
    for conv in TINY:  # the first turn of each conversation is in some passage
        first = conv["conversation"]["session_1"][0]["text"]
        assert any(first in passage for passage in work.texts["passage"]), conv["sample_id"]
    assert len(work.texts["query"]) == 6  # 5 suite and 1 adversarial question (one without evidence skipped)


def test_a_compact_results_json_keeps_the_chunk_run_and_reads_back_its_document_run(tiny_spec):
    """The benchmark's results.json drops the document run (most of a LoCoMo file); reading it rebuilds it."""
    from harness.evaluation.runs import JudgedRuns
    from harness.reporting.benchmark import compact_result

    spec, _ = tiny_spec
    (_, _, result), *_ = run_benchmark(spec, progress=False)
    doc = json.loads(json.dumps(compact_result(result, 0)))
    assert set(doc["runs"]) == {"chunk"}
    assert JudgedRuns.from_dict(doc).document_run == result.runs.document_run


def test_the_data_line_of_a_data_set_without_query_groups():
    """T2Ranking has no granularity and no negatives, king78 no file: no '?' or 'None' placeholders; the
    query counts are those the run scored."""
    from harness.reporting.benchmark import data_set

    run = {"preset": "p", "label": "passages", "summary": {"suite": {"queries": 100}, "negative": {"queries": 0}},
           "dataset": {"path": "datasets/x.jsonl", "sha256": "ab" * 32, "sha256_check": "published",
                       "passages": 1987, "queries": 100, "notes": ["a note"]}}
    text = data_set({}, {"runs": [run]})
    assert "1,987 passages; 100 suite queries." in text and "?" not in text and "granularity" not in text
    assert "  - a note" in text
    own = {"preset": "p", "label": "r3", "summary": {"suite": {"queries": 10}, "paraphrase": {"queries": 12}},
           "dataset": {"dataset": "king78", "records": "all"}}
    assert "- p · r3: `king78` (the project's own data set): 10 suite, 12 paraphrase queries." in data_set(
        {}, {"runs": [own]})
