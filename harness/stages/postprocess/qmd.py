"""QMD's positional score (SPEC.md section 3)."""
from __future__ import annotations

from dataclasses import replace

from harness.registry import stage
from harness.stages.fusion import Hit
from harness.stages.postprocess.base import POSTPROCESSORS, SearchContext


@POSTPROCESSORS.register("reciprocal_rank")
@stage
class ReciprocalRank:
    """QMD without a reranker: each result's score becomes 1/rank (1, 0.5, 0.333...).

    QMD blends w x (1/fused position) + (1 - w) x reranker score; with no reranker only the
    positional term is left.  It is a post-processing stage, not part of the `rrf` fusion, because
    in QMD it belongs to the rerank step after fusion: keeping it separate leaves the fused RRF
    scores (with their bonuses) visible to other stages and reports, lets one fused list be scored
    both ways in a sweep, and lets a preset decide whether a minScore sees RRF scores or 1/rank.
    The order is kept; only scores change."""

    pass_threshold = 0.0  # rescores only

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        return [replace(h, score=1.0 / rank) for rank, h in enumerate(hits, start=1)]
