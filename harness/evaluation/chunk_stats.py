"""Chunk statistics for one chunked layout: how many chunks, how big, how pure, how much an
embedder's input limit cuts, and whether any source text was left out of every chunk.

    >>> stats = chunk_stats(chunks, layout, token_count=embedder.token_count, input_limit=512)
    >>> stats["mixed"]["share"]          # share of chunks whose lines overlap 2+ documents

Sizes are given in estimated tokens (chunkers.estimate_tokens: a CJK character is one token, four
other characters one token) and, when a `token_count` callable is given (e.g. the embedder's own,
which includes its special tokens and prefix), in real tokens.  The input-limit figures use real
tokens when they are available, else estimated ones, and say which.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from harness.inputs.layout import Layout
from harness.stages.chunkers import Chunk, estimate_tokens, split_lines


def distribution(values: Sequence[float]) -> dict[str, float]:
    """min, p10, p50, p90, max, mean and total of `values` (all 0 for no values)."""
    if not values:
        return {"min": 0, "p10": 0.0, "p50": 0.0, "p90": 0.0, "max": 0, "mean": 0.0, "total": 0}
    arr = np.asarray(values, dtype=float)
    return {
        "min": float(arr.min()), "p10": float(np.percentile(arr, 10)), "p50": float(np.percentile(arr, 50)),
        "p90": float(np.percentile(arr, 90)), "max": float(arr.max()), "mean": float(arr.mean()),
        "total": float(arr.sum()),
    }


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def input_limit_stats(sizes: Sequence[int], limit: int) -> dict[str, Any]:
    """How much of the chunks' text lies beyond `limit` tokens (what an embedder would not see)."""
    over = [n for n in sizes if n > limit]
    beyond = sum(n - limit for n in over)
    return {
        "limit": limit,
        "chunks_over": len(over),
        "share_chunks_over": _share(len(over), len(sizes)),
        "tokens_beyond": beyond,
        "share_tokens_beyond": _share(beyond, sum(sizes)),
    }


def _nonspace(text: str) -> int:
    return len(text) - sum(map(str.isspace, text))  # mapped in C: a generator here was ~0.1 s of a run


def text_coverage(chunks: Sequence[Chunk], texts: Mapping[str, str]) -> dict[str, Any]:
    """Source text left out of every chunk.

    uncovered_nonblank_lines  non-blank lines in no chunk's line range (0 for every chunker here)
    truncated_files           files whose only chunk is a proper prefix of the file, leaving
                              non-whitespace text out: what `file` with input_limit does
    share_text_lost           non-whitespace characters so left out / all non-whitespace characters
    The other chunkers keep all text by construction (tests/test_chunkers.py checks it).
    """
    by_path: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_path.setdefault(c.path, []).append(c)
    lost_chars = total_chars = uncovered_lines = 0
    truncated: list[str] = []
    for path in sorted(texts):
        lines = split_lines(texts[path])
        body = "\n".join(lines)
        total_chars += _nonspace(body)
        mine = by_path.get(path, [])
        in_range = bytearray(len(lines) + 2)
        for c in mine:
            in_range[c.start_line:c.end_line + 1] = b"\x01" * (c.end_line - c.start_line + 1)
        uncovered_lines += sum(1 for n, line in enumerate(lines, start=1) if line.strip() and not in_range[n])
        if len(mine) == 1 and len(mine[0].text) < len(body) and body.startswith(mine[0].text):
            lost = _nonspace(body[len(mine[0].text):])
            if lost:
                lost_chars += lost
                truncated.append(path)
    return {
        "uncovered_nonblank_lines": uncovered_lines,
        "truncated_files": len(truncated),
        "lost_chars": lost_chars,
        "share_text_lost": _share(lost_chars, total_chars),
        "examples": truncated[:5],
    }


def chunk_stats(chunks: Sequence[Chunk], layout: Layout, *, token_count: Callable[[str], int] | None = None,
                input_limit: int | None = None, texts: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Statistics of `chunks` (made from `layout`'s files) as a JSON-ready dict.

    chunks, files, files_with_chunks
    est_tokens / real_tokens   size distributions (real_tokens None without token_count)
    chars                      size distribution in characters
    mixed                      chunks whose line range overlaps 2+ documents (Layout.docs_overlapping)
    no_document                chunks that overlap no document (e.g. heartbeat-only log lines)
    docs_per_chunk             mean number of documents a chunk overlaps
    input_limit                (given input_limit) chunks over it and the share of tokens beyond it
    coverage                   source text in no chunk (text_coverage: files truncated by `file`)
    `texts` (path -> file text) avoids re-reading the layout's files.
    """
    if texts is None:
        texts = {path: layout.read(path) for path in layout.files}
    n = len(chunks)
    est = [estimate_tokens(c.text) for c in chunks]
    real = [int(token_count(c.text)) for c in chunks] if token_count is not None else None
    docs = [len(layout.docs_overlapping(c.path, c.start_line, c.end_line)) for c in chunks]
    mixed = sum(1 for d in docs if d >= 2)
    orphan = sum(1 for d in docs if d == 0)
    stats: dict[str, Any] = {
        "chunks": n,
        "files": len(layout.files),
        "files_with_chunks": len({c.path for c in chunks}),
        "est_tokens": distribution(est),
        "real_tokens": distribution(real) if real is not None else None,
        "chars": distribution([len(c.text) for c in chunks]),
        "mixed": {"chunks": mixed, "share": _share(mixed, n)},
        "no_document": {"chunks": orphan, "share": _share(orphan, n)},
        "docs_per_chunk": _share(sum(docs), n),
        "input_limit": None,
        "coverage": text_coverage(chunks, texts),
    }
    if input_limit is not None:
        sizes = real if real is not None else est
        stats["input_limit"] = {**input_limit_stats(sizes, input_limit),
                                "counted_with": "real tokens" if real is not None else "estimated tokens"}
    return stats
