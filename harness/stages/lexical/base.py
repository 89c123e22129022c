"""The lexical interface: the LexicalIndex protocol, the raw score of LIKE-only rows and OpenClaw's
FTS5 rank -> text score maps that fusion stages use."""
from __future__ import annotations

import math
from typing import Protocol, Sequence, runtime_checkable

from harness.registry import Registry
from harness.stages.chunkers import Chunk
from harness.stages.tokenizers import Tokenizer

LEXICAL_BACKENDS = Registry("lexical backend", table="lexical", group="harness.lexical",
                            builtins="harness.stages.lexical", runtime=("tokenizer", "conn"))

# A leg's candidate list: (chunk id, raw score), best first.
Hits = list[tuple[str, float]]


class RankedHits(list):
    """Hits (chunk id, raw BM25) that also carry the leg's own ranking score of each hit (OpenClaw
    2026.8's boosted keyword score), which fusions use instead of the mapped BM25 (fusion.Legs), and
    each hit's place among equal scores (`tie_order`, 0 first: text score, path, line, OpenClaw's id)."""

    def __init__(self, hits: Hits, ranking: dict[str, float], tie_order: dict[str, int] | None = None):
        super().__init__(hits)
        self.ranking = ranking
        self.tie_order = tie_order

# Raw score of a row found only through LIKE (the trigram paths): such a row has no bm25.  0.0 is the
# rank OpenClaw's own SQL gives it (`0 AS rank`), so every rank-to-score mapping below turns it into the
# text score OpenClaw reports for it, 1.0 (1/(1+0)).  In the leg's own order it sorts after every
# MATCH hit (whose raw bm25 is > 0), and LIKE-only rows tie among themselves and break by chunk id.
LIKE_ONLY_RAW_SCORE = 0.0


def bm25_rank_to_score(rank: float) -> float:
    """OpenClaw since 2026-03-07: FTS5 rank r (negative, more negative is better) -> (0, 1)."""
    if not math.isfinite(rank):
        return 1 / 1000
    if rank < 0:
        relevance = -rank
        return relevance / (1 + relevance)
    return 1 / (1 + rank)


def legacy_bm25_rank_to_score(rank: float) -> float:
    """OpenClaw before 2026-03-07: 1/(1+max(0, r)); FTS5 ranks are negative, so every hit scores 1.0."""
    if not math.isfinite(rank):
        return 1 / 1000
    return 1 / (1 + max(0.0, rank))


RANK_TO_SCORE = {"current": bm25_rank_to_score, "legacy": legacy_bm25_rank_to_score}


@runtime_checkable
class LexicalIndex(Protocol):
    """A lexical backend: built with the run's tokenizer (and SQLite connection, which only FTS5 uses)."""

    tokenizer: Tokenizer

    def add(self, chunks: Sequence[Chunk]) -> None: ...

    def search(self, query: str, k: int) -> Hits:
        """Top-k (chunk id, raw BM25 = -FTS5 rank) pairs, ties broken by chunk id."""
        ...
