"""Bring your own OpenClaw workspace: which files are indexed, what openclaw.json says, which queries
to ask, and the `workspace` data set that turns all three into a layout with provenance.

    [dataset]
    name = "workspace"
    path = "/home/me/.openclaw/workspace"         # the agent's workspace folder
    queries = "/home/me/harness-eval/queries.yaml"
    config = "/home/me/.openclaw/openclaw.json"   # optional: extraPaths are read from it at each run

Indexed files (OpenClaw's builtin memory engine, SPEC.md section 2): MEMORY.md and memory.md at the
workspace root, every *.md file under memory/ at any depth, and each configured extra path: a folder
(its files matching a glob pattern relative to it, default `**/*.md`) or a single file.  Duplicates
(the same file reached twice, e.g. MEMORY.md and memory.md on a case-insensitive disk) are kept once,
first seen first; on a case-sensitive disk MEMORY.md and memory.md are two files and both count.
Every file is known by its *display path*, the path results, queries and the rendered layout use.

Paths outside the workspace, exactly:
  * Symbolic links are skipped wherever they are met, as OpenClaw's builtin engine skips them: a
    linked MEMORY.md or memory/ folder, a linked file or folder inside memory/ or inside an extra
    folder, an extra path that is itself a link.  A relative extra path is also skipped when a folder
    on its way down from the workspace is a link (OpenClaw would follow it, and it may lead out of
    the workspace).  Each skip is listed in Discovery.skipped, and `harness init` prints them.
  * A relative extra path that climbs out of the workspace (`../team-docs`, `notes/../../x`) is
    refused with a DataError naming openclaw.json and the field
    (agents.defaults.memorySearch.extraPaths[N]).  Write an absolute path if that folder is meant.
  * An absolute extra path (or `~/...`) is allowed, as OpenClaw allows it: it is the user's explicit
    choice.  Its files get the display path `extra<N>/<path inside it>` (N = its 1-based position in
    extraPaths; a single file: `extra<N>/<file name>`), so no result shows a machine's absolute path or
    a `../`.  Only the path itself is checked for being a link, not the folders above it (those are
    the machine's layout, e.g. /tmp -> /private/tmp).  An absolute path that lies inside the
    workspace is treated as the relative path it is.
  * An extra path that does not exist is skipped (OpenClaw ignores it silently; here it is listed).
  * A queries file names files by display path only: a path with a `..` segment or an absolute path is
    refused, and so is a path that is not an indexed file; the error names the queries file, the line
    and the field.

Extra path entries are strings, as OpenClaw's memorySearch.extraPaths are.  The object form
{path, pattern} (the shape of OpenClaw's memory.qmd.paths) is also accepted, so a pattern other than
`**/*.md` can be given; patterns are relative, `**` matches any number of folders, `*` and `?` stay
within one name, matching is case-sensitive (like OpenClaw's `.md` test).

Queries files (YAML or JSONL), one query per item:
    id, text                       required strings
    kind                           suite (default) | paraphrase | negative
    path                           a file: any chunk of it is relevant     doc id = the display path
    path + lines: [start, end]     chunks overlapping those lines           doc id = path#Lstart-Lend
    contains: "substring"          chunks overlapping a line the substring  doc id = contains:<query id>
                                   occurs on (all of its lines when it spans several); add `path` to
                                   look in one file only
    note                           free text, kept with the query
A negative query names no target.  Relevance is judged on line overlap, as for every data set here,
so a chunk that covers only part of a multi-line `contains` occurrence still counts.  Targets of
different queries may overlap (a file and a line range in it), so a chunk covering two of them is
not "mixed" in the king78 sense.

openclaw.json (read_openclaw_config): agents.defaults.memorySearch (a top-level memorySearch first,
an agents.list[] entry's last when an agent is chosen) -> harness tables:
    query.hybrid.vectorWeight / textWeight   [fusion] vector_weight / text_weight
    query.hybrid.candidateMultiplier         [search] candidate_multiplier
    query.maxResults                         [search] max_results
    query.minScore                           [[postprocess]] min_score.min_score
    store.fts.tokenizer (unicode61|trigram)  [tokenizer] name
    chunking.tokens / overlap                [chunker] tokens / overlap
    extraPaths                               read by the data set at each run
Invalid values raise DataError naming the field path; anything else found (provider, model, MMR on,
unknown keys ...) is listed in .notes as not evaluated, never silently dropped.  openclaw_snippet()
goes the other way, for printing the settings a sweep suggests.

init_workspace() writes an experiment TOML (a preset overridden by openclaw.json) and a queries
template whose commented examples are built from the user's own files.
"""
from __future__ import annotations

import copy
import difflib
import json
import math
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, NamedTuple, Sequence

import json5
import yaml

from .chunkers import split_lines
from .config import load_toml, preset_path
from .corpus import DATASETS, QUERY_KINDS, DataError, Layout, Query, Span, _jsonl, fresh_root, project_path

MEMORY_FILES = ("MEMORY.md", "memory.md")
MEMORY_DIR = "memory"
DEFAULT_PATTERN = "**/*.md"
MEMORY_DIR_PATTERN = "**/*.md"  # OpenClaw: any file whose name ends in .md, at any depth
PROVENANCE_FILE = "provenance.json"  # written beside the files of every layout
DEFAULT_INIT_PRESET = "openclaw-2026.08"
TOKENIZER_NAMES = ("unicode61", "trigram")  # memorySearch.store.fts.tokenizer


# ---------------------------------------------------------------------------------------------
# Glob patterns
# ---------------------------------------------------------------------------------------------


def _segment_regex(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            close = segment.find("]", i + 2 if segment[i + 1:i + 2] in ("!", "^") else i + 1)
            if close == -1:
                out.append(re.escape(c))
            else:
                body = segment[i + 1:close]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                out.append("[" + ("^/" if negate else "") + body.replace("\\", "\\\\") + "]")
                i = close
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A relative glob -> a regex matched against whole relative POSIX paths.
    `**` as a whole segment matches zero or more folders (`**/*.md` matches `a.md` and `x/y/a.md`)."""
    parts = pattern.split("/")
    out = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment_regex(part) + ("" if last else "/"))
    return re.compile("".join(out))


def _check_pattern(pattern: Any, source: str, field_name: str) -> str:
    if not isinstance(pattern, str) or not pattern.strip():
        raise DataError(source, None, field_name, "a glob pattern must be a non-empty string, e.g. '**/*.md'")
    pattern = pattern.strip()
    if pattern.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", pattern) or ".." in pattern.split("/"):
        raise DataError(source, None, field_name,
                        f"pattern {pattern!r} must be relative to its folder, without '..'")
    return pattern


# ---------------------------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExtraPath:
    """One configured extra path: `path` as written (relative to the workspace, absolute or ~/...),
    `pattern` for a folder, and where it came from (for errors)."""

    path: str
    pattern: str = DEFAULT_PATTERN
    field: str = "extraPaths[0]"
    source: str | None = None  # the config file that names it


@dataclass(frozen=True)
class MemoryFile:
    display: str  # the path results, queries and the rendered layout use
    source: Path  # the file on disk


@dataclass(frozen=True)
class Skipped:
    path: str  # display path, or the extra path as configured
    reason: str


@dataclass
class Discovery:
    workspace: Path
    files: list[MemoryFile]
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def displays(self) -> list[str]:
        return [f.display for f in self.files]


def _parse_extra(entry: Any, name: str, source: str | None) -> ExtraPath:
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
        pattern = DEFAULT_PATTERN if pattern is None else _check_pattern(pattern, where, f"{name}.pattern")
        return ExtraPath(entry["path"], pattern, name, source)
    raise DataError(where, None, name, f"must be a path string or {{path, pattern}}, got {type(entry).__name__}")


def extra_paths_from(entries: Any, *, source: str | None, field_prefix: str) -> list[ExtraPath]:
    """openclaw.json's extraPaths (strings, or {path, pattern} objects) -> ExtraPath list."""
    if not isinstance(entries, list):
        raise DataError(source or "<extra paths>", None, field_prefix, "must be a list of paths")
    return [_parse_extra(entry, f"{field_prefix}[{i}]", source) for i, entry in enumerate(entries)]


def _walk(folder: Path, rel_prefix: str, pattern: re.Pattern[str], files: list[tuple[str, Path]],
          skipped: list[Skipped]) -> None:
    """Files under `folder` whose path relative to it matches `pattern`; links skipped, sorted walk."""
    def visit(current: Path, rel: str) -> None:
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(_join(rel_prefix, rel) or ".", f"cannot be read ({exc.strerror})"))
            return
        for entry in entries:
            child_rel = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_symlink():
                if entry.is_dir() or pattern.fullmatch(child_rel):  # only links that would have counted
                    skipped.append(Skipped(_join(rel_prefix, child_rel), "symbolic link"))
            elif entry.is_dir(follow_symlinks=False):
                visit(Path(entry.path), child_rel)
            elif entry.is_file(follow_symlinks=False) and pattern.fullmatch(child_rel):
                files.append((_join(rel_prefix, child_rel), Path(entry.path)))

    visit(folder, "")


def _join(prefix: str, rel: str) -> str:
    return f"{prefix}/{rel}" if prefix and rel else (prefix or rel)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _link_on_the_way(root: Path, rel_parts: Sequence[str]) -> str | None:
    """The first component of root/rel_parts that is a symbolic link, as a relative path, or None."""
    current = root
    for i, part in enumerate(rel_parts):
        current = current / part
        if current.is_symlink():
            return "/".join(rel_parts[: i + 1])
    return None


def discover_files(workspace: Path | str, extra_paths: Iterable[ExtraPath | str | dict] = ()) -> Discovery:
    """The files OpenClaw's builtin engine would index for this workspace and these extra paths.
    See the module docstring for exactly what happens with links and paths outside the workspace."""
    workspace = Path(workspace).expanduser()
    if not workspace.is_dir():
        raise DataError(workspace, None, None, "workspace must be an existing folder")
    root = Path(os.path.abspath(workspace))
    real_root = os.path.realpath(root)
    found: list[tuple[str, Path]] = []
    skipped: list[Skipped] = []

    for name in MEMORY_FILES:
        candidate = root / name
        if candidate.is_symlink():
            skipped.append(Skipped(name, "symbolic link"))
        elif candidate.is_file():
            found.append((name, candidate))
    memory_dir = root / MEMORY_DIR
    if memory_dir.is_symlink():
        skipped.append(Skipped(MEMORY_DIR, "symbolic link"))
    elif memory_dir.is_dir():
        _walk(memory_dir, MEMORY_DIR, glob_regex(MEMORY_DIR_PATTERN), found, skipped)

    for index, entry in enumerate(extra_paths):
        extra = _parse_extra(entry, f"extraPaths[{index}]", None)
        where = extra.source or str(workspace)
        raw = extra.path.strip()
        if not raw:
            skipped.append(Skipped(repr(extra.path), f"{extra.field}: empty path"))
            continue
        pattern = glob_regex(_check_pattern(extra.pattern, where, f"{extra.field}.pattern"))
        expanded = os.path.expanduser(raw)
        absolute = os.path.isabs(expanded)
        target = os.path.normpath(expanded if absolute else os.path.join(root, expanded))
        if not absolute and not _inside(target, str(root)):
            raise DataError(where, None, extra.field,
                            f"{raw!r} climbs out of the workspace {root} with '..'; extra paths outside the "
                            "workspace must be written as absolute paths")
        base = str(root) if _inside(target, str(root)) else real_root if _inside(target, real_root) else None
        if base is not None:  # inside the workspace: the same as the relative path it is
            rel = os.path.relpath(target, base)
            rel_parts = [] if rel == "." else list(PurePosixPath(Path(rel).as_posix()).parts)
            link = _link_on_the_way(Path(base), rel_parts)
            if link is not None:
                skipped.append(Skipped(raw, f"{extra.field}: symbolic link ({link})"))
                continue
            prefix = "/".join(rel_parts)
        else:  # outside, named by an absolute path: shown as extra<N>/...
            if os.path.islink(target):
                skipped.append(Skipped(raw, f"{extra.field}: symbolic link"))
                continue
            prefix = f"extra{index + 1}"
        target_path = Path(target)
        if target_path.is_dir():
            _walk(target_path, prefix, pattern, found, skipped)
        elif target_path.is_file():
            if pattern.fullmatch(target_path.name):
                found.append((prefix if base is not None else f"{prefix}/{target_path.name}", target_path))
            else:
                skipped.append(Skipped(raw, f"{extra.field}: does not match the pattern {extra.pattern!r}"))
        else:
            skipped.append(Skipped(raw, f"{extra.field}: does not exist"))

    files: list[MemoryFile] = []
    seen_real: set[str] = set()
    by_display: dict[str, Path] = {}
    for display, path in found:
        real = os.path.realpath(path)
        if real in seen_real:
            continue  # the same file reached twice: first seen wins, as in OpenClaw
        seen_real.add(real)
        if display in by_display:
            raise DataError(path, None, None, f"two different files would both be shown as {display!r} "
                                              f"(the other is {by_display[display]}); rename one")
        if display == PROVENANCE_FILE:
            raise DataError(path, None, None, f"{PROVENANCE_FILE} is reserved for the layout's provenance map")
        by_display[display] = path
        files.append(MemoryFile(display, path))
    return Discovery(workspace, sorted(files, key=lambda f: f.display), skipped)


# ---------------------------------------------------------------------------------------------
# openclaw.json
# ---------------------------------------------------------------------------------------------

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
    "mmr": "MMR is not applied by the harness pipeline yet",
    "temporalDecay": "temporal decay is not applied by the harness pipeline yet",
}


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

    def experiment_tables(self, preset: str) -> dict[str, Any]:
        """Harness experiment tables overriding `preset` with these settings (only those set)."""
        preset_cfg = load_toml(preset_path(preset))
        tables: dict[str, Any] = {}
        if "vector_weight" in self.values or "text_weight" in self.values:
            if preset_cfg.get("fusion", {}).get("name") != "weighted":
                raise ValueError(f"preset {preset!r} does not use OpenClaw's weighted fusion, so openclaw.json's "
                                 "vectorWeight/textWeight mean nothing there; use an openclaw-* preset")
            tables["fusion"] = {k: self.get(k) for k in ("vector_weight", "text_weight") if k in self.values}
        search = {k: self.get(k) for k in ("max_results", "candidate_multiplier") if k in self.values}
        if search:
            tables["search"] = search
        if "tokenizer" in self.values:
            tables["tokenizer"] = {"name": self.get("tokenizer")}
        chunker = {k: self.get(f"chunk_{k}") for k in ("tokens", "overlap") if f"chunk_{k}" in self.values}
        if chunker:
            tables["chunker"] = chunker
        if "min_score" in self.values:
            stages = copy.deepcopy(preset_cfg.get("postprocess", []))
            for stage in stages:
                if stage.get("name") == "min_score":
                    stage["min_score"] = self.get("min_score")
                    break
            else:
                stages.append({"name": "min_score", "min_score": self.get("min_score")})
            tables["postprocess"] = stages
        return tables


def _number(value: Any, source: Path, field_name: str, *, lo: float, hi: float = math.inf,
            integer: bool = False) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DataError(source, None, field_name, f"must be a number, got {value!r}")
    if integer:
        if value != int(value):
            raise DataError(source, None, field_name, f"must be a whole number, got {value!r}")
        value = int(value)
    if not lo <= value <= hi:
        bounds = f">= {lo:g}" if hi == math.inf else f"in [{lo:g}, {hi:g}]"
        raise DataError(source, None, field_name, f"must be {bounds}, got {value!r}")
    return value


def _object(value: Any, source: Path, field_name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DataError(source, None, field_name, f"must be an object, got {type(value).__name__}")
    return value


def _read_layer(layer: dict[str, Any], prefix: str, source: Path, settings: OpenClawSettings) -> None:
    """One memorySearch object (top level, agents.defaults or one agent) into `settings`."""
    def put(setting: str, path: str, value: Any) -> None:
        settings.values[setting] = (path, value)

    def note(path: str, value: Any, why: str) -> None:
        settings.notes.append(f"{path} = {json.dumps(value, ensure_ascii=False)}: not evaluated ({why})")

    for key, value in layer.items():
        path = f"{prefix}.{key}"
        if key == "query":
            for qkey, qvalue in _object(value, source, path).items():
                qpath = f"{path}.{qkey}"
                if qkey == "maxResults":
                    put("max_results", qpath, _number(qvalue, source, qpath, lo=1, integer=True))
                elif qkey == "minScore":
                    put("min_score", qpath, float(_number(qvalue, source, qpath, lo=0, hi=1)))
                elif qkey == "hybrid":
                    for hkey, hvalue in _object(qvalue, source, qpath).items():
                        hpath = f"{qpath}.{hkey}"
                        if hkey == "vectorWeight":
                            put("vector_weight", hpath, float(_number(hvalue, source, hpath, lo=0, hi=1)))
                        elif hkey == "textWeight":
                            put("text_weight", hpath, float(_number(hvalue, source, hpath, lo=0, hi=1)))
                        elif hkey == "candidateMultiplier":
                            put("candidate_multiplier", hpath, _number(hvalue, source, hpath, lo=1, integer=True))
                        elif hkey in HYBRID_NOT_EVALUATED:
                            if hkey == "enabled" and hvalue is not False:
                                continue  # hybrid on is what the harness does
                            if hkey in ("mmr", "temporalDecay") and not (isinstance(hvalue, dict)
                                                                         and hvalue.get("enabled") is True):
                                continue  # off, as the harness runs
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
                                                f"must be one of {', '.join(TOKENIZER_NAMES)}, got {fvalue!r}")
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
            if key in ("provider", "model") and isinstance(value, str):
                settings.embedding[key] = value
            if key == "remote" and isinstance(value, dict) and isinstance(value.get("baseUrl"), str):
                settings.embedding["base_url"] = value["baseUrl"]
            if key == "enabled" and value is not False:
                continue
            note(path, "…" if key == "remote" else value, NOT_EVALUATED[key])  # never echo an API key
        else:
            note(path, value, "unknown to the harness")


def read_openclaw_config(path: Path | str, *, agent: str | None = None) -> OpenClawSettings:
    """openclaw.json (JSON5: comments, trailing commas, unquoted keys) -> OpenClawSettings.

    Read, in order, each later one winning key by key: a top-level memorySearch (an old location),
    agents.defaults.memorySearch, and with `agent` the memorySearch of agents.list[] entry with that id.
    extraPaths of all three are concatenated.  Invalid values raise DataError naming the field path;
    settings the harness does not evaluate are listed in .notes."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(path, None, None, "no such file") from None
    except UnicodeDecodeError as exc:
        raise DataError(path, None, None, f"not UTF-8 ({exc.reason})") from None
    try:
        doc = json5.loads(text, allow_duplicate_keys=False)
    except ValueError as exc:
        message = str(exc)
        match = re.match(r"<string>:(\d+)\s*(.*)", message)
        if match:
            raise DataError(path, int(match[1]), None, f"invalid JSON5: {match[2]}") from None
        raise DataError(path, None, None, f"invalid JSON5: {message}") from None
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
    agent_list = agents.get("list", [])
    if not isinstance(agent_list, list):
        raise DataError(path, None, "agents.list", "must be a list")
    if agent is not None:
        matches = [i for i, a in enumerate(agent_list) if isinstance(a, dict) and a.get("id") == agent]
        if not matches:
            known = [a.get("id") for a in agent_list if isinstance(a, dict)]
            raise DataError(path, None, "agents.list", f"no agent with id {agent!r}; ids: {known}")
        entry = agent_list[matches[0]]
        if "memorySearch" in entry:
            layers.append((f"agents.list[{matches[0]}].memorySearch", entry["memorySearch"]))
    else:
        for i, a in enumerate(agent_list):
            if isinstance(a, dict) and "memorySearch" in a:
                settings.notes.append(f"agents.list[{i}].memorySearch (agent {a.get('id')!r}): not evaluated "
                                      "(choose an agent to apply its overrides)")
    for prefix, layer in layers:
        _read_layer(_object(layer, path, prefix), prefix, path, settings)
    tokens, overlap = settings.get("chunk_tokens"), settings.get("chunk_overlap")
    if overlap is not None and overlap >= (tokens if tokens is not None else 400):
        raise DataError(path, None, settings.values["chunk_overlap"][0], "must be smaller than chunking.tokens")
    return settings


def openclaw_snippet(config: dict[str, Any], *, agent: str | None = None) -> tuple[str, list[str]]:
    """The inverse of experiment_tables: a harness configuration (resolved, or just the tables a sweep
    changed) -> the openclaw.json (JSON5) memorySearch snippet that sets the same values, plus the
    settings openclaw.json cannot express (another fusion, tokenizer or post-processing stage)."""
    query: dict[str, Any] = {}
    hybrid: dict[str, Any] = {}
    memory_search: dict[str, Any] = {}
    cannot: list[str] = []
    fusion = config.get("fusion", {})
    if fusion:
        if fusion.get("name", "weighted") != "weighted":
            cannot.append(f"fusion {fusion['name']!r} (OpenClaw only has its weighted merge)")
        for key, name in (("vector_weight", "vectorWeight"), ("text_weight", "textWeight")):
            if key in fusion:
                hybrid[name] = round(float(fusion[key]), 6)
    search = config.get("search", {})
    if "max_results" in search:
        query["maxResults"] = int(search["max_results"])
    if "candidate_multiplier" in search:
        hybrid["candidateMultiplier"] = int(search["candidate_multiplier"])
    for stage in config.get("postprocess", []):
        if stage.get("name") == "min_score" and "min_score" in stage:
            query["minScore"] = round(float(stage["min_score"]), 6)
        elif stage.get("name") != "min_score":
            cannot.append(f"post-processing stage {stage.get('name')!r}")
    tokenizer = config.get("tokenizer", {}).get("name")
    if tokenizer in TOKENIZER_NAMES:
        memory_search["store"] = {"fts": {"tokenizer": tokenizer}}
    elif tokenizer is not None:
        cannot.append(f"tokenizer {tokenizer!r} (openclaw.json offers {', '.join(TOKENIZER_NAMES)})")
    chunker = config.get("chunker", {})
    chunking = {k: int(chunker[k]) for k in ("tokens", "overlap") if k in chunker}
    if chunking:
        memory_search["chunking"] = chunking
    if hybrid:
        query["hybrid"] = hybrid
    if query:
        memory_search = {"query": query, **memory_search}
    body = {"memorySearch": memory_search}
    doc = {"agents": {"list": [{"id": agent, **body}]}} if agent else {"agents": {"defaults": body}}
    return _json5(doc) + "\n", cannot


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


def find_openclaw_config(workspace: Path | str) -> Path | None:
    """<workspace>/openclaw.json, else the one beside it (OpenClaw's default layout is
    ~/.openclaw/openclaw.json with the workspace at ~/.openclaw/workspace)."""
    workspace = Path(workspace).expanduser()
    for candidate in (workspace / "openclaw.json", workspace.parent / "openclaw.json"):
        if candidate.is_file():
            return candidate
    return None


# ---------------------------------------------------------------------------------------------
# Queries files
# ---------------------------------------------------------------------------------------------

QUERY_FIELDS = ("id", "text", "kind", "path", "lines", "contains", "note")


@dataclass
class QuerySpec:
    """A query as written: its target is resolved against the indexed files later."""

    id: str
    text: str
    kind: str
    source: str  # the queries file
    line: int  # the line the query starts on
    path: str | None = None
    lines: tuple[int, int] | None = None
    contains: str | None = None
    note: str | None = None
    field_lines: dict[str, int] = field(default_factory=dict)

    def where(self, field_name: str) -> int:
        return self.field_lines.get(field_name, self.line)


def check_display_path(value: Any, source: str, line: int | None, field_name: str = "path") -> str:
    """A path in a queries file: relative, no `..`, as the index shows it (a leading ./ is dropped)."""
    if not isinstance(value, str) or not value.strip():
        raise DataError(source, line, field_name,
                        "must be a non-empty string (a display path such as memory/2026-03-01.md)")
    value = value.strip()
    if value.startswith("/") or value.startswith("~") or re.match(r"^[A-Za-z]:[\\/]", value) or value.startswith("\\"):
        raise DataError(source, line, field_name, f"{value!r} is absolute; name the file by its display path "
                                                  "relative to the workspace (files of an absolute extra path "
                                                  "are extra<N>/...)")
    if ".." in re.split(r"[\\/]", value):
        raise DataError(source, line, field_name, f"{value!r} contains '..'; only indexed files can be named, "
                                                  "by their display path inside the workspace")
    while value.startswith("./"):
        value = value[2:]
    return value


def _spec_from_fields(source: str, line: int, fields: dict[str, tuple[Any, int]]) -> QuerySpec:
    for key, (_, key_line) in fields.items():
        if key not in QUERY_FIELDS:
            raise DataError(source, key_line, key, f"unknown field; a query has {', '.join(QUERY_FIELDS)}")

    def required_str(key: str) -> str:
        if key not in fields:
            raise DataError(source, line, key, "missing")
        value, at = fields[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key == "id":
            raise DataError(source, at, key, f"must be a string; quote it: id: \"{value}\"")
        if not isinstance(value, str) or not value.strip():
            raise DataError(source, at, key, "must be a non-empty string")
        return value.strip() if key == "id" else value

    qid, text = required_str("id"), required_str("text")
    kind, kind_line = fields.get("kind", ("suite", line))
    if kind not in QUERY_KINDS:
        raise DataError(source, kind_line, "kind", f"must be one of {', '.join(QUERY_KINDS)}, got {kind!r}")
    spec = QuerySpec(qid, text, kind, source, line, field_lines={k: at for k, (_, at) in fields.items()})
    if "note" in fields:
        note, at = fields["note"]
        if not isinstance(note, str):
            raise DataError(source, at, "note", "must be a string")
        spec.note = note
    targets = [k for k in ("path", "lines", "contains") if k in fields]
    if kind == "negative":
        if targets:
            raise DataError(source, spec.where(targets[0]), targets[0],
                            "a negative query names no target: nothing in memory should answer it")
        return spec
    if not targets:
        raise DataError(source, line, "path", f"query {qid!r} needs a target: path, path + lines, or contains")
    if "path" in fields:
        spec.path = check_display_path(fields["path"][0], source, spec.where("path"))
    if "lines" in fields:
        value, at = fields["lines"]
        if "contains" in fields:
            raise DataError(source, at, "lines", "give either lines or contains, not both")
        if "path" not in fields:
            raise DataError(source, at, "lines", "lines need a path")
        if (not isinstance(value, list) or len(value) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            raise DataError(source, at, "lines", f"must be [start, end], two line numbers, got {value!r}")
        start, end = value
        if not 1 <= start <= end:
            raise DataError(source, at, "lines", f"need 1 <= start <= end, got [{start}, {end}]")
        spec.lines = (start, end)
    if "contains" in fields:
        value, at = fields["contains"]
        if not isinstance(value, str) or not value.strip():
            raise DataError(source, at, "contains", "must be a non-empty string")
        spec.contains = value
    return spec


def _yaml_items(path: Path, text: str) -> list[tuple[int, dict[str, tuple[Any, int]]]]:
    loader = yaml.SafeLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "syntax error"
            raise DataError(path, mark.line + 1 if mark else None, None, f"invalid YAML: {problem}") from None
        except yaml.YAMLError as exc:
            raise DataError(path, None, None, f"invalid YAML: {exc}") from None
        if root is None:
            return []
        if not isinstance(root, yaml.SequenceNode):
            raise DataError(path, root.start_mark.line + 1, None,
                            "must be a list of queries, each starting with '- id:'")
        items = []
        for node in root.value:
            at = node.start_mark.line + 1
            if not isinstance(node, yaml.MappingNode):
                raise DataError(path, at, None, "each query must be a mapping (id: ..., text: ...)")
            fields: dict[str, tuple[Any, int]] = {}
            for key_node, value_node in node.value:
                key_line = key_node.start_mark.line + 1
                if not isinstance(key_node, yaml.ScalarNode):
                    raise DataError(path, key_line, None, "field names must be plain words")
                key = key_node.value
                if key in fields:
                    raise DataError(path, key_line, key, f"given twice (first on line {fields[key][1]})")
                try:
                    value = loader.construct_object(value_node, deep=True)
                except yaml.YAMLError as exc:
                    raise DataError(path, value_node.start_mark.line + 1, key, f"invalid value: {exc}") from None
                fields[key] = (value, value_node.start_mark.line + 1)
            items.append((at, fields))
        return items
    finally:
        loader.dispose()


def load_query_specs(path: Path | str) -> list[QuerySpec]:
    """Parse and check a queries file (.yaml/.yml or .jsonl); errors name the file, line and field."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".jsonl"):
        raise DataError(path, None, None, "a queries file must be .yaml, .yml or .jsonl")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(path, None, None, "no such queries file") from None
    except UnicodeDecodeError as exc:
        raise DataError(path, None, None, f"not UTF-8 ({exc.reason})") from None
    if suffix == ".jsonl":
        items = [(lineno, {k: (v, lineno) for k, v in obj.items()}) for lineno, obj in _jsonl(path)]
    else:
        items = _yaml_items(path, text)
    if not items:
        raise DataError(path, None, None, "no queries yet: add some (uncomment the examples `harness init` wrote)")
    specs: list[QuerySpec] = []
    first_line: dict[str, int] = {}
    for line, fields in items:
        spec = _spec_from_fields(str(path), line, fields)
        if spec.id in first_line:
            raise DataError(path, spec.where("id"), "id",
                            f"duplicate query id {spec.id!r} (first on line {first_line[spec.id]})")
        first_line[spec.id] = spec.where("id")
        specs.append(spec)
    return specs


# ---------------------------------------------------------------------------------------------
# Targets -> doc ids and provenance spans
# ---------------------------------------------------------------------------------------------


def line_count(text: str) -> int:
    return max(1, len(split_lines(text)))


def occurrence_lines(text: str, needle: str) -> list[tuple[int, int]]:
    """(first line, last line) of every occurrence of `needle`, overlapping ones included."""
    out, start = [], text.find(needle)
    while start != -1:
        first = text.count("\n", 0, start) + 1
        out.append((first, first + needle.count("\n", 0, max(0, len(needle) - 1))))
        start = text.find(needle, start + 1)
    return out


def _unknown_path_error(spec: QuerySpec, discovery: Discovery) -> DataError:
    path = spec.path or ""
    hint = ""
    skipped = {s.path: s.reason for s in discovery.skipped}
    on_disk = discovery.workspace / path
    if path in skipped:
        hint = f" (it was skipped: {skipped[path]})"
    elif on_disk.exists():
        hint = " (it exists but is not indexed: OpenClaw indexes MEMORY.md, memory.md, memory/**/*.md and extraPaths)"
    else:
        close = difflib.get_close_matches(path, discovery.displays, n=3)
        if close:
            hint = f"; did you mean {', '.join(close)}?"
    return DataError(spec.source, spec.where("path"), "path", f"{path!r} is not an indexed file{hint}")


def resolve_targets(specs: Sequence[QuerySpec], texts: dict[str, str],
                    discovery: Discovery) -> tuple[list[Query], list[Span]]:
    """Queries with their relevant doc ids, and the provenance spans that define those doc ids."""
    queries: list[Query] = []
    spans: dict[tuple[str, int, int, str], None] = {}  # ordered, without repeats
    for spec in specs:
        relevant: dict[str, int] = {}
        if spec.path is not None and spec.path not in texts:
            raise _unknown_path_error(spec, discovery)
        if spec.contains is not None:
            doc_id = f"contains:{spec.id}"
            searched = [spec.path] if spec.path is not None else sorted(texts)
            for display in searched:
                for first, last in occurrence_lines(texts[display], spec.contains):
                    spans[(display, first, last, doc_id)] = None
            if not any(key[3] == doc_id for key in spans):
                scope = spec.path if spec.path is not None else "any indexed file"
                raise DataError(spec.source, spec.where("contains"), "contains",
                                f"{spec.contains!r} does not occur in {scope} (matching is exact and case-sensitive)")
            relevant[doc_id] = 1
        elif spec.lines is not None:
            start, end = spec.lines
            n = line_count(texts[spec.path])
            if end > n:
                raise DataError(spec.source, spec.where("lines"), "lines",
                                f"{spec.path} has {n} lines; [{start}, {end}] goes past its end")
            doc_id = f"{spec.path}#L{start}-L{end}"
            spans[(spec.path, start, end, doc_id)] = None
            relevant[doc_id] = 1
        elif spec.path is not None:
            spans[(spec.path, 1, line_count(texts[spec.path]), spec.path)] = None
            relevant[spec.path] = 1
        target = {k: v for k, v in (("path", spec.path), ("lines", list(spec.lines) if spec.lines else None),
                                    ("contains", spec.contains)) if v is not None}
        extra = {"target": target, "source": f"{spec.source}:{spec.line}"}
        if spec.note:
            extra["note"] = spec.note
        queries.append(Query(spec.id, spec.text, relevant, spec.kind, None, extra))
    return queries, [Span(*key) for key in spans]


# ---------------------------------------------------------------------------------------------
# The `workspace` data set
# ---------------------------------------------------------------------------------------------


def read_memory_text(path: Path) -> str:
    """A memory file as the layout reads it back (UTF-8, universal newlines)."""
    try:
        raw = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(path, None, None, f"not UTF-8 at byte {exc.start} ({exc.reason})") from None
    return raw.replace("\r\n", "\n").replace("\r", "\n")


@dataclass
class WorkspaceDataset:
    """A user's OpenClaw workspace + a queries file (+ openclaw.json for its extraPaths)."""

    path: Path
    queries_file: Path
    config_file: Path | None = None
    agent: str | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def settings(self) -> OpenClawSettings | None:
        if self.config_file is None:
            return None
        if "settings" not in self._cache:
            self._cache["settings"] = read_openclaw_config(self.config_file, agent=self.agent)
        return self._cache["settings"]

    def discovery(self) -> Discovery:
        if "discovery" not in self._cache:
            settings = self.settings()
            self._cache["discovery"] = discover_files(self.path, settings.extra_paths if settings else ())
        return self._cache["discovery"]

    def texts(self) -> dict[str, str]:
        if "texts" not in self._cache:
            self._cache["texts"] = {f.display: read_memory_text(f.source) for f in self.discovery().files}
        return self._cache["texts"]

    def _resolved(self) -> tuple[list[Query], list[Span]]:
        if "resolved" not in self._cache:
            specs = load_query_specs(self.queries_file)
            self._cache["resolved"] = resolve_targets(specs, self.texts(), self.discovery())
        return self._cache["resolved"]

    def queries(self) -> list[Query]:
        return list(self._resolved()[0])

    def render(self, dest: Path | str | None = None, **options: Any) -> Layout:
        """Copy every indexed file, byte for byte, to its display path under a fresh folder and write
        the provenance spans of the queries' targets.  A workspace layout takes no options."""
        if options:
            raise TypeError(f"the workspace data set takes no [layout] options, got {', '.join(sorted(options))}")
        discovery = self.discovery()
        if not discovery.files:
            raise DataError(self.path, None, None, "no memory files: expected MEMORY.md, memory.md or memory/**/*.md")
        _, spans = self._resolved()
        root = fresh_root("workspace-", dest)
        for memory_file in discovery.files:
            target = root / memory_file.display
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(memory_file.source, target, follow_symlinks=False)
        description = {
            "dataset": "workspace", "workspace": str(self.path),
            "config": str(self.config_file) if self.config_file else None,
            "files": len(discovery.files), "skipped": [[s.path, s.reason] for s in discovery.skipped],
        }
        layout = Layout(root, discovery.displays, spans, description)
        (root / PROVENANCE_FILE).write_text(
            json.dumps({"description": description, "spans": [[s.path, s.start, s.end, s.doc_id] for s in spans]},
                       ensure_ascii=False, indent=0),
            encoding="utf-8")
        return layout


@DATASETS.register("workspace")
def _workspace(path: str, queries: str, config: str | None = None, agent: str | None = None) -> WorkspaceDataset:
    return WorkspaceDataset(project_path(Path(path).expanduser()), project_path(Path(queries).expanduser()),
                            project_path(Path(config).expanduser()) if config else None, agent)


# ---------------------------------------------------------------------------------------------
# init: experiment TOML + queries template
# ---------------------------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # a JSON string is a TOML basic string, once DEL (which JSON leaves raw and TOML forbids) is escaped
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _toml_lines(table: dict[str, Any]) -> list[str]:
    return [f"{key} = {_toml_value(value)}" for key, value in table.items()]


def workspace_slug(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_.-]+", "-", name).strip("-.") or "workspace"


def _comment(text: str) -> str:
    return "\n".join(f"# {line}" if line else "#" for line in text.splitlines())


def _heading_text(line: str) -> str:
    return line.lstrip("#").strip()


def _section(lines: list[str]) -> tuple[int, int, str] | None:
    """The first heading below the top one with the lines under it (at most 8): (start, end, heading)."""
    for i, line in enumerate(lines):
        if i and re.match(r"^#{1,6}\s+\S", line):
            end = i
            for j in range(i + 1, min(len(lines), i + 8)):
                if not lines[j].strip() or re.match(r"^#{1,6}\s", lines[j]):
                    break
                end = j
            if end > i:
                return i + 1, end + 1, _heading_text(line)
    return None


def _phrase(lines: list[str]) -> str | None:
    """A short phrase from the longest line in UTF-8 bytes (likely content rather than a heartbeat),
    for a `contains` example: up to the first punctuation, at most 3 words or 12 CJK characters."""
    best = max(lines, key=lambda l: len(l.encode("utf-8")), default="")
    content = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?", "", best).strip()
    content = re.split(r"[，。；：、！？,;:!?（(「『\[]", content, maxsplit=1)[0].strip()
    if re.match(r"[A-Za-z0-9]", content):
        content = " ".join(content.split()[:3])
    else:
        content = content[:12].strip()
    return content or None


def _yaml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def queries_template(discovery: Discovery, texts: dict[str, str]) -> str:
    """A YAML queries file whose only content is comments: three examples built from the user's own
    files (a path, a path + lines, a contains), a negative one, and the list of indexed files."""
    displays = discovery.displays
    dated = [d for d in displays if re.search(r"(?:^|/)memory/(?:.+/)?\d{4}-\d{2}-\d{2}\.md$", d)]
    whole = dated[0] if dated else displays[0]
    whole_lines = split_lines(texts[whole])
    whole_text = next((_heading_text(l) for l in whole_lines if l.startswith("#")), PurePosixPath(whole).stem)
    section = next(((d, s) for d in displays if (s := _section(split_lines(texts[d]))) is not None), None)
    phrase_file = next((d for d in displays if section is None or d != section[0]), displays[0])
    phrase = _phrase(split_lines(texts[phrase_file]))

    examples = [f"- id: q01\n  text: {_yaml_str(whole_text)}   # rewrite as the question you would ask\n"
                f"  path: {_yaml_str(whole)}"]
    if section is not None:
        display, (start, end, heading) = section
        examples.append(f"- id: q02\n  text: {_yaml_str(heading)}\n  path: {_yaml_str(display)}\n"
                        f"  lines: [{start}, {end}]")
    if phrase:
        examples.append(f"- id: q03\n  text: {_yaml_str(phrase)}\n  contains: {_yaml_str(phrase)}\n"
                        f"  path: {_yaml_str(phrase_file)}   "
                        "# optional: look in this file only")
    examples.append("- id: q04\n  kind: negative   # nothing in memory answers it: ideally nothing is returned\n"
                    "  text: \"a question your memory cannot answer\"")
    header = f"""Queries for the OpenClaw workspace {discovery.workspace} (written by `harness init`).

Each query: id, text, optional kind (suite | paraphrase | negative), and what it should find:
  path: FILE                    any chunk of that file counts as found
  path: FILE + lines: [A, B]    a chunk overlapping lines A..B counts
  contains: "TEXT"              a chunk covering a line where TEXT occurs counts (exact, case-sensitive;
                                add path: FILE to look in one file only)
Paths are display paths, as listed at the end of this file: relative, no '..', never absolute.
A negative query names no target.

Uncomment the examples below (they are built from your own files), rewrite their text as the
questions you would really ask your agent, and add your own.  Then: harness run <experiment TOML>."""
    listing = displays[:200] + ([f"... and {len(displays) - 200} more"] if len(displays) > 200 else [])
    parts = [_comment(header), "", *(_comment(e) + "\n#" for e in examples), "",
             _comment(f"Indexed files ({len(displays)}):\n" + "\n".join(f"  {d}" for d in listing))]
    if discovery.skipped:
        parts += ["#", _comment("Skipped (not indexed):\n" + "\n".join(f"  {s.path}: {s.reason}"
                                                                     for s in discovery.skipped))]
    return "\n".join(parts) + "\n"


OPENAI_BASE_URL = "https://api.openai.com/v1"


def embedder_hint(embedding: dict[str, str]) -> list[str]:
    """Commented [embedder] lines for the provider openclaw.json names, when the harness can reach it
    (an OpenAI-compatible /embeddings endpoint); the key is named by an environment variable only."""
    provider = embedding.get("provider")
    base_url = embedding.get("base_url") or (OPENAI_BASE_URL if provider == "openai" else None)
    if provider not in ("openai", "openai-compatible") and not embedding.get("base_url"):
        return []
    if base_url is None or "model" not in embedding:
        return []
    key_env = "OPENAI_API_KEY" if provider == "openai" else "EMBEDDINGS_API_KEY"
    return ["", "# openclaw.json embeds with this provider; to evaluate with it instead of the local model,",
            f"# uncomment (and export {key_env}; the key is never written to a file):",
            "# [embedder]", '# name = "openai-compatible"', f"# base_url = {_toml_value(base_url)}",
            f"# model = {_toml_value(embedding['model'])}", f"# api_key_env = {_toml_value(key_env)}"]


class InitResult(NamedTuple):
    experiment: Path
    queries: Path
    config: Path | None  # the openclaw.json that was read, if any
    files: int  # how many files would be indexed
    notes: list[str]  # openclaw.json settings not evaluated, and skipped paths


def init_workspace(workspace: Path | str, out_dir: Path | str, *, config: Path | str | None = None,
                   queries: Path | str | None = None, preset: str = DEFAULT_INIT_PRESET, agent: str | None = None,
                   force: bool = False) -> InitResult:
    """Write <out_dir>/experiment.toml (the preset overridden by the workspace's openclaw.json) and
    <out_dir>/queries.yaml (a template of commented examples from the user's own files).

    Without `config`, openclaw.json is looked for in the workspace, then beside it.  With `queries`
    (an existing queries file) no template is written: the experiment uses that file, which is checked
    against the workspace now.  Existing files are never overwritten unless `force`."""
    preset_path(preset)  # an unknown preset fails first, before anything is read or written
    workspace = Path(os.path.abspath(Path(workspace).expanduser()))
    out_dir = Path(os.path.abspath(Path(out_dir).expanduser()))
    config_path = Path(os.path.abspath(Path(config).expanduser())) if config else find_openclaw_config(workspace)
    settings = read_openclaw_config(config_path, agent=agent) if config_path else None
    discovery = discover_files(workspace, settings.extra_paths if settings else ())
    if not discovery.files:
        raise DataError(workspace, None, None, "no memory files found: expected MEMORY.md, memory.md or memory/**/*.md")
    texts = {f.display: read_memory_text(f.source) for f in discovery.files}
    tables = settings.experiment_tables(preset) if settings else {}

    experiment_path = out_dir / "experiment.toml"
    if queries is not None:
        queries_path = Path(os.path.abspath(Path(queries).expanduser()))
        resolve_targets(load_query_specs(queries_path), texts, discovery)  # fail now, not at the first run
    else:
        queries_path = out_dir / "queries.yaml"
    for target in [experiment_path] + ([queries_path] if queries is None else []):
        if target.exists() and not force:
            raise FileExistsError(f"{target} already exists; pass --force to overwrite it")
    dataset = {"name": "workspace", "path": str(workspace), "queries": str(queries_path)}
    if config_path:
        dataset["config"] = str(config_path)
    if agent:
        dataset["agent"] = agent
    notes = list(settings.notes if settings else []) + [f"skipped {s.path}: {s.reason}" for s in discovery.skipped]

    source = f"the memorySearch settings of {config_path}" if config_path else "no openclaw.json (preset defaults)"
    lines = [
        "# Written by `harness init`: the preset's stages, overridden by openclaw.json where it sets a value.",
        "# Re-run init after changing weights or limits in openclaw.json; extraPaths are read at every run.",
        f"name = {_toml_value(workspace_slug(workspace.name))}",
        f"description = {_toml_value(f'OpenClaw workspace {workspace} with {source}.')}",
        f"preset = {_toml_value(preset)}",
        "",
        "[dataset]",
        *_toml_lines(dataset),
        "",
        "# targets of different queries may overlap (a file and lines inside it): no 'mixed top-1' marks",
        "[evaluation]",
        "report_purity = false",
    ]
    origin = {"fusion": ("vector_weight", "text_weight"), "search": ("max_results", "candidate_multiplier"),
              "tokenizer": ("tokenizer",), "chunker": ("chunk_tokens", "chunk_overlap"), "postprocess": ("min_score",)}
    for table in ("chunker", "tokenizer", "fusion", "search"):
        if table in tables:
            fields = [settings.values[s][0] for s in origin[table] if settings and s in settings.values]
            lines += ["", f"# from {', '.join(fields)}", f"[{table}]", *_toml_lines(tables[table])]
    if "postprocess" in tables:
        lines += ["", f"# from {settings.values['min_score'][0]} (the preset's other post-processing stages kept)"]
        for stage in tables["postprocess"]:
            lines += ["[[postprocess]]", *_toml_lines(stage)]
    if settings is not None:
        lines += embedder_hint(settings.embedding)
    if notes:
        lines += ["", "# Not evaluated:", *(f"#   {n}" for n in notes)]
    out_dir.mkdir(parents=True, exist_ok=True)
    experiment_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if queries is None:
        queries_path.write_text(queries_template(discovery, texts), encoding="utf-8")
    return InitResult(experiment_path, queries_path, config_path, len(discovery.files), notes)
