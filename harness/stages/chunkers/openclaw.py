"""OpenClaw's chunkMarkdown (SPEC.md section 2) release by release, and its per-entry mode.

The release differences (harness/conformance/NOTES.md section 4c, read in the installed packages):

    release      size estimate (`sizing`)   line longer than the budget (`long_lines`)    overlap carry
    2026.2.22    "utf16"                    "2026.02": slices of the budget in UTF-16     whole lines until >= overlap
    2026.3.28    "cjk_weighted" (SPEC)      (as 2026.02)                                  (as 2026.02)
    2026.8.1     "cjk_weighted_2026.08"     "2026.08": budget slice, then `tokens`-unit   (as 2026.02)
                                            pieces if its estimate is over
    2026.9.3+    (as 2026.8.1)              "2026.09": budget slice, then pieces by       `overlap_cap`: the window
                                            accumulated estimate                          min(overlap, budget - incoming)

Every release splits the file with `split("\\n")`, so a file ending in a newline has an empty last line
that is packed like any other (`final_empty_line`), and drops whitespace-only chunks before indexing.
"""
from __future__ import annotations

from typing import Callable, Iterable, Literal, Sequence

from pydantic import Field, field_validator

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
    overlap_below_tokens,
    split_lines,
)

MIN_CHUNK_CHARS = 32  # OpenClaw's floor under tokens x 4
# Files OpenClaw 2026.8.1 chunks per curated entry (memory source, workspace root; exact names)
CURATED_ENTRY_FILES = ("MEMORY.md", "USER.md")

LongLines = Literal["budget", "2026.02", "2026.08", "2026.09"]


def utf16_slices(text: str, units: int, keep_pairs: bool = True) -> list[str]:
    """`text` cut every `units` UTF-16 code units.  A cut that would fall inside a surrogate pair moves
    one unit later (2026.8.1's rule; 2026.2.22 split the pair, which a Python str cannot hold, so here
    it moves too)."""
    if units >= 1 and (not text or max(text) <= "\uffff"):  # nothing takes two units: plain slices
        return [text[i:i + units] for i in range(0, len(text), units)]
    pieces, current, used = [], [], 0
    for ch in text:
        width = 2 if ord(ch) > 0xFFFF else 1
        if current and used >= units:
            pieces.append("".join(current))
            current, used = [], 0
        current.append(ch)
        used += width
    if current:
        pieces.append("".join(current))
    return pieces


def utf16_prefix(text: str, units: int) -> str:
    """truncateUtf16Safe: the longest prefix of at most `units` UTF-16 code units, never half a pair."""
    used = 0
    for i, ch in enumerate(text):
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > units:
            return text[:i]
    return text


def tail_within(text: str, budget: int, size: Callable[[str], int]) -> str:
    """takeTailByEstimatedChars (2026.9.3+): the longest suffix whose characters cost at most `budget`."""
    acc, start = 0, len(text)
    while start > 0:
        acc += size(text[start - 1])
        if acc > budget:
            break
        start -= 1
    return text[start:]


@CHUNKERS.register("openclaw")
@stage
class OpenClawChunker:
    """OpenClaw's chunkMarkdown: line-packed chunks of `tokens` (x4 chars), line-granular overlap.

    Each line costs size(line)+1; when adding a line would pass the budget and the buffer is non-empty,
    flush; the next chunk starts with trailing whole lines of the flushed one until they reach the
    overlap budget (or, with `overlap_cap`, as 2026.9.3+ carries).  A line longer than the budget is cut
    into pieces that keep its line number (`long_lines`).  As in OpenClaw, a chunk that starts with
    carried overlap may exceed the budget by up to that carry, and whitespace-only chunks are dropped.
    The defaults are SPEC.md's description; the presets set each release's values (module docstring).
    """

    tokens: int = Field(400, gt=0)
    """chunk budget in tokens (x 4 characters of `sizing`, at least 32 characters)"""
    overlap: int = Field(80, ge=0)
    """tokens of trailing whole lines carried into the next chunk, smaller than `tokens`"""
    sizing: Sizing = "raw_length"
    """cost of a text: "raw_length" (code points), "utf16" (UTF-16 code units, OpenClaw to 2026.3.24),
    "cjk_weighted" (SPEC: a CJK character 4) or "cjk_weighted_2026.08" (OpenClaw 2026.8.1's estimate)"""
    overlap_cap: bool = False
    """carry as OpenClaw 2026.9.3+ (the only release read that caps the carry): within min(overlap, budget -
    the incoming line), whole lines that fit, or the tail of a last line too long to fit.  No release caps
    the carry at half the budget, which SPEC.md section 2 says"""
    final_empty_line: bool = False
    """count the empty line after a final newline, as OpenClaw's split("\\n") does (the file's last chunk
    then ends one line later)"""
    long_lines: LongLines = "budget"
    """how a line costing more than the budget is cut: "budget" (pieces by accumulated cost), "2026.02"
    (slices of the budget in UTF-16 units), "2026.08" (a budget-long UTF-16 slice, cut into `tokens`-unit
    pieces if its estimate is over), "2026.09" (that slice cut by accumulated estimate)"""
    curated_entries: bool = False
    """chunk MEMORY.md and USER.md per curated entry, as OpenClaw 2026.8.1 does (see the record chunker)"""

    _overlap_below_tokens = field_validator("overlap")(overlap_below_tokens)

    def __post_init__(self) -> None:
        self.size = SIZINGS[self.sizing]
        self.max_chars = max(MIN_CHUNK_CHARS, self.tokens * CHARS_PER_TOKEN)
        self.overlap_chars = self.overlap * CHARS_PER_TOKEN

    def lines(self, text: str) -> list[str]:
        return text.split("\n") if self.final_empty_line else split_lines(text)

    def chunk(self, path: str, text: str) -> list[Chunk]:
        lines = self.lines(text)
        if self.curated_entries and path in CURATED_ENTRY_FILES:
            return self.chunk_entries(path, lines)
        spans = self.pack(enumerate(lines, start=1))
        return number_pieces(path, [s for s in spans if s[2].strip()])

    def chunk_entries(self, path: str, lines: Sequence[str]) -> list[Chunk]:
        """Each curated entry packed on its own; nothing is carried across entries."""
        if not lines:
            return []
        bounds = entry_starts(lines) + [len(lines)]
        spans: list[tuple[int, int, str]] = []
        for lo, hi in zip(bounds, bounds[1:]):
            spans.extend(s for s in self.pack((i + 1, lines[i]) for i in range(lo, hi)) if s[2].strip())
        return number_pieces(path, spans)

    def segments(self, line: str) -> list[str]:
        """A line as the pieces that are packed (one piece unless the line is over the budget)."""
        size, budget = self.size, self.max_chars
        if self.long_lines == "budget":
            return [line] if size(line) <= budget else cut_to_budget(line, budget, size)
        if not line:
            return [""]
        if self.long_lines == "2026.02":
            return utf16_slices(line, budget)
        out: list[str] = []
        rest = line
        while rest:
            coarse = utf16_prefix(rest, budget)
            rest = rest[len(coarse):]
            if size(coarse) <= budget:
                out.append(coarse)
            elif self.long_lines == "2026.08":
                out.extend(utf16_slices(coarse, max(1, self.tokens)))
            else:
                out.extend(cut_to_budget(coarse, budget, size))
        return out

    def pack(self, numbered_lines: Iterable[tuple[int, str]]) -> list[tuple[int, int, str]]:
        """The packing loop over (1-based line number, line) pairs -> (start_line, end_line, text)."""
        out: list[tuple[int, int, str]] = []
        buf: list[tuple[str, int]] = []  # (segment, 1-based line number)
        buf_cost = 0

        def flush() -> None:
            if buf:
                out.append((buf[0][1], buf[-1][1], "\n".join(s for s, _ in buf)))

        def carry_overlap(incoming: int) -> None:
            nonlocal buf, buf_cost
            window = min(self.overlap_chars, max(0, self.max_chars - incoming)) if self.overlap_cap \
                else self.overlap_chars
            kept: list[tuple[str, int]] = []
            acc = 0
            if window > 0:
                for seg, ln in reversed(buf):
                    cost = self.size(seg) + 1
                    if self.overlap_cap and cost > window - acc:
                        if not kept:  # the last line alone does not fit: carry its tail that does
                            tail = tail_within(seg, window - acc - 1, self.size)
                            if tail:
                                kept.insert(0, (tail, ln))
                                acc += self.size(tail) + 1
                        break
                    acc += cost
                    kept.insert(0, (seg, ln))
                    if acc >= window:
                        break
            buf, buf_cost = kept, acc

        for lineno, line in numbered_lines:
            for seg in self.segments(line):
                cost = self.size(seg) + 1
                if buf and buf_cost + cost > self.max_chars:
                    flush()
                    carry_overlap(cost)  # as OpenClaw: carry + this segment may exceed the budget
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
    """OpenClaw's newer per-entry mode (chunking.perEntry, memory-host-sdk markdown-chunks.ts) for every file.

    The file is cut into entries: an entry starts at each line beginning with "- " and at each
    heading, and runs to the line before the next one (blank lines and plain paragraphs belong to
    the entry above them).  Each entry is packed on its own with the `openclaw` rules (budget,
    line-granular overlap, over-long lines cut into pieces that keep their line number); nothing is
    carried across entries.  Defaults follow the newest code read (2026.9.6): its carry window
    (`overlap_cap`) with SPEC's cjk_weighted sizing.
    Whitespace-only chunks (e.g. a file's leading blank lines) are dropped, as OpenClaw's indexer does.
    """

    sizing: Sizing = "cjk_weighted"
    """cost of a text (see the openclaw chunker): "cjk_weighted" (a CJK character 4, the newer default) or
    another sizing"""
    overlap_cap: bool = True
    """carry within min(overlap, budget - the incoming line), as OpenClaw 2026.9.3+ (the newer default)"""

    def chunk(self, path: str, text: str) -> list[Chunk]:
        return self.chunk_entries(path, self.lines(text))

