"""QMD's fusion at document level (tobi/qmd 2.8.3 hybridQuery; harness/conformance/NOTES.md
section 3): every list is a list of files (the vector list keeps each file's best chunk), reciprocal rank
fusion over any number of weighted lists, QMD's top-rank bonuses, ties in QMD's stable order, top 40."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal, Sequence

from pydantic import Field

from harness.ranking import by_score_then_id
from harness.registry import stage
from harness.stages.chunkers.base import document_of
from harness.stages.fusion.base import (
    FUSIONS,
    Hit,
    Legs,
    RankedList,
    normalised_weights,
    rank_hits,
    ranked_leg,
)

QMD_RRF_K = 60.0
QMD_ORIGINAL_WEIGHT = 2.0  # getHybridRrfWeights: the original query's FTS and vector lists
QMD_EXPANSION_WEIGHT = 1.0  # lex / vec / hyde expansion lists
QMD_FIRST_BONUS = 0.05  # best rank 0 in any list
QMD_TOP3_BONUS = 0.02  # else best rank 1 or 2
QMD_LIST_LIMIT = 20  # searchFTS(q, 20), searchVec(q, 20)
QMD_VECTOR_OVERFETCH = 3  # searchVec scans limit x 3 chunks, then keeps each file's best
QMD_CANDIDATE_LIMIT = 40  # RERANK_CANDIDATE_LIMIT


def best_chunk_per_document(hits: Sequence[tuple[str, float]], limit: int | None = None) -> list[tuple[str, str, float]]:
    """QMD's searchVec dedupe: (document, its best chunk, that chunk's raw score), best first (ties by
    document id), the first `limit`.  `hits` are (chunk id, raw score), larger = better."""
    best: dict[str, tuple[str, float]] = {}
    for cid, raw in by_score_then_id(hits):
        best.setdefault(document_of(cid), (cid, raw))
    ranked = by_score_then_id([(doc, raw) for doc, (_, raw) in best.items()])
    out = [(doc, best[doc][0], raw) for doc, raw in ranked]
    return out if limit is None else out[:limit]


@dataclass
class FusedDocument:
    """One document of a fused list: its RRF score (with bonus), best 0-based rank in any list, the order
    in which it was first met (lists in order, each best first) and its contribution from each list."""

    id: str
    score: float
    top_rank: int
    first_seen: int
    contributions: list[float] = field(default_factory=list)


def reciprocal_rank_fusion(lists: Sequence[Sequence[str]], weights: Sequence[float], *, k: float = QMD_RRF_K,
                           first_bonus: float = QMD_FIRST_BONUS, top3_bonus: float = QMD_TOP3_BONUS,
                           ties: Literal["first-seen", "id"] = "first-seen") -> list[FusedDocument]:
    """QMD's reciprocalRankFusion: a document gets sum over lists of weight / (k + rank0 + 1), then
    +first_bonus if its best rank0 is 0, else +top3_bonus if it is 1 or 2; sorted by score.  Ties:
    "first-seen" keeps QMD's stable sort (the order documents were first met), "id" breaks them by id."""
    if len(weights) != len(lists):
        raise ValueError(f"{len(lists)} lists but {len(weights)} weights")
    fused: dict[str, FusedDocument] = {}
    for index, (ids, weight) in enumerate(zip(lists, weights)):
        for rank0, ident in enumerate(ids):
            entry = fused.get(ident)
            if entry is None:
                entry = fused[ident] = FusedDocument(ident, 0.0, rank0, len(fused), [0.0] * len(lists))
            contribution = weight / (k + rank0 + 1)
            entry.contributions[index] += contribution
            entry.score += contribution
            entry.top_rank = min(entry.top_rank, rank0)
    for entry in fused.values():
        entry.score += first_bonus if entry.top_rank == 0 else top3_bonus if entry.top_rank <= 2 else 0.0
    key = (lambda e: (-e.score, e.first_seen)) if ties == "first-seen" else (lambda e: (-e.score, e.id))
    return sorted(fused.values(), key=key)


@FUSIONS.register("qmd-documents")
@stage
class QmdDocumentFusion:
    """QMD's hybrid fusion per document: the lexical leg's files (the first `list_limit`), the vector leg
    reduced to each file's best chunk (of its first list_limit x 3 chunks, the first list_limit files),
    and any extra lists (query expansion, Legs.extra) fused by reciprocal rank with QMD's weights (2.0 for
    the original query's two lists) and bonuses; the first `candidate_limit` files are returned, their ids
    file paths.  List order (what "first seen" means on ties): the lexical list, extra lexical lists, the
    vector list, extra vector lists, as QMD builds them.  vector_score / text_score: the summed
    contributions of vector / lexical lists (bonus excluded).  A lexical leg of chunks is reduced to files
    by each file's best-ranked chunk.  Ties follow QMD's stable sort ("first-seen") unless ties = "id", so
    the returned order may break (score desc, id) on exact ties: `qmd_rerank` (1/rank) follows it."""

    k: float = Field(QMD_RRF_K, ge=0, allow_inf_nan=False)
    """the rank constant"""
    vector_weight: float = Field(QMD_ORIGINAL_WEIGHT, ge=0, allow_inf_nan=False)
    """weight of the original query's vector list"""
    text_weight: float = Field(QMD_ORIGINAL_WEIGHT, ge=0, allow_inf_nan=False)
    """weight of the original query's lexical list"""
    first_bonus: float = Field(QMD_FIRST_BONUS, ge=0, allow_inf_nan=False)
    """added when a file is first in any list"""
    top3_bonus: float = Field(QMD_TOP3_BONUS, ge=0, allow_inf_nan=False)
    """added otherwise when its best rank is 2nd or 3rd"""
    list_limit: int = Field(QMD_LIST_LIMIT, ge=1)
    """files per list (QMD: 20)"""
    vector_overfetch: int = Field(QMD_VECTOR_OVERFETCH, ge=1)
    """chunks read from the vector leg per file kept (QMD: 3; the leg must hold list_limit x this)"""
    candidate_limit: int = Field(QMD_CANDIDATE_LIMIT, ge=1)
    """files returned (QMD's reranking candidates: 40)"""
    ties: Literal["first-seen", "id"] = "first-seen"
    """"first-seen" (QMD's stable sort) or "id\""""

    unit: ClassVar[str] = "document"  # hits are files; the pipeline judges them as the union of their records
    accepts_extra_lists: ClassVar[bool] = True  # fuses Legs.extra (query expansion) as QMD fuses its lists

    def __post_init__(self) -> None:
        self.leg_weights = normalised_weights(self.vector_weight, self.text_weight)

    def document_lists(self, legs: Legs) -> list[RankedList]:
        """Every list as files, in QMD's order, each cut to list_limit."""
        def lexical_files(hits: Sequence[tuple[str, float]], name: str) -> list[tuple[str, float]]:
            seen: dict[str, float] = {}
            for ident, raw in ranked_leg(list(hits), name):
                seen.setdefault(document_of(ident), raw)
            return list(seen.items())[: self.list_limit]

        def vector_files(hits: Sequence[tuple[str, float]], name: str) -> list[tuple[str, float]]:
            window = ranked_leg(list(hits), name)[: self.list_limit * self.vector_overfetch]
            return [(doc, raw) for doc, _, raw in best_chunk_per_document(window, self.list_limit)]

        lexical = [RankedList(lexical_files(legs.lexical, "lexical"), self.text_weight, "lexical")]
        vector = [RankedList(vector_files(legs.vector, "vector"), self.vector_weight, "vector")]
        for extra in legs.extra:
            if extra.leg == "vector":
                vector.append(RankedList(vector_files(extra.hits, "vector"), extra.weight, "vector", extra.name))
            else:
                lexical.append(RankedList(lexical_files(extra.hits, "lexical"), extra.weight, "lexical", extra.name))
        return lexical + vector

    def __call__(self, legs: Legs) -> list[Hit]:
        lists = self.document_lists(legs)
        fused = reciprocal_rank_fusion([[doc for doc, _ in rl.hits] for rl in lists], [rl.weight for rl in lists],
                                       k=self.k, first_bonus=self.first_bonus, top3_bonus=self.top3_bonus,
                                       ties=self.ties)[: self.candidate_limit]
        lexical_lists = [i for i, rl in enumerate(lists) if rl.leg != "vector"]
        hits = []
        for entry in fused:
            text = sum(entry.contributions[i] for i in lexical_lists)
            vector = sum(entry.contributions) - text
            keyword = any(entry.contributions[i] > 0 for i in lexical_lists)
            hits.append(Hit(entry.id, entry.score, vector_score=vector, text_score=text, keyword_hit=keyword))
        return hits if self.ties == "first-seen" else rank_hits(hits)
