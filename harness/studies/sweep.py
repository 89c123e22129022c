"""Weight sweeps: search once, fuse many; choose on some queries, judge the choice on others.

For one experiment (a data set, layout, chunker and embedder), the layout is rendered once and chunked
once per chunking budget of the grid, every chunk and query is embedded once, the vector leg runs once per
query and candidate count, and the lexical leg once per query, tokenizer and candidate count.  Every
setting of the grid (tokenizer x temporal decay x MMR x fusion method x vectorWeight x minScore, and
maxResults, candidateMultiplier and chunk_tokens when the grid names them) then only re-fuses those
candidate lists: with OpenClaw's post-processing (decay, importance, MMR, min_score), all settings of a
group are scored at once on query x candidate arrays (harness.evaluation.fast_scoring, harness.stages.postprocess.arrays);
other stages go through the pipeline's own fusion and post-processing stages, a setting at a time.  Each
setting is marked with whether the release the preset models can write it in openclaw.json
(harness.inputs.openclaw_releases).

What the sweep selects, and how the choice is judged (harness.evaluation.statistics, cross_validation):
- the objective is one number per query, stated in the report: a suite query scores 1 when it passes,
  a paraphrase when its record is among the returned chunks, a negative query when nothing is returned;
  the best setting maximises its mean (ties keep the configuration); with objective="abstention"
  (`harness sweep --objective abstention`) it is harness.evaluation.abstention's utility instead, which
  weighs answered-correctly against silent-on-negatives per class;
- the p-value of "best vs configured" is a max-statistic sign-flip test over the whole grid, so having
  picked the best of many settings is part of its null distribution;
- k-fold cross-validation over queries (stratified by kind; leave-one-out when the suite has 20 queries
  or fewer) scores the selection procedure on queries it did not see; a setting is recommended only when
  that held-out gain's 95% interval lies above zero and the paired sign-flip test agrees.

    >>> result = run_sweep(load_experiment("experiments/round3.toml"), load_grid("experiments/sweep.toml"))
    >>> result.settings                  # one row per setting
    >>> result.cv.recommended, result.cv.reason, result.selection.p_value
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import product
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from harness.config import Experiment, load_toml
from harness.errors import ConfigError
from harness.evaluation.abstention import (
    ABSTENTION_WEIGHT,
    utility_description,
    utility_values,
)
from harness.evaluation.comparison import (
    column_pairs,
    comparison_rows,
    paired_difference,
)
from harness.evaluation.cross_validation import (
    FOLDS,
    LEAVE_ONE_OUT_MAX,
    CrossValidation,
    best_on_average,
    cross_validate,
)
from harness.evaluation.fast_scoring import SettingScores
from harness.evaluation.metrics import checked_cutoffs
from harness.evaluation.statistics import SelectionTest, best_index, max_statistic_test
from harness.inputs.layout import Query
from harness.stages.fusion import FUSIONS
from harness.stages.tokenizers import TOKENIZERS
from harness.studies.spec.models import OFF, weight_values
from harness.studies.sweep_scoring import (
    Setting,
    headline_frame,
    leg_needs,
    score_grid,
    search_sweep_legs,
)

DEFAULT_GRID = {
    "vector_weight": {"start": 0.0, "stop": 1.0, "step": 0.05},
    "fusion": ["weighted"],
    "tokenizer": None,  # None: the experiment's own tokenizer
    "min_score": None,  # None: the experiment's own min_score
    # what else openclaw.json may set (None: the experiment's own value only)
    "temporal_decay": None,  # half-life in days, or "off" (OpenClaw's query.hybrid.temporalDecay)
    "mmr": None,  # MMR's lambda, or "off" (query.hybrid.mmr)
    "max_results": None,  # query.maxResults
    "candidate_multiplier": None,  # query.hybrid.candidateMultiplier
    "chunk_tokens": None,  # chunking.tokens: the index is rebuilt per value (embeddings from the cache)
}
# the settings frame's columns for these, present when the grid varies them or the configuration has the stage
EXTRA_DIMENSIONS = {"chunk_tokens": "chunk_tokens", "max_results": "max_results",
                    "candidate_multiplier": "candidate_multiplier", "temporal_decay": "half_life_days",
                    "mmr": "mmr_lambda"}

OBJECTIVE = ("per query: 1 when a suite query passes (top-1 relevant and >= minScore), when a paraphrase's "
             "record is among the returned chunks, when a negative query returns nothing; else 0")
OBJECTIVES = ("pass", "abstention")  # `harness sweep --objective`: OBJECTIVE, or harness.evaluation.abstention's U
ALPHA = 0.05
MOSTLY_UNJUDGED = 0.5  # below this judged@k a setting is not recommended: its figures rest on unjudged chunks


def default_grid(config: Experiment) -> Path:
    """`harness sweep`'s grid when none is given: experiments/sweep-openclaw.toml (the settings openclaw.json
    has keys for: weights, tokenizer, minScore, temporal decay, MMR) for an OpenClaw workspace experiment,
    experiments/sweep.toml (weights x fusions x tokenizers x minScores) otherwise."""
    from harness.inputs.layout import project_path

    workspace = config.dataset is not None and config.dataset.name == "workspace"
    return project_path("experiments/sweep-openclaw.toml" if workspace else "experiments/sweep.toml")


def load_grid(path: Path | str | None) -> dict[str, Any]:
    """The [grid] table of a grid file over DEFAULT_GRID; its shape and number ranges are checked by the
    grid's model (harness.studies.spec.models.GridStudy), so a bad grid is one error naming the file and
    key before any leg is searched."""
    grid = dict(DEFAULT_GRID)
    if path is not None:
        from harness.studies.spec import validated

        doc = load_toml(path, "grid file")
        validated("grid", doc, path)
        grid.update(doc["grid"])
    return grid



@lru_cache(maxsize=None)
def _accepts(fusion_name: str, param: str) -> bool:
    return any(p.name == param for p in FUSIONS.parameters(fusion_name))


def tokenizer_label(table: dict[str, Any]) -> str:
    """name(param=value, ...) listing only parameters that differ from the tokenizer's defaults."""
    defaults = {p.name: p.default for p in TOKENIZERS.parameters(table["name"])}
    extras = ",".join(f"{k}={v}" for k, v in sorted(table.items())
                      if k != "name" and defaults.get(k, object()) != v)
    return table["name"] + (f"({extras})" if extras else "")


def _min_score_stage(config: Experiment) -> dict[str, Any] | None:
    return next((p.as_written() for p in config.postprocess if p.name == "min_score"), None)


def written_postprocess(config: Experiment) -> list[dict[str, Any]]:
    """The experiment's post-processing tables as written, which grid settings rewrite."""
    return [p.as_written() for p in config.postprocess]


def _with(values: list, own: Any) -> list:
    return list(values) + ([own] if own not in values else [])


def tokenizer_tables(config: Experiment, grid: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """label -> tokenizer table of the grid, the experiment's own first when the grid lacks it."""
    tables = list(grid.get("tokenizer") or [])
    if tokenizer_label(config.tokenizer.as_written()) not in {tokenizer_label(t) for t in tables}:
        tables.insert(0, config.tokenizer.as_written())
    return {tokenizer_label(t): dict(t) for t in tables}


def _values(spec: Any, what: str, *, integer: bool = False, allow_off: bool = False) -> list[Any]:
    """A grid list (or {start, stop, step}) of numbers; "off" where the dimension can be turned off."""
    if isinstance(spec, dict):
        spec = weight_values(spec)
    if not isinstance(spec, list):
        raise ConfigError(f"[grid] {what}: expected a list of values, got {spec!r}")
    out: list[Any] = []
    for v in spec:
        if allow_off and (v == OFF or v is False):
            out.append(OFF)
        elif isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and v != int(v)) or v < 0:
            raise ConfigError(f"[grid] {what}: {v!r} is not a{' whole' if integer else ''} number >= 0"
                              + (' or "off"' if allow_off else ""))
        else:
            out.append(int(v) if integer else float(v))
    return out


def _stage(post: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    return next((dict(p) for p in post if p.get("name") == name), None)


def with_decay(post: list[dict[str, Any]], half_life: Any) -> list[dict[str, Any]]:
    """The post-processing tables with temporal decay at `half_life` days ("off": without it); a decay
    the configuration lacks goes first, as OpenClaw applies it right after the merge."""
    at = next((i for i, p in enumerate(post) if p.get("name") == "temporal_decay"), None)
    rest = [p for p in post if p.get("name") != "temporal_decay"]
    if half_life == OFF or half_life == 0:
        return rest
    table = {**(post[at] if at is not None else {"name": "temporal_decay"}), "half_life_days": float(half_life)}
    rest.insert(at if at is not None else 0, table)
    return rest


def with_mmr(post: list[dict[str, Any]], lam: Any, preset: str | None) -> list[dict[str, Any]]:
    """The post-processing tables with MMR at `lam` ("off": without it); an MMR the configuration
    lacks goes last (right before the minScore selection, where OpenClaw applies it), with the snippet
    tokens of the preset's release."""
    from harness.inputs.openclaw_config import MMR_TOKENS

    at = next((i for i, p in enumerate(post) if p.get("name") == "mmr"), None)
    rest = [p for p in post if p.get("name") != "mmr"]
    if lam == OFF:
        return rest
    table = {**(post[at] if at is not None else {"name": "mmr", "tokens": MMR_TOKENS.get(preset or "", "cjk")}),
             "lambda": float(lam)}
    rest.insert(at if at is not None else len(rest), table)
    return rest


def own_values(config: Experiment) -> dict[str, Any]:
    """The configuration's value of each extra dimension (the grid always holds it)."""
    post = written_postprocess(config)
    decay, mmr = _stage(post, "temporal_decay"), _stage(post, "mmr")
    half_life = float(decay.get("half_life_days", 30.0)) if decay else 0.0
    return {"temporal_decay": half_life if half_life > 0 else OFF,
            "mmr": float(mmr.get("lambda", 0.7)) if mmr else OFF,
            "max_results": int(config.search.max_results),
            "candidate_multiplier": int(config.search.candidate_multiplier),
            "chunk_tokens": config.chunker.params.get("tokens")}


def extra_dimensions(config: Experiment, grid: dict[str, Any]) -> dict[str, list[Any]]:
    """Each extra dimension's values (the configuration's own included), for the dimensions the grid
    varies or whose stage the configuration has."""
    own = own_values(config)
    out: dict[str, list[Any]] = {}
    for key in EXTRA_DIMENSIONS:
        spec = grid.get(key)
        values = [] if spec is None else _values(spec, key, integer=key not in ("temporal_decay", "mmr"),
                                                 allow_off=key in ("temporal_decay", "mmr"))
        if key == "chunk_tokens" and values and own[key] is None:
            raise ConfigError(f"[grid] chunk_tokens: chunker {config.chunker.name!r} has no `tokens` budget")
        if key in ("max_results", "candidate_multiplier", "chunk_tokens") and 0 in values:
            raise ConfigError(f"[grid] {key}: must be at least 1")
        values = _with(values, own[key])
        if len(values) > 1 or (key in ("temporal_decay", "mmr") and own[key] != OFF):
            out[key] = sorted(values, key=lambda v: (v != OFF, v if v != OFF else 0))
    return out


def _label_value(key: str, value: Any) -> Any:
    if key == "temporal_decay":
        return 0.0 if value == OFF else float(value)
    if key == "mmr":
        return math.nan if value == OFF else float(value)
    return value


def grid_settings(config: Experiment, grid: dict[str, Any], tokenizers: Sequence[str]) -> list[Setting]:
    """Every setting of the grid: chunking, maxResults and candidateMultiplier outermost (they decide the
    legs), then tokenizer, temporal decay, MMR, fusion, weight and minScore; the configured value of each
    is always part of it, so "configured" is exactly what the user runs."""
    own_vw = float(config.fusion.params.get("vector_weight", 0.7))
    fusion_names = _with(grid.get("fusion") or [], config.fusion.name)
    weights = sorted(_with(weight_values(grid.get("vector_weight") or []), own_vw))
    ms_stage = _min_score_stage(config)
    min_scores = sorted(_with(weight_values(grid.get("min_score") or []),
                              float(ms_stage["min_score"]) if ms_stage else 0.0))
    fallback = (ms_stage or {}).get("keyword_fallback", "relaxed")
    relaxed_floor = (ms_stage or {}).get("relaxed_floor")
    base_post = [p for p in written_postprocess(config) if p.get("name") != "min_score"]
    fusion_params = grid.get("fusion_params", {})
    extra = extra_dimensions(config, grid)
    own = own_values(config)
    values = lambda key: extra.get(key, [own[key]])  # noqa: E731
    out = []
    for chunk_tokens, max_results, multiplier in product(values("chunk_tokens"), values("max_results"),
                                                         values("candidate_multiplier")):
        for tok in tokenizers:
            for half_life, lam in product(values("temporal_decay"), values("mmr")):
                post = with_mmr(with_decay(base_post, half_life), lam, config.preset)
                dims = {EXTRA_DIMENSIONS[k]: _label_value(k, v) for k, v in
                        (("chunk_tokens", chunk_tokens), ("max_results", max_results),
                         ("candidate_multiplier", multiplier), ("temporal_decay", half_life), ("mmr", lam))
                        if k in extra}
                for name in fusion_names:
                    params = dict(fusion_params.get(name, {}))
                    if name == config.fusion.name:
                        params = {**config.fusion.params, **params}
                    weighted = _accepts(name, "vector_weight")
                    for vw in (weights if weighted else [math.nan]):
                        if weighted:
                            params.update(vector_weight=vw, text_weight=round(1 - vw, 10))
                        table = {"name": name, **{k: v for k, v in params.items() if _accepts(name, k)}}
                        for ms in min_scores:
                            threshold = ms if (ms_stage is not None or ms) else None
                            out.append(Setting(
                                tok, table, threshold, fallback, post, {
                                    "tokenizer": tok, "fusion": name, "vector_weight": vw,
                                    "text_weight": round(1 - vw, 10) if weighted else math.nan, "min_score": ms,
                                    **dims},
                                relaxed_floor,
                                None if chunk_tokens == own["chunk_tokens"] else chunk_tokens,
                                None if max_results == own["max_results"] else max_results,
                                None if multiplier == own["candidate_multiplier"] else multiplier))
    return out


def _same(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def configured_index(settings: Sequence[Setting], config: Experiment) -> int:
    """The setting that is the experiment's own configuration."""
    ms_stage = _min_score_stage(config)
    own = (tokenizer_label(config.tokenizer.as_written()), config.fusion.name,
           float(ms_stage["min_score"]) if ms_stage else 0.0)
    vw = float(config.fusion.params.get("vector_weight", 0.7))
    dims = {EXTRA_DIMENSIONS[k]: _label_value(k, v) for k, v in own_values(config).items()}
    for i, s in enumerate(settings):
        weight = s.labels["vector_weight"]
        if (s.tokenizer, s.labels["fusion"], s.labels["min_score"]) == own and (weight != weight or weight == vw) \
                and all(_same(s.labels[c], dims[c]) for c in dims if c in s.labels):
            return i
    raise ValueError("the configured setting is not in the grid")  # grid_settings always adds it


def dimension_text(column: str, value: Any) -> str:
    """`decay off`, `decay 30 d`, `MMR 0.7`, `maxResults 8`: one value of an extra dimension in words."""
    if column == "half_life_days":
        return "decay off" if not value else f"decay {value:g} d"
    if column == "mmr_lambda":
        return "MMR off" if value != value else f"MMR {value:g}"
    names = {"max_results": "maxResults", "candidate_multiplier": "candidates x", "chunk_tokens": "chunks of"}
    return f"{names.get(column, column)} {value:g}"


def dimension_columns(frame: pd.DataFrame) -> list[str]:
    """The extra dimensions' columns a settings frame has."""
    return [c for c in EXTRA_DIMENSIONS.values() if c in frame.columns]


# --- the objective and the per-setting table -----------------------------------------------------------


@dataclass
class Objective:
    """The selection's per-query objective over the queries it counts."""

    matrix: np.ndarray  # settings x counted queries, 0/1
    query_ids: list[str]
    kinds: list[str]
    columns: np.ndarray  # positions of the counted queries among all the sweep's queries
    description: str = OBJECTIVE
    kind: str = "pass"  # one of OBJECTIVES
    weight: float = ABSTENTION_WEIGHT  # the abstention utility's weight of silence (kind "abstention")
    groups: list[str | None] = field(default_factory=list)  # per counted query: its cluster (None: alone)
    categories: list[object] = field(default_factory=list)  # per counted query: its category (LoCoMo), or None
    unit: str = "query"  # what the groups are (the data set's resampling unit)

    def clusters(self) -> list[str] | None:
        """Labels for the statistics: a query's cluster, or the query itself; None without clusters."""
        if not any(g is not None for g in self.groups):
            return None
        return [f"g:{g}" if g is not None else f"q:{q}" for q, g in zip(self.query_ids, self.groups)]


def objective_of(scores: SettingScores, queries: Sequence[Query], round_no: int | None, max_results: int,
                 kind: str = "pass", weight: float = ABSTENTION_WEIGHT, unit: str = "query") -> Objective:
    """kind "pass": suite queries of the round: pass; paraphrases: a relevant chunk among the returned ones;
    negatives: nothing returned.  kind "abstention": the same queries, the suite's too judged by a
    relevant chunk among the returned ones (answered correctly), each class weighted as the abstention
    utility states (harness.evaluation.abstention).  Suite queries outside the round do not count."""
    if kind not in OBJECTIVES:
        raise ConfigError(f"unknown sweep objective {kind!r}; one of {list(OBJECTIVES)}")
    columns, ids, kinds, rows, groups, categories = [], [], [], [], [], []
    for j, q in enumerate(queries):
        if q.kind == "suite" and q.in_suite(round_no):
            rows.append(scores.passed[:, j] if kind == "pass" else _found(scores, max_results)[:, j])
        elif q.kind == "paraphrase" and q.relevant:
            rows.append(_found(scores, max_results)[:, j])
        elif q.kind == "negative":
            rows.append(scores.returned[:, j] == 0)
        else:
            continue
        columns.append(j)
        ids.append(q.id)
        kinds.append(q.kind)
        groups.append(q.cluster)
        categories.append(q.extra.get("category"))
    matrix = np.column_stack(rows).astype(float) if rows else np.zeros((len(scores.settings), 0))
    categories = categories if any(c is not None for c in categories) else []
    if kind == "abstention" and rows:
        answerable = np.array([k != "negative" for k in kinds])
        matrix = utility_values(matrix, matrix, answerable, weight)
        return Objective(matrix, ids, kinds, np.array(columns, dtype=int), utility_description(weight), kind, weight,
                         groups, categories, unit)
    return Objective(matrix, ids, kinds, np.array(columns, dtype=int), groups=groups, categories=categories, unit=unit)


def _found(scores: SettingScores, max_results: int) -> np.ndarray:
    """A relevant chunk among each setting's returned hits (its own maxResults when the grid varies it)."""
    return scores.found if scores.found is not None else scores.hits[max_results]


def settings_frame(settings: Sequence[Setting], scores: SettingScores, queries: Sequence[Query],
                   objective: Objective, round_no: int | None, max_results: int,
                   cutoffs: Sequence[int]) -> pd.DataFrame:
    """One row per setting: its labels, the objective's mean and the counts it is made of, the
    chunk-level MRR/nDCG of the suite (labelled: the grid is scored on chunks; the headline rows of the
    report carry the record-level figures) and the score thresholds of the minScore table."""
    suite = np.array([q.kind == "suite" and q.in_suite(round_no) for q in queries])
    para = np.array([q.kind == "paraphrase" and bool(q.relevant) for q in queries])
    neg = np.array([q.kind == "negative" for q in queries])
    with np.errstate(all="ignore"):
        top1 = scores.top1_score
        suite_pass_top1 = np.where(suite & scores.passed, top1, np.inf).min(axis=1)
        neg_top1 = np.where(neg & (scores.returned > 0), top1, -np.inf).max(axis=1)
    n_suite = int(suite.sum())
    frame = pd.DataFrame([s.labels for s in settings])
    frame["objective"] = objective.matrix.mean(axis=1) if objective.matrix.shape[1] else np.nan
    frame["suite_queries"] = n_suite
    frame["passed"] = scores.passed[:, suite].sum(axis=1)
    frame["pass_rate"] = frame["passed"] / n_suite if n_suite else np.nan
    frame["paraphrase_hits"] = _found(scores, max_results)[:, para].sum(axis=1)
    frame["negatives_silent"] = (scores.returned[:, neg] == 0).sum(axis=1)
    frame["negative_false_recalls"] = (scores.returned[:, neg] > 0).sum(axis=1)
    frame[f"chunk_mrr@{max_results}"] = scores.reciprocal_rank[:, suite].mean(axis=1) if n_suite else np.nan
    for k in cutoffs:
        frame[f"chunk_ndcg@{k}"] = scores.ndcg[k][:, suite].mean(axis=1) if n_suite else np.nan
    if scores.judged is not None:  # pooled judgments: how much of each setting's top k carries a grade
        for k, share in scores.judged.items():
            if k in cutoffs or k == max_results:
                with np.errstate(all="ignore"):
                    values = share[:, suite] if n_suite else share
                    frame[f"judged@{k}"] = np.where(np.isnan(values).all(axis=1), np.nan,
                                                    np.nanmean(np.where(np.isnan(values), np.nan, values), axis=1)) \
                        if values.shape[1] else np.nan
    frame["suite_top1_min"] = np.where(np.isfinite(suite_pass_top1), suite_pass_top1, np.nan)
    frame["negative_top1_max"] = np.where(np.isfinite(neg_top1), neg_top1, np.nan)
    return frame


# --- the result ------------------------------------------------------------------------------------------


@dataclass
class SweepResult:
    experiment: str
    settings: pd.DataFrame
    grid: list[Setting]
    objective: Objective
    default_index: int
    best_index: int
    selection: SelectionTest
    cv: CrossValidation
    robustness: dict[str, Any]
    headline: dict[str, dict[str, Any]]  # configured / best (/ recommended): record-level summaries with CIs
    min_score_table: pd.DataFrame
    max_results: int
    tokenizer_tables: dict[str, dict[str, Any]]
    scores: SettingScores  # every setting's per-query figures (settings x queries of the data set)
    timings: dict[str, float] = field(default_factory=dict)
    holdout: dict[str, Any] | None = None
    release_limits: list[list[str]] = field(default_factory=list)  # per setting: what openclaw.json cannot express
    preset: str | None = None
    cv_options: dict[str, Any] = field(default_factory=dict)  # how `cv` was made: folds, groups (cv_options)
    unjudged: dict[str, Any] | None = None  # a setting not recommended because its top k is mostly unjudged
    cv_repeats: dict[str, Any] | None = None  # the held-out gain over repeated grouped splits (repeated_gains)

    @property
    def best(self) -> dict[str, Any]:
        return self.settings.loc[self.best_index].to_dict()

    @property
    def default(self) -> dict[str, Any]:
        return self.settings.loc[self.default_index].to_dict()

    @property
    def p_value(self) -> float:
        return self.selection.p_value

    @property
    def recommended(self) -> dict[str, Any] | None:
        return None if self.cv.recommended is None else self.settings.loc[self.cv.recommended].to_dict()


def run_sweep(config: Experiment, grid: dict[str, Any], *, embedder: Any = None, progress: bool = True,
              executor: Any = None, folds: int = FOLDS, holdout: Experiment | None = None,
              objective: str = "pass", abstention_weight: float = ABSTENTION_WEIGHT) -> SweepResult:
    """Search the legs once, score every setting of `grid`, select, test, cross-validate (`objective`:
    "pass", OBJECTIVE, or "abstention", harness.evaluation.abstention's utility); with a
    `holdout` configuration (another experiment: a held-out query set), score the recommended setting
    (or, without one, the in-sample best) against the configuration on it."""
    if objective not in OBJECTIVES:
        raise ConfigError(f"unknown sweep objective {objective!r}; one of {list(OBJECTIVES)}")
    t0 = time.perf_counter()
    round_no = config.evaluation.round
    tables = tokenizer_tables(config, grid)
    settings = grid_settings(config, grid, list(tables))
    legs = search_sweep_legs(config, tables, embedder=embedder, progress=progress,
                             needs=leg_needs(config, settings))
    cutoffs = checked_cutoffs(config.evaluation.cutoffs, legs.max_results, source=config.source)
    t_search = time.perf_counter()
    scores = score_grid(settings, legs, cutoffs, executor=executor, progress=progress)
    t_score = time.perf_counter()
    objective = objective_of(scores, legs.queries, round_no, legs.max_results, objective, abstention_weight, legs.unit)
    frame = settings_frame(settings, scores, legs.queries, objective, round_no, legs.max_results, cutoffs)
    configured = configured_index(settings, config)
    limits = release_limits(settings, config, tables)
    frame["openclaw_json"] = [not items for items in limits]  # the release's openclaw.json can set it as it is
    unit = objective.unit
    selection = max_statistic_test(objective.matrix, configured, clusters=objective.clusters(), unit=unit)
    frame["p_adjusted"] = selection.adjusted
    options = cv_options(objective, folds)
    cv = cross_validate(best_on_average(prefer=configured), None, objective.matrix, configured=configured, **options)
    from harness.evaluation.cross_validation import repeated_gains

    repeats = repeated_gains(best_on_average(prefer=configured), objective.matrix, configured=configured, **options)
    cv, unjudged = refuse_unjudged(cv, frame, cutoffs, legs.max_results, config.experiment_file)
    best = cv.in_sample_best
    t_stats = time.perf_counter()
    shown = {"configured": configured, "best": best}
    if cv.recommended is not None and int(cv.recommended) != best:
        shown["recommended"] = int(cv.recommended)
    headline = {name: margined_summary(settings[i], legs, cutoffs) for name, i in shown.items()}
    result = SweepResult(config.name or "sweep", frame, settings, objective, configured, best, selection, cv,
                         robustness(frame, objective, best, configured), headline,
                         min_score_table(frame, configured), legs.max_results, tables, scores,
                         release_limits=limits, preset=config.preset, cv_options=options, unjudged=unjudged,
                         cv_repeats=repeats)
    if holdout is not None:
        result.holdout = score_holdout(result, holdout, embedder=embedder, progress=progress)
    result.timings = {"search_s": t_search - t0, "fuse_and_score_s": t_score - t_search,
                      "statistics_s": t_stats - t_score, "total_s": time.perf_counter() - t0,
                      "settings": len(settings), "scorer": scores_path(settings),
                      "lexical_legs_cached": legs.cached_tokenizers}
    return result


def margined_summary(setting: Setting, legs: Any, cutoffs: Sequence[int]) -> dict[str, Any]:
    """headline_summary with each query's deciding margin (evaluation.reproduction): the report flags a gain
    that queries decided inside reproduction noise could erase."""
    from harness.evaluation.reproduction import deciding_margins

    frame, summary = headline_frame(setting, legs, cutoffs)
    return {**summary, "deciding_margins": deciding_margins(frame)}


def judged_column(frame: pd.DataFrame, cutoffs: Sequence[int], max_results: int) -> str | None:
    """The settings frame's judged@k column at the largest cut-off (None: the queries carry no pooled judgments)."""
    for k in sorted(set(cutoffs) | {max_results}, reverse=True):
        if f"judged@{k}" in frame.columns:
            return f"judged@{k}"
    return None


def refuse_unjudged(cv: CrossValidation, frame: pd.DataFrame, cutoffs: Sequence[int], max_results: int,
                    experiment_file: str | None) -> tuple[CrossValidation, dict[str, Any] | None]:
    """On pooled judgments, a setting whose top k is mostly unjudged (judged@k below MOSTLY_UNJUDGED) is not
    recommended: its figures count every chunk nobody graded as not relevant.  The verdict says so and names
    the command that adds its chunks to the pool (the sweep report writes the file for --extend)."""
    import dataclasses

    column = judged_column(frame, cutoffs, max_results)
    if column is None or cv.recommended is None:
        return cv, None
    share = float(frame.loc[cv.recommended, column])
    if share == share and share >= MOSTLY_UNJUDGED:
        return cv, None
    index = int(cv.recommended)
    experiment = experiment_file or "EXPERIMENT"
    reason = (f"keep the configuration: the best setting's top {column.split('@')[1]} is mostly unjudged "
                 f"({column} = {share:.2f} < {MOSTLY_UNJUDGED:g}), so its figures count chunks nobody graded as not "
                 f"relevant; judge them first: harness judge {experiment} --extend SWEEP_OUT/extend.toml, then "
                 "sweep again")
    return dataclasses.replace(cv, recommended=None, reason=reason), \
        {"setting": index, "column": column, "share": share, "experiment": experiment}


def cv_options(objective: Objective, folds: int = FOLDS) -> dict[str, Any]:
    """The cross-validation every sweep verdict uses: folds hold out whole groups (a T-query with its
    paraphrases, a conversation's questions), stratified by kind; leave-one-out (by group) when the suite
    is small (king78's 10-12 queries), whatever the paraphrases and negatives add."""
    small_suite = sum(k == "suite" for k in objective.kinds) <= LEAVE_ONE_OUT_MAX
    return dict(query_ids=objective.query_ids, kinds=objective.kinds, groups=objective.groups or None,
                unit=objective.unit, categories=objective.categories or None, folds=folds,
                leave_one_out_max=len(objective.query_ids) if small_suite else LEAVE_ONE_OUT_MAX,
                objective=objective.description)


def scores_path(settings: Sequence[Setting]) -> str:
    from harness.studies.sweep_scoring import fast_supported

    fast = sum(fast_supported(s) for s in settings)
    if fast == len(settings):
        return "fast (query x candidate arrays)"
    return "pipeline stages per setting" if not fast else \
        f"fast (query x candidate arrays) for {fast:,}, pipeline stages for {len(settings) - fast:,}"


def robustness(frame: pd.DataFrame, objective: Objective, best: int, configured: int) -> dict[str, Any]:
    """Which parts of the advice are robust and which are noise, by max-statistic tests on sub-grids:
    - the families (tokenizer x fusion x minScore, each at its best weight) whose best is statistically
      indistinguishable from the overall best (two-sided, family-wise alpha 0.05);
    - within the best setting's family, the weights indistinguishable from its best weight.
    A family's best is chosen on the same queries, so "indistinguishable" is generous to the families;
    what stays distinguishable is robustly worse."""
    family_of = frame["tokenizer"].astype(str) + " | " + frame["fusion"].astype(str) + " | " + \
        frame["min_score"].map("{:g}".format)
    for column in dimension_columns(frame):  # the other dimensions the grid varies: a family holds them fixed
        if frame[column].nunique(dropna=False) > 1:
            family_of = family_of + " | " + frame[column].map(lambda v, c=column: dimension_text(c, v))
    means = objective.matrix.mean(axis=1) if objective.matrix.shape[1] else np.zeros(len(frame))
    family_best = {}
    for family, rows in frame.groupby(family_of, sort=False).groups.items():
        rows = list(rows)
        family_best[family] = rows[best_index(means[rows], prefer=rows.index(configured) if configured in rows
                                              else rows.index(best) if best in rows else None)]
    bests = list(family_best.values())
    out: dict[str, Any] = {"alpha": ALPHA, "families": len(bests)}
    if objective.matrix.shape[1] == 0:
        return out
    reference = bests.index(family_best[family_of[best]])
    clusters = dict(clusters=objective.clusters(), unit=objective.unit)
    across = max_statistic_test(objective.matrix[bests], reference, alternative="two-sided", **clusters)
    out["families_indistinguishable_from_best"] = [
        {"family": family, "setting": int(i), "objective": float(means[i]), "p_adjusted": float(p)}
        for (family, i), p in zip(family_best.items(), across.adjusted) if p >= ALPHA]
    out["families_method"] = across.method
    rows = list(frame.index[family_of == family_of[best]])
    within = max_statistic_test(objective.matrix[rows], rows.index(best), alternative="two-sided", **clusters)
    equivalent = [rows[j] for j, p in enumerate(within.adjusted) if p >= ALPHA]
    weights = sorted(float(frame.loc[i, "vector_weight"]) for i in equivalent
                     if frame.loc[i, "vector_weight"] == frame.loc[i, "vector_weight"])
    out["best_family"] = family_of[best]
    out["weights_indistinguishable_from_best"] = weights
    out["weights_method"] = within.method
    return out


def min_score_table(settings: pd.DataFrame, configured: int) -> pd.DataFrame:
    """At the configured fusion/tokenizer/weights: suite passes and negatives answered for each minScore,
    plus the thresholds that would separate them (between the weakest passing suite top-1 and the
    strongest negative top-1)."""
    default = settings.loc[configured]
    same = settings[(settings["fusion"] == default["fusion"]) & (settings["tokenizer"] == default["tokenizer"])
                    & ((settings["vector_weight"] == default["vector_weight"])
                       | settings["vector_weight"].isna())]
    for column in dimension_columns(settings):
        same = same[(same[column] == default[column]) | (same[column].isna() & pd.isna(default[column]))]
    return same[["min_score", "passed", "negative_false_recalls", "paraphrase_hits",
                 "suite_top1_min", "negative_top1_max"]].sort_values("min_score").reset_index(drop=True)


def setting_tables(setting: dict[str, Any]) -> dict[str, Any]:
    """A settings row as the experiment tables it stands for (for openclaw_snippet and --holdout)."""
    tables: dict[str, Any] = {"fusion": {"name": setting["fusion"]}}
    if not (isinstance(setting["vector_weight"], float) and math.isnan(setting["vector_weight"])):
        tables["fusion"].update(vector_weight=setting["vector_weight"], text_weight=setting["text_weight"])
    tables["postprocess"] = [{"name": "min_score", "min_score": setting["min_score"]}]
    tables["tokenizer"] = {"name": setting["tokenizer"].split("(")[0]}
    return tables


def grid_tables(setting: Setting, config: Experiment | dict[str, Any],
                tokenizers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The experiment tables a grid setting stands for, whole: its fusion, tokenizer, every post-processing
    stage (a stage it lacks is off), [search] and the chunking budget when it differs.  `config` may be the
    configuration a sweep document records (report writers hold that)."""
    if not isinstance(config, Experiment):
        config = Experiment.from_written(config)
    post = [dict(p) for p in setting.post]
    if setting.min_score is not None:
        post.append({"name": "min_score", "min_score": setting.min_score})
    tables: dict[str, Any] = {"fusion": dict(setting.fusion), "postprocess": post,
                              "tokenizer": dict(tokenizers.get(setting.tokenizer, {"name": setting.tokenizer})),
                              "search": {"max_results": setting.results(config),
                                         "candidate_multiplier": int(setting.candidate_multiplier or
                                                                     config.search.candidate_multiplier)}}
    if setting.chunk_tokens is not None:
        tables["chunker"] = {"tokens": setting.chunk_tokens}
    return tables


def release_limits(settings: Sequence[Setting], config: Experiment,
                   tokenizers: dict[str, dict[str, Any]]) -> list[list[str]]:
    """Per setting, what the openclaw.json of the release the preset models cannot express (empty: the
    setting can be pasted as it is; harness.inputs.openclaw_releases)."""
    from harness.inputs.openclaw_config import openclaw_snippet

    preset = config.preset
    own_options = dict(config.tokenizer.params)
    seen: dict[str, list[str]] = {}
    out = []
    for s in settings:
        tables = grid_tables(s, config, tokenizers)
        key = json.dumps(tables, sort_keys=True, default=str)
        if key not in seen:
            cannot = openclaw_snippet(tables, preset=preset, complete_postprocess=True)[1]
            options = {k: v for k, v in tables["tokenizer"].items() if k != "name"}
            renamed = tables["tokenizer"].get("name") != config.tokenizer.name  # the release's own of that name
            if not renamed and options != own_options and not any(c.startswith("tokenizer") for c in cannot):
                cannot.append(f"tokenizer options {s.tokenizer} (openclaw.json names the tokenizer only)")
            seen[key] = cannot
        out.append(seen[key])
    return out


def label(row: dict[str, Any]) -> str:
    weights = "" if row["vector_weight"] != row["vector_weight"] else \
        f" {row['vector_weight']:g}/{row['text_weight']:g}"
    text = f"{row['tokenizer']}, {row['fusion']}{weights}, minScore {row['min_score']:g}"
    for column in ("half_life_days", "mmr_lambda", "max_results", "candidate_multiplier", "chunk_tokens"):
        if column in row and row[column] is not None:
            text += ", " + dimension_text(column, row[column])
    return text


def score_holdout(result: SweepResult, config: Experiment, *, embedder: Any = None,
                  progress: bool = True) -> dict[str, Any]:
    """`harness sweep --holdout FILE`: the sweep's recommendation scored on a query set it never saw.

    The held-out experiment (e.g. experiments/cmrc2018-trial.toml beside cmrc2018-dev.toml) gets its own
    legs; the recommended setting (or, when the sweep recommends nothing, its in-sample best, marked as
    such) and the configured setting are applied to them as they were applied in the sweep, and compared
    query by query: the objective's gain with a paired bootstrap interval and sign-flip test, and the
    record-level Recall/MRR/nDCG of both with intervals and Holm-corrected paired tests."""
    chosen_index = result.cv.recommended if result.cv.recommended is not None else result.best_index
    which = "recommended setting" if result.cv.recommended is not None else "in-sample best (not recommended)"
    configured, chosen = result.grid[result.default_index], result.grid[chosen_index]
    tables = {label: table for label, table in result.tokenizer_tables.items()
              if label in (configured.tokenizer, chosen.tokenizer)}
    legs = search_sweep_legs(config, tables, embedder=embedder, progress=progress,
                             needs=leg_needs(config, [configured, chosen]))
    source = config.experiment_file or "<holdout>"
    cutoffs = checked_cutoffs(config.evaluation.cutoffs, legs.max_results, source=source)
    scores = score_grid([configured, chosen], legs, cutoffs)
    round_no = config.evaluation.round
    objective = objective_of(scores, legs.queries, round_no, legs.max_results, result.objective.kind,
                             result.objective.weight, legs.unit)
    base, tuned = objective.matrix[0], objective.matrix[1]
    at_unit = dict(clusters=objective.clusters(), unit=objective.unit)
    paired = paired_difference(tuned, base, **at_unit)
    gain, test = paired.interval, paired.test
    clusters = dict(zip(objective.query_ids, objective.clusters() or objective.query_ids))
    frames, headline = {}, {}
    from harness.evaluation.reproduction import deciding_margins

    for name, setting in (("configured", configured), ("chosen", chosen)):
        frames[name], headline[name] = headline_frame(setting, legs, cutoffs)
        headline[name]["deciding_margins"] = deciding_margins(frames[name])
    metrics = [f"{m}@{k}" for k in cutoffs for m in ("recall", "mrr", "ndcg")]
    family = []  # chosen vs configured on every metric: one Holm family, which each row's method names
    for metric in metrics:
        columns = {name: dict(zip(f[f["in_suite"]]["query_id"], f[f["in_suite"]][metric].astype(float)))
                   for name, f in frames.items()}
        family += column_pairs(columns, pairs=[("chosen", "configured")], clusters=clusters, unit=objective.unit,
                               tags={"metric": metric})
    differences = comparison_rows(family)
    return {"experiment": config.name or source, "file": source, "which": which,
            "setting": label(result.settings.loc[chosen_index].to_dict()),
            "configured": label(result.settings.loc[result.default_index].to_dict()),
            "queries": int(len(base)), "objective": objective.description,
            "configured_mean": float(np.mean(base)) if len(base) else float("nan"),
            "chosen_mean": float(np.mean(tuned)) if len(tuned) else float("nan"),
            "gain": gain.as_dict(), "p_value": test.p_value, "p_floor": test.floor, "monte_carlo": test.monte_carlo,
            "units": test.units, "unit": test.unit, "method": test.method, "cutoffs": cutoffs,
            "headline": headline, "differences": differences,
            # the values behind `gain` (issue 37: re-derivable from the report alone)
            "per_query": {"query_ids": list(objective.query_ids), "clusters": objective.clusters(),
                          "configured": base.tolist(), "chosen": tuned.tolist()}}
