"""A judgment anchored to the text it judged, so that a label made on one version of a memory file is never
applied to another version's lines.

An anchor is "<sha256 of the text, 16 hex>:<n>": the hash of the first n characters of the judged text,
whitespace-trimmed at both ends.  For a span judged in the labelling page, the text is the span as the page
showed it (n = its whole length).  For an implicit judgment, it is the snippet the agent's memory_search
returned: a prefix of the chunk text (truncateUtf16Safe(text, 700) in 2026.8.1 and 2026.9.6's
manager-search; 2026.2.22's tool trims it and appends "\n\nSource: <citation>", which is cut off), so the
anchor holds what the agent saw, not the file as it is today.

A span holds when lines start..end of today's file (OpenClaw's numbering: the line after a final newline
exists) still begin with that text.  When they do not, the span is re-anchored to the nearest window of the
same number of lines that does (the text moved: lines added or removed above it), else dropped, and the
caller counts it.
"""
from __future__ import annotations

import hashlib

SOURCE_SUFFIX = "\n\nSource: "  # 2026.2.22's memory_search appends the citation to each snippet


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def anchor_of(judged: str) -> str | None:
    """The anchor of a judged text (a span, or a snippet that is a prefix of one); None for empty text."""
    core = judged.rsplit(SOURCE_SUFFIX, 1)[0] if SOURCE_SUFFIX in judged else judged
    core = core.strip()
    return f"{_digest(core)}:{len(core)}" if core else None


def parse_anchor(anchor: str) -> tuple[str, int] | None:
    digest, _, count = anchor.partition(":")
    if len(digest) != 16 or not count.isdigit() or any(c not in "0123456789abcdef" for c in digest):
        return None
    return digest, int(count)


def holds(span: str, anchor: str) -> bool:
    parsed = parse_anchor(anchor)
    if parsed is None:
        return False
    digest, count = parsed
    core = span.strip()
    return len(core) >= count and _digest(core[:count]) == digest


def reanchor(text: str, start: int, end: int, anchor: str) -> tuple[int, int] | None:
    """Where the judged span is in `text` now: (start, end) as judged when it still holds, else the nearest
    window of the same length in lines whose text holds, else None."""
    lines = text.split("\n")
    if end <= len(lines) and holds("\n".join(lines[start - 1:end]), anchor):
        return start, end
    length = end - start
    for distance in range(1, len(lines) + 1):
        for first in (start - distance, start + distance):
            last = first + length
            if first >= 1 and last <= len(lines) and holds("\n".join(lines[first - 1:last]), anchor):
                return first, last
        if start - distance < 1 and start + distance + length > len(lines):
            break
    return None
