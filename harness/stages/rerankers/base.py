"""The reranker interface (query, texts -> relevance scores), its registry ([reranker], optional in a
preset), and the wrapper that puts any reranker behind the persistent cache the embedders use."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from harness.errors import RerankError
from harness.registry import Registry
from harness.stages.embedders.cache import EmbeddingCache

RERANKERS = Registry("reranker", builtins="harness.stages.rerankers", group="harness.rerankers")

CACHE_ROLE = "rerank"  # the cache's role column for (query, text) scores


@runtime_checkable
class Reranker(Protocol):
    """A cross-encoder (or any scorer of query-passage pairs)."""

    model_id: str  # identifies the scores in the cache: another model, server or request shape must change it
    batch_size: int  # texts per rerank() call the cache makes (each call's scores are committed at once)

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text, in the order given (larger = more relevant)."""
        ...


def pair_sha256(query: str, text: str) -> str:
    """The cache key of one (query, text) pair."""
    return hashlib.sha256(json.dumps([query, text], ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass
class CachedReranker:
    """A reranker behind the persistent cache (EmbeddingCache, role "rerank", one float per pair): only
    pairs not scored before are sent, in committed batches of the inner reranker's batch_size, so a run
    interrupted by a failing server keeps every batch scored and a rerun sends only the rest.  Scores are
    float32 whether fresh or cached, so a rerun reproduces a cold run exactly."""

    inner: Any
    cache: EmbeddingCache
    stats: dict[str, int] = field(default_factory=lambda: {"hits": 0, "computed": 0})

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def batch_size(self) -> int:
        return self.inner.batch_size

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        shas = [pair_sha256(query, t) for t in texts]
        have = {sha: float(v[0]) for sha, v in self.cache.get_many(self.model_id, CACHE_ROLE, shas).items()}
        missing = list(dict.fromkeys(sha for sha in shas if sha not in have))
        self.stats["hits"] += sum(1 for sha in shas if sha in have)
        text_of = dict(zip(shas, texts))
        for start in range(0, len(missing), self.batch_size):
            batch = missing[start:start + self.batch_size]
            try:
                scores = self.inner.rerank(query, [text_of[sha] for sha in batch])
            except Exception as exc:
                kept = self.stats["computed"]
                raise RerankError(f"reranking failed after {kept} new scores (kept in {self.cache.path}; a rerun "
                                  f"resumes): {exc}") from exc
            if len(scores) != len(batch) or not all(np.isfinite(scores)):
                raise RerankError(f"reranker {self.model_id} returned {len(scores)} scores for {len(batch)} texts "
                                  "or a score that is not finite")
            rounded = [np.asarray([s], dtype=np.float32) for s in scores]
            self.cache.put_many(self.model_id, CACHE_ROLE, list(zip(batch, rounded)))
            have.update({sha: float(v[0]) for sha, v in zip(batch, rounded)})
            self.stats["computed"] += len(batch)
        return [have[sha] for sha in shas]


def build_reranker(table: Mapping[str, Any], where: str, cache: EmbeddingCache | None = None) -> CachedReranker:
    """The [reranker] table's implementation behind the cache (the run's embedding cache file)."""
    params = {k: v for k, v in table.items() if k != "name"}
    inner = RERANKERS.create(table["name"], params, where=where)
    return CachedReranker(inner, cache if cache is not None else EmbeddingCache())
