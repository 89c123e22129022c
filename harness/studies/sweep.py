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

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from harness.config import Experiment
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
from harness.studies.spec.models import Grid
from harness.studies.sweep_grid import (  # grid_tables and label: also read from here by harness.reporting.sweep
    configured_index,
    dimension_columns,
    dimension_text,
    grid_settings,
    grid_tables,
    label,
    release_limits,
    tokenizer_tables,
)
from harness.studies.sweep_scoring import (
    Setting,
    headline_frame,
    leg_needs,
    score_grid,
    search_sweep_legs,
)
from harness.evaluation.cross_validation import repeated_gains
from harness.evaluation.reproduction import deciding_margins
from harness.studies.sweep_scoring import fast_supported

OBJECTIVE = ("per query: 1 when a suite query passes (top-1 relevant and >= minScore), when a paraphrase's "
             "record is among the returned chunks, when a negative query returns nothing; else 0")
OBJECTIVES = ("pass", "abstention")  # `harness sweep --objective`: OBJECTIVE, or harness.evaluation.abstention's U
ALPHA = 0.05
MOSTLY_UNJUDGED = 0.5  # below this judged@k a setting is not recommended: its figures rest on unjudged chunks


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


def run_sweep(config: Experiment, grid: Grid, *, embedder: Any = None, progress: bool = True,
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
