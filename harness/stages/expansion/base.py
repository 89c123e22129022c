"""Query expansion: a query-side stage that turns one query into extra ranked lists, each with a
weight, for a multi-list fusion (RRF) to consume beside the original query's two lists.

    expand(ctx) -> [RankedList(hits, weight, leg, name), ...]   (stages/fusion/base.py)

QMD (SPEC.md section 3): a BM25 probe first (skip expansion when the top normalised BM25 score is
>= 0.85 and leads the second by >= 0.15), then lists from the expansions, each fused with weight 1.0
beside the original query's lexical and vector lists at 2.0, every list 20 long."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from harness.registry import Registry
from harness.stages.fusion.base import RankedList

EXPANSIONS = Registry("query expansion", table="expansion", group="harness.expansion",
                      builtins="harness.stages.expansion", runtime=("chat",))

LIST_SIZE = 20  # QMD: each list 20 long
EXPANSION_WEIGHT = 1.0  # QMD: expansion lists; the original query's lists get 2.0
STRONG_SIGNAL_MIN_SCORE = 0.85
STRONG_SIGNAL_MIN_GAP = 0.15

Hits = list[tuple[str, float]]


@dataclass
class ExpansionContext:
    """What an expansion may use: the query and its first-pass lists, and the run's searches."""

    query: str
    query_vector: np.ndarray | None
    vector: Hits  # the original query's vector leg
    lexical: Hits  # the original query's lexical leg
    index: Any  # pipeline.Index: chunk texts, vectors, the lexical and vector indexes
    tokenizer: Any
    embed_query: Callable[[str], np.ndarray]
    first_pass: Callable[[], list[Any]]  # the fused hits of the original lists (computed on demand)
    stats: dict[str, Any] = field(default_factory=dict)  # what the expansion did, for the per-query rows

    def search_lexical(self, query: str, k: int = LIST_SIZE) -> Hits:
        return self.index.lexical.search(query, k)

    def search_vector(self, vector: np.ndarray, k: int = LIST_SIZE) -> Hits:
        return self.index.vector.search(np.asarray(vector, dtype=np.float32), k)


@runtime_checkable
class QueryExpansion(Protocol):
    def expand(self, ctx: ExpansionContext) -> list[RankedList]: ...


def normalised_bm25(raw: float) -> float:
    """QMD's displayed BM25 score |x| / (1 + |x|) (the lexical leg's raw score is -bm25)."""
    return abs(raw) / (1 + abs(raw))


def strong_signal(lexical: Hits) -> bool:
    """QMD's probe: the top normalised score is >= 0.85 and leads the second (0 when alone) by >= 0.15."""
    if not lexical:
        return False
    scores = sorted((normalised_bm25(raw) for _, raw in lexical), reverse=True)
    top, second = scores[0], scores[1] if len(scores) > 1 else 0.0
    return top >= STRONG_SIGNAL_MIN_SCORE and top - second >= STRONG_SIGNAL_MIN_GAP
