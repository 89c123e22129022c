"""Weight sweeps: search once, fuse many.

For one experiment (a data set, layout, chunker and embedder), the layout is rendered and chunked once,
every chunk and query is embedded once, the vector leg runs once per query, and the lexical leg once per
query and tokenizer.  Every setting of the grid (fusion method x vectorWeight x minScore x tokenizer)
then only re-fuses and re-scores those candidate lists, so a 1,000-setting sweep on king78 takes seconds.

    >>> from harness.sweep import run_sweep, load_grid
    >>> result = run_sweep(load_experiment("experiments/round3.toml"), load_grid("experiments/sweep.toml"))
    >>> result.settings          # DataFrame: one row per setting, metrics as columns
    >>> result.best, result.p_value
"""
from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from harness.config import load_toml
from harness.db import connect
from harness.errors import ConfigError
from harness.evaluation.judgments import chunk_qrels, document_qrels
from harness.evaluation.metrics import Evaluator, query_outcome, standard_metrics
from harness.evaluation.runs import Qrels, judged_runs
from harness.pipeline import (
    Index,
    Stages,
    build_stages,
    chunk_layout,
    fuse,
    load_dataset,
)
from harness.stages.fusion import FUSIONS, Legs
from harness.stages.lexical import LEXICAL_BACKENDS
from harness.stages.postprocess import POSTPROCESSORS
from harness.stages.tokenizers import TOKENIZERS

DEFAULT_GRID = {
    "vector_weight": {"start": 0.0, "stop": 1.0, "step": 0.05},
    "fusion": ["weighted"],
    "tokenizer": None,  # None: the experiment's own tokenizer
    "min_score": None,  # None: the experiment's own min_score
}


def load_grid(path: Path | str | None) -> dict[str, Any]:
    grid = dict(DEFAULT_GRID)
    if path is not None:
        table = load_toml(path).get("grid", {})
        unknown = set(table) - set(DEFAULT_GRID) - {"fusion_params"}
        if unknown:
            raise ConfigError(f"{path}: [grid] unknown key(s) {sorted(unknown)}; known: {sorted(DEFAULT_GRID)}")
        grid.update(table)
    return grid


def weight_values(spec: Any) -> list[float]:
    if isinstance(spec, dict):
        start, stop, step = float(spec["start"]), float(spec["stop"]), float(spec["step"])
        n = int(round((stop - start) / step))
        return [round(start + i * step, 10) for i in range(n + 1)]
    return [float(v) for v in spec]


def _accepts(fusion_name: str, param: str) -> bool:
    return any(p.name == param for p in FUSIONS.parameters(fusion_name))


@dataclass
class SweepResult:
    experiment: str
    settings: pd.DataFrame
    per_query: dict[int, dict[str, float]]  # setting index -> query id -> reciprocal rank (suite)
    default_index: int
    best_index: int
    p_value: float
    min_score_table: pd.DataFrame
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def best(self) -> dict[str, Any]:
        return self.settings.loc[self.best_index].to_dict()

    @property
    def default(self) -> dict[str, Any]:
        return self.settings.loc[self.default_index].to_dict()


def paired_randomization_test(a: Sequence[float], b: Sequence[float], *, rounds: int = 10_000,
                              seed: int = 0) -> float:
    """Two-sided p-value of mean(a - b) under random sign flips (Fisher's randomization test)."""
    diffs = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    observed = abs(diffs.mean()) if len(diffs) else 0.0
    if not len(diffs) or np.allclose(diffs, 0):
        return 1.0
    rng = np.random.default_rng(seed)
    signs = rng.choice([-1.0, 1.0], size=(rounds, len(diffs)))
    flipped = np.abs((signs * diffs).mean(axis=1))
    return float((np.sum(flipped >= observed - 1e-12) + 1) / (rounds + 1))


def run_sweep(config: dict[str, Any], grid: dict[str, Any], *, embedder: Any = None,
              progress: bool = True) -> SweepResult:
    t0 = time.perf_counter()
    base = build_stages(config, embedder=embedder, progress=progress)
    document_lexical = config["lexical"].get("unit", "document" if config["lexical"]["name"] == "qmd-documents"
                                             else "chunk") == "document"
    if base.unit != "chunk" or document_lexical:
        raise ConfigError(f"{config.get('experiment_file', 'the experiment')}: the sweep re-fuses chunk lists; "
                          f"preset {config.get('preset')!r} fuses whole files (fusion {config['fusion']['name']!r}, "
                          f"lexical {config['lexical']['name']!r}): run it with `harness run`")
    dataset = load_dataset(config)
    if hasattr(dataset, "scopes"):  # legs per scope and a join of the parts' rows are not written yet
        raise ConfigError(f"{config.get('experiment_file', 'the experiment')}: the sweep indexes one workspace; "
                          f"data set {config['dataset']['name']!r} holds one per scope (run it with "
                          f"`harness run` or `harness benchmark`)")
    layout = dataset.render(**config.get("layout", {}))
    try:
        chunks = chunk_layout(layout, base.chunker)
        vectors = base.embedder.embed([c.text for c in chunks], "passage")
        queries = dataset.queries()
        qvecs = base.embedder.embed([q.text for q in queries], "query")
        docs_of = {c.id: frozenset(layout.docs_overlapping(c.path, c.start_line, c.end_line)) for c in chunks}
        conn = connect()
        vector_index = base.new_vector(conn)
        vector_index.add([c.id for c in chunks], vectors)
        vector_legs = {q.id: vector_index.search(v, base.candidates) for q, v in zip(queries, qvecs)}
        tokenizer_tables = list(grid.get("tokenizer") or [])
        if _tokenizer_label(config["tokenizer"]) not in {_tokenizer_label(t) for t in tokenizer_tables}:
            tokenizer_tables.insert(0, config["tokenizer"])
        lexical_legs: dict[str, dict[str, list]] = {}
        for table in tokenizer_tables:
            label = _tokenizer_label(table)
            tok = TOKENIZERS.create(table["name"], **{k: v for k, v in table.items() if k != "name"})
            ltable = config["lexical"]
            lexical = LEXICAL_BACKENDS.create(ltable["name"], tokenizer=tok, conn=connect(load_vec=False),
                                              **{k: v for k, v in ltable.items() if k != "name"})
            lexical.add(chunks)
            lexical_legs[label] = {q.id: lexical.search(q.text, base.candidates) for q in queries}
        t_search = time.perf_counter()
        index = Index(layout, chunks, {c.id: c for c in chunks}, docs_of, None, None, {},
                      {c.id: v for c, v in zip(chunks, vectors)})
        query_vectors = {q.id: v for q, v in zip(queries, qvecs)}
        rows, per_query = _evaluate_grid(config, grid, base, index, queries, vector_legs, lexical_legs,
                                         query_vectors)
    finally:
        layout.cleanup()
    settings = pd.DataFrame(rows)
    default_index = _default_setting(settings, config)
    best_index = _best_setting(settings, default_index)
    suite_ids = [q.id for q in queries if q.in_suite(config.get("evaluation", {}).get("round"))]
    p = paired_randomization_test([per_query[best_index].get(q, 0.0) for q in suite_ids],
                                  [per_query[default_index].get(q, 0.0) for q in suite_ids])
    timings = {"search_s": t_search - t0, "fuse_and_score_s": time.perf_counter() - t_search,
               "settings": len(settings)}
    return SweepResult(config.get("name", "sweep"), settings, per_query, default_index, best_index, p,
                       _min_score_table(settings, config), timings)


def _tokenizer_label(table: dict[str, Any]) -> str:
    """name(param=value, ...) listing only parameters that differ from the tokenizer's defaults."""
    defaults = {p.name: p.default for p in TOKENIZERS.parameters(table["name"])}
    extras = ",".join(f"{k}={v}" for k, v in sorted(table.items())
                      if k != "name" and defaults.get(k, object()) != v)
    return table["name"] + (f"({extras})" if extras else "")


def _min_score_stage(config: dict[str, Any]) -> dict[str, Any] | None:
    return next((dict(p) for p in config.get("postprocess", []) if p.get("name") == "min_score"), None)


def _with(values: list, own: Any) -> list:
    return list(values) + ([own] if own not in values else [])


def _evaluate_grid(config, grid, base: Stages, index: Index, queries, vector_legs, lexical_legs, query_vectors):
    # the configured setting is always part of the grid, so "default" is exactly what the user runs
    own_vw = float(config["fusion"].get("vector_weight", 0.7))
    fusion_names = _with(grid.get("fusion") or [], config["fusion"]["name"])
    weights = sorted(_with(weight_values(grid.get("vector_weight") or []), own_vw))
    ms_stage = _min_score_stage(config)
    min_scores = sorted(_with([float(m) for m in grid.get("min_score") or []],
                              float(ms_stage["min_score"]) if ms_stage else 0.0))
    other_post = [p for p in config.get("postprocess", []) if p.get("name") != "min_score"]
    fusion_params = grid.get("fusion_params", {})
    rows, per_query = [], {}
    round_no = config.get("evaluation", {}).get("round")
    suite = [q for q in queries if q.in_suite(round_no)]
    k = base.max_results
    # once: every setting is scored against them
    qrels = chunk_qrels(index.docs_of, queries), document_qrels(queries)
    evaluators = Evaluator(qrels[0]), Evaluator(qrels[1])
    paraphrases = Evaluator({q.id: qrels[0][q.id] for q in queries if q.kind == "paraphrase" and q.id in qrels[0]})
    for tok_label, lex in lexical_legs.items():
        legs = {q.id: Legs(vector_legs[q.id], lex[q.id]) for q in queries}
        for fusion_name in fusion_names:
            params = dict(fusion_params.get(fusion_name, {}))
            if fusion_name == config["fusion"]["name"]:
                params = {**{kk: vv for kk, vv in config["fusion"].items() if kk not in ("name",)}, **params}
            weighted = _accepts(fusion_name, "vector_weight")
            for vw in (weights if weighted else [float("nan")]):
                if weighted:
                    params.update(vector_weight=vw, text_weight=round(1 - vw, 10))
                fusion = FUSIONS.create(fusion_name, **{kk: vv for kk, vv in params.items()
                                                        if _accepts(fusion_name, kk)})
                for ms in min_scores:
                    post = [POSTPROCESSORS.create(p["name"], **{kk: vv for kk, vv in p.items() if kk != "name"})
                            for p in other_post]
                    if ms_stage is not None or ms:
                        table = {**(ms_stage or {"name": "min_score"}), "min_score": ms}
                        post.append(POSTPROCESSORS.create("min_score", **{kk: vv for kk, vv in table.items()
                                                                          if kk != "name"}))
                    stages = Stages(config, base.chunker, base.tokenizer, base.embedder, fusion, post,
                                    base.max_results, base.candidates)
                    hits = {q.id: fuse(stages, q, legs[q.id], index, query_vectors[q.id])[0] for q in queries}
                    row, rr = _score_setting(index, queries, suite, hits, stages, k, qrels, evaluators,
                                             paraphrases)
                    row.update(tokenizer=tok_label, fusion=fusion_name,
                               vector_weight=vw, text_weight=(round(1 - vw, 10) if weighted else float("nan")),
                               min_score=ms)
                    per_query[len(rows)] = rr
                    rows.append(row)
    return rows, per_query


def _score_setting(index: Index, queries, suite, hits, stages: Stages, k: int, qrels: tuple[Qrels, Qrels],
                   evaluators: tuple[Evaluator, Evaluator], paraphrases: Evaluator):
    """One setting's row: metrics from its runs and qrels; passes and score thresholds from its hits."""
    runs = judged_runs(hits, index.docs_of, *qrels)
    metrics = standard_metrics(runs, [k], evaluators)
    rr = {}
    passed = 0
    for q in suite:
        outcome = query_outcome(hits[q.id], q.relevant, index.docs_of, stages.pass_threshold)
        passed += outcome.passed
        rr[q.id] = metrics[q.id][f"mrr@{k}"]
    negatives = [q for q in queries if q.kind == "negative"]
    found = paraphrases(runs.chunk_run, ["hit_rate"])  # a relevant chunk anywhere among the returned ones
    mean = lambda name: float(np.mean([metrics[q.id][name] for q in suite])) if suite else float("nan")  # noqa: E731
    row = {
        "suite_queries": len(suite), "passed": passed, "pass_rate": passed / len(suite) if suite else float("nan"),
        f"mrr@{k}": mean(f"mrr@{k}"), f"ndcg@{k}": mean(f"ndcg@{k}"), f"recall@{k}": mean(f"recall@{k}"),
        "negative_false_recalls": sum(1 for q in negatives if runs.chunk_run[q.id]),
        "paraphrase_hits": sum(int(vals["hit_rate"]) for vals in found.values()),
        "suite_top1_min": min((hits[q.id][0].score for q in suite if hits[q.id]), default=float("nan")),
        "negative_top1_max": max((hits[q.id][0].score for q in negatives if hits[q.id]), default=float("nan")),
    }
    return row, rr


def _default_setting(settings: pd.DataFrame, config: dict[str, Any]) -> int:
    """The configuration as the experiment has it (OpenClaw's 0.7/0.3 for the presets)."""
    vw = float(config["fusion"].get("vector_weight", 0.7))
    ms_stage = _min_score_stage(config)
    ms = ms_stage["min_score"] if ms_stage else 0.0
    tok = _tokenizer_label(config["tokenizer"])
    candidates = settings[(settings["fusion"] == config["fusion"]["name"]) & (settings["tokenizer"] == tok)]
    if candidates.empty:
        candidates = settings
    dist = (candidates["vector_weight"].fillna(vw) - vw).abs() + (candidates["min_score"] - ms).abs()
    return int(dist.idxmin())


def _nearest_to(group: pd.DataFrame, setting: dict[str, Any]) -> int:
    """The row of `group` closest to `setting` (same fusion first, then weights and minScore)."""
    vw = setting["vector_weight"] if setting["vector_weight"] == setting["vector_weight"] else -1
    dist = ((group["fusion"] != setting["fusion"]) * 10 + (group["vector_weight"].fillna(-1) - vw).abs()
            + (group["min_score"] - setting["min_score"]).abs())
    return int(dist.idxmin())


def _best_setting(settings: pd.DataFrame, default_index: int) -> int:
    """Most suite passes, then most paraphrases found (a threshold that silences the negatives by
    also dropping reworded questions is no improvement), MRR, nDCG, fewest negative queries answered;
    among settings still tied, the configured one if it is there, else the one nearest to it (a
    change is only suggested when it measurably helps)."""
    k_cols = sorted([c for c in settings.columns if c.startswith("mrr@") or c.startswith("ndcg@")], reverse=True)
    d = settings.loc[default_index]
    nearest = ((settings["vector_weight"].fillna(-1) - (d["vector_weight"] if d["vector_weight"] == d["vector_weight"] else -1)).abs()
               + (settings["min_score"] - d["min_score"]).abs()
               + (settings["fusion"] != d["fusion"]) + (settings["tokenizer"] != d["tokenizer"]))
    order = settings.assign(_neg=-settings["negative_false_recalls"], _near=-nearest).sort_values(
        ["passed", "paraphrase_hits", *k_cols, "_neg", "_near"], ascending=False, kind="stable")
    return int(order.index[0])


def _min_score_table(settings: pd.DataFrame, config: dict[str, Any]) -> pd.DataFrame:
    """At the default fusion/tokenizer/weights: suite passes and negatives answered for each minScore,
    plus the thresholds that would separate them (between the weakest passing suite top-1 and the
    strongest negative top-1)."""
    default = settings.loc[_default_setting(settings, config)]
    same = settings[(settings["fusion"] == default["fusion"]) & (settings["tokenizer"] == default["tokenizer"])
                    & ((settings["vector_weight"] == default["vector_weight"])
                       | settings["vector_weight"].isna())]
    return same[["min_score", "passed", "negative_false_recalls", "paraphrase_hits",
                 "suite_top1_min", "negative_top1_max"]].sort_values("min_score").reset_index(drop=True)


def write_sweep(result: SweepResult, out_dir: Path | str, config: dict[str, Any]) -> dict[str, Any]:
    from harness.inputs.openclaw_config import openclaw_snippet
    from harness.reporting.markdown import markdown_table

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    best, default = result.best, result.default
    best_tables = _setting_tables(best, config)
    snippet, cannot = openclaw_snippet(best_tables)
    doc = {"experiment": result.experiment, "config": config, "timings": result.timings,
           "default": default, "best": best, "p_value_best_vs_default": result.p_value,
           "openclaw_snippet": snippet, "not_expressible_in_openclaw_json": cannot,
           "settings": json.loads(result.settings.to_json(orient="records")),
           "min_score_table": json.loads(result.min_score_table.to_json(orient="records"))}
    _atomic_write(out_dir / "sweep.json", json.dumps(doc, ensure_ascii=False, indent=1, default=str))
    plot_sweep(result, out_dir / "sweep.png")
    k_cols = [c for c in result.settings.columns if "@" in c]
    per_tok = pd.DataFrame([result.settings.loc[_best_setting(group, _nearest_to(group, default))]
                            for _, group in result.settings.groupby("tokenizer", sort=False)])
    show = ["tokenizer", "fusion", "vector_weight", "text_weight", "min_score", "passed", *k_cols,
            "negative_false_recalls", "paraphrase_hits"]
    fmt = lambda df: df[show].map(lambda x: f"{x:.3f}" if isinstance(x, float) else x)  # noqa: E731
    head = fmt(pd.DataFrame([default, best]))
    head.insert(0, "setting", ["default (as configured)", "best"])
    md = [
        f"# Sweep: {result.experiment}\n",
        f"{len(result.settings)} settings; legs searched once in {result.timings['search_s']:.1f} s, "
        f"all settings fused and scored in {result.timings['fuse_and_score_s']:.1f} s.\n",
        "## Default (as configured) and best\n",
        markdown_table(head),
        f"\nBest vs default, paired randomization test on per-query reciprocal rank (suite, 10,000 sign "
        f"flips): p = {result.p_value:.3f}.\n",
        "\n## Best setting per tokenizer\n", markdown_table(fmt(per_tok)),
        "\n## minScore at the default weights: suite passes vs negative queries answered\n",
        markdown_table(result.min_score_table.map(lambda x: f"{x:.3f}" if isinstance(x, float) else x)),
        "\n## openclaw.json snippet for the best setting\n", "```json5\n" + snippet + "\n```\n",
    ]
    if cannot:
        md.append("Not expressible in openclaw.json: " + "; ".join(cannot) + "\n")
    md.append("\n![curves](sweep.png)\n")
    _atomic_write(out_dir / "sweep.md", "\n".join(md))
    return doc


def _setting_tables(setting: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    tables: dict[str, Any] = {"fusion": {"name": setting["fusion"]}}
    if not (isinstance(setting["vector_weight"], float) and math.isnan(setting["vector_weight"])):
        tables["fusion"].update(vector_weight=setting["vector_weight"], text_weight=setting["text_weight"])
    tables["postprocess"] = [{"name": "min_score", "min_score": setting["min_score"]}]
    tables["tokenizer"] = {"name": setting["tokenizer"].split("(")[0]}
    return tables


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def plot_sweep(result: SweepResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = result.settings
    default = result.default
    k_cols = [c for c in s.columns if c.startswith("mrr@") or c.startswith("ndcg@")]
    panels = ["pass_rate", *k_cols, "negative_false_recalls"]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8))
    sub = s[(s["fusion"] == default["fusion"]) & (s["min_score"] == default["min_score"])]
    for tok, group in sub.groupby("tokenizer", sort=False):
        group = group.sort_values("vector_weight")
        for ax, metric in zip(axes, panels):
            ax.plot(group["vector_weight"], group[metric], marker=".", label=tok)
    for ax, metric in zip(axes, panels):
        ax.set_xlabel("vectorWeight (textWeight = 1 - vectorWeight)")
        ax.set_title(metric)
        ax.axvline(0.7, color="grey", linestyle=":", linewidth=0.8)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{result.experiment}: fusion {default['fusion']}, minScore {default['min_score']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
