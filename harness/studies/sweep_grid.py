"""A sweep's grid: the grid file, every setting it expands into over an experiment, and what each setting
stands for (its experiment tables, what the release's openclaw.json cannot express, its label).

The engine that searches the legs once and scores these settings is harness.studies.sweep; this module
only says which settings there are:

    >>> config = load_experiment("experiments/round3.toml")
    >>> grid = load_grid("experiments/sweep.toml")
    >>> settings = grid_settings(config, grid, list(tokenizer_tables(config, grid)))
    >>> settings[configured_index(settings, config)]      # the experiment's own configuration
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from itertools import product
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from harness.config import Experiment, load_toml
from harness.errors import ConfigError
from harness.stages.fusion import FUSIONS
from harness.stages.tokenizers import TOKENIZERS
from harness.studies.spec.models import OFF, Grid, weight_values
from harness.studies.sweep_scoring import Setting
from harness.inputs.layout import project_path
from harness.studies.spec import validated
from harness.inputs.openclaw_config import MMR_TOKENS
from harness.inputs.openclaw_config import openclaw_snippet

# the settings frame's columns for these, present when the grid varies them or the configuration has the stage
EXTRA_DIMENSIONS = {"chunk_tokens": "chunk_tokens", "max_results": "max_results",
                    "candidate_multiplier": "candidate_multiplier", "temporal_decay": "half_life_days",
                    "mmr": "mmr_lambda"}

def default_grid(config: Experiment) -> Path:
    """`harness sweep`'s grid when none is given: experiments/sweep-openclaw.toml (the settings openclaw.json
    has keys for: weights, tokenizer, minScore, temporal decay, MMR) for an OpenClaw workspace experiment,
    experiments/sweep.toml (weights x fusions x tokenizers x minScores) otherwise."""
    workspace = config.dataset is not None and config.dataset.name == "workspace"
    return project_path("experiments/sweep-openclaw.toml" if workspace else "experiments/sweep.toml")


def load_grid(path: Path | str | None) -> Grid:
    """The [grid] table of a grid file, typed (harness.studies.spec.models.Grid: a dimension the file
    leaves out takes the model's default); its shape and number ranges are checked by the model, so a bad
    grid is one error naming the file and key before any leg is searched.  None: the defaults alone."""
    if path is None:
        return Grid()

    return validated("grid", load_toml(path, "grid file"), path).grid



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


def tokenizer_tables(config: Experiment, grid: Grid) -> dict[str, dict[str, Any]]:
    """label -> tokenizer table of the grid, the experiment's own first when the grid lacks it."""
    tables = list(grid.tokenizer or [])
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


def extra_dimensions(config: Experiment, grid: Grid) -> dict[str, list[Any]]:
    """Each extra dimension's values (the configuration's own included), for the dimensions the grid
    varies or whose stage the configuration has."""
    own = own_values(config)
    out: dict[str, list[Any]] = {}
    for key in EXTRA_DIMENSIONS:
        spec = grid.values(key)
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


def grid_settings(config: Experiment, grid: Grid, tokenizers: Sequence[str]) -> list[Setting]:
    """Every setting of the grid: chunking, maxResults and candidateMultiplier outermost (they decide the
    legs), then tokenizer, temporal decay, MMR, fusion, weight and minScore; the configured value of each
    is always part of it, so "configured" is exactly what the user runs."""
    own_vw = float(config.fusion.params.get("vector_weight", 0.7))
    fusion_names = _with(grid.fusion or [], config.fusion.name)
    weights = sorted(_with(weight_values(grid.values("vector_weight") or []), own_vw))
    ms_stage = _min_score_stage(config)
    min_scores = sorted(_with(weight_values(grid.values("min_score") or []),
                              float(ms_stage["min_score"]) if ms_stage else 0.0))
    fallback = (ms_stage or {}).get("keyword_fallback", "relaxed")
    relaxed_floor = (ms_stage or {}).get("relaxed_floor")
    base_post = [p for p in written_postprocess(config) if p.get("name") != "min_score"]
    fusion_params = grid.fusion_params or {}
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
