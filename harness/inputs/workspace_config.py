"""A workspace experiment follows the workspace's openclaw.json as it is now, at every run and sweep.

An experiment whose data set is an OpenClaw workspace with an openclaw.json (`[dataset] name =
"workspace"`, `config = ".../openclaw.json"`) is resolved in three layers, each winning over the one
before key by key:

    the preset  ->  openclaw.json's memory-search settings, read now  ->  the experiment's own tables and --set

so editing openclaw.json and rerunning is followed, and a table the experiment sets itself (or a --set)
wins and is named: the resolved configuration records, under "openclaw_json", which settings were
followed, which the experiment overrides (with both values), and what the preset's release would make of
the file (a block or key it does not read).  That is `follow_config = true` in [dataset], which `harness
init` writes.  Without it (an experiment written by hand, or by an older init, e.g. a CI gate's) the
experiment's tables alone decide, openclaw.json is read for its extraPaths, and what it says otherwise is
compared with the experiment and each difference reported, not followed.

    >>> layer = openclaw_layer(experiment, "openclaw-2026.08", "evals/mine/experiment.toml")
    >>> layer.tables            # experiment tables from openclaw.json
    >>> layer.record(config)    # {"file", "followed", "overridden", "release_notes", "not_evaluated"}
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.inputs.layout import project_path
from harness.inputs.openclaw_config import read_openclaw_config
from harness.toml_files import preset_path


@dataclass
class OpenClawLayer:
    file: Path
    tables: dict[str, Any]
    settings: Any  # OpenClawSettings
    preset: str
    follow: bool = True  # merged into the configuration (follow_config = true), or only compared with it

    def record(self, config: dict[str, Any]) -> dict[str, Any]:
        """What the resolved configuration did with each setting openclaw.json makes."""
        followed, overridden = [], []
        for setting, (path, value) in self.settings.values.items():
            used = effective_value(config, setting)
            wanted = float(value) if setting == "decay_half_life" else value
            entry = {"setting": setting, "field": path, "openclaw_json": value}
            if _same(used, wanted):
                followed.append(entry)
            else:
                overridden.append({**entry, "experiment": used, "table": SETTING_TABLES[setting]})

        name = preset_path(self.preset).stem
        return {"file": str(self.file), "follow": self.follow, "followed": followed if self.follow else [],
                "same": [] if self.follow else followed, "overridden": overridden,
                "release_notes": self.settings.release_notes(name), "not_evaluated": list(self.settings.notes)}


# where each openclaw.json setting lives in an experiment
SETTING_TABLES = {"vector_weight": "[fusion] vector_weight", "text_weight": "[fusion] text_weight",
                  "max_results": "[search] max_results", "candidate_multiplier": "[search] candidate_multiplier",
                  "min_score": "[[postprocess]] min_score", "mmr_enabled": "[[postprocess]] mmr",
                  "mmr_lambda": "[[postprocess]] mmr lambda", "decay_enabled": "[[postprocess]] temporal_decay",
                  "decay_half_life": "[[postprocess]] temporal_decay half_life_days",
                  "tokenizer": "[tokenizer] name", "chunk_tokens": "[chunker] tokens",
                  "chunk_overlap": "[chunker] overlap"}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) <= 1e-12
    return a == b


def effective_value(config: dict[str, Any], setting: str) -> Any:
    """A resolved configuration's value of an openclaw.json setting (None where it has none)."""
    stages = {p.get("name"): p for p in config.get("postprocess", [])}
    if setting in ("vector_weight", "text_weight"):
        return config.get("fusion", {}).get(setting)
    if setting in ("max_results", "candidate_multiplier"):
        return config.get("search", {}).get(setting)
    if setting == "min_score":
        return stages.get("min_score", {}).get("min_score")
    if setting == "mmr_enabled":
        return "mmr" in stages
    if setting == "mmr_lambda":
        return float(stages["mmr"].get("lambda", 0.7)) if "mmr" in stages else None
    if setting == "decay_enabled":
        return float(stages.get("temporal_decay", {}).get("half_life_days", 30.0 if "temporal_decay" in stages
                                                          else 0.0)) > 0
    if setting == "decay_half_life":
        return float(stages["temporal_decay"].get("half_life_days", 30.0)) if "temporal_decay" in stages else None
    if setting == "tokenizer":
        return config.get("tokenizer", {}).get("name")
    if setting in ("chunk_tokens", "chunk_overlap"):
        return config.get("chunker", {}).get(setting.removeprefix("chunk_"))
    return None


def openclaw_layer(experiment: dict[str, Any], preset: str | None, source: str) -> OpenClawLayer | None:
    """The openclaw.json layer of a workspace experiment (followed with `follow_config = true`, otherwise
    only compared), or None (another data set, no config, no preset)."""
    dataset = experiment.get("dataset")
    if not isinstance(dataset, dict) or dataset.get("name") != "workspace" or not dataset.get("config") or not preset:
        return None

    path = project_path(Path(str(dataset["config"])).expanduser())
    settings = read_openclaw_config(path, agent=dataset.get("agent"))
    check_index_embedder(experiment.get("embedder"), settings, source)
    try:
        tables = settings.experiment_tables(preset)
    except ConfigError as exc:
        raise ConfigError(f"{source} [dataset] config: {exc}") from None
    return OpenClawLayer(path, tables, settings, preset, bool(dataset.get("follow_config", False)))


def check_index_embedder(embedder: Any, settings: Any, source: str) -> None:
    """An experiment on the agent's index vectors (`[embedder] name = "openclaw-index"`, what `harness init
    --openclaw-home` writes) whose openclaw.json now configures another embedding provider or model: the
    queries would go to the new model and be compared with the old model's vectors, so the run stops, as
    OpenClaw 2026.9.6 pauses vector search until the index is rebuilt."""
    if not isinstance(embedder, dict) or embedder.get("name") != "openclaw-index":
        return
    configured = settings.embedding
    for key in ("model", "provider"):
        want = configured.get(key)
        if key == "provider" and want == "auto":
            continue  # resolved at run time: the index records what it became
        have = embedder.get(key)
        if isinstance(want, str) and want.strip() and isinstance(have, str) and want.strip() != have:
            raise ConfigError(f"{source}: openclaw.json ({settings.source}) now configures embedding {key} "
                              f"{want.strip()!r}, the agent's index (its [embedder]) holds vectors of {have!r}: "
                              "rebuild the index (`openclaw memory index --force`) and rerun `harness init "
                              "--openclaw-home`, or rerun it with --reembed or --no-index-vectors")


def layer_notes(record: dict[str, Any] | None) -> list[str]:
    """The lines a run prints about the openclaw.json it followed."""
    if not record:
        return []
    out = []
    if not record.get("follow", True):
        for e in record["overridden"]:
            out.append(f"openclaw.json ({record['file']}) sets {e['field']} = {_text(e['openclaw_json'])}; this "
                       f"experiment runs {e['table']} = {_text(e['experiment'])} (it does not follow openclaw.json: "
                       "follow_config = true in [dataset] makes it, as `harness init` writes)")
        return out
    if record["followed"]:
        values = ", ".join(f"{e['field'].split('.', 2)[-1] if e['field'].count('.') > 2 else e['field']} = "
                           f"{_text(e['openclaw_json'])}" for e in record["followed"])
        out.append(f"openclaw.json read now ({record['file']}): {values}")
    for e in record["overridden"]:
        out.append(f"the experiment's {e['table']} = {_text(e['experiment'])} wins over openclaw.json's "
                   f"{e['field']} = {_text(e['openclaw_json'])} (remove it from the experiment, or --set, to "
                   "follow openclaw.json)")
    out += record.get("release_notes", [])
    return out


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "(none)"
    return f"{value:g}" if isinstance(value, float) else str(value)
