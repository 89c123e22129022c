"""The chunker interface (a file's text -> Chunks) and what the chunkers share: reading memory files,
sizing text against a token budget, numbering lines, and turning cuts into Chunks."""
from __future__ import annotations

import bisect
import hashlib
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import (
    Any,
    Callable,
    Iterable,
    Literal,
    Protocol,
    Sequence,
    runtime_checkable,
)

import numpy as np
from pydantic import ValidationInfo

from harness.errors import DataError
from harness.registry import Registry
from harness.stages.cjk import (
    OPENCLAW_2026_08_EXTRA_COST,
    OPENCLAW_CHUNK_ESTIMATE,
    OPENCLAW_CHUNK_ESTIMATE_RANGES,
)

# token_count comes from the embedder (a callable), never from a TOML file
CHUNKERS = Registry("chunker", builtins="harness.stages.chunkers", runtime=("token_count",))

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


_CHUNK_ID = re.compile(r"(.*):\d{6,}-\d{6,}(?:~\d+)?")


def document_of(item_id: str) -> str:
    """The file a result id belongs to: a chunk id (Chunk.id, `path:start-end[~piece]`) -> its path; any
    other id (a whole-file result of a document-level pipeline is its path) -> itself."""
    match = _CHUNK_ID.fullmatch(item_id)
    return match.group(1) if match else item_id


@runtime_checkable
class Chunker(Protocol):
    """A file's text -> its chunks in position order, with 1-based line ranges and unique ids."""

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
    errors="strict" the same defect raises DataError naming the file and line.
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
            raise DataError(path, line, None, f"invalid UTF-8 at byte column {column} ({exc.reason})") from None
        warnings.warn(f"{where}; undecodable bytes replaced by U+FFFD", MarkdownDecodingWarning, stacklevel=2)
        return data.decode("utf-8", errors="replace")


# --- sizing: how many "characters" a string costs against a token budget ------------------------

CHARS_PER_TOKEN = 4


def raw_length(text: str) -> int:
    """Plain string length in characters (code points), so a Chinese chunk holds ~1600 characters."""
    return len(text)


def utf16_length(text: str) -> int:
    """JavaScript's string length: UTF-16 code units, so a character outside the BMP (an emoji, a CJK
    Extension B ideograph) counts 2.  What OpenClaw measured chunks with up to 2026.3.24."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def cjk_weighted_length(text: str) -> int:
    """SPEC.md's later OpenClaw: a CJK character costs CHARS_PER_TOKEN (one token), anything else 1."""
    # a regex count: the same number as testing each character, several times faster
    return len(text) + (CHARS_PER_TOKEN - 1) * len(OPENCLAW_CHUNK_ESTIMATE.findall(text))


def cjk_weighted_2026_08_length(text: str) -> int:
    """OpenClaw 2026.8.1's estimateStringChars: the UTF-16 length plus 3 for each common Han character,
    CJK punctuation or full-width form (4 in all), 11 for rare BMP CJK, 7 for two-token forms, 10 for
    counting rods and 14 for supplementary CJK (cjk.OPENCLAW_2026_08_EXTRA_COST); ASCII costs its length."""
    length = utf16_length(text)
    if text.isascii():
        return length
    return length + sum(extra * len(pattern.findall(text)) for extra, pattern in OPENCLAW_2026_08_EXTRA_COST)


SIZINGS: dict[str, Callable[[str], int]] = {
    "raw_length": raw_length, "cjk_weighted": cjk_weighted_length,
    "utf16": utf16_length, "cjk_weighted_2026.08": cjk_weighted_2026_08_length,
}
# a chunker's `sizing` parameter: a key of SIZINGS
Sizing = Literal["raw_length", "cjk_weighted", "utf16", "cjk_weighted_2026.08"]


def estimate_tokens(text: str) -> int:
    """Estimated tokens: a CJK character is one token, other characters a quarter of one (rounded up)."""
    return -(-cjk_weighted_length(text) // CHARS_PER_TOKEN)


def cost_prefix(text: str, sizing: str) -> np.ndarray:
    """P with P[i] = size(text[:i]) under `sizing`, so size(text[a:b]) = P[b] - P[a] (vectorised)."""
    if sizing not in SIZINGS:
        raise ValueError(f"sizing must be one of {sorted(SIZINGS)}, got {sizing!r}")
    costs = np.ones(len(text), dtype=np.int64)
    if text and sizing != "raw_length":
        cps = np.frombuffer(text.encode("utf-32-le", errors="surrogatepass"), dtype="<u4")
        if sizing == "cjk_weighted":
            cjk = np.zeros(len(cps), dtype=bool)
            for lo, hi in OPENCLAW_CHUNK_ESTIMATE_RANGES:
                cjk |= (cps >= lo) & (cps <= hi)
            costs += (CHARS_PER_TOKEN - 1) * cjk
        else:  # the UTF-16 sizings: a character outside the BMP is two code units
            costs += cps > 0xFFFF
            if sizing == "cjk_weighted_2026.08" and not text.isascii():
                costs += np.fromiter((_extra_2026_08(ch) for ch in text), dtype=np.int64, count=len(text))
    prefix = np.zeros(len(text) + 1, dtype=np.int64)
    np.cumsum(costs, out=prefix[1:])
    return prefix


@lru_cache(maxsize=8192)
def _extra_2026_08(ch: str) -> int:
    return cjk_weighted_2026_08_length(ch) - utf16_length(ch)


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


def overlap_below_tokens(overlap: Any, info: ValidationInfo) -> Any:
    """The cross-field rule of the budgeted slicers, as a field validator of `overlap` (declared
    after `tokens`, so a valid `tokens` is already in info.data): the overlap must be smaller than
    the chunk, or the next chunk would not advance."""
    tokens = info.data.get("tokens")
    if overlap is not None and tokens is not None and overlap >= tokens:
        raise ValueError(f"must be smaller than tokens ({tokens})")
    return overlap


# --- lines ---------------------------------------------------------------------------------------

# an ATX heading line: "#" to "######" then a space or the end of the line
ATX_HEADING = re.compile(r"#{1,6}(?:\s|$)")


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
