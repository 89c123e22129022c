"""Rerankers ([reranker], optional): a model scoring (query, passage) pairs, and how systems blend it.

A reranker stage is a model behind an API; the systems' rerank *steps* are post-processing stages that
read it from the search context (SearchContext.reranker) and fall back to their offline behaviour when a
configuration has no [reranker] table:

    qmd_rerank      QMD: each candidate file's best chunk (most query terms) reranked, position-aware
                    blend 0.75 / 0.60 / 0.40 x 1/rank + the rest x score; without a reranker 1/rank
    cosine_rerank   memory-lancedb-pro: 0.6 cross-encoder + 0.4 fused with BM25 floors; without one
                    0.7 fused + 0.3 cosine
    rerank          any other preset: the first `window` hits rescored (blend weight 1 = the reranker's)

Implementations (RERANKERS): `http` (Cohere, Jina, vLLM, Infinity, TEI /rerank APIs).  Every reranker
runs behind the embedding cache's file (role "rerank", one float per pair), so reruns send nothing.

Modules: base (RERANKERS, the Reranker protocol, CachedReranker, build_reranker), http (http), blend
(QMD's and memory-lancedb-pro's blends as pure functions).
"""
from harness.stages.rerankers.base import (
    CACHE_ROLE,
    RERANKERS,
    CachedReranker,
    Reranker,
    build_reranker,
    pair_sha256,
)
from harness.stages.rerankers.blend import (
    clamp01_with_floor,
    lancedb_rerank_blend,
    lancedb_rerank_floor,
    qmd_best_chunk,
    qmd_blend,
    qmd_position_weight,
)
from harness.stages.rerankers.http import (
    HTTPReranker,
    HTTPRerankError,
    MissingRerankKeyError,
)

__all__ = ["CACHE_ROLE", "RERANKERS", "CachedReranker", "Reranker", "build_reranker", "pair_sha256",
           "clamp01_with_floor", "lancedb_rerank_blend", "lancedb_rerank_floor", "qmd_best_chunk", "qmd_blend",
           "qmd_position_weight", "HTTPRerankError", "HTTPReranker", "MissingRerankKeyError"]
