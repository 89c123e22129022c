"""Reciprocal rank fusion, plain (Cormack et al. 2009) and as QMD runs it (SPEC.md section 3)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from harness.registry import stage
from harness.stages.fusion.base import (
    FUSIONS,
    Hit,
    Legs,
    merged_hits,
    normalised_weights,
    ranked_leg,
)

QMD_LIST_WEIGHT = 2.0  # QMD: the original query's lexical and vector lists (expansion lists get 1.0)
QMD_FIRST_BONUS = 0.05  # a chunk ranked first in any list
QMD_TOP3_BONUS = 0.02  # otherwise, a best rank of 2 or 3


@FUSIONS.register("rrf")
@stage
class RRFFusion:
    """Reciprocal rank fusion: sum over legs of w / (k + rank), rank 1-based within the leg ordered
    by (raw score desc, id).  Raw scores matter only through that order.

    variant:
      plain  Cormack et al. 2009, k = 60, both weights 1.0 (ranx `rrf`)
      qmd    QMD (tobi/qmd, src/store.ts): list weights 2.0 (offline there is no LLM query
             expansion, so both legs are "original query" lists), plus +0.05 for a chunk first in
             any list, else +0.02 for a best rank of 2 or 3.
    Weights are used as given (not normalised): with `qmd` their size against the fixed bonuses
    matters, so vector_weight = 0.7, text_weight = 0.3 is not the same setting as 1.4 / 0.6.
    vector_score / text_score hold each leg's contribution w / (k + rank); the lists of query
    expansion (Legs.extra, each with its own weight) are summed in as well, their contributions
    counted with the leg they were searched on."""

    accepts_extra_lists = True  # fuses Legs.extra (query expansion) beside the two legs

    k: float = Field(60.0, ge=0, allow_inf_nan=False)
    """the rank constant"""
    variant: Literal["plain", "qmd"] = "plain"
    """"plain" (ranx rrf) or "qmd" (list weights 2.0 and QMD's top-rank bonuses)"""
    vector_weight: float | None = Field(None, ge=0, allow_inf_nan=False)
    """weight of the vector list; default 1.0 (plain) or 2.0 (qmd)"""
    text_weight: float | None = Field(None, ge=0, allow_inf_nan=False)
    """weight of the lexical list; default as vector_weight"""

    def __post_init__(self) -> None:
        default = QMD_LIST_WEIGHT if self.variant == "qmd" else 1.0
        self.w_vector = default if self.vector_weight is None else self.vector_weight
        self.w_text = default if self.text_weight is None else self.text_weight
        self.leg_weights = normalised_weights(self.w_vector, self.w_text)

    def __call__(self, legs: Legs) -> list[Hit]:
        best_rank: dict[str, int] = {}
        contributions: list[dict[str, float]] = [{}, {}]  # summed per leg: vector, lexical
        lists = [(legs.vector, self.w_vector, 0, "vector"), (legs.lexical, self.w_text, 1, "lexical")]
        lists += [(extra.hits, extra.weight, 0 if extra.leg == "vector" else 1, extra.name) for extra in legs.extra]
        for hits, weight, side, name in lists:
            scores = contributions[side]
            for rank, (cid, _raw) in enumerate(ranked_leg(hits, name), start=1):
                scores[cid] = scores.get(cid, 0.0) + weight / (self.k + rank)
                best_rank[cid] = min(rank, best_rank.get(cid, rank))

        def score(cid: str, v: float, t: float) -> float:
            total = v + t
            if self.variant == "qmd":
                if best_rank[cid] == 1:
                    total += QMD_FIRST_BONUS
                elif best_rank[cid] <= 3:
                    total += QMD_TOP3_BONUS
            return total

        return merged_hits(contributions[0], contributions[1], score)
