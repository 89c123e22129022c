"""One file, one chunk (the seed's "file = chunk = record")."""
from __future__ import annotations

import numpy as np
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from harness.registry import stage
from harness.stages.chunkers.base import (
    CHARS_PER_TOKEN,
    CHUNKERS,
    Chunk,
    TokenCount,
    cost_prefix,
    split_lines,
)


@CHUNKERS.register("file")
@stage
class FileChunker:
    """One file, one chunk (optionally truncated to an embedder's input limit).

    `input_limit` (tokens, off by default) truncates the chunk to what an embedder with that input
    limit would see: the longest prefix whose `token_count` (e.g. the embedder's own, which counts
    its special tokens and prefix) is within the limit, else whose estimated tokens are.  The cut is
    at a character, and end_line is the last line the kept text touches.  The truncated text is lost
    to both legs, which is the point; chunk_stats.text_coverage counts the truncated files.
    """

    input_limit: int | None = Field(None, gt=0)
    """truncate the chunk to this many tokens (an embedder's input limit); default: no truncation"""
    token_count: SkipJsonSchema[TokenCount | None] = Field(None, repr=False)
    """the embedder's token counter str -> int (in TOML: token_count = "embedder"); default: estimated tokens"""

    def chunk(self, path: str, text: str) -> list[Chunk]:
        lines = split_lines(text)
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
