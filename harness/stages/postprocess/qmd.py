"""QMD's step after fusion (SPEC.md section 3; hybridQuery steps 5-7): rerank each candidate's best chunk
and blend by fused position, or 1/rank without a reranker; and a generic rerank step for other presets."""
from __future__ import annotations

from dataclasses import replace

from pydantic import Field

from harness.registry import stage
from harness.stages.fusion import Hit, rank_hits
from harness.stages.postprocess.base import POSTPROCESSORS, SearchContext
from harness.stages.rerankers.blend import qmd_best_chunk, qmd_blend

QMD_RERANK_CANDIDATES = 40  # RERANK_CANDIDATE_LIMIT


def rerank_text(hit: Hit, ctx: SearchContext) -> str:
    """What a reranker reads for a hit: a file's best chunk by QMD's rule (most query terms), or the
    chunk itself."""
    chunk_texts = ctx.document_chunks(hit.id) if ctx.document_chunks is not None else []
    if chunk_texts:
        return chunk_texts[qmd_best_chunk(ctx.query, chunk_texts)]
    return ctx.need("chunk_text", "rerank")(hit.id)


@POSTPROCESSORS.register("reciprocal_rank")
@stage
class ReciprocalRank:
    """QMD without a reranker: each result's score becomes 1/rank (1, 0.5, 0.333...).

    Kept for configurations that name it; `qmd_rerank` does the same without a [reranker] and QMD's
    blend with one.  The order is kept; only scores change."""

    pass_threshold = 0.0  # rescores only

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        return [replace(h, score=1.0 / rank) for rank, h in enumerate(hits, start=1)]


@POSTPROCESSORS.register("qmd_rerank")
@stage
class QmdRerank:
    """QMD's rerank step.  With a [reranker]: the first `candidates` fused results, each scored by the
    reranker on its best chunk (the chunk holding the most query terms; a chunk result is its own text),
    blended w x 1/rank + (1 - w) x rerank with w = 0.75 for fused ranks 1-3, 0.60 for 4-10, 0.40 beyond,
    and sorted by that (fused rank on ties); results beyond `candidates` are dropped, as QMD reranks only
    those.  Without one (QMD's skipRerank, and every reported figure here): score = 1/fused rank."""

    candidates: int = Field(QMD_RERANK_CANDIDATES, ge=1)
    """fused results that are reranked (QMD: 40)"""

    pass_threshold = 0.0  # rescores only
    uses_reranker = True

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if ctx.reranker is None:
            return [replace(h, score=1.0 / rank) for rank, h in enumerate(hits, start=1)]
        window = hits[: self.candidates]
        if not window:
            return []
        scores = ctx.reranker.rerank(ctx.query, [rerank_text(h, ctx) for h in window])
        blended = [(qmd_blend(rank, s), rank, h) for rank, (h, s) in enumerate(zip(window, scores), start=1)]
        blended.sort(key=lambda item: (-item[0], item[1]))
        return [replace(h, score=score) for score, _, h in blended]


@POSTPROCESSORS.register("rerank")
@stage
class Rerank:
    """A reranker for presets whose system has no rerank step (what-if): the first `window` hits scored
    weight x rerank + (1 - weight) x score, re-ranked by (score desc, id); hits beyond the window dropped.
    Needs a [reranker] table; without one it passes the hits through unchanged."""

    window: int = Field(40, ge=1)
    """hits that are reranked (the rest are dropped)"""
    weight: float = Field(1.0, ge=0, le=1, allow_inf_nan=False)
    """share of the reranker's score (1: the reranker alone decides)"""

    pass_threshold = 0.0  # rescores only
    uses_reranker = True

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if ctx.reranker is None:
            return list(hits)

        window = hits[: self.window]
        scores = ctx.reranker.rerank(ctx.query, [rerank_text(h, ctx) for h in window]) if window else []
        return rank_hits([replace(h, score=self.weight * s + (1 - self.weight) * h.score)
                          for h, s in zip(window, scores)])
