"""Experiment configuration: a TOML file names a preset (a TOML file of stages) and overrides tables.

    name = "round4"
    preset = "openclaw-2026.02"          # experiments/presets/openclaw-2026.02.toml
    [dataset]  name = "king78"  path = "datasets/king78"
    [layout]   daily_logs = false  combined = false  records = "all"  keywords = true  tags = true
    [evaluation] round = 4

Merging is by table: a table in the experiment updates the preset's table key by key; a stage table
whose `name` differs from the preset's replaces it whole; `postprocess` (a list) replaces the list.  An
OpenClaw workspace's openclaw.json, read at every load, sits between the two (harness.inputs.workspace_config).
"""
from __future__ import annotations

import copy
import dataclasses
import tomllib
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator

from harness.bundled import bundled_dir
from harness.errors import ConfigError
from harness.inputs.layout import project_path
from harness.registry import format_validation_error, stage

NEAR_TIE = 0.001  # the absolute near-tie threshold of results written before it became relative
NEAR_TIE_FRACTION = 0.0025  # a margin below this share of the query's fused-score spread is a near tie

PRESETS_DIR = bundled_dir("experiments") / "presets"  # experiments/presets/ of the repository, shipped in the wheel

STAGE_TABLES = ("chunker", "tokenizer", "lexical", "embedder", "vector", "fusion")
# absent from every preset: query expansion; the LLM it (or a summarizer) asks; a reranker (stages that
# rerank fall back without one)
OPTIONAL_STAGE_TABLES = ("expansion", "chat", "reranker")
KNOWN_KEYS = {"name", "description", "preset", "dataset", "layout", "evaluation", "search", "postprocess",
              "profile", *STAGE_TABLES, *OPTIONAL_STAGE_TABLES}



def load_toml(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such experiment file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def preset_path(name: str) -> Path:
    path = Path(name)
    if path.suffix == ".toml" and path.exists():
        return path
    candidate = PRESETS_DIR / f"{name}.toml"
    if not candidate.exists():
        available = sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))
        raise ConfigError(f"unknown preset {name!r}; available: {', '.join(available)}")
    return candidate


def list_presets() -> dict[str, str]:
    return {p.stem: load_toml(p).get("description", "").strip().splitlines()[0]
            for p in sorted(PRESETS_DIR.glob("*.toml"))}


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if key in (*STAGE_TABLES, *OPTIONAL_STAGE_TABLES) and isinstance(value, dict) and value.get("name", out.get(key, {}).get("name")) \
                != out.get(key, {}).get("name"):
            out[key] = copy.deepcopy(value)  # a different implementation: its parameters start afresh
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _check_keys(cfg: dict[str, Any], source: str) -> None:
    unknown = sorted(set(cfg) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {unknown}; known: {sorted(KNOWN_KEYS)}")
    for table in (*STAGE_TABLES, *OPTIONAL_STAGE_TABLES):
        if table in cfg and not isinstance(cfg[table], dict):
            raise ConfigError(f"{source}: [{table}] must be a table")
    if "postprocess" in cfg and not isinstance(cfg["postprocess"], list):
        raise ConfigError(f"{source}: postprocess must be an array of tables ([[postprocess]])")


@stage
class SearchSettings:
    """[search]: what memory_search is asked for."""

    max_results: int = Field(6, ge=1)
    """maxResults: hits returned per query"""
    candidate_multiplier: int = Field(4, ge=1)
    """candidates per leg = max_results x this (capped at 200, as OpenClaw does)"""


@stage
class EvaluationSettings:
    """[evaluation]: how a run is judged and reported."""

    round: int | None = Field(None, ge=1, le=4)
    """king78 round: which T-queries are in the suite (all suite queries when unset)"""
    cutoffs: list[Annotated[int, Field(ge=1)]] | None = None
    """metric cut-offs k (default: [max_results]; none may exceed [search] max_results)"""
    evidence_cutoffs: list[Annotated[int, Field(ge=1)]] | None = None
    """cut-offs of recall_any@k / recall_all@k (evidence metrics), in returned chunks"""
    now: str | datetime | date | None = None
    """reference time for temporal stages ("2026-02-23" or a TOML datetime)"""
    near_tie_fraction: float = Field(NEAR_TIE_FRACTION, ge=0, le=1, allow_inf_nan=False)
    """a margin below this share of the query's fused-score spread is a near tie"""
    near_tie: float | None = Field(None, ge=0, allow_inf_nan=False)
    """an absolute near-tie threshold instead of the relative one (in the final score's units)"""
    report_purity: bool = True
    """report whether the top-1 chunk is pure (off when targets overlap by design)"""
    context: dict[str, Any] | None = None
    """how results count in the agent's context: {snippet, estimator, budgets} (evaluation/context_budget.py)"""
    redact: bool = False
    """mask numbers, e-mail addresses, URLs and key-like strings of the user's text in reports and pages"""

    @field_validator("context")
    @classmethod
    def _context_settings(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            from harness.evaluation.context_budget import ContextSettings

            ContextSettings(**value)  # a wrong key or value names itself here, with the file and table
        return value


@stage
class ProfileSettings:
    """[profile]: the machine profile a run is held to (see harness.profiles)."""

    name: Literal["laptop", "vps"] = "laptop"
    """"laptop" (no cap) or "vps" (3.8 GiB address-space cap, 2 threads)"""
    memory_cap_gib: float | None = Field(None, gt=0, allow_inf_nan=False)
    """override the profile's memory cap (GiB)"""
    threads: int | None = Field(None, ge=1)
    """override the profile's thread count"""


SETTINGS_TABLES = {"search": SearchSettings, "evaluation": EvaluationSettings, "profile": ProfileSettings}


def check_settings(config: dict[str, Any], source: str) -> None:
    """Validate the non-stage tables ([search], [evaluation], [profile]) by their typed declarations;
    errors name the file, table and key.  The dictionaries themselves are left as written, so a
    results file records exactly what the experiment said."""
    for table, model in SETTINGS_TABLES.items():
        if table not in config:
            continue
        if not isinstance(config[table], dict):
            raise ConfigError(f"{source}: [{table}] must be a table")
        try:
            model(**config[table])
        except ValidationError as exc:
            known = [f.name for f in dataclasses.fields(model)]
            raise ConfigError(format_validation_error(exc, f"{source} [{table}]", f"[{table}]", known)) from None


def resolve(experiment: dict[str, Any], *, preset: str | None = None, source: str = "<experiment>") -> dict[str, Any]:
    """Experiment dict (+ optional preset override) -> the full configuration of a run."""
    _check_keys(experiment, source)
    preset_name = preset or experiment.get("preset")
    config: dict[str, Any] = {}
    if preset_name:
        ppath = preset_path(preset_name)
        preset_cfg = load_toml(ppath)
        _check_keys(preset_cfg, str(ppath))
        config = {k: v for k, v in preset_cfg.items() if k not in ("name", "description")}
        config["preset"] = ppath.stem
        config["preset_description"] = preset_cfg.get("description", "").strip()
    body = {k: v for k, v in experiment.items() if k != "preset"}
    from harness.inputs.workspace_config import (
        openclaw_layer,  # a workspace follows its openclaw.json as it is now
    )

    layer = openclaw_layer(body, preset_name, source)
    if layer is not None and layer.follow:
        config = merge(config, layer.tables)
    config = merge(config, body)
    if layer is not None:
        config["openclaw_json"] = layer.record(config)
    for table in STAGE_TABLES:
        if table not in config or "name" not in config[table]:
            raise ConfigError(f"{source}: [{table}] needs a name (set it or name a preset)")
    for table in OPTIONAL_STAGE_TABLES:
        if table in config and "name" not in config[table]:
            raise ConfigError(f"{source}: [{table}] needs a name (e.g. name = \"http\")")
    config.setdefault("search", {})
    config["search"].setdefault("max_results", 6)
    config["search"].setdefault("candidate_multiplier", 4)
    config.setdefault("postprocess", [])
    config.setdefault("evaluation", {})
    check_settings(config, source)
    return config


def load_experiment(path: Path | str, *, preset: str | None = None, **overrides: Any) -> dict[str, Any]:
    """An experiment file, resolved as the CLI resolves it: a relative path is read from the working
    directory, else from the files the harness ships (`experiments/round3.toml` works outside a clone)."""
    path = project_path(path)
    experiment = load_toml(path)
    experiment = merge(experiment, overrides) if overrides else experiment
    config = resolve(experiment, preset=preset, source=str(path))
    config.setdefault("name", Path(path).stem)
    config["experiment_file"] = str(Path(path))
    return config


SETTABLE_TABLES = {*STAGE_TABLES, *OPTIONAL_STAGE_TABLES, "dataset", "layout", "evaluation", "search", "profile"}


def parse_assignments(items: list[str] | None) -> dict[str, Any]:
    """`--set TABLE.KEY=VALUE` strings -> nested overrides for load_experiment / run_ablation.

    VALUE is read as a TOML value when it is one (0.5, true, [6, 10], "text"), else kept as a plain
    string, so `--set embedder.name=openai-compatible` needs no quotes:

    >>> parse_assignments(["fusion.vector_weight=0.5", "embedder.name=openai-compatible"])
    {'fusion': {'vector_weight': 0.5}, 'embedder': {'name': 'openai-compatible'}}
    """
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        path = [part.strip() for part in key.split(".")]
        if not sep or len(path) < 2 or not all(path):
            raise ConfigError(f"--set {item!r}: expected TABLE.KEY=VALUE, e.g. fusion.vector_weight=0.5")
        if path[0] not in SETTABLE_TABLES:
            raise ConfigError(f"--set {item!r}: unknown table {path[0]!r}; one of {sorted(SETTABLE_TABLES)}")
        try:
            value = tomllib.loads(f"v = {raw.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw.strip()
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {item!r}: {part!r} was already set to a value, not a table")
        node[path[-1]] = value
    return out
