"""QMD's break-point chunker (SPEC.md section 3; tobi/qmd src/store.ts)."""
from __future__ import annotations

import bisect
import math
import re
from typing import Sequence

from pydantic import Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from harness.registry import stage
from harness.stages.chunkers.base import (
    CHUNKERS,
    Chunk,
    LineIndex,
    TokenCount,
    chunks_from_offsets,
    overlap_below_tokens,
    split_lines,
)

QMD_HEADING_SCORES = {1: 100, 2: 90, 3: 80, 4: 70, 5: 60, 6: 50}
QMD_CODE_FENCE_SCORE = 80
QMD_RULE_SCORE = 60
QMD_BLANK_SCORE = 20
QMD_LIST_SCORE = 5
QMD_NEWLINE_SCORE = 1
_QMD_RULE = re.compile(r"(?:---|\*\*\*|___)\s*")
_QMD_LIST = re.compile(r"(?:[-*]|\d+\.)\s")


def qmd_break_points(lines: Sequence[str]) -> tuple[list[int], list[int]]:
    """QMD's break points in "\\n".join(lines): (positions, scores), sorted by position.

    Every break point is a "\\n"; its score comes from the line that follows it (the highest of):
    "#"*n not followed by another "#" -> heading n (as QMD's regex, no space is required);
    a "```" line 80; a horizontal rule (---, *** or ___ then only whitespace, and a newline after it)
    60; the first newline of a run of two or more 20; a list item ("- ", "* ", "1. ") 5; else 1.
    A cut at position p ends the chunk before that newline, so the next chunk starts with it.
    Lines are tested one by one, so two horizontal rules on adjacent lines both score 60 (QMD's
    non-overlapping regex matches only the first).
    """
    positions: list[int] = []
    scores: list[int] = []
    last = len(lines) - 1
    pos = -1
    for i in range(last):
        pos += len(lines[i]) + 1  # the "\n" that ends line i
        nxt = lines[i + 1]
        score = QMD_NEWLINE_SCORE
        if nxt:
            first = nxt[0]
            if first == "#":
                hashes = len(nxt) - len(nxt.lstrip("#"))
                score = QMD_HEADING_SCORES.get(hashes, score)
            elif first == "`" and nxt.startswith("```"):
                score = QMD_CODE_FENCE_SCORE
            elif first in "-*_" and i + 1 < last and _QMD_RULE.fullmatch(nxt):
                score = QMD_RULE_SCORE
            if score < QMD_LIST_SCORE and _QMD_LIST.match(nxt + ("\n" if i + 1 < last else "")):
                score = QMD_LIST_SCORE
        elif i + 1 < last and not (i > 0 and lines[i] == ""):
            score = QMD_BLANK_SCORE  # first "\n" of a "\n\n+" run (the next line is empty, not the last)
        positions.append(pos)
        scores.append(score)
    return positions, scores


def qmd_code_fences(lines: Sequence[str]) -> list[tuple[int, int]]:
    """QMD's fence regions: each "\\n```" opens or closes one (paired in order); (start, end) spans
    from the opening newline to just after the closing "```"; an unclosed fence runs to the end.
    As in QMD, a fence on line 1 (no newline before it) is not seen."""
    regions: list[tuple[int, int]] = []
    open_at: int | None = None
    pos = -1
    for i in range(len(lines) - 1):
        pos += len(lines[i]) + 1
        if lines[i + 1].startswith("```"):
            if open_at is None:
                open_at = pos
            else:
                regions.append((open_at, pos + 4))
                open_at = None
    if open_at is not None:
        regions.append((open_at, sum(len(x) + 1 for x in lines) - 1))
    return regions


def qmd_best_cutoff(positions: Sequence[int], scores: Sequence[int], target: int, window: int,
                    decay: float, fences: Sequence[tuple[int, int]]) -> int:
    """The best cut at or before `target`: base score x (1 - decay x d^2), d = distance / window;
    the highest wins, the earlier one on ties; break points strictly inside a fence are skipped;
    no candidate -> the target itself."""
    best_pos, best_score = target, -1.0
    lo = bisect.bisect_left(positions, target - window)
    hi = bisect.bisect_right(positions, target)
    for k in range(lo, hi):
        pos = positions[k]
        if any(start < pos < end for start, end in fences):
            continue
        d = (target - pos) / window if window > 0 else 0.0
        score = scores[k] * (1.0 - d * d * decay)
        if score > best_score:
            best_pos, best_score = pos, score
    return best_pos


def qmd_cut(text: str, max_chars: int, overlap_chars: int, window_chars: int,
            decay: float = 0.7) -> list[tuple[int, int]]:
    """QMD's character-path loop over `text`: [(start, end)) offsets of each chunk."""
    if len(text) <= max_chars:
        return [(0, len(text))]
    lines = text.split("\n")
    positions, scores = qmd_break_points(lines)
    fences = qmd_code_fences(lines)
    out: list[tuple[int, int]] = []
    pos = 0
    while pos < len(text):
        target = min(pos + max_chars, len(text))
        end = target
        if end < len(text):
            cut = qmd_best_cutoff(positions, scores, target, window_chars, decay, fences)
            if pos < cut <= target:
                end = cut
        if end <= pos:
            end = min(pos + max_chars, len(text))
        out.append((pos, end))
        if end >= len(text):
            break
        nxt = end - overlap_chars
        pos = nxt if nxt > out[-1][0] else end  # "or at the cut if that would not advance"
    return out



QMD_OVERLAP_SHARE = 0.15  # QMD's default overlap: 15% of the chunk


@CHUNKERS.register("qmd")
@stage
class QmdChunker:
    """QMD's smart chunking: 900-token target, 15% overlap, break points scored by kind and distance.

    Character path (no `token_count`): target tokens x 4 characters (3600), overlap 15% (135 tokens,
    540 characters), break points searched up to `window` tokens (800 characters) before the target
    and scored base x (1 - 0.7 d^2).  Sizes are plain string length, as in QMD: a Chinese chunk
    holds up to 3600 characters, far more than 900 real tokens.

    Token path (`token_count` given, e.g. the embedder's own `token_count`): the same loop at 3
    characters per token, then each chunk is counted; one over `tokens` is re-split with its measured
    characters per token (x 0.95, overlap and window scaled by half that ratio, as QMD), and halved
    if that makes no progress, until every chunk fits.  Deviation: QMD's last resort truncates a
    chunk it cannot split; here splitting always progresses (a 1-character chunk is kept as is), so
    no text is lost.  Not reproduced: QMD's optional AST, list and XML-tag break points.
    """

    tokens: int = Field(900, gt=0)
    """target chunk size in tokens"""
    overlap: int | None = Field(None, ge=0)
    """overlap in tokens, smaller than `tokens`; default floor(15% of tokens), as QMD"""
    window: int = Field(200, ge=0)
    """how far before the target (in tokens) break points are searched"""
    chars_per_token: int | None = Field(None, gt=0)
    """characters per token; default 4 on the character path, 3 on the token path"""
    token_count: SkipJsonSchema[TokenCount | None] = Field(None, repr=False)
    """the embedder's token counter str -> int: switches to QMD's token path (in TOML: token_count = "embedder")"""
    decay: float = Field(0.7, ge=0, le=1)
    """distance penalty of a break point: score x (1 - decay x d^2), d = distance / window"""

    _overlap_below_tokens = field_validator("overlap")(overlap_below_tokens)

    def __post_init__(self) -> None:
        if self.overlap is None:
            self.overlap = math.floor(self.tokens * QMD_OVERLAP_SHARE)
        if self.chars_per_token is None:
            self.chars_per_token = 3 if self.token_count is not None else 4
        self.max_chars = self.tokens * self.chars_per_token
        self.overlap_chars = self.overlap * self.chars_per_token
        self.window_chars = self.window * self.chars_per_token

    def chunk(self, path: str, text: str) -> list[Chunk]:
        index = LineIndex(split_lines(text))
        return chunks_from_offsets(path, index, self.offsets(index.body), sort_by_lines=self.token_count is not None)

    def offsets(self, body: str) -> list[tuple[int, int]]:
        """[start, end) of each chunk in `body` ("\\n".join of the file's lines), before blank ones are dropped.

        On the token path the re-split pieces of neighbouring overlapping chunks can interleave or
        repeat; they are sorted by position and exact repeats are dropped (QMD would embed a repeat
        twice), so chunks come in position order as on the character path.
        """
        offsets = qmd_cut(body, self.max_chars, self.overlap_chars, self.window_chars, self.decay)
        if self.token_count is None:
            return offsets
        fitted: set[tuple[int, int]] = set()
        for start, end in offsets:
            fitted.update(self._fit(body, start, end))
        return sorted(fitted)

    def _fit(self, body: str, start: int, end: int) -> list[tuple[int, int]]:
        assert self.token_count is not None
        text = body[start:end]
        n = self.token_count(text)
        if n <= self.tokens or len(text) <= 1:
            return [(start, end)]
        ratio = len(text) / n
        safe = math.floor(self.tokens * ratio * 0.95)
        safe = max(1, min(len(text) - 1, safe if safe >= 1 else len(text) // 2))
        overlap = max(0, min(safe - 1, math.floor(self.overlap_chars * ratio / 2)))
        window = max(0, math.floor(self.window_chars * ratio / 2))
        subs = qmd_cut(text, safe, overlap, window, self.decay)  # safe < len(text): always >= 2 pieces
        out: list[tuple[int, int]] = []
        for a, b in subs:
            out.extend(self._fit(body, start + a, start + b))
        return out
