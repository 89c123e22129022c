"""The memory files as they were when a question was asked, where the workspace's history allows it.

OpenClaw keeps no history of a memory file: its index holds today's text only, and a transcript's memory_get
result holds a few lines, not a file.  What can hold one is git: 2026.9.6 runs `git init` in a brand-new
workspace when git is installed, and its docs ask the user (and the agent, in AGENTS.md) to commit the workspace.
So "files as of then" is read from the workspace's git repository, and is what was *committed* by then:

  * a question asked at time t sees the tree of the last commit (along HEAD) whose committer time is at or
    before t, filtered by the same indexing rule as today's files (root files, memory/**/*.md, the extra paths
    inside the workspace);
  * an indexed file with uncommitted changes (or never committed) whose last modification is at or before t is
    taken as it is today (it was written by then and not since);
  * a question falls back to today's files, counted and said why, when: the workspace is not a git repository
    of its own (one it merely lies inside records when other files were committed) or has no commit; it was
    asked before the first commit; an indexed file with uncommitted changes was modified after it was asked
    (its text then is unknown); an indexed file lies outside the workspace (an absolute extra path); its own
    target (path, lines or contains) is not in the files as of then; or none of its judgments holds on them.

What history cannot tell: an edit made before a question but committed only after it is taken to be made
after it (its commit time is all git records).  The run says which files each question was searched on.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable

from harness.stages.postprocess.base import as_utc_datetime

GIT_TIMEOUT = 60  # seconds per git command: a history read, not a clone


def blob_sha(data: bytes) -> str:
    """git's object id of a file's bytes (what `git hash-object` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class Snapshot:
    """One set of files as of some questions: the commit it is read from and its texts (display path -> text)."""

    commit: str
    committed: str  # the commit's time, ISO
    texts: dict[str, str]
    query_ids: list[str]


@dataclass
class AsAskedFiles:
    """Which files each question is searched on: `snapshots` (files as of then, read from history), or today's
    (`today`: {query id: why}); `same_as_today`: questions whose files as of then are today's."""

    source: str  # where the history is read from, for the run's line
    snapshots: list[Snapshot] = field(default_factory=list)
    same_as_today: list[str] = field(default_factory=list)
    today: dict[str, str] = field(default_factory=dict)

    def reasons(self) -> Counter:
        return Counter(self.today.values())


class GitHistory:
    """The git repository a workspace lies in: its commits along HEAD and their trees, read with `git`."""

    def __init__(self, top: Path, commits: list[tuple[int, str]]):
        self.top = top  # the workspace itself
        self.commits = commits  # (committer time, id), oldest first
        self._trees: dict[str, dict[str, str]] = {}

    def _git(self, *args: str, data: bytes | None = None) -> bytes:
        return subprocess.run(["git", "-C", str(self.top), *args], input=data, capture_output=True, check=True,
                              timeout=GIT_TIMEOUT).stdout

    def commit_at(self, when: datetime) -> tuple[int, str] | None:
        """The last commit at or before `when` (committer time), or None."""
        stamp = when.timestamp()
        before = [c for c in self.commits if c[0] <= stamp]
        return before[-1] if before else None

    def tree(self, commit: str) -> dict[str, str]:
        """{workspace-relative path: blob id} of the regular files at `commit` (links and submodules left out,
        as the indexer skips links)."""
        if commit not in self._trees:
            raw = self._git("ls-tree", "-r", "-z", "--full-tree", commit)
            out = {}
            for entry in raw.split(b"\0"):
                if not entry:
                    continue
                meta, _, name = entry.partition(b"\t")
                mode, kind, sha = meta.split()
                path = name.decode("utf-8", "surrogateescape")
                if kind == b"blob" and mode in (b"100644", b"100755"):
                    out[path] = sha.decode()
            self._trees[commit] = out
        return self._trees[commit]

    def blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        wanted = list(dict.fromkeys(shas))
        if not wanted:
            return {}
        raw = self._git("cat-file", "--batch", data="".join(f"{s}\n" for s in wanted).encode())
        out, pos = {}, 0
        for sha in wanted:
            end = raw.index(b"\n", pos)
            size = int(raw[pos:end].split()[2])
            out[sha] = raw[end + 1:end + 1 + size]
            pos = end + 1 + size + 1
        return out


def git_history(workspace: Path) -> tuple[GitHistory | None, str]:
    """The workspace's own repository (the workspace is its top), or None and why there is none."""
    def run(*args: str) -> str:
        return subprocess.run(["git", "-C", str(workspace), *args], capture_output=True, check=True, text=True,
                              timeout=GIT_TIMEOUT).stdout.strip()

    try:
        top = Path(run("rev-parse", "--show-toplevel"))
    except FileNotFoundError:
        return None, "git is not installed"
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        if (workspace / ".git").exists():  # a repository git refuses to read (another owner, damaged)
            said = (getattr(exc, "stderr", "") or "").strip().splitlines()
            return None, "git cannot read the workspace's repository" + (f" ({said[-1]})" if said else "")
        return None, "the workspace is not in a git repository"
    if os.path.realpath(top) != os.path.realpath(workspace):
        # a repository of other files (a project checkout, a dotfiles repository): its commits say when those
        # were committed, not when the agent's memory was; OpenClaw's own `git init` is at the workspace
        return None, "the workspace is not a git repository of its own: it lies inside another one"
    try:
        log = run("log", "--format=%ct %H", "HEAD")
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None, "the workspace's git repository has no commit"
    commits = sorted((int(t), sha) for t, sha in (line.split() for line in log.splitlines() if line.strip()))
    if not commits:
        return None, "the workspace's git repository has no commit"
    return GitHistory(top, commits), ""


def files_as_asked(workspace: Path, today: dict[str, Path], texts_today: dict[str, str],
                   asked: dict[str, datetime | None], indexed: Callable[[str], bool],
                   decode: Callable[[bytes], str]) -> AsAskedFiles:
    """Each question's files as of when it was asked (module docstring).  `today`: display path -> the file on
    disk for the files indexed today (display paths are workspace-relative for files inside it); `texts_today`
    their texts; `indexed(path)`: whether a workspace-relative path is an indexed file by the indexing rule;
    `decode`: a blob's bytes as the layout reads a file.  The caller checks each question's own target against
    its files as of then (WorkspaceDataset.files_as_asked)."""
    history, why = git_history(workspace)
    with_time = {q: t for q, t in asked.items() if t is not None}
    if history is None:
        return AsAskedFiles(why, today={q: why for q in with_time})
    source = "the workspace's git history"
    root = os.path.realpath(workspace)
    outside = [d for d, p in today.items() if not os.path.realpath(p).startswith(root + os.sep)]
    if outside:
        why = f"an indexed file is outside the workspace's repository ({outside[0]})"
        return AsAskedFiles(source, today={q: why for q in with_time})
    head_tree = history.tree(history.commits[-1][1])
    # files whose text today is not HEAD's: their last modification time is all that says when they changed
    uncommitted = {}
    for display, path in today.items():
        try:
            data = path.read_bytes()
            if head_tree.get(display) != blob_sha(data):
                uncommitted[display] = path.stat().st_mtime
        except OSError:
            continue
    out = AsAskedFiles(source)
    groups: dict[tuple, tuple[str, int, dict[str, str], list[str]]] = {}
    for qid, when in with_time.items():
        commit = history.commit_at(when)
        if commit is None:
            out.today[qid] = "asked before the workspace's first commit"
            continue
        later = sorted(d for d, m in uncommitted.items() if m > when.timestamp())
        if later:
            out.today[qid] = "an indexed file has uncommitted changes made after it was asked"
            continue
        files = {p: ("blob", sha) for p, sha in history.tree(commit[1]).items() if indexed(p)}
        files.update({d: ("today", d) for d in uncommitted})  # written by then and not since
        key = tuple(sorted(files.items()))
        if key not in groups:
            groups[key] = (commit[1], commit[0], files, [])
        groups[key][3].append(qid)
    blobs = history.blobs(sha for key in groups for kind, sha in dict(key).values() if kind == "blob")
    for commit, stamp, files, qids in groups.values():
        texts = {p: (texts_today[v] if kind == "today" else decode(blobs[v])) for p, (kind, v) in files.items()}
        if texts == texts_today:
            out.same_as_today += qids
        else:
            from datetime import timezone

            out.snapshots.append(Snapshot(commit, datetime.fromtimestamp(stamp, timezone.utc).isoformat(), texts, qids))
    return out


def as_datetime(value: Any) -> datetime | None:
    """An `asked` value as an aware datetime (None when missing or unreadable: that question has no time)."""
    if not value:
        return None

    try:
        return as_utc_datetime(value)
    except ValueError:
        return None
