"""Reciprocal rank fusion, plain (Cormack et al. 2009) and as QMD runs it (SPEC.md section 3)."""
from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from harness.registry import stage
from harness.stages.fusion.base import (
    FUSIONS,
    Hit,
    Legs,
    fused_hits,
    normalised_weights,
)
from harness.trace import FusedArrays, LegArrays

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
        return fused_hits(self, legs)

    def fuse_arrays(self, legs: LegArrays) -> FusedArrays:
        """Each list's w / (k + rank) summed per side (vector lists, lexical lists) in list order, then
        QMD's bonus on the best rank in any list."""
        k = self.k
        lists = [(legs.vector_found, legs.derived(("k+rank", "vector", k), lambda: k + legs.vector_rank),
                  self.w_vector, 0),
                 (legs.lexical_found, legs.derived(("k+rank", "lexical", k), lambda: k + legs.lexical_rank),
                  self.w_text, 1)]
        lists += [(e.found, k + e.rank, e.weight, 0 if e.leg == "vector" else 1) for e in legs.extra]
        sides = [np.zeros(legs.shape), np.zeros(legs.shape)]
        found = [np.zeros(legs.shape, dtype=bool), np.zeros(legs.shape, dtype=bool)]
        for in_list, k_rank, weight, side in lists:
            with np.errstate(divide="ignore", invalid="ignore"):  # k = 0: the absent cells' rank 0, masked
                sides[side] = sides[side] + np.where(in_list, weight / k_rank, 0.0)
            found[side] = found[side] | in_list
        total = sides[0] + sides[1]
        if self.variant == "qmd":
            total = total + (legs.derived(("qmd-bonus",), lambda: qmd_bonus(legs)) if not legs.extra
                             else qmd_bonus(legs))
        return FusedArrays(total, found[0] | found[1], found[1], sides[0], sides[1])


def qmd_bonus(legs: LegArrays) -> np.ndarray:
    """QMD's top-rank bonus of each candidate: +0.05 when it is first in any list, else +0.02 when its
    best rank is 2 or 3."""
    never = np.iinfo(np.int64).max
    best = np.full(legs.shape, never)
    for in_list, rank in [(legs.vector_found, legs.vector_rank), (legs.lexical_found, legs.lexical_rank),
                          *((e.found, e.rank) for e in legs.extra)]:
        best = np.minimum(best, np.where(in_list, rank, never))
    return np.where(best == 1, QMD_FIRST_BONUS, np.where(best <= 3, QMD_TOP3_BONUS, 0.0))
