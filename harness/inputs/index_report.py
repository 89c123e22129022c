"""What a user should know about their agent's memory index before trusting a figure computed on it.

    other model     chunks embedded with another model than the one openclaw.json configures (or, without
                    one, than the index's own meta says): their vectors do not compare with the queries';
    stale           files whose content changed since OpenClaw indexed them (the stored file hash is not the
                    sha256 of the file now): their chunks and vectors describe an older text;
    not indexed     memory files the release would index (MEMORY.md, memory/**/*.md, extraPaths) that the
                    index does not hold;
    orphans         chunks of files that are gone from the workspace;
    not evaluated   files the index holds that the harness's discovery does not index (e.g. 2026.9's USER.md);
    duplicates      chunk texts stored more than once (the same text at several places): they compete for
                    the same query;
    no vector       chunks stored without an embedding (the provider failed while indexing).
"""
from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.inputs.openclaw_index import MemoryIndex
from harness.inputs.workspace_files import Discovery

LISTED = 20  # paths listed per finding (the counts are complete)


@dataclass
class IndexReport:
    index: str
    release: str
    provider: str | None
    model: str | None
    dims: int | None
    configured_model: str | None
    files: int
    chunks: int
    session_chunks: int
    other_model: dict[str, int] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)
    not_indexed: list[str] = field(default_factory=list)
    orphans: dict[str, int] = field(default_factory=dict)
    not_evaluated: list[str] = field(default_factory=list)
    duplicate_texts: int = 0  # distinct texts stored more than once
    duplicate_chunks: int = 0  # chunks beyond the first of each such text
    duplicate_examples: list[str] = field(default_factory=list)
    without_vector: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def findings(self) -> list[str]:
        out = []
        if self.other_model:
            out.append(f"{sum(self.other_model.values())} chunks embedded with another model than "
                       f"{self.configured_model or self.model}: " + ", ".join(f"{m} ({n})" for m, n in self.other_model.items())
                       + " — their vectors are not comparable with the queries'; `openclaw memory index --force` re-embeds them")
        if self.stale:
            out.append(f"{len(self.stale)} files changed since indexing (hash mismatch): {_listed(self.stale)} — "
                       "OpenClaw's next sync re-indexes them; figures on them describe the current text with the chunks "
                       "the harness makes")
        if self.not_indexed:
            out.append(f"{len(self.not_indexed)} memory files are not in the index: {_listed(self.not_indexed)}")
        if self.orphans:
            out.append(f"{sum(self.orphans.values())} chunks of {len(self.orphans)} files that are gone: "
                       f"{_listed(list(self.orphans))}")
        if self.not_evaluated:
            out.append(f"{len(self.not_evaluated)} indexed files are outside the harness's discovery and not evaluated: "
                       f"{_listed(self.not_evaluated)}")
        if self.duplicate_texts:
            out.append(f"{self.duplicate_chunks} chunks repeat the text of another ({self.duplicate_texts} texts stored "
                       f"more than once), e.g. {', '.join(self.duplicate_examples[:3])}")
        if self.without_vector:
            out.append(f"{self.without_vector} chunks have no embedding (the provider failed while OpenClaw indexed them)")
        return out or ["nothing to report: every memory file is indexed, up to date, with one model"]


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:LISTED])
    return shown + (f" and {len(items) - LISTED} more" if len(items) > LISTED else "")


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def index_report(index: MemoryIndex, discovery: Discovery, configured_model: str | None = None) -> IndexReport:
    meta = index.meta
    expected = configured_model or meta.model
    indexed = {f.path: f for f in index.files("memory")}
    report = IndexReport(index.describe(), index.release, meta.provider, meta.model, meta.dims, configured_model,
                         len(indexed), index.count("memory"), index.count("sessions"))
    models: Counter = Counter()
    texts: Counter = Counter()
    where: dict[str, str] = {}
    orphans: Counter = Counter()
    workspace = Path(discovery.workspace)
    on_disk = {f.display: f.source for f in discovery.files}
    for chunk, vec in index.chunks("memory", vectors=True):
        models[chunk.model] += 1
        texts[chunk.hash] += 1
        where.setdefault(chunk.hash, f"{chunk.path}:{chunk.start_line}-{chunk.end_line}")
        if vec is None:
            report.without_vector += 1
        if chunk.path not in on_disk and not (workspace / chunk.path).is_file():
            orphans[chunk.path] += 1
    report.other_model = {m: n for m, n in sorted(models.items()) if expected and m != expected}
    report.orphans = dict(sorted(orphans.items()))
    repeated = {h: n for h, n in texts.items() if n > 1}
    report.duplicate_texts = len(repeated)
    report.duplicate_chunks = sum(n - 1 for n in repeated.values())
    report.duplicate_examples = sorted(where[h] for h in repeated)[:LISTED]
    for path, row in sorted(indexed.items()):
        source = on_disk.get(path, workspace / path)
        if not source.is_file():
            continue
        if _sha256(source) != row.hash:
            report.stale.append(path)
        if path not in on_disk:
            report.not_evaluated.append(path)
    report.not_indexed = sorted(d for d in on_disk if d not in indexed)
    return report
