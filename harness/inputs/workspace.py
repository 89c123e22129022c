"""Bring your own OpenClaw workspace: which files are indexed, what openclaw.json says, which queries
to ask, and the `workspace` data set that turns all three into a layout with provenance.

    [dataset]
    name = "workspace"
    path = "/home/me/.openclaw/workspace"         # the agent's workspace folder
    queries = "/home/me/harness-eval/queries.yaml"
    config = "/home/me/.openclaw/openclaw.json"   # optional: extraPaths are read from it at each run

The indexed files and their texts: harness.inputs.workspace_files; a queries file's targets resolved
on them: harness.inputs.workspace_targets.

Extra path entries and openclaw.json: harness.openclaw_config; queries files: harness.query_files;
`harness init`: harness.workspace_init.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from harness.errors import DataError
from harness.inputs.dataset import Provenance
from harness.inputs.layout import (
    DATASETS,
    Layout,
    Query,
    Span,
    fresh_root,
    project_path,
)
from harness.inputs.openclaw_config import OpenClawSettings, parse_extra_path, read_openclaw_config
from harness.inputs.query_files import JUDGMENT_SOURCES, QuerySpec, load_query_specs
from harness.inputs.workspace_files import (
    MEMORY_DIR,
    MEMORY_DIR_PATTERN,
    MEMORY_FILES,
    PROVENANCE_FILE,
    ROOT_FILE_CHOICES,
    Discovery,
    MemoryFile,
    discover_files,
    glob_regex,
    history_text,
    inside_folder,
    readable_texts,
)
from harness.inputs.workspace_targets import resolve_targets, target_problem, target_warnings
from harness.registry import stage

JUDGMENT_NOTES = {
    "explicit": "relevance: explicit judgments (graded by a person, `harness judge`)",
    "implicit": "relevance: IMPLICIT judgments, mined from what the agent did (a returned chunk it then read with "
                "memory_get or cited is relevant; one passed over before a reformulated search is not); they say "
                "what the agent used, not what a person would grade",
    "llm": "relevance: LLM judgments (an LLM judge through the chat stage, `harness judge --llm`), not a person's",
}


@DATASETS.register("workspace")
@stage
class WorkspaceDataset:
    """Your own OpenClaw workspace (path), a queries file (YAML/JSONL) and optionally openclaw.json; errors =
    "skip" leaves out memory files that are not UTF-8, with a warning, instead of stopping the run.  Queries
    are independent draws unless the queries file gives them a `cluster` (queries of one group are then
    resampled together)."""

    RESAMPLING_UNIT = "group"
    # the user's own workspace; the committed ones are examples (their memory and queries written for the project)
    PROVENANCE = Provenance("the workspace owner's; the committed examples are the project's own text",
                            ("datasets/example-workspace", "datasets/old-logs-workspace"),
                            ("datasets/old-logs-workspace/SOURCE.md",),
                            {"path": "datasets/example-workspace", "queries": "datasets/example-workspace/queries.yaml",
                             "config": "datasets/example-workspace/openclaw.json"})

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

    def files(self) -> list[Path]:
        """The queries file, openclaw.json when given, and the indexed memory files."""
        return [Path(self.queries_file), *([Path(self.config_file)] if self.config_file else []), *self.source_files()]

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
            if inside_folder(target, root):  # one outside is not in the workspace's history (files_as_asked says so)
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
        # local: reading git history is for a run replayed as asked, not every workspace run's start-up
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
