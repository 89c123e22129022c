"""Fusion: the two legs' candidate lists -> one ranked list.  Each method maps raw leg scores the
way its system does (see SPEC.md sections 2-4).

Every fusion is a callable Legs -> list[Hit], ranked by (score desc, id), with vector_score and
text_score holding the per-leg scores that went into the sum (0.0 when that leg did not find the
chunk) and keyword_hit telling whether the lexical leg found it.  Each also exposes `vw`, `tw`: its
leg weights normalised to sum 1, which post-processing reads (OpenClaw's keyword fallback floor).

    name            leg scores                                  fused score
    weighted        cosine ; OpenClaw bm25RankToScore           vw*v + tw*t   (OpenClaw)
    wsum            min-max or z-score per query and leg        vw*v + tw*t   (generic, = ranx wsum)
    rrf  plain      rank r (1-based) in each leg                sum w/(k + r), k = 60
    rrf  qmd        as plain, list weights 2.0                  + 0.05 if first anywhere, else
                                                                + 0.02 if best rank is 2 or 3 (QMD)
    multiplicative  cosine ; sigmoid(raw/5)                     v * 1.15 if BM25 hit, else v; BM25-only
                                                                -> b  (memory-lancedb-pro per seed 004)
    lancedb-pro     1/(1+d), d = 1-cos ; sigmoid(raw/5)         max(0.7v+0.3b, 0.92b if b >= 0.75);
                                                                BM25-only -> b; drop < 0.3 (its code
                                                                since 2026-03-12)
    combsum         min-max or z-score                          v + t
    combmnz         min-max or z-score                          (v + t) x number of legs that found it

A leg is read best first by (raw score desc, id) whatever order it arrives in, so every method is
invariant to the order of its input lists and rank-based methods break ties the same way everywhere.
QMD's "1/rank when there is no reranker" is not a fusion: it is the post-processing stage
`reciprocal_rank` (see postprocess.py for why).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from harness.registry import Registry
from harness.stages.lexical import RANK_TO_SCORE

FUSIONS = Registry("fusion", builtins="harness.stages.fusion")


@dataclass
class Legs:
    """One query's candidates: (chunk id, raw score) best first.  vector raw = cosine similarity,
    lexical raw = -FTS5 rank (positive BM25)."""

    vector: list[tuple[str, float]] = field(default_factory=list)
    lexical: list[tuple[str, float]] = field(default_factory=list)


@dataclass
class Hit:
    id: str
    score: float
    vector_score: float = 0.0
    text_score: float = 0.0
    keyword_hit: bool = False  # found by the lexical leg


def rank_hits(hits: list[Hit]) -> list[Hit]:
    """The one ordering used everywhere: score descending, then chunk id."""
    return sorted(hits, key=lambda h: (-h.score, h.id))


def normalised_weights(vector_weight: float, text_weight: float) -> tuple[float, float]:
    """OpenClaw: clamp each weight to [0, 1], then scale so they sum to 1 (0.7/0.3 if both are 0)."""
    vw = min(1.0, max(0.0, float(vector_weight)))
    tw = min(1.0, max(0.0, float(text_weight)))
    total = vw + tw
    if total <= 0:
        return 0.7, 0.3
    return vw / total, tw / total


@dataclass
class WeightedFusion:
    """OpenClaw's merge: union by chunk id, missing side scores 0, score = vw*vector + tw*text."""

    vector_weight: float = 0.7
    text_weight: float = 0.3
    bm25_to_score: str = "current"  # "current" (since 2026-03-07) or "legacy" (every hit 1.0)

    def __post_init__(self) -> None:
        if self.bm25_to_score not in RANK_TO_SCORE:
            raise ValueError(f"fusion.bm25_to_score must be one of {sorted(RANK_TO_SCORE)}")
        self.vw, self.tw = normalised_weights(self.vector_weight, self.text_weight)
        self._text_score: Callable[[float], float] = RANK_TO_SCORE[self.bm25_to_score]

    def __call__(self, legs: Legs) -> list[Hit]:
        merged: dict[str, Hit] = {}
        for cid, cosine in legs.vector:
            merged[cid] = Hit(cid, 0.0, vector_score=cosine)
        for cid, bm25 in legs.lexical:
            hit = merged.setdefault(cid, Hit(cid, 0.0))
            hit.text_score = self._text_score(-bm25)  # back to FTS5's rank sign convention
            hit.keyword_hit = True
        for hit in merged.values():
            hit.score = self.vw * hit.vector_score + self.tw * hit.text_score
        return rank_hits(list(merged.values()))


@FUSIONS.register("weighted")
def _weighted(vector_weight: float = 0.7, text_weight: float = 0.3, bm25_to_score: str = "current") -> WeightedFusion:
    return WeightedFusion(vector_weight, text_weight, bm25_to_score)


# --- shared helpers ---------------------------------------------------------------------------------

def ranked_leg(leg: list[tuple[str, float]], leg_name: str = "leg") -> list[tuple[str, float]]:
    """A leg best first by (raw score desc, id); a repeated id keeps its best score.  Raw scores
    must be finite: a NaN would make every comparison after it meaningless."""
    for cid, score in leg:
        if not math.isfinite(score):
            raise ValueError(f"fusion: {leg_name} leg score of chunk {cid!r} is not finite ({score!r})")
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for cid, score in sorted(leg, key=lambda item: (-item[1], item[0])):
        if cid not in seen:
            seen.add(cid)
            out.append((cid, float(score)))
    return out


def _weight(value: float, name: str) -> float:
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"fusion.{name} must be a finite number >= 0, got {value!r}")
    return value


MIN_MAX_FLOOR = 1e-9  # ranx's denominator floor, so a spread of 1e-12 is not blown up to [0, 1]


def min_max(scores: dict[str, float]) -> dict[str, float]:
    """(s - min) / (max - min) per query and leg, as ranx does (its denominator floor 1e-9 included).
    One deliberate difference: when every score in the leg is equal (always so for a single hit),
    ranx maps them all to 0, i.e. as if the leg had found nothing; here they all map to 1.0, because
    each of them is that leg's best hit.  A lone BM25 match (the typical exact-keyword case) would
    otherwise add nothing."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi == lo:
        return dict.fromkeys(scores, 1.0)
    span = max(hi - lo, MIN_MAX_FLOOR)
    return {cid: (s - lo) / span for cid, s in scores.items()}


def z_score(scores: dict[str, float]) -> dict[str, float]:
    """(s - mean) / population stdev per query and leg, as ranx's zmuv (stdev floor 1e-9); a chunk
    the leg did not return counts 0 (the leg's mean).  Below-mean hits are negative, so raising a
    leg's weight can push its own weak hits down: z-score fusion does not have the monotonicity
    the other methods have (tests/test_fusion.py shows a case)."""
    if not scores:
        return {}
    n = len(scores)
    mean = sum(scores.values()) / n
    stdev = math.sqrt(sum((s - mean) ** 2 for s in scores.values()) / n)
    denominator = max(stdev, MIN_MAX_FLOOR)
    return {cid: (s - mean) / denominator for cid, s in scores.items()}


NORMALISATIONS: dict[str, Callable[[dict[str, float]], dict[str, float]]] = {
    "min-max": min_max,
    "zscore": z_score,
}


def _normaliser(norm: str) -> Callable[[dict[str, float]], dict[str, float]]:
    try:
        return NORMALISATIONS[norm]
    except KeyError:
        raise ValueError(f"fusion.norm must be one of {sorted(NORMALISATIONS)}, got {norm!r}") from None


def _hits(vector: dict[str, float], text: dict[str, float], score: Callable[[str, float, float], float]) -> list[Hit]:
    hits = []
    for cid in vector.keys() | text.keys():
        v, t = vector.get(cid, 0.0), text.get(cid, 0.0)
        hits.append(Hit(cid, score(cid, v, t), vector_score=v, text_score=t, keyword_hit=cid in text))
    return rank_hits(hits)


def sigmoid_bm25(raw: float) -> float:
    """memory-lancedb-pro's store: LanceDB's raw BM25 -> 1/(1 + exp(-raw/5)) when raw > 0, else 0.5."""
    return 1.0 / (1.0 + math.exp(-raw / 5.0)) if raw > 0 else 0.5


def inverse_distance(cosine: float) -> float:
    """memory-lancedb-pro's store: 1/(1 + d) with d = 1 - cosine (LanceDB cosine distance), 1/3..1."""
    return 1.0 / (1.0 + (1.0 - cosine))


def clamp01(value: float) -> float:
    return min(1.0, max(0.0, value))


# --- generic score fusions --------------------------------------------------------------------------

@dataclass
class WeightedSumFusion:
    """Generic weighted sum of per-query normalised leg scores (ranx `wsum` with norm "min-max" or
    "zmuv"): a chunk missing from a leg gets 0 from it.  Weights are clamped and normalised to sum 1
    as OpenClaw's are, so a sweep over vectorWeight means the same thing for `weighted` and `wsum`."""

    vector_weight: float = 0.7
    text_weight: float = 0.3
    norm: str = "min-max"

    def __post_init__(self) -> None:
        self._normalise = _normaliser(self.norm)
        self.vw, self.tw = normalised_weights(self.vector_weight, self.text_weight)

    def __call__(self, legs: Legs) -> list[Hit]:
        vector = self._normalise(dict(ranked_leg(legs.vector, "vector")))
        text = self._normalise(dict(ranked_leg(legs.lexical, "lexical")))
        return _hits(vector, text, lambda _cid, v, t: self.vw * v + self.tw * t)


@FUSIONS.register("wsum")
def _wsum(vector_weight: float = 0.7, text_weight: float = 0.3, norm: str = "min-max") -> WeightedSumFusion:
    return WeightedSumFusion(vector_weight, text_weight, norm)


@dataclass
class CombFusion:
    """CombSUM (sum of normalised leg scores) and CombMNZ (that sum times the number of legs that
    returned the chunk), Fox & Shaw 1994; same normalisations as wsum, legs unweighted."""

    mnz: bool = False
    norm: str = "min-max"

    def __post_init__(self) -> None:
        self._normalise = _normaliser(self.norm)
        self.vw, self.tw = 0.5, 0.5

    def __call__(self, legs: Legs) -> list[Hit]:
        vector = self._normalise(dict(ranked_leg(legs.vector, "vector")))
        text = self._normalise(dict(ranked_leg(legs.lexical, "lexical")))

        def score(cid: str, v: float, t: float) -> float:
            if not self.mnz:
                return v + t
            return (v + t) * ((cid in vector) + (cid in text))

        return _hits(vector, text, score)


@FUSIONS.register("combsum")
def _combsum(norm: str = "min-max") -> CombFusion:
    return CombFusion(mnz=False, norm=norm)


@FUSIONS.register("combmnz")
def _combmnz(norm: str = "min-max") -> CombFusion:
    return CombFusion(mnz=True, norm=norm)


# --- rank fusion ------------------------------------------------------------------------------------

RRF_VARIANTS = ("plain", "qmd")
QMD_LIST_WEIGHT = 2.0  # QMD: the original query's lexical and vector lists (expansion lists get 1.0)
QMD_FIRST_BONUS = 0.05  # a chunk ranked first in any list
QMD_TOP3_BONUS = 0.02  # otherwise, a best rank of 2 or 3


@dataclass
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
    vector_score / text_score hold each leg's contribution w / (k + rank)."""

    k: float = 60.0
    variant: str = "plain"
    vector_weight: float | None = None  # None -> 1.0 (plain) or 2.0 (qmd)
    text_weight: float | None = None

    def __post_init__(self) -> None:
        if self.variant not in RRF_VARIANTS:
            raise ValueError(f"fusion.variant must be one of {RRF_VARIANTS}, got {self.variant!r}")
        self.k = float(self.k)
        if not math.isfinite(self.k) or self.k < 0:
            raise ValueError(f"fusion.k must be a finite number >= 0, got {self.k!r}")
        default = QMD_LIST_WEIGHT if self.variant == "qmd" else 1.0
        self.w_vector = _weight(default if self.vector_weight is None else self.vector_weight, "vector_weight")
        self.w_text = _weight(default if self.text_weight is None else self.text_weight, "text_weight")
        self.vw, self.tw = normalised_weights(self.w_vector, self.w_text)

    def __call__(self, legs: Legs) -> list[Hit]:
        vector = ranked_leg(legs.vector, "vector")
        text = ranked_leg(legs.lexical, "lexical")
        best_rank: dict[str, int] = {}
        contributions = []
        for leg, weight in ((vector, self.w_vector), (text, self.w_text)):
            scores = {}
            for rank, (cid, _raw) in enumerate(leg, start=1):
                scores[cid] = weight / (self.k + rank)
                best_rank[cid] = min(rank, best_rank.get(cid, rank))
            contributions.append(scores)

        def score(cid: str, v: float, t: float) -> float:
            total = v + t
            if self.variant == "qmd":
                if best_rank[cid] == 1:
                    total += QMD_FIRST_BONUS
                elif best_rank[cid] <= 3:
                    total += QMD_TOP3_BONUS
            return total

        return _hits(contributions[0], contributions[1], score)


@FUSIONS.register("rrf")
def _rrf(k: float = 60.0, variant: str = "plain", vector_weight: float | None = None,
         text_weight: float | None = None) -> RRFFusion:
    return RRFFusion(k, variant, vector_weight, text_weight)


# --- memory-lancedb-pro, two readings side by side --------------------------------------------------

@dataclass
class MultiplicativeFusion:
    """memory-lancedb-pro as seed 004 describes it (its retriever.ts before 2026-03-12, issue #130):

        fused = v + 0.15 v   when the chunk is also a BM25 hit, else v;   BM25-only hit -> b

    v is the cosine similarity (the seed: "LanceDB ANN cosine similarity"); `vector_to_score =
    "inverse_distance"` uses the store's 1/(1+d) instead, which isolates the change of formula from
    the change of vector scale when comparing with `lancedb-pro`.  Not clamped: the seed's formula
    lets a boosted score pass 1.0.

    BM25 normalisation: b = sigmoid(raw/5) for raw > 0 else 0.5, the mapping memory-lancedb-pro's
    store applies to LanceDB's raw BM25 before the retriever sees it; the seed's "keeps its BM25
    score" is that store score.  LanceDB's BM25, like FTS5's bm25(), uses k1 = 1.2, b = 0.75, so the
    raw FTS5 score is a fair stand-in, and both lancedb fusions then differ only in their formula.

    The seed notes that the config's vectorWeight / bm25Weight (0.7 / 0.3) are not used by this
    formula: they are accepted here and ignored, so a weight sweep shows a flat line, which is the
    finding.  Compare `lancedb-pro` (LanceDBProFusion), the code since 2026-03-12."""

    vector_weight: float = 0.7  # accepted, unused (see above)
    text_weight: float = 0.3
    boost: float = 0.15
    vector_to_score: str = "cosine"  # "cosine" (seed) or "inverse_distance" (the store's 1/(1+d))

    def __post_init__(self) -> None:
        if self.vector_to_score not in ("cosine", "inverse_distance"):
            raise ValueError("fusion.vector_to_score must be 'cosine' or 'inverse_distance', "
                             f"got {self.vector_to_score!r}")
        self.boost = _weight(self.boost, "boost")
        self.vw, self.tw = normalised_weights(self.vector_weight, self.text_weight)
        self._vector_score: Callable[[float], float] = (
            (lambda c: c) if self.vector_to_score == "cosine" else inverse_distance)

    def __call__(self, legs: Legs) -> list[Hit]:
        vector = {cid: self._vector_score(c) for cid, c in ranked_leg(legs.vector, "vector")}
        text = {cid: sigmoid_bm25(raw) for cid, raw in ranked_leg(legs.lexical, "lexical")}

        def score(cid: str, v: float, b: float) -> float:
            if cid not in vector:
                return b
            return v + self.boost * v if cid in text else v

        return _hits(vector, text, score)


@FUSIONS.register("multiplicative")
def _multiplicative(vector_weight: float = 0.7, text_weight: float = 0.3, boost: float = 0.15,
                    vector_to_score: str = "cosine") -> MultiplicativeFusion:
    return MultiplicativeFusion(vector_weight, text_weight, boost, vector_to_score)


LANCEDB_STRONG_BM25 = 0.75  # b at or above this keeps 0.92 b even when the vector score is weak
LANCEDB_STRONG_BM25_FACTOR = 0.92


@dataclass
class LanceDBProFusion:
    """memory-lancedb-pro as its code does since 2026-03-12 (src/retriever.ts fuseResults; the
    0.15 boost removed, issue #130):

        v = 1/(1 + d), d = 1 - cosine               (store.vectorSearch; range 1/3..1)
        b = sigmoid(raw/5) if raw > 0 else 0.5       (store.bm25Search; 0 if not a BM25 hit)
        vector hit:    fused = clamp01(max(vw v + tw b, 0.92 b if b >= 0.75 else 0))
        BM25-only hit: fused = clamp01(b)
        then drop fused < min_score (config minScore 0.3)

    vw, tw are the config's vectorWeight / bm25Weight used as given (default 0.7 / 0.3), as the code
    does.  Compare `multiplicative` (MultiplicativeFusion), the seed's description of the older
    code.  The reranker, recency, length, hard-minimum, decay and diversity steps that follow are
    post-processing stages (postprocess.py)."""

    vector_weight: float = 0.7
    text_weight: float = 0.3
    min_score: float = 0.3

    def __post_init__(self) -> None:
        self.w_vector = _weight(self.vector_weight, "vector_weight")
        self.w_text = _weight(self.text_weight, "text_weight")
        self.vw, self.tw = normalised_weights(self.w_vector, self.w_text)
        if not math.isfinite(float(self.min_score)):
            raise ValueError(f"fusion.min_score must be finite, got {self.min_score!r}")

    def __call__(self, legs: Legs) -> list[Hit]:
        vector = {cid: inverse_distance(c) for cid, c in ranked_leg(legs.vector, "vector")}
        text = {cid: sigmoid_bm25(raw) for cid, raw in ranked_leg(legs.lexical, "lexical")}

        def score(cid: str, v: float, b: float) -> float:
            if cid not in vector:
                return clamp01(b)
            strong = LANCEDB_STRONG_BM25_FACTOR * b if b >= LANCEDB_STRONG_BM25 else 0.0
            return clamp01(max(self.w_vector * v + self.w_text * b, strong))

        return [h for h in _hits(vector, text, score) if h.score >= self.min_score]


@FUSIONS.register("lancedb-pro")
def _lancedb_pro(vector_weight: float = 0.7, text_weight: float = 0.3, min_score: float = 0.3) -> LanceDBProFusion:
    return LanceDBProFusion(vector_weight, text_weight, min_score)


@dataclass
class SingleLeg:
    """One leg alone, for ablations: `lexical-only` (BM25 mapped as in OpenClaw) or `vector-only` (cosine)."""

    leg: str
    bm25_to_score: str = "current"

    def __post_init__(self) -> None:
        if self.bm25_to_score not in RANK_TO_SCORE:
            raise ValueError(f"fusion.bm25_to_score must be one of {sorted(RANK_TO_SCORE)}")
        # the weights post-processing sees (e.g. the relaxed keyword floor): all on the one leg
        self.vw, self.tw = (1.0, 0.0) if self.leg == "vector" else (0.0, 1.0)

    def __call__(self, legs: Legs) -> list[Hit]:
        if self.leg == "vector":
            return rank_hits([Hit(cid, cos, vector_score=cos) for cid, cos in legs.vector])
        to_score = RANK_TO_SCORE[self.bm25_to_score]
        return rank_hits([Hit(cid, to_score(-raw), text_score=to_score(-raw), keyword_hit=True)
                          for cid, raw in legs.lexical])


@FUSIONS.register("lexical-only")
def _lexical_only(bm25_to_score: str = "current") -> SingleLeg:
    return SingleLeg("lexical", bm25_to_score)


@FUSIONS.register("vector-only")
def _vector_only() -> SingleLeg:
    return SingleLeg("vector")
