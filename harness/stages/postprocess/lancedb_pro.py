"""memory-lancedb-pro's steps after fusion (SPEC.md section 4; src/retriever.ts), in its order:
cosine_rerank, recency_boost, importance_weight, length_norm, hard_min_score, time_decay,
cosine_diversity."""
from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime
from typing import Literal, Sequence

import numpy as np
from pydantic import Field

from harness.registry import stage
from harness.stages.chunkers.base import utf16_length
from harness.stages.fusion import Hit, clamp01, rank_hits
from harness.stages.postprocess.base import (
    POSTPROCESSORS,
    ReferenceTime,
    SearchContext,
    age_days,
    reference_time,
)
from harness.stages.rerankers.blend import lancedb_rerank_blend


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 when either vector has zero length (as memory-lancedb-pro does)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"vector dimensions differ: {x.shape} vs {y.shape}")
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return 0.0 if norm == 0 else float(np.dot(x, y) / norm)


def text_length(text: str, units: str = "code_points") -> int:
    """len(text) in code points, or in UTF-16 units (JavaScript's String.length: 2 for a character outside the BMP)."""
    return utf16_length(text) if units == "utf16" else len(text)


def lancedb_age(path: str, now: datetime) -> float:
    """Every memory-lancedb-pro entry has a creation timestamp; here the only one a chunk has is its
    memory/YYYY-MM-DD.md name.  Undated chunks are treated as the code treats a missing timestamp:
    as created `now` (age 0: full recency boost, no time decay)."""
    age = age_days(path, now)
    return 0.0 if age is None else age


@POSTPROCESSORS.register("cosine_rerank")
@stage
class CosineRerank:
    """memory-lancedb-pro's rerank step on the top 2 x limit (the rest are dropped, as the code slices
    before reranking).

    With a [reranker] (its cross-encoder): clamp01WithFloor(0.6 ce + 0.4 fused, floor), the floor
    0.95 / 0.9 / 0.5 x fused for a BM25 score (the hit's text_score) >= 0.75 / >= 0.6 / below
    (rerankers.blend.lancedb_rerank_blend).  Without one (no API key; every reported figure here):
    clamp01(0.7 fused + 0.3 cosine(query, chunk)).  memory-lancedb-pro falls back to the cosine when the
    API fails; here a failed reranker stops the run instead, so that no figure mixes the two."""

    weight: float = Field(0.3, ge=0, le=1)
    """weight of the cosine; the fused score gets 1 - weight"""
    window_factor: int = Field(2, ge=1)
    """how many results (x max_results) are reranked; the rest are dropped"""

    pass_threshold = 0.0  # rescores and cuts the list, sets no minimum
    uses_reranker = True

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        window = hits[: self.window_factor * ctx.max_results]
        if not window:
            return []
        if ctx.reranker is not None:
            chunk_text = ctx.need("chunk_text", "cosine_rerank")
            scores = ctx.reranker.rerank(ctx.query, [chunk_text(h.id) for h in window])
            return rank_hits([replace(h, score=lancedb_rerank_blend(h.score, h.text_score, s))
                              for h, s in zip(window, scores)])
        query_vector = ctx.need("query_vector", "cosine_rerank")
        chunk_vector = ctx.need("chunk_vector", "cosine_rerank")
        out = []
        for h in window:
            vector = chunk_vector(h.id)
            similarity = 0.0 if vector is None else cosine(query_vector, vector)
            blended = (1 - self.weight) * h.score + self.weight * similarity
            out.append(replace(h, score=clamp01(blended, h.score)))
        return rank_hits(out)


@POSTPROCESSORS.register("recency_boost")
@stage
class RecencyBoost:
    """memory-lancedb-pro: score + weight x exp(-age_days / half_life_days), capped at 1.

    Defaults 0.1 and 14 days; the code calls it a half-life but divides by it directly."""

    half_life_days: float = Field(14.0, ge=0, allow_inf_nan=False)
    """the code's recencyHalfLifeDays (used as an e-folding time; 0: off)"""
    weight: float = Field(0.1, ge=0, allow_inf_nan=False)
    """the largest boost, for a memory dated today"""
    now: ReferenceTime = None
    """reference time for ages (date, date-time or ISO string); default: the run's evaluation.now"""

    pass_threshold = 0.0  # rescores only

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if not hits or self.half_life_days <= 0 or self.weight == 0:
            return list(hits)
        now = reference_time(self.now, ctx, "recency_boost")
        chunk_path = ctx.need("chunk_path", "recency_boost")
        out = []
        for h in hits:
            boost = math.exp(-lancedb_age(chunk_path(h.id), now) / self.half_life_days) * self.weight
            out.append(replace(h, score=clamp01(h.score + boost, h.score)))
        return rank_hits(out)


@POSTPROCESSORS.register("importance_weight")
@stage
class ImportanceWeight:
    """memory-lancedb-pro: score x (0.7 + 0.3 x importance), importance 0.7 by default.

    Memory files carry no importance, so every chunk gets the code's default 0.7, i.e. x 0.91 -
    which still matters against the hard minimum that follows."""

    importance: float = Field(0.7, ge=0, le=1)
    """every chunk's importance (the code's default for an entry without one)"""

    pass_threshold = 0.0  # rescores only

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        factor = 0.7 + 0.3 * self.importance
        return rank_hits([replace(h, score=clamp01(h.score * factor, h.score * 0.7)) for h in hits])


@POSTPROCESSORS.register("length_norm")
@stage
class LengthNorm:
    """memory-lancedb-pro: score x 1 / (1 + 0.5 log2(max(chars / anchor, 1))), anchor 500 characters.

    No change up to the anchor, 1000 chars x 0.667, 2000 x 0.5.  chars = len(chunk text) in code points
    by default; the code's String.length counts UTF-16 units, one more for each character outside the
    BMP (emoji): `units = "utf16"` counts as it does (the conformance run measured the difference, issue
    40).  anchor <= 0 turns it off."""

    anchor: float = Field(500.0, allow_inf_nan=False)
    """length in characters from which longer chunks are penalised (<= 0: off)"""
    units: Literal["code_points", "utf16"] = "code_points"
    """how a chunk's length is counted: code points, or UTF-16 units as the plugin's String.length"""

    pass_threshold = 0.0  # rescores only

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if not hits or self.anchor <= 0:
            return list(hits)
        chunk_text = ctx.need("chunk_text", "length_norm")
        out = []
        for h in hits:
            ratio = text_length(chunk_text(h.id), self.units) / self.anchor
            factor = 1.0 / (1.0 + 0.5 * math.log2(max(ratio, 1.0)))
            out.append(replace(h, score=clamp01(h.score * factor, h.score * 0.3)))
        return rank_hits(out)


@POSTPROCESSORS.register("hard_min_score")
@stage
class HardMinScore:
    """memory-lancedb-pro's hardMinScore: drop results scoring below `threshold` (0.35), no truncation.

    Named `threshold`, not `min_score`, because later stages (time decay) still lower the survivors'
    scores, so a returned result may end below it; for the same reason it sets no pass threshold."""

    threshold: float = Field(0.35, ge=0, le=1, allow_inf_nan=False)
    """results scoring below it are dropped (the code's hardMinScore)"""

    pass_threshold = 0.0  # filters, but before time_decay: no bar on the returned top score

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        return [h for h in hits if h.score >= self.threshold]


@POSTPROCESSORS.register("time_decay")
@stage
class TimeDecay:
    """memory-lancedb-pro: score x (0.5 + 0.5 exp(-age_days / half_life_days)), 60 days.

    Never below half (x 0.684 at 60 days, x 0.568 at 120).  Without access records the half-life is
    never extended."""

    half_life_days: float = Field(60.0, ge=0, allow_inf_nan=False)
    """the code's timeDecayHalfLifeDays (used as an e-folding time; 0: off)"""
    now: ReferenceTime = None
    """reference time for ages (date, date-time or ISO string); default: the run's evaluation.now"""

    pass_threshold = 0.0  # rescores only

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if not hits or self.half_life_days <= 0:
            return list(hits)
        now = reference_time(self.now, ctx, "time_decay")
        chunk_path = ctx.need("chunk_path", "time_decay")
        out = []
        for h in hits:
            factor = 0.5 + 0.5 * math.exp(-lancedb_age(chunk_path(h.id), now) / self.half_life_days)
            out.append(replace(h, score=clamp01(h.score * factor, h.score * 0.5)))
        return rank_hits(out)


@POSTPROCESSORS.register("cosine_diversity")
@stage
class CosineDiversity:
    """memory-lancedb-pro's MMR-inspired filter: a chunk too similar to a kept one moves to the end.

    Walk the list in order; a chunk whose embedding has cosine > threshold (0.85) with one already
    kept is deferred; deferred chunks follow the kept ones in their original order.  Nothing is
    dropped and no score changes.  A chunk without a vector is never too similar."""

    threshold: float = Field(0.85, ge=-1, le=1, allow_inf_nan=False)
    """cosine similarity above which a chunk counts as a near duplicate"""

    pass_threshold = 0.0  # reorders only

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if len(hits) <= 1:
            return list(hits)
        chunk_vector = ctx.need("chunk_vector", "cosine_diversity")
        kept: list[Hit] = []
        kept_vectors: list[np.ndarray] = []  # unit vectors of kept chunks that have one
        deferred: list[Hit] = []
        for h in hits:
            vector = chunk_vector(h.id)
            unit = None
            if vector is not None:
                v = np.asarray(vector, dtype=float)
                norm = float(np.linalg.norm(v))
                unit = v / norm if norm > 0 else None  # zero vector: cosine 0 with everything
            if unit is not None and kept_vectors and float(np.max(np.stack(kept_vectors) @ unit)) > self.threshold:
                deferred.append(h)
                continue
            kept.append(h)
            if unit is not None:
                kept_vectors.append(unit)
        return kept + deferred
