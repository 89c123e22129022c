"""openclaw.json: what an OpenClaw config says about memory search, as harness settings, and back.

openclaw.json (read_openclaw_config): the memory-search block of any release, agents.defaults.memorySearch
(OpenClaw 2026.2) or memory.search (2026.8 on; a top-level memorySearch first, an agents.list[] entry's
memorySearch / memory.search last when an agent is chosen; harness.inputs.openclaw_releases says which
release reads which block and keys) -> harness tables:
    query.hybrid.vectorWeight / textWeight   [fusion] vector_weight / text_weight
    query.hybrid.candidateMultiplier         [search] candidate_multiplier
    query.maxResults                         [search] max_results
    query.minScore                           [[postprocess]] min_score.min_score
    query.hybrid.mmr.enabled / lambda        [[postprocess]] mmr (added before min_score, or removed) / lambda
    query.hybrid.temporalDecay.enabled /     [[postprocess]] temporal_decay (added first, or removed) /
      halfLifeDays                             half_life_days (a whole number >= 1, as OpenClaw's schema)
    store.fts.tokenizer (unicode61|trigram)  [tokenizer] name
    chunking.tokens / overlap                [chunker] tokens / overlap
    extraPaths                               read by the data set at each run
Invalid values (what OpenClaw's own schema refuses) raise DataError naming the field path; values its
schema takes and resolveMemorySearchConfig clamps (candidateMultiplier above 20, chunking.overlap not
below chunking.tokens) are applied as it applies them, with a note; anything else found (provider, model, unknown
keys ...) is listed in .notes as not evaluated, never silently dropped.  openclaw_snippet() goes the
other way, in the block and keys of the preset's release, for printing the settings a sweep suggests;
what that release cannot set is listed beside it, never pasted.  (OpenClaw 2026.8.1 and 2026.9.6 build
query.hybrid and chunking in and refuse or strip those keys; 2026.2.22 honours them, and so does the
harness: the values are what the user asked for, and release_notes() says what the release would do.)

Extra path entries are strings, as OpenClaw's memorySearch.extraPaths are.  The object form
{path, pattern} (the shape of OpenClaw's memory.qmd.paths) is also accepted, so a pattern other than
`**/*.md` can be given; patterns are relative, `**` matches any number of folders, `*` and `?` stay
within one name, matching is case-sensitive (like OpenClaw's `.md` test).
"""
from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5

from harness.errors import ConfigError, DataError
from harness.inputs.layout import read_utf8
from harness.inputs.openclaw_env import (
    Substituted,
    plain_string,
    refuse_missing,
    substitute,
)
from harness.inputs.openclaw_releases import BLOCK_RELEASES, layout_for
from harness.inputs.openclaw_snippets import (  # noqa: F401  (re-exported: the snippet's importers read it here)
    TOKENIZER_NAMES,
    openclaw_snippet,
    snippet_block,
)
from harness.text_files import (
    MAX_BYTES,
    JSONSyntaxError,
    loads_json,
    parse_bounded,
    shown,
)
from harness.toml_files import load_toml, preset_path

DEFAULT_PATTERN = "**/*.md"
MAX_CANDIDATE_MULTIPLIER = 20  # OpenClaw 2026.2.22 resolveMemorySearchConfig: clampInt(candidateMultiplier, 1, 20)
DEFAULT_CHUNK_TOKENS = 400  # chunking.tokens when openclaw.json does not set it


def check_pattern(pattern: Any, source: str, field_name: str) -> str:
    if not isinstance(pattern, str) or not pattern.strip():
        raise DataError(source, None, field_name, "a glob pattern must be a non-empty string, e.g. '**/*.md'")
    pattern = pattern.strip()
    if pattern.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", pattern) or ".." in pattern.split("/"):
        raise DataError(source, None, field_name,
                        f"pattern {pattern!r} must be relative to its folder, without '..'")
    return pattern


@dataclass(frozen=True)
class ExtraPath:
    """One configured extra path: `path` as written (relative to the workspace, absolute or ~/...),
    `pattern` for a folder, and where it came from (for errors)."""

    path: str
    pattern: str = DEFAULT_PATTERN
    field: str = "extraPaths[0]"
    source: str | None = None  # the config file that names it


def parse_extra_path(entry: Any, name: str, source: str | None) -> ExtraPath:
    where = source or "<extra paths>"
    if isinstance(entry, ExtraPath):
        return entry
    if isinstance(entry, str):
        return ExtraPath(entry, DEFAULT_PATTERN, name, source)
    if isinstance(entry, dict):
        unknown = sorted(set(entry) - {"path", "pattern", "name"})
        if unknown:
            raise DataError(where, None, f"{name}.{unknown[0]}", "unknown key; an extra path has path and pattern")
        if not isinstance(entry.get("path"), str):
            raise DataError(where, None, f"{name}.path", "must be a string")
        pattern = entry.get("pattern")
        pattern = DEFAULT_PATTERN if pattern is None else check_pattern(pattern, where, f"{name}.pattern")
        return ExtraPath(entry["path"], pattern, name, source)
    raise DataError(where, None, name, f"must be a path string or {{path, pattern}}, got {type(entry).__name__}")


def extra_paths_from(entries: Any, *, source: str | None, field_prefix: str) -> list[ExtraPath]:
    """openclaw.json's extraPaths (strings, or {path, pattern} objects) -> ExtraPath list."""
    if not isinstance(entries, list):
        raise DataError(source or "<extra paths>", None, field_prefix, "must be a list of paths")
    return [parse_extra_path(entry, f"{field_prefix}[{i}]", source) for i, entry in enumerate(entries)]


# memorySearch keys the harness knows but does not evaluate, and why
NOT_EVALUATED = {
    "enabled": "memory search is evaluated whatever this says",
    "provider": "the embedding is the experiment's [embedder] stage (e.g. name = \"openai-compatible\")",
    "model": "the embedding is the experiment's [embedder] stage",
    "fallback": "the embedding is the experiment's [embedder] stage",
    "remote": "the embedding is the experiment's [embedder] stage (its API key stays in an environment variable)",
    "local": "the embedding is the experiment's [embedder] stage",
    "outputDimensionality": "the embedding is the experiment's [embedder] stage",
    "inputType": "the embedding is the experiment's [embedder] stage",
    "queryInputType": "the embedding is the experiment's [embedder] stage",
    "documentInputType": "the embedding is the experiment's [embedder] stage",
    "sources": "only memory files are evaluated, not session transcripts",
    "experimental": "only memory files are evaluated, not session transcripts",
    "rememberAcrossConversations": "only memory files are evaluated, not session transcripts",
    "sync": "indexing timing does not change search results",
    "cache": "the harness keeps its own embedding cache",
    "multimodal": "only Markdown is evaluated",
    "qmd": "the builtin engine is evaluated, not the QMD backend",
}
HYBRID_NOT_EVALUATED = {
    "enabled": "the harness always runs both legs (hybrid disabled is not modelled)",
}
# MMR's snippet tokens per preset: OpenClaw before the CJK-aware tokenizer used [a-z0-9_] words only
MMR_TOKENS = {"openclaw-2026.02": "ascii"}
POSTPROCESS_SETTINGS = ("min_score", "mmr_enabled", "mmr_lambda", "decay_enabled", "decay_half_life")


@dataclass
class OpenClawSettings:
    """What an openclaw.json says about memory search, with the field path each value came from."""

    source: Path
    values: dict[str, tuple[str, Any]] = field(default_factory=dict)  # setting -> (field path, value)
    extra_paths: list[ExtraPath] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # settings found but not evaluated, and why
    embedding: dict[str, str] = field(default_factory=dict)  # provider, model, base_url: for init's hint

    def get(self, setting: str, default: Any = None) -> Any:
        return self.values[setting][1] if setting in self.values else default

    def release_notes(self, preset: str | None) -> list[str]:
        """What the release `preset` models would make of these settings: a block it does not read, and
        keys it has no place for (both are evaluated as written all the same)."""
        layout = layout_for(preset)
        if layout is None:
            return []
        out = []
        blocks = {block_of(path) for path, _ in self.values.values()} | {block_of(e.field) for e in self.extra_paths}
        for block in sorted(blocks):
            agent = block.startswith(("agents.list[", "agents.entries."))
            inner = (block.split("].", 1)[1] if block.startswith("agents.list[") else
                     re.sub(r"^agents\.entries\.[^.]+\.", "", block)) if agent else block
            expected = layout.agent_block if agent else layout.block
            if inner != expected:
                where = f"agents.list[].{layout.agent_block}" if agent else layout.block
                known = BLOCK_RELEASES.get(inner if not agent else ("memory.search" if inner == "memory.search"
                                                                     else "agents.defaults.memorySearch"), "")
                out.append(f"{block}: OpenClaw {layout.release} reads {where}" + (f" ({inner} is the block of "
                           f"{known})" if known else "") + "; evaluated as written")
        for setting, (path, value) in self.values.items():
            if setting in SETTING_NAMES and setting not in layout.reads:
                out.append(f"{layout.cannot(setting, value)}; evaluated as written (from {path})")
        return out

    def experiment_tables(self, preset: str) -> dict[str, Any]:
        """Harness experiment tables overriding `preset` with these settings (only those set)."""
        preset_cfg = load_toml(preset_path(preset))
        tables: dict[str, Any] = {}
        if "vector_weight" in self.values or "text_weight" in self.values:
            if preset_cfg.get("fusion", {}).get("name") != "weighted":
                fields = ", ".join(self.values[k][0] for k in ("vector_weight", "text_weight") if k in self.values)
                raise ConfigError(f"{self.source}: {fields}: preset {preset!r} does not use OpenClaw's weighted "
                                  "fusion, so these weights mean nothing there; use an openclaw-* preset (--preset "
                                  "or the experiment's preset)")
            tables["fusion"] = {k: self.get(k) for k in ("vector_weight", "text_weight") if k in self.values}
        search = {k: self.get(k) for k in ("max_results", "candidate_multiplier") if k in self.values}
        if search:
            tables["search"] = search
        if "tokenizer" in self.values:
            tables["tokenizer"] = {"name": self.get("tokenizer")}
        chunker = {k: self.get(f"chunk_{k}") for k in ("tokens", "overlap") if f"chunk_{k}" in self.values}
        if chunker:
            tables["chunker"] = chunker
        if any(k in self.values for k in POSTPROCESS_SETTINGS):
            tables["postprocess"] = self._postprocess(copy.deepcopy(preset_cfg.get("postprocess", [])), preset)
        return tables

    def _postprocess(self, stages: list[dict[str, Any]], preset: str) -> list[dict[str, Any]]:
        """The preset's post-processing stages with minScore, MMR and temporal decay as configured, in
        OpenClaw's order: decay first, MMR right before the minScore selection."""
        def find(name: str) -> int | None:
            return next((i for i, st in enumerate(stages) if st.get("name") == name), None)

        if "min_score" in self.values:
            at = find("min_score")
            if at is None:
                stages.append({"name": "min_score", "min_score": self.get("min_score")})
            else:
                stages[at]["min_score"] = self.get("min_score")
        if "decay_enabled" in self.values or "decay_half_life" in self.values:
            at = find("temporal_decay")
            if not self.get("decay_enabled", at is not None):
                stages = [st for st in stages if st.get("name") != "temporal_decay"]
            else:
                if at is None:
                    stages.insert(0, {"name": "temporal_decay"})
                    at = 0
                if "decay_half_life" in self.values:
                    stages[at]["half_life_days"] = float(self.get("decay_half_life"))
        if "mmr_enabled" in self.values or "mmr_lambda" in self.values:
            at = find("mmr")
            if not self.get("mmr_enabled", at is not None):
                stages = [st for st in stages if st.get("name") != "mmr"]
            else:
                if at is None:
                    before = find("min_score")
                    at = len(stages) if before is None else before
                    stages.insert(at, {"name": "mmr", "tokens": MMR_TOKENS.get(preset, "cjk")})
                if "mmr_lambda" in self.values:
                    stages[at]["lambda"] = self.get("mmr_lambda")
        return stages


# the settings this module reads that openclaw_releases knows the key of (all of them)
SETTING_NAMES = ("max_results", "min_score", "vector_weight", "text_weight", "candidate_multiplier", "mmr_enabled",
                 "mmr_lambda", "decay_enabled", "decay_half_life", "tokenizer", "chunk_tokens", "chunk_overlap")


def block_of(path: str) -> str:
    """The memory-search block a field path lies in: "agents.defaults.memorySearch", "memory.search",
    "agents.list[1].memory.search", ..."""
    for block in ("memory.search", "memorySearch"):
        at = path.find(block)
        if at >= 0:
            return path[:at + len(block)]
    return path


def _number(value: Any, source: Path, field_name: str, *, lo: float, hi: float = math.inf,
            integer: bool = False) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DataError(source, None, field_name, f"must be a number, got {shown(value)}")
    if integer:
        if value != int(value):
            raise DataError(source, None, field_name, f"must be a whole number, got {shown(value)}")
        value = int(value)
    if not lo <= value <= hi:
        bounds = f">= {lo:g}" if hi == math.inf else f"in [{lo:g}, {hi:g}]" if hi <= 1 else \
            f">= {lo:g} and at most {hi:,.0f}"
        raise DataError(source, None, field_name, f"must be {bounds}, got {shown(value)}")
    return value


def _boolean(value: Any, source: Path, field_name: str) -> bool:
    if not isinstance(value, bool):
        raise DataError(source, None, field_name, f"must be true or false, got {shown(value)}")
    return value


def _object(value: Any, source: Path, field_name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DataError(source, None, field_name, f"must be an object, got {type(value).__name__}")
    return value


# keys whose string values are names, never credentials: shown in notes as written
SHOWN_STRINGS = ("provider", "model", "fallback", "sources", "enabled", "tokenizer", "driver")


def shown_value(path: str, value: Any) -> str:
    """A value of openclaw.json as a note shows it: numbers, booleans and null as written, a string only
    under a key that names something (provider, model ...), anything else by its kind, so that a key or
    token placed in any field (memorySearch.query.apiKey, a header) is never echoed or written."""
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    key = path.rsplit(".", 1)[-1]
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if key in SHOWN_STRINGS and len(value) <= 80 else \
            f"(a string of {len(value)} characters, not shown)"
    if isinstance(value, list):
        if key in SHOWN_STRINGS and all(isinstance(v, str) and len(v) <= 40 for v in value):
            return json.dumps(value, ensure_ascii=False)
        return f"(a list of {len(value)})"
    if isinstance(value, dict):
        return "{" + ", ".join(sorted(str(k) for k in value)[:8]) + (", ..." if len(value) > 8 else "") + "}"
    return f"({type(value).__name__})"


def _read_layer(layer: dict[str, Any], prefix: str, source: Path, settings: OpenClawSettings) -> None:
    """One memorySearch object (top level, agents.defaults or one agent) into `settings`."""
    def put(setting: str, path: str, value: Any) -> None:
        settings.values[setting] = (path, value)

    def note(path: str, value: Any, why: str) -> None:
        settings.notes.append(f"{path} = {shown_value(path, value)}: not evaluated ({why})")

    for key, value in layer.items():
        path = f"{prefix}.{key}"
        if key == "query":
            for qkey, qvalue in _object(value, source, path).items():
                qpath = f"{path}.{qkey}"
                if qkey == "maxResults":  # OpenClaw: a positive integer; the harness scores up to 1,000,000
                    put("max_results", qpath, _number(qvalue, source, qpath, lo=1, hi=1_000_000, integer=True))
                elif qkey == "minScore":
                    put("min_score", qpath, float(_number(qvalue, source, qpath, lo=0, hi=1)))
                elif qkey == "hybrid":
                    for hkey, hvalue in _object(qvalue, source, qpath).items():
                        hpath = f"{qpath}.{hkey}"
                        if hkey == "vectorWeight":
                            put("vector_weight", hpath, float(_number(hvalue, source, hpath, lo=0, hi=1)))
                        elif hkey == "textWeight":
                            put("text_weight", hpath, float(_number(hvalue, source, hpath, lo=0, hi=1)))
                        elif hkey == "candidateMultiplier":  # OpenClaw's schema: a positive integer;
                            given = _number(hvalue, source, hpath, lo=1, integer=True)  # then clamped to 1-20
                            if given > MAX_CANDIDATE_MULTIPLIER:
                                settings.notes.append(
                                    f"{hpath} = {given} is applied as {MAX_CANDIDATE_MULTIPLIER}, as OpenClaw clamps "
                                    f"candidateMultiplier to 1-{MAX_CANDIDATE_MULTIPLIER}")
                            put("candidate_multiplier", hpath, min(given, MAX_CANDIDATE_MULTIPLIER))
                        elif hkey == "mmr":
                            for mkey, mvalue in _object(hvalue, source, hpath).items():
                                mpath = f"{hpath}.{mkey}"
                                if mkey == "enabled":
                                    put("mmr_enabled", mpath, _boolean(mvalue, source, mpath))
                                elif mkey == "lambda":
                                    put("mmr_lambda", mpath, float(_number(mvalue, source, mpath, lo=0, hi=1)))
                                else:
                                    note(mpath, mvalue, "unknown to the harness")
                        elif hkey == "temporalDecay":
                            for dkey, dvalue in _object(hvalue, source, hpath).items():
                                dpath = f"{hpath}.{dkey}"
                                if dkey == "enabled":
                                    put("decay_enabled", dpath, _boolean(dvalue, source, dpath))
                                elif dkey == "halfLifeDays":  # OpenClaw's schema: a whole number >= 1
                                    put("decay_half_life", dpath, _number(dvalue, source, dpath, lo=1, integer=True))
                                else:
                                    note(dpath, dvalue, "unknown to the harness")
                        elif hkey in HYBRID_NOT_EVALUATED:
                            if hkey == "enabled" and hvalue is not False:
                                continue  # hybrid on is what the harness does
                            note(hpath, hvalue, HYBRID_NOT_EVALUATED[hkey])
                        else:
                            note(hpath, hvalue, "unknown to the harness")
                else:
                    note(qpath, qvalue, "unknown to the harness")
        elif key == "store":
            for skey, svalue in _object(value, source, path).items():
                spath = f"{path}.{skey}"
                if skey == "fts":
                    for fkey, fvalue in _object(svalue, source, spath).items():
                        fpath = f"{spath}.{fkey}"
                        if fkey == "tokenizer":
                            if fvalue not in TOKENIZER_NAMES:
                                raise DataError(source, None, fpath,
                                                f"must be one of {', '.join(TOKENIZER_NAMES)}, got {shown(fvalue)}")
                            put("tokenizer", fpath, fvalue)
                        else:
                            note(fpath, fvalue, "unknown to the harness")
                elif skey == "vector":
                    continue  # sqlite-vec or in-process cosine: the same scores
                else:
                    note(spath, svalue, "storage location does not change search results")
        elif key == "chunking":
            for ckey, cvalue in _object(value, source, path).items():
                cpath = f"{path}.{ckey}"
                if ckey in ("tokens", "overlap"):
                    put(f"chunk_{ckey}", cpath, _number(cvalue, source, cpath, lo=1 if ckey == "tokens" else 0,
                                                        integer=True))
                else:
                    note(cpath, cvalue, "unknown to the harness")
        elif key == "extraPaths":
            settings.extra_paths.extend(extra_paths_from(value, source=str(source), field_prefix=path))
        elif key in NOT_EVALUATED:
            if key in ("provider", "model") and plain_string(value, source, path) is not None:
                settings.embedding[key] = value
            if key == "remote" and isinstance(value, dict) and \
                    plain_string(value.get("baseUrl"), source, f"{path}.baseUrl") is not None:
                settings.embedding["base_url"] = value["baseUrl"]
            if key == "enabled" and value is not False:
                continue
            note(path, value, NOT_EVALUATED[key])  # shown_value never echoes a key
        else:
            note(path, value, "unknown to the harness")


MAX_JSON5_BYTES = 256 * 1024  # JSON5's parser reads about 20-50 KB a second here: bounded at a few seconds


def parse_openclaw_json(text: str, path: Path) -> Any:
    """openclaw.json's value: plain JSON at C speed whatever its size, else JSON5 (comments, unquoted keys,
    trailing commas: what OpenClaw reads) up to MAX_JSON5_BYTES, so no file holds a run for minutes."""
    try:
        return loads_json(text, path, "openclaw.json")
    except JSONSyntaxError:
        pass  # not plain JSON: JSON5, or an error that JSON5's parser will place
    size = len(text.encode("utf-8"))
    if size > MAX_JSON5_BYTES:
        raise DataError(path, None, None, f"is {size / 1024:,.0f} KB and not plain JSON; the harness reads JSON5 "
                                          f"(comments, unquoted keys, trailing commas) up to {MAX_JSON5_BYTES // 1024} "
                                          "KB and plain JSON of any size: save it as plain JSON, or check that it is "
                                          "the right file")

    def parse(t: str) -> Any:
        return json5.loads(t, allow_duplicate_keys=False)

    try:
        return parse_bounded(parse, text, path, "openclaw.json")
    except ValueError as exc:
        if isinstance(exc, DataError):
            raise
        message = str(exc)
        match = re.match(r"<string>:(\d+)\s*(.*)", message)
        if match:
            raise DataError(path, int(match[1]), None, f"invalid JSON5: {match[2]}") from None
        raise DataError(path, None, None, f"invalid JSON5: {message}") from None


def load_openclaw_json(path: Path, env: Any = None) -> Substituted:
    """openclaw.json parsed (JSON or JSON5, bounded) with ${VAR} substituted as OpenClaw does; a variable missing
    where the harness reads the value is refused by name (harness.inputs.openclaw_env)."""
    doc = parse_openclaw_json(read_utf8(path, what="openclaw.json", limit=MAX_BYTES), path)
    sub = substitute(doc, env)
    refuse_missing(sub, path)
    return sub


def read_openclaw_config(path: Path | str, *, agent: str | None = None) -> OpenClawSettings:
    """openclaw.json (JSON5: comments, trailing commas, unquoted keys) -> OpenClawSettings.

    Read, in order, each later one winning key by key: a top-level memorySearch (an old location),
    agents.defaults.memorySearch, and with `agent` the memorySearch of agents.list[] entry with that id.
    extraPaths of all three are concatenated.  Invalid values raise DataError naming the field path;
    settings the harness does not evaluate are listed in .notes."""
    path = Path(path).expanduser()
    doc = load_openclaw_json(path).doc
    doc = _object(doc, path, "(top level)")
    settings = OpenClawSettings(path)
    layers: list[tuple[str, Any]] = []
    if "memorySearch" in doc:
        layers.append(("memorySearch", doc["memorySearch"]))
    agents = doc.get("agents", {})
    agents = _object(agents, path, "agents")
    defaults = _object(agents.get("defaults", {}), path, "agents.defaults")
    if "memorySearch" in defaults:
        layers.append(("agents.defaults.memorySearch", defaults["memorySearch"]))
    memory = _object(doc.get("memory", {}), path, "memory")
    if "search" in memory:  # OpenClaw 2026.8 on
        layers.append(("memory.search", memory["search"]))
    roster = agent_roster(doc, path)
    roster_field = "agents.entries" if roster and roster[0].field.startswith("agents.entries") or \
        isinstance(agents.get("entries"), dict) else "agents.list"

    def agent_blocks(a: RosterEntry) -> list[tuple[str, Any]]:
        entry = a.entry
        out = [(f"{a.field}.memorySearch", entry["memorySearch"])] if "memorySearch" in entry else []
        own = entry.get("memory")
        if isinstance(own, dict) and "search" in own:
            out.append((f"{a.field}.memory.search", own["search"]))
        return out

    if agent is not None:
        # OpenClaw compares ids normalised (normalizeAgentId), and the first entry with the id wins
        matches = [a for a in roster if agent_key(a.id) == agent_key(agent)]
        if not matches:
            raise DataError(path, None, roster_field, f"no agent with id {agent!r} (--agent or [dataset] agent); "
                                                      f"ids: {[a.id for a in roster]}")
        if len(matches) > 1:
            settings.notes.append(f"{', '.join(a.field for a in matches)} all have the id {agent!r}: the first, "
                                  f"{matches[0].field}, applies (as OpenClaw takes the first)")
        layers += agent_blocks(matches[0])
    else:
        for a in roster:
            for block, _ in agent_blocks(a):
                settings.notes.append(f"{block} (agent {a.id!r}): not evaluated "
                                      "(choose an agent to apply its overrides)")
    for prefix, layer in layers:
        _read_layer(_object(layer, path, prefix), prefix, path, settings)
    tokens, overlap = settings.get("chunk_tokens"), settings.get("chunk_overlap")
    if overlap is not None and overlap >= (tokens if tokens is not None else DEFAULT_CHUNK_TOKENS):
        field_path = settings.values["chunk_overlap"][0]
        applied = (tokens if tokens is not None else DEFAULT_CHUNK_TOKENS) - 1
        settings.notes.append(f"{field_path} = {overlap} is applied as {applied}, as OpenClaw clamps the overlap "
                              f"below chunking.tokens ({applied + 1})")
        settings.values["chunk_overlap"] = (field_path, applied)
    return settings


def agent_key(agent_id: str) -> str:
    """An agent id as OpenClaw compares it (normalizeAgentId: lower case, anything but [a-z0-9_-] a '-',
    trimmed; empty is main)."""
    value = re.sub(r"[^a-z0-9_-]+", "-", agent_id.strip().lower()).strip("-")
    return value or "main"


@dataclass(frozen=True)
class RosterEntry:
    """One configured agent: its id as written, the field path of its entry, and the entry."""

    id: str
    field: str  # "agents.entries.<id>" or "agents.list[<i>]"
    entry: dict[str, Any]


def agent_roster(doc: dict[str, Any], source: Path | str | None = None) -> list[RosterEntry]:
    """The configured agents, as OpenClaw 2026.8.1 and 2026.9.6 read them (readAgentRosterProperty and
    collectAgentEntries, dist/agent-scope-config-*.mjs): `agents.entries` (an object keyed by agent id, what
    `openclaw agents add` writes) when the config has it, else `agents.list` (an array of {id, ...}, OpenClaw
    2026.2.22's form); never both.  Entries that are not objects (or, in a list, have no string id) are
    skipped as the release skips them."""
    agents = doc.get("agents") if isinstance(doc, dict) else None
    if not isinstance(agents, dict):
        return []
    if agents.get("entries") is not None:
        entries = agents["entries"]
        if not isinstance(entries, dict):
            if source is not None:
                raise DataError(source, None, "agents.entries", "must be an object keyed by agent id")
            return []
        return [RosterEntry(str(k), f"agents.entries.{k}", v) for k, v in entries.items() if isinstance(v, dict)]
    entries = agents.get("list")
    if entries is None:
        return []
    if not isinstance(entries, list):
        if source is not None:
            raise DataError(source, None, "agents.list", "must be a list")
        return []
    return [RosterEntry(e["id"], f"agents.list[{i}]", e) for i, e in enumerate(entries)
            if isinstance(e, dict) and isinstance(e.get("id"), str)]



def find_openclaw_config(workspace: Path | str) -> Path | None:
    """<workspace>/openclaw.json, else the one beside it (OpenClaw's default layout is
    ~/.openclaw/openclaw.json with the workspace at ~/.openclaw/workspace)."""
    workspace = Path(workspace).expanduser()
    for candidate in (workspace / "openclaw.json", workspace.parent / "openclaw.json"):
        if candidate.is_file():
            return candidate
    return None
