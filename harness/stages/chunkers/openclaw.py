"""OpenClaw's chunkMarkdown (SPEC.md section 2) and its newer per-entry mode."""
from __future__ import annotations

from typing import Iterable, Sequence

from pydantic import Field

from harness.registry import stage
from harness.stages.chunkers.base import (
    ATX_HEADING,
    CHARS_PER_TOKEN,
    CHUNKERS,
    SIZINGS,
    Chunk,
    Sizing,
    cut_to_budget,
    number_pieces,
    split_lines,
)

MIN_CHUNK_CHARS = 32  # OpenClaw's floor under tokens x 4


@CHUNKERS.register("openclaw")
@stage
class OpenClawChunker:
    """OpenClaw's chunkMarkdown: line-packed chunks of `tokens` (x4 chars), line-granular overlap.

    Follows SPEC.md section 2: each line costs size(line)+1; when adding a line would pass the budget
    and the buffer is non-empty, flush; the next chunk starts with trailing whole lines of the flushed
    one until they reach the overlap budget.  A line longer than the budget is cut into budget-sized
    pieces that keep its line number.  `overlap_cap` (later versions) caps the carry at half the budget.
    As in OpenClaw, a chunk that starts with carried overlap may exceed the budget by up to that carry,
    and an overlap as large as the budget is allowed.
    Deviation: a trailing newline does not produce a phantom empty last line (OpenClaw's split does).
    """

    tokens: int = Field(400, gt=0)
    """chunk budget in tokens (x 4 characters of `sizing`, at least 32 characters)"""
    overlap: int = Field(80, ge=0)
    """tokens of trailing whole lines carried into the next chunk"""
    sizing: Sizing = "raw_length"
    """cost of a character: "raw_length" (1 each, OpenClaw to 2026-03) or "cjk_weighted" (a CJK character 4)"""
    overlap_cap: bool = False
    """cap the carried overlap at half the budget (later OpenClaw)"""

    def __post_init__(self) -> None:
        self.size = SIZINGS[self.sizing]
        self.max_chars = max(MIN_CHUNK_CHARS, self.tokens * CHARS_PER_TOKEN)
        self.overlap_chars = self.overlap * CHARS_PER_TOKEN
        if self.overlap_cap:
            self.overlap_chars = min(self.overlap_chars, self.max_chars // 2)

    def chunk(self, path: str, text: str) -> list[Chunk]:
        return number_pieces(path, self.pack(enumerate(split_lines(text), start=1)))

    def pack(self, numbered_lines: Iterable[tuple[int, str]]) -> list[tuple[int, int, str]]:
        """The packing loop over (1-based line number, line) pairs -> (start_line, end_line, text)."""
        out: list[tuple[int, int, str]] = []
        buf: list[tuple[str, int]] = []  # (segment, 1-based line number)
        buf_cost = 0

        def flush() -> None:
            if buf:
                out.append((buf[0][1], buf[-1][1], "\n".join(s for s, _ in buf)))

        def carry_overlap() -> None:
            nonlocal buf, buf_cost
            kept: list[tuple[str, int]] = []
            acc = 0
            if self.overlap_chars > 0:
                for seg, ln in reversed(buf):
                    acc += self.size(seg) + 1
                    kept.insert(0, (seg, ln))
                    if acc >= self.overlap_chars:
                        break
            buf, buf_cost = kept, sum(self.size(s) + 1 for s, _ in kept)

        for lineno, line in numbered_lines:
            segments = [line] if self.size(line) <= self.max_chars else cut_to_budget(line, self.max_chars, self.size)
            for seg in segments:
                cost = self.size(seg) + 1
                if buf and buf_cost + cost > self.max_chars:
                    flush()
                    carry_overlap()  # as OpenClaw: carry + this segment may exceed the budget
                buf.append((seg, lineno))
                buf_cost += cost
        flush()
        return out


def entry_starts(lines: Sequence[str]) -> list[int]:
    """0-based indexes where OpenClaw's per-entry mode starts a new entry: line 1, every line that
    starts with "- " (a list entry) and every ATX heading line ("#" to "######" then space or end)."""
    return [0] + [i for i in range(1, len(lines))
                  if lines[i].startswith("- ") or ATX_HEADING.match(lines[i])]


@CHUNKERS.register("record")
@stage
class RecordChunker(OpenClawChunker):
    """OpenClaw's newer per-entry mode (chunking.perEntry, memory-host-sdk markdown-chunks.ts).

    The file is cut into entries: an entry starts at each line beginning with "- " and at each
    heading, and runs to the line before the next one (blank lines and plain paragraphs belong to
    the entry above them).  Each entry is packed on its own with the `openclaw` rules (budget,
    line-granular overlap, over-long lines cut into pieces that keep their line number); nothing is
    carried across entries.  Defaults follow the newer code: cjk_weighted sizing, overlap cap.
    Not reproduced from the newest code (it only matters for an entry longer than the budget): its
    carry shares the budget with the incoming line and may keep the tail of a wide line.
    Whitespace-only chunks (e.g. a file's leading blank lines) are dropped, as OpenClaw's indexer does.
    """

    sizing: Sizing = "cjk_weighted"
    """cost of a character: "cjk_weighted" (a CJK character 4, the newer default) or "raw_length\""""
    overlap_cap: bool = True
    """cap the carried overlap at half the budget (the newer default)"""

    def chunk(self, path: str, text: str) -> list[Chunk]:
        lines = split_lines(text)
        if not lines:
            return []
        bounds = entry_starts(lines) + [len(lines)]
        spans: list[tuple[int, int, str]] = []
        for lo, hi in zip(bounds, bounds[1:]):
            numbered = ((i + 1, lines[i]) for i in range(lo, hi))
            spans.extend(s for s in self.pack(numbered) if s[2].strip())
        return number_pieces(path, spans)
