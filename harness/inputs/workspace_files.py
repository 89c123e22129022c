"""Which files of an OpenClaw workspace are indexed, and their texts as a layout reads them.

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

"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable, Iterator, Sequence

from harness.errors import DataError
from harness.inputs.openclaw_config import ExtraPath, check_pattern, parse_extra_path
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


def inside_folder(path: str, root: str) -> bool:
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
        if not absolute and not inside_folder(target, str(root)):
            raise DataError(where, None, extra.field,
                            f"{raw!r} climbs out of the workspace {root} with '..'; extra paths outside the "
                            "workspace must be written as absolute paths")
        base = str(root) if inside_folder(target, str(root)) else real_root if inside_folder(target, real_root) else None
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



def history_text(data: bytes) -> str:
    """A file read from the workspace's history, as the layout reads a file (bytes that are not UTF-8 replaced:
    the run does not stop on an old version)."""
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
