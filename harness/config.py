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

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
)

from harness.errors import ConfigError, DataError
from harness.evaluation.ties import NEAR_TIE, NEAR_TIE_FRACTION  # noqa: F401  (NEAR_TIE: studies read it here)
from harness.inputs.file_relative import experiment_paths
from harness.inputs.layout import project_path
from harness.registry import format_validation_error, stage
from harness.text_files import parse_bounded, shown
# list_presets and PRESETS_DIR re-exported: `harness presets` and the conformance spec table read them here
from harness.toml_files import PRESETS_DIR, list_presets, load_toml, preset_path  # noqa: F401

RECORD_KEYS = ("preset_description", "experiment_file", "openclaw_json")  # what resolution adds to the tables
STAGE_TABLES = ("chunker", "tokenizer", "lexical", "embedder", "vector", "fusion")
# absent from every preset: query expansion; the LLM it (or a summarizer) asks; a reranker (stages that
# rerank fall back without one)
OPTIONAL_STAGE_TABLES = ("expansion", "chat", "reranker")
KNOWN_KEYS = {"name", "description", "preset", "dataset", "layout", "evaluation", "search", "postprocess",
              "profile", "system", *STAGE_TABLES, *OPTIONAL_STAGE_TABLES}  # system: a real system (studies/real_system.py)



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


def _name_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__} {value!r}"
    if not value.strip():
        return "must not be empty"
    return None


def _check_keys(cfg: dict[str, Any], source: str) -> None:
    """The shape of an experiment or preset file: known tables, each a table, names non-empty strings."""
    unknown = sorted(set(cfg) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {unknown}; known: {sorted(KNOWN_KEYS)}")
    for key in ("name", "preset"):
        if key in cfg and (problem := _name_problem(cfg[key])) is not None:
            raise ConfigError(f"{source} {key}: {problem}" + (" (a preset name such as \"openclaw-2026.08\", see "
                                                              "`harness presets`, or a .toml path)" if key == "preset"
                                                              else " (it names the results)"))
    if "description" in cfg and not isinstance(cfg["description"], str):
        raise ConfigError(f"{source} description: must be a string")
    for table in (*STAGE_TABLES, *OPTIONAL_STAGE_TABLES, "dataset", "layout", *SETTINGS_TABLES):
        if table in cfg and not isinstance(cfg[table], dict):
            raise ConfigError(f"{source}: [{table}] must be a table, got {type(cfg[table]).__name__}")
        if table in cfg and "name" in cfg[table] and table not in ("layout", "search", "evaluation", "profile") \
                and (problem := _name_problem(cfg[table]["name"])) is not None:
            raise ConfigError(f"{source} [{table}] name: {problem}")
    if "postprocess" in cfg:
        stages = cfg["postprocess"]
        if not isinstance(stages, list):
            raise ConfigError(f"{source}: postprocess must be an array of tables ([[postprocess]])")
        seen: dict[str, int] = {}
        for i, entry in enumerate(stages, start=1):
            if not isinstance(entry, dict):
                raise ConfigError(f"{source} [[postprocess]] #{i}: must be a table, got {type(entry).__name__}")
            if "name" not in entry:
                raise ConfigError(f"{source} [[postprocess]] #{i}: needs a name (e.g. name = \"min_score\"; "
                                  "`harness stages postprocess` lists them)")
            if (problem := _name_problem(entry["name"])) is not None:
                raise ConfigError(f"{source} [[postprocess]] #{i} name: {problem}")
            if entry["name"] in seen:
                raise ConfigError(f"{source} [[postprocess]] #{i} name: {entry['name']!r} is already stage "
                                  f"#{seen[entry['name']]}; each post-processing stage runs once (keep one table)")
            seen[entry["name"]] = i


@stage
class SearchSettings:
    """[search]: what memory_search is asked for."""

    max_results: int = Field(6, ge=1, le=1_000_000)
    """maxResults: hits returned per query (1 to 1,000,000, the largest cut-off trec_eval takes)"""
    candidate_multiplier: int = Field(4, ge=1)
    """candidates per leg = max_results x this (capped at 200, as OpenClaw does)"""
    candidates: int | None = Field(None, ge=1, le=200)
    """a fixed number of candidates per leg instead, whatever max_results (OpenClaw 2026.9.x ranks a
    universe of 200 per leg and then keeps max_results)"""


@stage
class EvaluationSettings:
    """[evaluation]: how a run is judged and reported."""

    round: int | None = Field(None, ge=1, le=4)
    """king78 round: which T-queries are in the suite (all suite queries when unset)"""
    cutoffs: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1)] | None = None
    """metric cut-offs k (default: [max_results]; none may exceed [search] max_results)"""
    evidence_cutoffs: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1)] | None = None
    """cut-offs of recall_any@k / recall_all@k (evidence metrics), in returned chunks"""
    now: str | datetime | date | None = None
    """reference time for temporal stages ("2026-02-23" or a TOML datetime)"""
    replay: Literal["one-date", "as-asked"] = "one-date"
    """when each question is searched: "one-date" = every question at `now`; "as-asked" = each question at the
    time it was asked (its `asked` field, mined queries carry it; `now` for one without), on the files as of
    then where the workspace's own git history has them (else today's, said why), and the one-date figures
    beside (questions whose outcome differs named)"""
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

    @field_validator("now")
    @classmethod
    def _a_real_time(cls, value: Any) -> Any:
        if value is not None:
            # local, as the two imports below: the stages and openclaw.json's readers are more than a command
            # that only reads a configuration (the gate) may load (tests/bench_startup.py)
            from harness.stages.postprocess.base import as_utc_datetime

            as_utc_datetime(value, "now")  # "2026-02-30" or "yesterday": refused here, named with the file
        return value

    @field_validator("context")
    @classmethod
    def _context_settings(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            # local: context_budget imports pandas, which a command that only reads a configuration (the
            # gate, tests/test_startup_imports.py) must not pay for
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
    threads: int | None = Field(None, ge=1, le=256)
    """override the profile's thread count (1-256)"""


@stage
class SystemSettings:
    """[system]: run a real system instead of the preset's pipeline (harness/studies/real_system.py)."""

    name: Literal["openclaw", "memory-lancedb-pro"]
    """the real system: "openclaw" (memory-lancedb-pro is not on the npm registry: a clear error)"""
    version: str = Field(min_length=1)
    """the release, e.g. "2026.9.6" (installed from the npm registry on first use)"""
    timeout_s: float = Field(3600.0, gt=0, allow_inf_nan=False)
    """seconds one workspace may take (indexing and every query)"""


SETTINGS_TABLES = {"search": SearchSettings, "evaluation": EvaluationSettings, "profile": ProfileSettings,
                   "system": SystemSettings}


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


class StageTable(BaseModel):
    """A stage table of an experiment: the registered implementation's name and its parameters (checked by
    the registry when the stage is built; the table's `name` is not among them)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # built on first use: imports stay cheap

    name: str
    params: dict[str, Any] = {}
    _written: dict[str, Any] | None = PrivateAttr(default=None)

    @classmethod
    def of(cls, table: dict[str, Any]) -> StageTable:
        out = cls(name=table["name"], params={k: v for k, v in table.items() if k != "name"})
        out._written = copy.deepcopy(table)
        return out

    def as_written(self) -> dict[str, Any]:
        """The table as the experiment wrote it (key order included): what a record or a cache key holds."""
        return copy.deepcopy(self._written) if self._written is not None else {"name": self.name,
                                                                              **copy.deepcopy(self.params)}


class Experiment(BaseModel):
    """The full configuration of a run, typed: load_experiment / resolve return it.  The tables it was made
    from are kept as written (key order included), since a results file records the configuration exactly
    as the experiment said: `as_written()` is the one way back to them.  A variant is
    `with_overrides({...})`, merged as a preset is and validated again."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, extra="forbid", defer_build=True)

    name: str | None = None
    description: str | None = None
    preset: str | None = None
    preset_description: str | None = None
    dataset: StageTable | None = None  # absent: the king78 rounds (pipeline.load_dataset)
    layout: dict[str, Any] = {}  # the data set's render options, checked by the data set (pipeline.render_layout)
    evaluation: EvaluationSettings
    search: SearchSettings
    postprocess: tuple[StageTable, ...] = ()
    profile: ProfileSettings | None = None
    system: SystemSettings | None = None
    chunker: StageTable
    tokenizer: StageTable
    lexical: StageTable
    embedder: StageTable
    vector: StageTable
    fusion: StageTable
    expansion: StageTable | None = None
    chat: StageTable | None = None
    reranker: StageTable | None = None
    experiment_file: str | None = None
    openclaw_json: dict[str, Any] | None = None  # what the workspace's openclaw.json set (a record)
    _written: dict[str, Any] = PrivateAttr(default_factory=dict)

    @classmethod
    def from_written(cls, config: dict[str, Any], source: str = "<experiment>") -> Experiment:
        """A resolved configuration (the dict results files record) -> the typed experiment; every table
        is checked as resolve checks it, so an error names the source, table and key."""
        _check_keys({k: v for k, v in config.items() if k not in RECORD_KEYS}, source)
        _check_stage_names(config, source)
        check_settings(config, source)
        stages = {t: StageTable.of(config[t]) for t in (*STAGE_TABLES, *OPTIONAL_STAGE_TABLES) if config.get(t)}
        experiment = cls(
            **{k: config[k] for k in ("name", "description", "preset", "preset_description", "experiment_file",
                                      "openclaw_json") if config.get(k) is not None},
            **stages,
            dataset=StageTable.of(config["dataset"]) if "dataset" in config else None,
            layout=dict(config.get("layout", {})),
            evaluation=EvaluationSettings(**config.get("evaluation", {})),
            search=SearchSettings(**config.get("search", {})),
            postprocess=tuple(StageTable.of(p) for p in config.get("postprocess", [])),
            profile=ProfileSettings(**config["profile"]) if "profile" in config else None,
            system=SystemSettings(**config["system"]) if "system" in config else None,
        )
        experiment._written = copy.deepcopy(config)
        return experiment

    def as_written(self) -> dict[str, Any]:
        """The configuration as the experiment (with its preset and overrides) wrote it: what results record."""
        return copy.deepcopy(self._written)

    def with_overrides(self, overrides: dict[str, Any]) -> Experiment:
        """A variant: `overrides` merged into the written tables as into a preset (a stage table of another
        name replaces the table, a list replaces the list), then validated again."""
        return Experiment.from_written(merge(self._written, overrides), self.experiment_file or "<experiment>")

    @property
    def source(self) -> str:
        """How errors name the experiment: its file, else `<experiment>`."""
        return self.experiment_file or "<experiment>"


def _check_stage_names(config: dict[str, Any], source: str) -> None:
    missing = [t for t in STAGE_TABLES if t not in config or "name" not in config[t]]
    for table in missing:
        raise ConfigError(f"{source}: [{table}] needs a name (set it or name a preset)")
    if "dataset" in config and "name" not in config["dataset"]:
        raise ConfigError(f"{source} [dataset]: needs a name, e.g. name = \"workspace\" (`harness stages dataset` "
                          "lists them)")
    for table in OPTIONAL_STAGE_TABLES:
        if table in config and "name" not in config[table]:
            raise ConfigError(f"{source}: [{table}] needs a name (e.g. name = \"http\")")


def _resolved(experiment: dict[str, Any], *, preset: str | None, source: str) -> dict[str, Any]:
    """Experiment dict (+ optional preset override) -> the full configuration of a run, as written."""
    _check_keys(experiment, source)
    if preset is not None and (problem := _name_problem(preset)) is not None:
        raise ConfigError(f"--preset: {problem}")
    preset_name = preset or experiment.get("preset")
    config: dict[str, Any] = {}
    if preset_name:
        try:
            ppath = preset_path(preset_name)
        except ConfigError as exc:
            given = "--preset" if preset else "preset"
            raise ConfigError(f"{source} {given}: {exc}") from None
        preset_cfg = load_toml(ppath)
        _check_keys(preset_cfg, str(ppath))
        config = {k: v for k, v in preset_cfg.items() if k not in ("name", "description")}
        config["preset"] = ppath.stem
        config["preset_description"] = preset_cfg.get("description", "").strip()
    body = {k: v for k, v in experiment.items() if k != "preset"}
    from harness.inputs.workspace_config import openclaw_layer  # local: see _a_real_time

    layer = openclaw_layer(body, preset_name, source)  # a workspace follows its openclaw.json as it is now
    if layer is not None and layer.follow:
        config = merge(config, layer.tables)
    config = merge(config, body)
    if layer is not None:
        config["openclaw_json"] = layer.record(config)
    _check_keys({k: v for k, v in config.items() if k in KNOWN_KEYS}, source)  # the merged tables too
    missing = [t for t in STAGE_TABLES if t not in config or "name" not in config[t]]
    if missing and not preset_name and len(missing) == len(STAGE_TABLES):
        raise ConfigError(f"{source}: names no preset and no stages; set preset = \"openclaw-2026.08\" (`harness "
                          f"presets` lists them) or give every stage table a name ({', '.join(STAGE_TABLES)})")
    _check_stage_names(config, source)
    config.setdefault("search", {})
    config["search"].setdefault("max_results", 6)
    config["search"].setdefault("candidate_multiplier", 4)
    config.setdefault("postprocess", [])
    config.setdefault("evaluation", {})
    check_settings(config, source)
    return config


def resolve(experiment: dict[str, Any], *, preset: str | None = None, source: str = "<experiment>") -> Experiment:
    """Experiment dict (+ optional preset override) -> the full configuration of a run."""
    return Experiment.from_written(_resolved(experiment, preset=preset, source=source), source)


def load_experiment(path: Path | str, *, preset: str | None = None, **overrides: Any) -> Experiment:
    """An experiment file, resolved as the CLI resolves it: a relative path is read from the working
    directory, else from the files the harness ships (`experiments/round3.toml` works outside a clone).
    The paths the file names are read from its own folder first (harness.inputs.file_relative)."""
    path = project_path(path)
    experiment = experiment_paths(load_toml(path), path)
    if experiment.get("kind", "experiment") != "experiment":  # `kind`: harness.studies.spec
        raise ConfigError(f"{path} kind: the file says {shown(experiment['kind'])}, but an experiment file is read "
                          f"here (`harness study {path}` runs a file by its kind)")
    experiment.pop("kind", None)
    experiment = merge(experiment, overrides) if overrides else experiment
    config = _resolved(experiment, preset=preset, source=str(path))
    config.setdefault("name", Path(path).stem)
    config["experiment_file"] = str(Path(path))
    return Experiment.from_written(config, str(path))


MAX_SET_DEPTH = 4  # --set TABLE.KEY[.SUBKEY[.SUBSUBKEY]]
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
            raise ConfigError(f"--set {shown(item)}: expected TABLE.KEY=VALUE, e.g. fusion.vector_weight=0.5")
        if len(path) > MAX_SET_DEPTH:
            raise ConfigError(f"--set {shown(item)[:80]}: {len(path)} dotted parts; no setting is deeper than "
                              f"{MAX_SET_DEPTH} (TABLE.KEY, or TABLE.KEY.SUBKEY)")
        if path[0] not in SETTABLE_TABLES:
            raise ConfigError(f"--set {item!r}: unknown table {path[0]!r}; one of {sorted(SETTABLE_TABLES)}")
        try:
            value = parse_bounded(lambda text: tomllib.loads(text)["v"], f"v = {raw.strip()}", "--set", "--set value")
        except tomllib.TOMLDecodeError:
            value = raw.strip()
        except DataError as exc:
            raise ConfigError(f"--set {path[0]}.{'.'.join(path[1:])}: {str(exc).split(': ', 1)[-1]}") from None
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {item!r}: {part!r} was already set to a value, not a table")
        node[path[-1]] = value
    return out
