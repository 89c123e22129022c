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

Extra path entries and openclaw.json: harness.openclaw_config; queries files: harness.query_files;
`harness init`: harness.workspace_init.
"""
from __future__ import annotations

import difflib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Iterator, Sequence

from pydantic import Field, field_validator

from harness.errors import DataError
from harness.inputs.layout import (
    DATASETS,
    Layout,
    Query,
    Span,
    fresh_root,
    project_path,
)
from harness.inputs.openclaw_config import (
    ExtraPath,
    OpenClawSettings,
    check_pattern,
    parse_extra_path,
    read_openclaw_config,
)
from harness.inputs.query_files import QuerySpec, load_query_specs
from harness.registry import stage
from harness.stages.chunkers import split_lines
from harness.text_files import encoding_problem, os_problem

MEMORY_FILES = ("MEMORY.md", "memory.md")
# the root files OpenClaw 2026.8.1 and 2026.9.6 index (listMemoryFiles, dist/internal-*.mjs): MEMORY.md exactly
# (resolveCanonicalRootMemoryFile; memory.md is a legacy file they skip) and USER.md
AGENT_DB_ROOT_FILES = ("MEMORY.md", "USER.md")
ROOT_FILE_CHOICES = ("MEMORY.md", "memory.md", "USER.md")
MEMORY_DIR = "memory"
MEMORY_DIR_PATTERN = "**/*.md"  # OpenClaw: any file whose name ends in .md, at any depth
PROVENANCE_FILE = "provenance.json"  # written beside the files of every layout


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


# ---------------------------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------------------------


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


MAX_WALK_ENTRIES = 200_000  # files and folders one walk reads: a memory folder, not a file system


def _walk(folder: Path, rel_prefix: str, pattern: re.Pattern[str], files: list[tuple[str, Path]],
          skipped: list[Skipped], *, source: str | Path | None = None, field_name: str | None = None) -> None:
    """Files under `folder` whose path relative to it matches `pattern`; links skipped, sorted walk (depth
    first, names in order, without recursion: any depth is walked).  A folder holding more than
    MAX_WALK_ENTRIES entries (an extra path of "/") is a DataError naming it (and the setting), so no
    configuration walks a whole file system."""
    seen = 0

    def listing(current: Path, rel: str) -> Iterator[os.DirEntry]:
        nonlocal seen
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(_join(rel_prefix, rel) or ".", f"cannot be read ({exc.strerror})"))
            return iter(())
        seen += len(entries)
        if seen > MAX_WALK_ENTRIES:
            raise DataError(source or folder, None, field_name,
                            f"{folder} holds more than {MAX_WALK_ENTRIES:,} files and folders; a memory folder is "
                            "smaller than that: name the folder that holds the notes")
        return iter(entries)

    stack: list[tuple[Iterator[os.DirEntry], str]] = [(listing(folder, ""), "")]
    while stack:
        entries, rel = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        child_rel = f"{rel}/{entry.name}" if rel else entry.name
        if entry.is_symlink():
            try:
                counted = entry.is_dir() or pattern.fullmatch(child_rel)  # only links that would have counted
                reason = "symbolic link"
            except OSError as exc:  # a loop (ELOOP) or an unreadable target: never followed, listed as such
                counted, reason = True, f"symbolic link that cannot be followed ({exc.strerror})"
            if counted:
                skipped.append(Skipped(_join(rel_prefix, child_rel), reason))
        elif entry.is_dir(follow_symlinks=False):
            stack.append((listing(Path(entry.path), child_rel), child_rel))
        elif entry.is_file(follow_symlinks=False) and pattern.fullmatch(child_rel):
            files.append((_join(rel_prefix, child_rel), Path(entry.path)))


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


def discover_files(workspace: Path | str, extra_paths: Iterable[ExtraPath | str | dict] = (),
                   root_files: Sequence[str] = MEMORY_FILES) -> Discovery:
    """The files OpenClaw's builtin engine would index for this workspace and these extra paths.
    See the module docstring for exactly what happens with links and paths outside the workspace.
    `root_files`: the files at the workspace root that are indexed (2026.2.22: MEMORY.md and memory.md;
    2026.8.1 and 2026.9.6: MEMORY.md and USER.md, AGENT_DB_ROOT_FILES)."""
    workspace = Path(workspace).expanduser()
    if not workspace.is_dir():
        raise DataError(workspace, None, None, "workspace must be an existing folder")
    root = Path(os.path.abspath(workspace))
    real_root = os.path.realpath(root)
    found: list[tuple[str, Path]] = []
    skipped: list[Skipped] = []

    for name in root_files:
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
        extra = parse_extra_path(entry, f"extraPaths[{index}]", None)
        where = extra.source or str(workspace)
        raw = extra.path.strip()
        if not raw:
            skipped.append(Skipped(repr(extra.path), f"{extra.field}: empty path"))
            continue
        try:
            pattern = glob_regex(check_pattern(extra.pattern, where, f"{extra.field}.pattern"))
        except re.error as exc:  # [z-a]: a character range backwards, a set never closed...
            raise DataError(where, None, f"{extra.field}.pattern", f"{extra.pattern!r} is not a glob pattern the "
                                                                   f"harness can match ({exc}); e.g. '**/*.md'") from None
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
            _walk(target_path, prefix, pattern, found, skipped, source=extra.source, field_name=extra.field)
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


def skipped_folders(discovery: Discovery) -> str:
    """The skipped folders and links (memory/ a symbolic link, a folder that cannot be listed), for an
    error about a target that was not found: "" when nothing was skipped."""
    parts = [f"{s.path} ({s.reason})" for s in discovery.skipped
             if "symbolic link" in s.reason or "cannot be read" in s.reason]
    return f"; not searched, because skipped: {', '.join(parts[:5])}" if parts else ""


def _unknown_path_error(spec: QuerySpec, discovery: Discovery) -> DataError:
    path = spec.path or ""
    hint = ""
    skipped = {s.path: s.reason for s in discovery.skipped}
    on_disk = discovery.workspace / path
    under = next((p for p in skipped if path.startswith(p.rstrip("/") + "/")), None)
    if path in skipped:
        hint = f" (it was skipped: {skipped[path]})"
    elif under is not None:  # memory/ itself a link: every file under it is skipped with it
        hint = f" (it is under {under}, which was skipped: {skipped[under]}; OpenClaw does not follow it either)"
    elif on_disk.exists():
        hint = " (it exists but is not indexed: OpenClaw indexes MEMORY.md, memory.md, memory/**/*.md and extraPaths)"
    else:
        close = difflib.get_close_matches(path, discovery.displays, n=3)
        if close:
            hint = f"; did you mean {', '.join(close)}?"
    return DataError(spec.source, spec.where("path"), "path", f"{path!r} is not an indexed file{hint}")


def resolve_targets(specs: Sequence[QuerySpec], texts: dict[str, str], discovery: Discovery, *,
                    judgments: str = "explicit", notes: list[str] | None = None) -> tuple[list[Query], list[Span]]:
    """Queries with their relevant doc ids, and the provenance spans that define those doc ids.  Queries
    with `judged` entries count only those `by` the chosen source (`judgments`); one without any is left
    out, and so is a judgment of a file or lines no longer indexed: each named in `notes`."""
    queries: list[Query] = []
    spans: dict[tuple[str, int, int, str], None] = {}  # ordered, without repeats
    occurrences: dict[tuple[str | None, str], tuple[tuple[str, int, int], ...]] = {}
    # `contains` targets found on exactly the same lines are one document, as two `path` targets of one
    # file are: thousands of queries about one line cost one document, not one each (linear memory)
    contains_docs: dict[tuple[tuple[str, int, int], ...], str] = {}
    ordered = sorted(texts)
    unjudged: list[str] = []
    for spec in specs:
        if spec.judged is not None:
            query = _judged_query(spec, texts, judgments, spans, notes)
            if query is None:
                unjudged.append(spec.id)
            else:
                queries.append(query)
            continue
        relevant: dict[str, int] = {}
        if spec.path is not None and spec.path not in texts:
            raise _unknown_path_error(spec, discovery)
        if spec.contains is not None:
            key = (spec.path, spec.contains)
            if key not in occurrences:
                searched = [spec.path] if spec.path is not None else ordered
                occurrences[key] = tuple((display, first, last) for display in searched
                                         for first, last in occurrence_lines(texts[display], spec.contains))
            found = occurrences[key]
            if not found:
                scope = spec.path if spec.path is not None else "any indexed file"
                raise DataError(spec.source, spec.where("contains"), "contains",
                                f"{spec.contains!r} does not occur in {scope} (matching is exact and case-sensitive)"
                                + skipped_folders(discovery))
            doc_id = contains_docs.setdefault(found, f"contains:{spec.id}")
            for display, first, last in found:
                spans[(display, first, last, doc_id)] = None
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
        if spec.asked:
            extra["asked"] = spec.asked
        queries.append(Query(spec.id, spec.text, relevant, spec.kind, None, extra, cluster=spec.cluster))
    if unjudged and notes is not None:
        shown = ", ".join(unjudged[:10]) + (f" and {len(unjudged) - 10} more" if len(unjudged) > 10 else "")
        what = "no implicit positive (the agent read or cited nothing they returned)" if judgments == "implicit" \
            else f"no {judgments} judgments yet"
        notes.append(f"{len(unjudged)} queries have {what} and are not evaluated ({shown})"
                     + ("; `harness judge` labels them" if judgments != "implicit" else ""))
    return queries, [Span(*key) for key in spans]


def _judged_query(spec: QuerySpec, texts: dict[str, str], judgments: str,
                  spans: dict[tuple[str, int, int, str], None], notes: list[str] | None) -> Query | None:
    """A pooled (or mined) query: its judgments of the chosen source as graded doc ids; all judged 0 by a
    person or an LLM makes it a negative query (nothing judged answers it).  None: no judgment to count."""
    chosen = [j for j in spec.judged or [] if j.by == judgments]
    kept = []
    for j in chosen:
        if j.anchor is not None and j.path in texts:
            from dataclasses import replace

            from harness.inputs.anchors import reanchor

            moved = reanchor(texts[j.path], j.start, j.end, j.anchor)
            if moved is None:
                if notes is not None:
                    notes.append(f"{spec.source}:{spec.line}: query {spec.id!r}: the {j.by} judgment of {j.path} "
                                 f"lines {j.start}-{j.end} is dropped: the file changed since it was judged and the "
                                 "judged text is no longer in it (anchor)")
                continue
            if moved != (j.start, j.end):
                if notes is not None:
                    notes.append(f"{spec.source}:{spec.line}: query {spec.id!r}: the {j.by} judgment of {j.path} "
                                 f"lines {j.start}-{j.end} is re-anchored to lines {moved[0]}-{moved[1]}, where the "
                                 "judged text is now")
                j = replace(j, start=moved[0], end=moved[1])
        if j.path not in texts or j.end > texts[j.path].count("\n") + 1:  # OpenClaw numbers the line after a final newline
            if notes is not None:
                notes.append(f"{spec.source}:{spec.line}: query {spec.id!r}: the {j.by} judgment of {j.path} lines "
                             f"{j.start}-{j.end} is left out: " + ("the file is not indexed now" if j.path not in texts
                                                                   else "the file is shorter now"))
            continue
        kept.append(j)
    if not kept:
        return None
    judged: dict[str, int] = {}
    for j in kept:
        judged[j.doc_id] = max(judged.get(j.doc_id, 0), j.grade)
        spans[(j.path, j.start, j.end, j.doc_id)] = None
    relevant = {doc: grade for doc, grade in judged.items() if grade > 0}
    kind = spec.kind
    extra: dict[str, Any] = {"target": {"judged": len(judged), "by": judgments}, "source": f"{spec.source}:{spec.line}",
                             "judged": judged, "judgment_source": judgments}
    if spec.note:
        extra["note"] = spec.note
    if spec.asked:
        extra["asked"] = spec.asked
    if not relevant:
        if judgments == "implicit":
            return None  # the agent passed over these chunks: that says nothing of what would answer it
        kind = "negative"
        extra["all_judged_not_relevant"] = True
    return Query(spec.id, spec.text, relevant, kind, None, extra, cluster=spec.cluster)


# ---------------------------------------------------------------------------------------------
# The `workspace` data set
# ---------------------------------------------------------------------------------------------


JUDGMENT_NOTES = {
    "explicit": "relevance: explicit judgments (graded by a person, `harness judge`)",
    "implicit": "relevance: IMPLICIT judgments, mined from what the agent did (a returned chunk it then read with "
                "memory_get or cited is relevant; one passed over before a reformulated search is not); they say "
                "what the agent used, not what a person would grade",
    "llm": "relevance: LLM judgments (an LLM judge through the chat stage, `harness judge --llm`), not a person's",
}
SKIP_HINT = 'to skip such files with a warning, set errors = "skip" in the experiment\'s [dataset] table'


def read_memory_text(path: Path) -> str:
    """A memory file as the layout reads it back (UTF-8, universal newlines)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(path, None, None, f"unreadable ({os_problem(exc)})") from None
    other = encoding_problem(data)
    if other is not None:
        raise DataError(path, None, None, f"is {other} text, not UTF-8 (save it as UTF-8); {SKIP_HINT}")
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(path, None, None, f"not UTF-8 at byte {exc.start} ({exc.reason}); {SKIP_HINT}") from None
    return raw.replace("\r\n", "\n").replace("\r", "\n")


def readable_texts(discovery: Discovery, errors: str = "strict") -> tuple[Discovery, dict[str, str]]:
    """Every indexed file's text.  errors = "strict" (the default): a file that is not UTF-8 stops the
    run (DataError naming it and saying how to skip).  errors = "skip": such a file is left out and
    listed in the discovery's skipped files, which the run prints as a warning."""
    texts: dict[str, str] = {}
    kept: list[MemoryFile] = []
    skipped = list(discovery.skipped)
    for memory_file in discovery.files:
        try:
            texts[memory_file.display] = read_memory_text(memory_file.source)
            kept.append(memory_file)
        except DataError as exc:
            if errors != "skip":
                raise
            reason = str(exc).split(": ", 1)[-1].split(f"; {SKIP_HINT}")[0]
            skipped.append(Skipped(memory_file.display, f"{reason}; skipped (errors = \"skip\")"))
    return Discovery(discovery.workspace, kept, skipped), texts


def target_warnings(specs: Sequence[QuerySpec], texts: dict[str, str]) -> list[str]:
    """Queries whose target holds only whitespace: nothing there can answer them (a blank chunk that
    happens to rank first would pass by accident)."""
    out = []
    for spec in specs:
        if spec.path is None or spec.path not in texts:
            continue
        lines = split_lines(texts[spec.path])
        target = lines[spec.lines[0] - 1:spec.lines[1]] if spec.lines else lines
        if not "".join(target).strip():
            where = f"lines {spec.lines[0]}-{spec.lines[1]} of " if spec.lines else ""
            out.append(f"{spec.source}:{spec.where('path')}: query {spec.id!r} targets {where}{spec.path}, which "
                       "holds only whitespace: there is nothing there to find, so a pass would be an accident")
    return out


def history_text(data: bytes) -> str:
    """A file read from the workspace's history, as the layout reads a file (bytes that are not UTF-8 replaced:
    the run does not stop on an old version)."""
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def target_problem(spec: QuerySpec, texts: dict[str, str]) -> str | None:
    """Why a query's own target cannot be found in these files (None: it can): a path not among them, a
    substring that does not occur, lines past the end."""
    if spec.path is not None and spec.path not in texts:
        return "its target is not among the files as of then"
    if spec.contains is not None:
        searched = [spec.path] if spec.path is not None else list(texts)
        if not any(spec.contains in texts[p] for p in searched):
            return "its target is not among the files as of then"
    if spec.lines is not None and spec.path is not None and spec.lines[1] > line_count(texts[spec.path]):
        return "its target is not among the files as of then"
    return None


@DATASETS.register("workspace")
@stage
class WorkspaceDataset:
    """Your own OpenClaw workspace (path), a queries file (YAML/JSONL) and optionally openclaw.json; errors =
    "skip" leaves out memory files that are not UTF-8, with a warning, instead of stopping the run.  Queries
    are independent draws unless the queries file gives them a `cluster` (queries of one group are then
    resampled together)."""

    RESAMPLING_UNIT = "group"

    path: str | Path
    """the workspace folder (MEMORY.md, memory/); `~` expanded, relative to the working directory"""
    queries_file: str | Path = Field(alias="queries")
    """the queries file (YAML or JSONL; `harness init` writes one)"""
    config_file: str | Path | None = Field(None, alias="config")
    """openclaw.json, for its memorySearch.extraPaths (and an agent's overrides)"""
    agent: str | None = None
    """the agent whose overrides of openclaw.json apply"""
    errors: str = "strict"
    """a memory file that is not UTF-8: "strict" stops the run, "skip" leaves it out with a warning"""
    judgments: str = "explicit"
    """which graded judgments of pooled queries (`judged:` entries) count: explicit (a person's), implicit
    (mined from what the agent read) or llm; never a mix"""
    cluster: str | None = None
    """what the queries' `cluster` stands for (e.g. "session" for questions mined from an agent's sessions);
    default: the group a queries file gives (`cluster:`)"""
    root_files: list[str] | None = None
    """the files at the workspace root that are indexed, as the agent's release indexes them: default MEMORY.md
    and memory.md (OpenClaw 2026.2.22); ["MEMORY.md", "USER.md"] for 2026.8.1 and 2026.9.6 (what `harness init
    --openclaw-home` writes for their homes)"""
    follow_config: bool = False
    """true (what `harness init` writes): openclaw.json's memory-search settings apply at every run, the
    experiment's own tables winning; false: the experiment's tables alone, openclaw.json read for its
    extraPaths and its other settings compared with the experiment (differences reported)"""

    @field_validator("judgments")
    @classmethod
    def _judgment_source(cls, value: str) -> str:
        from harness.inputs.query_files import JUDGMENT_SOURCES

        if value not in JUDGMENT_SOURCES:
            raise ValueError(f"must be one of {', '.join(JUDGMENT_SOURCES)}")
        return value

    @field_validator("root_files")
    @classmethod
    def _root_files(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            wrong = [v for v in value if v not in ROOT_FILE_CHOICES]
            if wrong:
                raise ValueError(f"{wrong[0]!r} is not a root memory file; choose among {', '.join(ROOT_FILE_CHOICES)}")
        return value

    @field_validator("errors")
    @classmethod
    def _strict_or_skip(cls, value: str) -> str:
        if value not in ("strict", "skip"):
            raise ValueError('must be "strict" (a file that is not UTF-8 stops the run) or "skip" (it is left '
                             'out with a warning)')
        return value

    def __post_init__(self) -> None:
        self.path = project_path(Path(self.path).expanduser())
        self.queries_file = project_path(Path(self.queries_file).expanduser())
        self.config_file = project_path(Path(self.config_file).expanduser()) if self.config_file else None
        self._cache: dict[str, Any] = {}

    def settings(self) -> OpenClawSettings | None:
        if self.config_file is None:
            return None
        if "settings" not in self._cache:
            self._cache["settings"] = read_openclaw_config(self.config_file, agent=self.agent)
        return self._cache["settings"]

    def discovery(self) -> Discovery:
        if "discovery" not in self._cache:
            settings = self.settings()
            found = discover_files(self.path, settings.extra_paths if settings else (),
                                   tuple(self.root_files) if self.root_files is not None else MEMORY_FILES)
            self._cache["discovery"], self._cache["texts"] = readable_texts(found, self.errors)
        return self._cache["discovery"]

    def texts(self) -> dict[str, str]:
        self.discovery()
        return self._cache["texts"]

    def _resolved(self) -> tuple[list[Query], list[Span]]:
        if "resolved" not in self._cache:
            specs = load_query_specs(self.queries_file)
            judged_notes: list[str] = []
            self._cache["resolved"] = resolve_targets(specs, self.texts(), self.discovery(), judgments=self.judgments,
                                                      notes=judged_notes)
            if any(s.judged is not None for s in specs):
                judged_notes.insert(0, JUDGMENT_NOTES[self.judgments])
            self._cache["notes"] = target_warnings(specs, self.texts()) + [n for s in specs for n in s.notes] \
                + judged_notes
        return self._cache["resolved"]

    def notes(self) -> list[str]:
        """Warnings for the user: files skipped, targets that cannot be found, queries cut short."""
        self._resolved()
        skipped = [f"skipped {s.path}: {s.reason}" for s in self.discovery().skipped]
        return skipped + self._cache["notes"]

    def queries(self) -> list[Query]:
        return list(self._resolved()[0])

    def source_files(self) -> list[Path]:
        """The indexed files where they are (their modification times say when each last changed)."""
        return [Path(f.source) for f in self.discovery().files]

    def indexed_path(self) -> Any:
        """The indexing rule as a test of a workspace-relative path (a file in the workspace's history): a root
        file, memory/**/*.md, or a file an extra path inside the workspace names."""
        roots = set(self.root_files if self.root_files is not None else MEMORY_FILES)
        memory = glob_regex(MEMORY_DIR_PATTERN)
        root = os.path.realpath(Path(self.path))
        settings = self.settings()
        extras: list[tuple[str, re.Pattern[str]]] = []
        for index, entry in enumerate(settings.extra_paths if settings else ()):
            extra = parse_extra_path(entry, f"extraPaths[{index}]", None)
            raw = os.path.expanduser(extra.path.strip())
            if not raw:
                continue
            target = os.path.normpath(raw if os.path.isabs(raw) else os.path.join(root, raw))
            if _inside(target, root):  # one outside is not in the workspace's history (files_as_asked says so)
                rel = os.path.relpath(target, root)
                extras.append(("" if rel == "." else Path(rel).as_posix(), glob_regex(extra.pattern)))

        def indexed(path: str) -> bool:
            if path in roots:
                return True
            if path.startswith(MEMORY_DIR + "/") and memory.fullmatch(path[len(MEMORY_DIR) + 1:]):
                return True
            for rel, pattern in extras:
                if path == rel and pattern.fullmatch(path.rsplit("/", 1)[-1]):
                    return True
                inner = path[len(rel) + 1:] if rel else path
                if (not rel or path.startswith(rel + "/")) and pattern.fullmatch(inner):
                    return True
            return False

        return indexed

    def files_as_asked(self, asked: dict[str, Any]) -> tuple[Any, list["WorkspaceSnapshot"]]:
        """Replay as asked: each question's files as of when it was asked, where the workspace's git history
        allows it (harness.inputs.file_history), as parts to index and search apart: (AsAskedFiles, parts).
        A question whose target or judgments do not hold on its files as of then is searched on today's.
        `asked`: {query id: asked} of the questions evaluated on today's files; a question that is not (its
        judgments no longer hold today) but carries its time is searched as of then when its files then are
        not today's and its judgments hold on them."""
        from harness.inputs.file_history import as_datetime, files_as_asked

        discovery = self.discovery()
        specs = {s.id: s for s in load_query_specs(self.queries_file)}
        not_today = {s.id: s.asked for s in specs.values() if s.asked and s.id not in asked}
        plan = files_as_asked(Path(self.path), {f.display: Path(f.source) for f in discovery.files}, self.texts(),
                              {q: as_datetime(t) for q, t in {**asked, **not_today}.items()}, self.indexed_path(),
                              history_text)
        parts = []
        for snapshot in list(plan.snapshots):
            kept = []
            for qid in snapshot.query_ids:
                problem = target_problem(specs[qid], snapshot.texts) if qid in specs else "not in the queries file"
                if problem:
                    plan.today[qid] = problem
                else:
                    kept.append(qid)
            part = WorkspaceSnapshot(self, snapshot, [specs[q] for q in kept])
            resolved = {q.id for q in part.queries()}
            for qid in kept:
                if qid not in resolved:
                    plan.today[qid] = "its judgments do not hold on the files as of then"
            if resolved:
                parts.append(part)
        plan.snapshots = [p.snapshot for p in parts]
        for qid in not_today:  # not evaluated on today's files: only a search as of then can evaluate them
            plan.today.pop(qid, None)
        plan.same_as_today = [q for q in plan.same_as_today if q not in not_today]
        return plan, parts

    def check_layout(self, options: dict[str, Any]) -> None:
        if options:
            raise TypeError(f"the workspace data set takes no [layout] options, got {', '.join(sorted(options))}")

    def render(self, dest: Path | str | None = None, **options: Any) -> Layout:
        """Copy every indexed file, byte for byte, to its display path under a fresh folder and write
        the provenance spans of the queries' targets.  A workspace layout takes no options."""
        self.check_layout(options)
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
            "notes": self.notes(),
        }
        layout = Layout(root, discovery.displays, spans, description)
        (root / PROVENANCE_FILE).write_text(
            json.dumps({"description": description, "spans": [[s.path, s.start, s.end, s.doc_id] for s in spans]},
                       ensure_ascii=False, indent=0),
            encoding="utf-8")
        return layout


class WorkspaceSnapshot:
    """A workspace's files as of some questions (read from its git history), with those questions: a part of a
    run replayed as asked, indexed and searched apart from today's files."""

    def __init__(self, dataset: WorkspaceDataset, snapshot: Any, specs: list[QuerySpec]):
        self.dataset = dataset
        self.snapshot = snapshot
        self.specs = specs
        self._resolved: tuple[list[Query], list[Span]] | None = None
        self.resolution_notes: list[str] = []  # judgments re-anchored or dropped on the files as of then

    def _resolve(self) -> tuple[list[Query], list[Span]]:
        if self._resolved is None:
            texts = self.snapshot.texts
            files = [MemoryFile(d, Path(self.dataset.path) / d) for d in sorted(texts)]
            self._resolved = resolve_targets(self.specs, texts, Discovery(Path(self.dataset.path), files),
                                             judgments=self.dataset.judgments, notes=self.resolution_notes)
        return self._resolved

    def queries(self) -> list[Query]:
        return list(self._resolve()[0])

    def check_layout(self, options: dict[str, Any]) -> None:
        self.dataset.check_layout(options)

    def render(self, dest: Path | str | None = None, **options: Any) -> Layout:
        """The files as of then under a fresh folder, with the provenance spans of the questions' targets."""
        self.check_layout(options)
        _, spans = self._resolve()
        root = fresh_root("workspace-asof-", dest)
        for display, text in sorted(self.snapshot.texts.items()):
            target = root / display
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("utf-8"))
        description = {"dataset": "workspace", "workspace": str(self.dataset.path), "commit": self.snapshot.commit,
                       "committed": self.snapshot.committed, "files": len(self.snapshot.texts)}
        return Layout(root, sorted(self.snapshot.texts), spans, description)
