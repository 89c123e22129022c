"""The fusion interface: one query's two candidate lists (Legs) -> one ranked list of Hits, plus the
score maps and helpers the implementations share."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from harness.ranking import by_score_then_id
from harness.registry import Registry
from harness.trace import Hit, LegArrays, leg_arrays, rank_hits

__all__ = ["FUSIONS", "RankedList", "Legs", "Hit", "rank_hits", "Fusion", "fused_hits", "applied_weights",
           "normalised_weights", "ranked_leg"]

FUSIONS = Registry("fusion", builtins="harness.stages.fusion")


@dataclass(frozen=True)
class RankedList:
    """One more ranked list for a fusion that takes more than the query's two legs (query expansion,
    stages/expansion: QMD's `lex` line searched lexically, `vec`/`hyde` lines by vector, prf's rm3 and
    centroid).  hits: (id, raw score) best first, chunk ids or document ids; weight: its RRF weight (QMD:
    1.0 for expansion lists); leg: the leg it was searched on; name: what produced it."""

    hits: list[tuple[str, float]]
    weight: float = 1.0
    leg: Literal["lexical", "vector"] = "lexical"
    name: str = ""


@dataclass
class Legs:
    """One query's candidates: (chunk id, raw score) best first.  vector raw = cosine similarity,
    lexical raw = -FTS5 rank (positive BM25).  With a document-level lexical backend (qmd-documents)
    the lexical ids are file paths.  `extra`: further ranked lists (query expansion) for the fusions that
    read them (qmd-documents); the others ignore them.  `lexical_ranking`: the lexical leg's own score of
    each of its hits when it computes one (OpenClaw 2026.8's boosted keyword score, lexical.RankedHits),
    which the OpenClaw fusions use as the keyword value instead of the mapped BM25; taken from the
    lexical list when it carries one."""

    vector: list[tuple[str, float]] = field(default_factory=list)
    lexical: list[tuple[str, float]] = field(default_factory=list)
    extra: list[RankedList] = field(default_factory=list)
    lexical_ranking: dict[str, float] | None = None
    lexical_tie_order: dict[str, int] | None = None  # the leg's order among equal scores (0 first)

    def __post_init__(self) -> None:
        if self.lexical_ranking is None:
            self.lexical_ranking = getattr(self.lexical, "ranking", None)
        if self.lexical_tie_order is None:
            self.lexical_tie_order = getattr(self.lexical, "tie_order", None)


@runtime_checkable
class Fusion(Protocol):
    """Legs -> hits ranked by (score desc, id); vector_score / text_score hold what each leg added.  A fusion
    over the candidates of the legs also has `fuse_arrays(LegArrays) -> FusedArrays`, its one formula, and
    its call is `fused_hits(self, legs)`; the sweep's fast scorer uses the same method (a fusion without
    one, qmd-documents, is scored through its call)."""

    def __call__(self, legs: Legs) -> list[Hit]: ...

    @property
    def leg_weights(self) -> tuple[float, float]:
        """(vector, text) weights scaled to sum 1: what post-processing reads of the fusion
        (OpenClaw's keyword floor is min(minScore, text weight))."""
        ...


def applied_weights(fusion: Any) -> dict[str, Any] | None:
    """The weights a fusion was configured with and the ones it uses (leg_weights: clamped to [0, 1] and
    scaled to sum 1); `rescaled` when a fusion that scores with leg_weights (OpenClaw's weighted merge,
    wsum: `scales_weights`) does not use the weights as written, e.g. 0.9/0.9 -> 0.5/0.5.  None for a
    fusion without weights."""
    configured = (getattr(fusion, "vector_weight", None), getattr(fusion, "text_weight", None))
    if None in configured or not hasattr(fusion, "leg_weights"):
        return None
    applied = tuple(float(w) for w in fusion.leg_weights)
    scales = bool(getattr(fusion, "scales_weights", False))
    rescaled = scales and any(abs(a - float(c)) > 1e-12 for a, c in zip(applied, configured))
    return {"configured": {"vector_weight": configured[0], "text_weight": configured[1]},
            "applied": {"vector_weight": applied[0], "text_weight": applied[1]},
            "scores_with_applied": scales, "rescaled": rescaled}


def normalised_weights(vector_weight: float, text_weight: float) -> tuple[float, float]:
    """OpenClaw: clamp each weight to [0, 1], then scale so they sum to 1 (0.7/0.3 if both are 0)."""
    vw = min(1.0, max(0.0, float(vector_weight)))
    tw = min(1.0, max(0.0, float(text_weight)))
    total = vw + tw
    if total <= 0:
        return 0.7, 0.3
    return vw / total, tw / total


def ranked_leg(leg: list[tuple[str, float]], leg_name: str = "leg") -> list[tuple[str, float]]:
    """A leg best first by (raw score desc, id); a repeated id keeps its best score.  Raw scores
    must be finite: a NaN would make every comparison after it meaningless."""
    for cid, score in leg:
        if not math.isfinite(score):
            raise ValueError(f"fusion: {leg_name} leg score of chunk {cid!r} is not finite ({score!r})")
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for cid, score in by_score_then_id(leg):
        if cid not in seen:
            seen.add(cid)
            out.append((cid, float(score)))
    return out


def fused_hits(fusion: Any, legs: Legs) -> list[Hit]:
    """A fusion's per-query call through its one formula, `fuse_arrays` (harness.trace.LegArrays -> FusedArrays):
    the query's legs as a one-row array (a repeated id keeps its best score, as ranked_leg reads a leg),
    fused, its hits ranked.  The sweep's fast scorer calls the same `fuse_arrays` on every query at once."""
    arrays: LegArrays = leg_arrays({"": legs}, repeated="best")
    return fusion.fuse_arrays(arrays).hits(arrays)
