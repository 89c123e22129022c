"""Harness settings -> openclaw.json: the JSON5 snippet that sets a configuration's values in the
memory-search block of a release (harness.inputs.openclaw_releases), and what that release cannot express.
The other way, openclaw.json -> settings, is harness.inputs.openclaw_config, which re-exports these."""
from __future__ import annotations

import json
import re
from typing import Any

from harness.inputs.openclaw_releases import ANY_RELEASE, SETTING_KEYS, layout_for

TOKENIZER_NAMES = ("unicode61", "trigram")  # memorySearch.store.fts.tokenizer


def openclaw_snippet(config: dict[str, Any], *, agent: str | None = None, preset: str | None = None,
                     complete_postprocess: bool = False, baseline: dict[str, Any] | None = None
                     ) -> tuple[str, list[str]]:
    """The inverse of experiment_tables: a harness configuration (resolved, or just the tables a sweep
    changed) -> the openclaw.json (JSON5) snippet that sets the same values in the memory-search block of
    the release `preset` models (harness.inputs.openclaw_releases; without one, 2026.2's
    agents.defaults.memorySearch), plus what that release cannot express: another fusion, tokenizer or
    post-processing stage, and keys the release does not read (a value it builds in is left out when the
    configuration asks for that very value).  `complete_postprocess`: the postprocess list is the whole of
    post-processing, so an absent temporal decay or MMR is written as turned off.  `baseline` (tables of the
    same form, e.g. the configuration in use): only the values that differ from it are written or listed."""
    layout = layout_for(preset) or ANY_RELEASE
    block, cannot = snippet_block(config, preset=preset, complete_postprocess=complete_postprocess,
                                  baseline=baseline)
    doc = _nested(layout.agent_block if agent else layout.block, block)
    if agent:
        doc = {"agents": {"list": [{"id": agent, **doc}]}}
    return _json5(doc) + "\n", cannot


def snippet_block(config: dict[str, Any], *, preset: str | None = None, complete_postprocess: bool = False,
                  baseline: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """openclaw_snippet's content: the memory-search block's keys ({} when nothing can be written) and
    what the release cannot express."""
    layout = layout_for(preset) or ANY_RELEASE
    values, cannot = _snippet_values(config, complete_postprocess)
    if baseline is not None:
        before, _ = _snippet_values(baseline, complete_postprocess)
        values = {k: v for k, v in values.items() if before.get(k, object()) != v}
        cannot = [c for c in cannot if c not in _snippet_values(baseline, complete_postprocess)[1]]
    block: dict[str, Any] = {}
    for setting, value in values.items():
        if setting not in layout.reads:
            if layout.built_in.get(setting, object()) != value:
                cannot.append(layout.cannot(setting, value))
            continue
        if setting == "mmr_lambda" and not values.get("mmr_enabled", True) or \
                setting == "decay_half_life" and not values.get("decay_enabled", True):
            continue
        node = block
        *parents, leaf = SETTING_KEYS[setting].split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return block, cannot


def _snippet_values(config: dict[str, Any], complete_postprocess: bool) -> tuple[dict[str, Any], list[str]]:
    """A configuration's openclaw.json settings (openclaw_releases' names) and what no openclaw.json has."""
    values: dict[str, Any] = {}
    cannot: list[str] = []
    fusion = config.get("fusion", {})
    if fusion:
        if fusion.get("name", "weighted") != "weighted":  # its weights mean something else: never written
            cannot.append(f"fusion {fusion['name']!r} (OpenClaw only has its weighted merge)")
        else:
            for key in ("vector_weight", "text_weight"):
                if key in fusion:
                    values[key] = round(float(fusion[key]), 6)
    search = config.get("search", {})
    if "max_results" in search:
        values["max_results"] = int(search["max_results"])
    if "candidate_multiplier" in search:
        values["candidate_multiplier"] = int(search["candidate_multiplier"])
    stages = {stage.get("name"): stage for stage in config.get("postprocess", [])}
    if "min_score" in stages and "min_score" in stages["min_score"]:
        values["min_score"] = round(float(stages["min_score"]["min_score"]), 6)
    if "mmr" in stages or complete_postprocess:
        values["mmr_enabled"] = "mmr" in stages
        if "mmr" in stages:
            values["mmr_lambda"] = round(float(stages["mmr"].get("lambda", 0.7)), 6)
    days = float(stages["temporal_decay"].get("half_life_days", 30)) if "temporal_decay" in stages else 0.0
    if days > 0 or complete_postprocess:
        values["decay_enabled"] = days > 0
        if days > 0:
            values["decay_half_life"] = int(days) if days == int(days) else days
    for name in stages:
        if name not in ("min_score", "mmr", "temporal_decay", "importance"):  # importance: MEMORY.md annotations
            cannot.append(f"post-processing stage {name!r}")
    tokenizer = config.get("tokenizer", {}).get("name")
    if tokenizer in TOKENIZER_NAMES:
        values["tokenizer"] = tokenizer
    elif tokenizer is not None:
        cannot.append(f"tokenizer {tokenizer!r} (openclaw.json offers {', '.join(TOKENIZER_NAMES)})")
    chunker = config.get("chunker", {})
    for key in ("tokens", "overlap"):
        if key in chunker:
            values[f"chunk_{key}"] = int(chunker[key])
    return values, cannot


def _nested(dotted: str, body: dict[str, Any]) -> dict[str, Any]:
    for part in reversed(dotted.split(".")):
        body = {part: body}
    return body


def _json5(value: Any, indent: int = 0) -> str:
    """OpenClaw's own style: unquoted keys, trailing commas."""
    pad = "  " * (indent + 1)
    if isinstance(value, dict):
        items = [f"{pad}{k if re.fullmatch(r'[A-Za-z_$][A-Za-z0-9_$]*', k) else json.dumps(k)}: "
                 f"{_json5(v, indent + 1)}," for k, v in value.items()]
        return "{\n" + "\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, list):
        return "[\n" + "\n".join(f"{pad}{_json5(v, indent + 1)}," for v in value) + "\n" + "  " * indent + "]"
    return json.dumps(value, ensure_ascii=False)
