"""What retrieval hands to evaluation: hits, the legs of many queries as arrays, and the trace of what
each stage did to one query.

Retrieval (harness.pipeline and harness.stages) produces these records and evaluation (harness.evaluation)
reads them, so neither side imports the other:

    Hit            one returned chunk: its fused score and what each leg added
    LegArrays      the two legs (and any extra lists) of many queries as query x candidate arrays, the input
                   of every fusion's `fuse_arrays` (the one formula of each fusion, which its per-query call
                   uses as well) and of the sweep's fast scorer
    FusedArrays    a fusion's output over those arrays: scores, which candidates it returns, leg scores
    QueryTrace     one query's hits after the fusion and after each post-processing stage (StageResult),
                   with the details a report says about them, from which evaluation.stage_trace tells
                   which stage lost a relevant chunk
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from harness.ranking import by_score_then_id


@dataclass
class Hit:
    id: str
    score: float
    vector_score: float = 0.0
    text_score: float = 0.0
    keyword_hit: bool = False  # found by the lexical leg
    tiebreak: float = 0.0  # breaks equal scores before the id, larger first (OpenClaw's FTS-only text score)


def rank_hits(hits: list[Hit]) -> list[Hit]:
    """The one ordering of hits used everywhere: score descending, then chunk id (after `tiebreak`
    descending, 0 unless a fusion sets it)."""
    return by_score_then_id(hits, score=lambda h: h.score, ident=lambda h: (-h.tiebreak, h.id))


# --- legs as arrays -------------------------------------------------------------------------------------

@dataclass
class ExtraArrays:
    """One extra ranked list of every query (query expansion, Legs.extra) over the candidate columns."""

    name: str
    weight: float
    leg: str  # "lexical" or "vector": the leg it was searched on
    found: np.ndarray  # bool, queries x candidates
    rank: np.ndarray  # 1-based rank within the list by (raw desc, id); 0 where absent


@dataclass
class LegArrays:
    """Both legs of every query over one candidate set per query: row q, its columns the union of the
    query's lists in chunk-id order, padded with slots no list found."""

    query_ids: list[str]
    chunk_ids: list[list[str]]  # per query, its candidates sorted by id (the columns of its row)
    vector: np.ndarray  # queries x candidates: cosine (0 where the vector leg did not find it)
    vector_found: np.ndarray  # bool
    lexical: np.ndarray  # raw BM25, positive (= -FTS5 rank; 0 where not found)
    lexical_found: np.ndarray  # bool
    lexical_ranking: np.ndarray | None = None  # the lexical leg's own score of each hit (Legs.lexical_ranking)
    ranked_rows: np.ndarray | None = None  # per query: its lexical leg carries that ranking
    lexical_tie_order: np.ndarray | None = None  # the leg's order among equal scores (Legs.lexical_tie_order)
    tie_rows: np.ndarray | None = None  # per query: its lexical leg carries a tie order
    extra: list[ExtraArrays] = field(default_factory=list)
    vector_rank: np.ndarray = field(init=False)  # 1-based rank within the leg by (raw desc, id); 0 if absent
    lexical_rank: np.ndarray = field(init=False)
    cache: dict = field(default_factory=dict, init=False, repr=False)  # weight-free arrays of the fusions

    def __post_init__(self) -> None:
        self.vector_rank = leg_ranks(self.vector, self.vector_found)
        self.lexical_rank = leg_ranks(self.lexical, self.lexical_found)

    @property
    def shape(self) -> tuple[int, int]:
        return self.vector.shape

    def derived(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """An array that does not depend on a fusion's weights, computed once for these legs (a sweep fuses
        the same legs with hundreds of weights)."""
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]


def leg_ranks(raw: np.ndarray, found: np.ndarray) -> np.ndarray:
    """1-based rank of each found candidate within its row by (raw desc, column = id order); 0 elsewhere."""
    order = np.argsort(np.where(found, -raw, np.inf), axis=1, kind="stable")  # ties: column (id) order
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, raw.shape[1] + 1)[None, :], axis=1)
    return np.where(found, ranks, 0)


def _leg_map(leg: Sequence[tuple[str, float]], qid: str | None, name: str, repeated: str) -> dict[str, float]:
    """A leg's (id, raw score) pairs -> {id: raw}.  Raw scores must be finite (a NaN would make every
    comparison after it meaningless).  A repeated id is an error (repeated="error", the sweep's arrays) or
    keeps its best score (repeated="best", a stage's own call: harness.stages.fusion.ranked_leg)."""
    out: dict[str, float] = {}
    for cid, raw in leg:
        if not math.isfinite(raw):
            if qid is None:
                raise ValueError(f"fusion: {name} leg score of chunk {cid!r} is not finite ({raw!r})")
            raise ValueError(f"query {qid!r}: {name} leg score of chunk {cid!r} is not finite ({raw!r})")
        if cid in out:
            if repeated == "error":
                raise ValueError(f"query {qid!r}: the {name} leg lists chunk {cid!r} twice")
            if (-float(raw), cid) >= (-out[cid], cid):
                continue
        out[cid] = float(raw)
    return out


def leg_arrays(legs: Mapping[str, Any], query_ids: Sequence[str] | None = None, *,
               repeated: str = "error") -> LegArrays:
    """Legs per query ({query: Legs}, as search_legs returns them) -> arrays.  `repeated`: what a leg that
    lists a chunk twice means, "error" (ValueError naming the query) or "best" (its best score kept, as
    the stages' per-query call reads a leg).  Raw scores must be finite."""
    ids = list(query_ids) if query_ids is not None else list(legs)
    named = None if repeated == "best" else True
    rows = []
    for qid in ids:
        q = qid if named else None
        vector = _leg_map(legs[qid].vector, q, "vector", repeated)
        lexical = _leg_map(legs[qid].lexical, q, "lexical", repeated)
        extra = [_leg_map(e.hits, q, e.name or e.leg, repeated) for e in getattr(legs[qid], "extra", None) or ()]
        columns = set(vector) | set(lexical)
        for e in extra:
            columns |= set(e)
        rows.append((sorted(columns), vector, lexical, extra))
    width = max([len(chunks) for chunks, _, _, _ in rows] + [1])
    shape = (len(ids), width)
    raw = {name: np.zeros(shape) for name in ("vector", "lexical")}
    found = {name: np.zeros(shape, dtype=bool) for name in ("vector", "lexical")}
    ranking, ties = np.zeros(shape), np.zeros(shape)
    ranked, tied = np.zeros(len(ids), dtype=bool), np.zeros(len(ids), dtype=bool)
    extra_lists = [e for e in getattr(legs[ids[0]], "extra", None) or ()] if ids else []
    if any(len(getattr(legs[qid], "extra", None) or ()) != len(extra_lists) for qid in ids):
        raise ValueError("leg arrays: every query must have the same number of extra lists")
    extra_raw = [np.zeros(shape) for _ in extra_lists]
    extra_found = [np.zeros(shape, dtype=bool) for _ in extra_lists]
    for q, (chunks, vector, lexical, extra) in enumerate(rows):
        own = legs[ids[q]].lexical_ranking
        order = getattr(legs[ids[q]], "lexical_tie_order", None)
        ranked[q], tied[q] = own is not None, order is not None
        n = len(chunks)  # a row at a time: one assignment of Python lists, not one per cell
        for name, leg in (("vector", vector), ("lexical", lexical)):
            raw[name][q, :n] = [leg.get(cid, 0.0) for cid in chunks]
            found[name][q, :n] = [cid in leg for cid in chunks]
        if own is not None:
            ranking[q, :n] = [own[cid] if cid in lexical else 0.0 for cid in chunks]
        if order is not None:
            ties[q, :n] = [order[cid] if cid in lexical else 0.0 for cid in chunks]
        for i, e in enumerate(extra):
            extra_raw[i][q, :n] = [e.get(cid, 0.0) for cid in chunks]
            extra_found[i][q, :n] = [cid in e for cid in chunks]
    extras = [ExtraArrays(e.name, float(e.weight), e.leg, extra_found[i], leg_ranks(extra_raw[i], extra_found[i]))
              for i, e in enumerate(extra_lists)]
    return LegArrays(ids, [chunks for chunks, _, _, _ in rows], raw["vector"], found["vector"], raw["lexical"],
                     found["lexical"], ranking if ranked.any() else None, ranked if ranked.any() else None,
                     ties if tied.any() else None, tied if tied.any() else None, extras)


@dataclass
class FusedArrays:
    """A fusion over LegArrays, every array queries x candidates: the fused score, the candidates it returns
    (`present`), those the lexical side found (`keyword`), what each leg added (Hit.vector_score /
    text_score) and, for a fusion that orders equal scores by more than the id, `tiebreak` (Hit.tiebreak)."""

    score: np.ndarray
    present: np.ndarray
    keyword: np.ndarray
    vector_score: np.ndarray
    text_score: np.ndarray
    tiebreak: np.ndarray | None = None

    def hits(self, legs: LegArrays, row: int = 0) -> list[Hit]:
        """The ranked hits of one query (row), as the fusion's per-query call returns them."""
        chunks = legs.chunk_ids[row]
        present, keyword = self.present[row].tolist(), self.keyword[row].tolist()  # Python floats: the same values
        score, vector, text = self.score[row].tolist(), self.vector_score[row].tolist(), self.text_score[row].tolist()
        tiebreak = [0.0] * len(present) if self.tiebreak is None else self.tiebreak[row].tolist()
        return rank_hits([Hit(chunks[c], score[c], vector_score=vector[c], text_score=text[c], keyword_hit=keyword[c],
                              tiebreak=tiebreak[c]) for c in range(len(chunks)) if present[c]])


@lru_cache(maxsize=None)
def elementwise(function: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    """A scalar score map applied to every cell of an array: the same function, so the same floats (libm's
    exp, not numpy's vectorised one, whose last bit may differ)."""
    mapped = np.vectorize(function, otypes=[float])

    def apply(values: np.ndarray) -> np.ndarray:
        return mapped(values) if values.size else np.zeros(values.shape)

    return apply


# --- what each stage did to one query -------------------------------------------------------------------

@dataclass
class StageResult:
    """One post-processing stage's output for a query, in the order it returned it."""

    stage: str  # its registry name ("temporal_decay", "mmr", "min_score", ...)
    hits: list[Hit]
    min_score: float | None = None  # a minScore selection: its threshold (None for any other stage)
    details: dict[str, str] = field(default_factory=dict)  # chunk of its input -> what it did to it (decay: age, factor)


@dataclass
class QueryTrace:
    """One query's retrieval as the pipeline ran it: the searched legs, the fusion's whole ranked list, each
    post-processing stage's output and the returned hits (the first max_results), with what a report says
    about them.  Evaluation scores `hits` and reads the rest to say which stage lost a relevant chunk."""

    query_id: str
    vector: list[tuple[str, float]]  # the vector leg's candidates (id, raw cosine), as searched
    lexical: list[tuple[str, float]]  # the lexical leg's (id, raw BM25)
    fused: list[Hit]  # the fusion's ranked list, before post-processing and the cut
    stages: list[StageResult]
    hits: list[Hit]  # what memory_search returns
    records: list[dict[str, Any]]  # the returned hits with their chunk's path, lines, records and snippet
    max_results: int
    pass_threshold: float  # the score the top hit must reach (the highest minScore of the stages)
    leg_weights: tuple[float, float]  # the fusion's (vector, text) weights scaled to sum 1
    scales_weights: bool  # the fusion's score is vw * vector_score + tw * text_score
    explainable: bool  # every list the fusion read is in `vector` / `lexical` (no query-expansion lists)
    skipped: bool  # an adaptive-retrieval stage skips this query
    timings_ms: dict[str, float] = field(default_factory=dict)  # search, fusion and post-processing
    expansion: dict[str, Any] = field(default_factory=dict)  # what query expansion did
    extra_lists: int = 0  # the expansion lists the fusion read
