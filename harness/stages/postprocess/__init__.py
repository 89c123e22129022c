"""Post-processing stages: a fused ranked list -> what the agent's memory_search returns.
Stages run in the order a preset lists them; each is (hits, context) -> hits and never mutates
the hits it is given (a sweep reuses one fused list under many stage settings).

    stage              system               what it does
    min_score          OpenClaw             minScore + maxResults, relaxed / fill keyword fallback
    mmr                OpenClaw             Jaccard MMR, lambda 0.7, over snippet tokens (cjk / ascii)
    temporal_decay     OpenClaw             x exp(-ln2 age/30 d), age from memory/YYYY-MM-DD.md
    reciprocal_rank    QMD                  score = 1/rank (QMD's blend with no reranker)
    cosine_rerank      memory-lancedb-pro   top 2 x limit, 0.7 fused + 0.3 cosine(query, chunk)
    recency_boost      memory-lancedb-pro   + 0.1 exp(-age/14 d), capped at 1
    importance_weight  memory-lancedb-pro   x (0.7 + 0.3 importance), importance 0.7 by default
    length_norm        memory-lancedb-pro   x 1/(1 + 0.5 log2(max(chars/500, 1)))
    hard_min_score     memory-lancedb-pro   drop score < 0.35 (no truncation)
    time_decay         memory-lancedb-pro   x (0.5 + 0.5 exp(-age/60 d))
    cosine_diversity   memory-lancedb-pro   cosine > 0.85 to an already kept chunk -> moved to the end

Score-changing stages re-rank by (score desc, id).  `mmr` and `cosine_diversity` instead return
their own order with scores unchanged, so they must come after every stage that re-ranks.
`min_score` keeps the order it is given, so OpenClaw's order "MMR, then filter by minScore and cut
to maxResults" is `mmr` followed by `min_score`.

memory-lancedb-pro order in its hybrid path (retriever.ts, no decay engine): fusion (drops < 0.3),
cosine_rerank, recency_boost, importance_weight, length_norm, hard_min_score, time_decay,
(noise filter, not offered), cosine_diversity, cut to limit.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import date, datetime, timezone
from functools import lru_cache
from typing import Any, Callable, Optional, Sequence

import numpy as np

from harness.registry import Registry
from harness.stages.fusion import Hit, rank_hits

POSTPROCESSORS = Registry("postprocess stage", table="postprocess", group="harness.postprocess", builtins="harness.stages.postprocess")

DAY_SECONDS = 86_400.0


def as_utc_datetime(value: Any, what: str = "now") -> datetime:
    """A date, datetime or ISO-8601 string -> an aware UTC datetime (a date is its UTC midnight; a
    naive date-time is taken as UTC)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{what} must be an ISO-8601 date or date-time, got {value!r}") from None
    if isinstance(value, datetime):
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    raise ValueError(f"{what} must be an ISO-8601 date or date-time, got {value!r}")


@dataclass
class SearchContext:
    """What a stage may know about the query besides the hits.  The first four fields are the
    original positional constructor; the rest are optional lookups the pipeline fills in:

      chunk_text(id)   -> the chunk's text (MMR snippets, length normalisation)
      chunk_path(id)   -> the chunk's file path, relative to the memory root (dates for decay)
      chunk_vector(id) -> the chunk's embedding, or None (diversity, cosine rerank)
      query_vector     the query's embedding (cosine rerank)
      now              the reference time for ages; a date, datetime or ISO string.  Never the
                       wall clock, so that results are reproducible.
    """

    query: str
    max_results: int
    vector_weight: float
    text_weight: float
    chunk_text: Optional[Callable[[str], str]] = None
    chunk_path: Optional[Callable[[str], str]] = None
    chunk_vector: Optional[Callable[[str], Optional[Sequence[float]]]] = None
    query_vector: Optional[Sequence[float]] = None
    now: Any = None

    def __post_init__(self) -> None:
        if self.now is not None:
            self.now = as_utc_datetime(self.now, "SearchContext.now")

    def need(self, attribute: str, stage: str) -> Any:
        value = getattr(self, attribute)
        if value is None:
            raise ValueError(f"postprocess stage {stage!r} needs SearchContext.{attribute}, which this "
                             "pipeline did not provide")
        return value


def _reference_time(stage_now: Any, ctx: SearchContext, stage: str) -> datetime:
    """A stage's own `now` parameter wins over the context's; one of them must be set."""
    if stage_now is not None:
        return as_utc_datetime(stage_now, f"{stage}.now")
    return ctx.need("now", stage)


KEYWORD_FALLBACKS = ("relaxed", "fill", "none")


@dataclass
class MinScore:
    """OpenClaw's minScore + maxResults.

    keyword_fallback:
      relaxed  (2026-02..07) if nothing clears min_score but the lexical leg found something, keep the
               keyword hits scoring >= min(min_score, text_weight) (a keyword-only hit scores at most tw)
      fill     (newer) keyword-only hits fill spare slots below min_score without displacing others
      none     plain threshold
    """

    min_score: float = 0.35
    keyword_fallback: str = "relaxed"

    def __post_init__(self) -> None:
        if self.keyword_fallback not in KEYWORD_FALLBACKS:
            raise ValueError(f"keyword_fallback must be one of {KEYWORD_FALLBACKS}")

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        passing = [h for h in hits if h.score >= self.min_score]
        if self.keyword_fallback == "relaxed" and not passing:
            floor = min(self.min_score, ctx.text_weight)
            passing = [h for h in hits if h.keyword_hit and h.score >= floor]
        elif self.keyword_fallback == "fill" and len(passing) < ctx.max_results:
            chosen = {h.id for h in passing}
            passing += [h for h in hits if h.keyword_hit and h.id not in chosen][: ctx.max_results - len(passing)]
        # no re-sort: a stage before this one (MMR) may have chosen the order, as in OpenClaw
        return passing[: ctx.max_results]


@POSTPROCESSORS.register("min_score")
def _min_score(min_score: float = 0.35, keyword_fallback: str = "relaxed") -> MinScore:
    return MinScore(min_score, keyword_fallback)


# --- OpenClaw: MMR ----------------------------------------------------------------------------------

_ASCII_WORD = re.compile(r"[a-z0-9_]+")
# OpenClaw's MMR tokenizer: kana, CJK Extension A + Unified Ideographs, Hangul syllables and jamo
_MMR_CJK_RUN = re.compile(r"[\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u1100-\u11ff]+")


# Token sets depend on the snippet text only; a sweep asks for the same snippets again and again.
# Bounded: a 700-character Chinese snippet makes ~1,000 tokens.
@lru_cache(maxsize=2048)
def ascii_tokens(text: str) -> frozenset[str]:
    """OpenClaw's older MMR tokens: lower-cased [a-z0-9_]+ runs only.  A pure-Chinese snippet has
    no tokens at all."""
    return frozenset(_ASCII_WORD.findall(text.lower()))


@lru_cache(maxsize=2048)
def cjk_tokens(text: str) -> frozenset[str]:
    """OpenClaw's newer MMR tokens: [a-z0-9_]+ words, every CJK character, and every pair of CJK
    characters adjacent in the text ("我喜欢hello你好" yields no "欢你")."""
    lower = text.lower()
    tokens = set(_ASCII_WORD.findall(lower))
    for run in _MMR_CJK_RUN.findall(lower):
        tokens.update(run)
        tokens.update(map(str.__add__, run, run[1:]))
    return frozenset(tokens)


MMR_TOKENIZERS: dict[str, Callable[[str], frozenset[str]]] = {"cjk": cjk_tokens, "ascii": ascii_tokens}


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """OpenClaw's Jaccard: two empty sets are identical (1.0), one empty set shares nothing (0.0).
    With ASCII tokens the first rule makes any two pure-Chinese snippets count as duplicates."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


@lru_cache(maxsize=100_000)
def _cached_similarity(tokens: str, a: str, b: str) -> float:
    tokenize = MMR_TOKENIZERS[tokens]
    return jaccard(tokenize(a), tokenize(b))


def snippet_similarity(tokens: str, a: str, b: str) -> float:
    """Jaccard of two snippets' token sets, memoised: a sweep re-runs MMR over the same candidates
    many times, and intersecting two ~500-token sets costs more than everything else in MMR."""
    if hash(a) > hash(b):  # symmetric: one cache entry per pair
        a, b = b, a
    return _cached_similarity(tokens, a, b)


SNIPPET_CHARS = 700  # OpenClaw's snippet: the first 700 characters of the chunk


@dataclass
class MMR:
    """OpenClaw's MMR re-ranking (Carbonell & Goldstein 1998) over all fused candidates.

    Relevance is the score min-max normalised over the list (all equal -> 1); similarity is the
    Jaccard of snippet token sets.  Repeatedly pick the candidate with the largest
    lambda * relevance - (1 - lambda) * max similarity to those already picked; an exact tie goes to
    the higher original score, then to the earlier candidate (the input order, i.e. (score desc, id)).
    Scores are unchanged; only the order changes.

    tokens:
      cjk    (newer) ASCII words + CJK unigrams + adjacent CJK bigrams
      ascii  (older) [a-z0-9_] words only, which reproduces its CJK bug: two pure-Chinese snippets
             both have empty token sets, Jaccard 1, and so are treated as duplicates of each other.
    """

    lambda_: float = 0.7
    tokens: str = "cjk"
    snippet_chars: int = SNIPPET_CHARS

    def __post_init__(self) -> None:
        if self.tokens not in MMR_TOKENIZERS:
            raise ValueError(f"mmr.tokens must be one of {sorted(MMR_TOKENIZERS)}, got {self.tokens!r}")
        lam = float(self.lambda_)
        if not math.isfinite(lam):
            raise ValueError(f"mmr.lambda must be a number in [0, 1], got {self.lambda_!r}")
        self.lambda_ = min(1.0, max(0.0, lam))  # OpenClaw clamps lambda
        if int(self.snippet_chars) <= 0:
            raise ValueError(f"mmr.snippet_chars must be > 0, got {self.snippet_chars!r}")

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if len(hits) <= 1:
            return list(hits)
        if self.lambda_ == 1.0:
            return rank_hits(hits)
        chunk_text = ctx.need("chunk_text", "mmr")
        snippets = [chunk_text(h.id)[: self.snippet_chars] for h in hits]
        lo = min(h.score for h in hits)
        span = max(h.score for h in hits) - lo
        relevance = [1.0 if span == 0 else (h.score - lo) / span for h in hits]

        remaining = list(range(len(hits)))  # input order is the final tie-break
        max_similarity = [0.0] * len(hits)
        order: list[int] = []
        while remaining:
            best, best_value = -1, -math.inf
            for i in remaining:
                value = self.lambda_ * relevance[i] - (1 - self.lambda_) * max_similarity[i]
                if value > best_value or (value == best_value and hits[i].score > hits[best].score):
                    best, best_value = i, value
            order.append(best)
            remaining.remove(best)
            for i in remaining:  # the max similarity to the picked set only grows by the new pick
                similarity = snippet_similarity(self.tokens, snippets[i], snippets[best])
                if similarity > max_similarity[i]:
                    max_similarity[i] = similarity
        return [hits[i] for i in order]


@POSTPROCESSORS.register("mmr")
def _mmr(tokens: str = "cjk", snippet_chars: int = SNIPPET_CHARS, **params: Any) -> MMR:
    lam = params.pop("lambda", 0.7)  # OpenClaw's key is `lambda`, a Python keyword
    if params:
        raise TypeError(f"unexpected parameter(s) {', '.join(sorted(params))}")
    return MMR(lam, tokens, snippet_chars)


# --- OpenClaw: temporal decay -----------------------------------------------------------------------

_DATED_MEMORY_PATH = re.compile(r"(?:^|/)memory/(?:[^/]+/)*(\d{4})-(\d{2})-(\d{2})\.md$")


@lru_cache(maxsize=65_536)
def memory_date(path: str) -> datetime | None:
    """OpenClaw's dated memory file: memory/YYYY-MM-DD.md (sub-folders allowed, e.g.
    memory/2026-02/2026-02-15.md) -> that day's UTC midnight; anything else, or an impossible date
    such as 2026-02-30, -> None."""
    normalised = path.replace("\\", "/")
    if normalised.startswith("./"):
        normalised = normalised[2:]
    match = _DATED_MEMORY_PATH.search(normalised)
    if not match:
        return None
    try:
        return datetime(int(match[1]), int(match[2]), int(match[3]), tzinfo=timezone.utc)
    except ValueError:
        return None


def age_days(path: str, now: datetime) -> float | None:
    """Days from the file's date to `now` (never negative), or None for an undated file."""
    stamp = memory_date(path)
    if stamp is None:
        return None
    return max(0.0, (now - stamp).total_seconds() / DAY_SECONDS)


def _half_life(value: float, stage: str) -> float:
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{stage}.half_life_days must be a finite number >= 0, got {value!r}")
    return value


@dataclass
class TemporalDecay:
    """OpenClaw's temporal decay: score x exp(-ln2 x age_days / half_life_days), half-life 30 days,
    age from a memory/YYYY-MM-DD.md file name.  MEMORY.md, memory.md and undated files under
    memory/ are evergreen and never decay.  (OpenClaw falls back to the file's mtime for other
    files; rendered layouts have no meaningful mtime, so here every undated file is evergreen.)
    half_life_days <= 0 turns the decay off, as in OpenClaw."""

    half_life_days: float = 30.0
    now: Any = None  # overrides SearchContext.now

    def __post_init__(self) -> None:
        self.half_life_days = _half_life(self.half_life_days, "temporal_decay")
        if self.now is not None:
            self.now = as_utc_datetime(self.now, "temporal_decay.now")

    def multiplier(self, age: float | None) -> float:
        if age is None or self.half_life_days <= 0:
            return 1.0
        return math.exp(-math.log(2) / self.half_life_days * age)

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if not hits or self.half_life_days <= 0:
            return list(hits)
        now = _reference_time(self.now, ctx, "temporal_decay")
        chunk_path = ctx.need("chunk_path", "temporal_decay")
        return rank_hits([replace(h, score=h.score * self.multiplier(age_days(chunk_path(h.id), now)))
                          for h in hits])


@POSTPROCESSORS.register("temporal_decay")
def _temporal_decay(half_life_days: float = 30.0, now: Any = None) -> TemporalDecay:
    return TemporalDecay(half_life_days, now)


# --- QMD: positional score --------------------------------------------------------------------------

@dataclass
class ReciprocalRank:
    """QMD without a reranker: each result's score becomes 1/rank (1, 0.5, 0.333...).

    QMD blends w x (1/fused position) + (1 - w) x reranker score; with no reranker only the
    positional term is left.  It is a post-processing stage, not part of the `rrf` fusion, because
    in QMD it belongs to the rerank step after fusion: keeping it separate leaves the fused RRF
    scores (with their bonuses) visible to other stages and reports, lets one fused list be scored
    both ways in a sweep, and lets a preset decide whether a minScore sees RRF scores or 1/rank.
    The order is kept; only scores change."""

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        return [replace(h, score=1.0 / rank) for rank, h in enumerate(hits, start=1)]


@POSTPROCESSORS.register("reciprocal_rank")
def _reciprocal_rank() -> ReciprocalRank:
    return ReciprocalRank()


# --- memory-lancedb-pro -----------------------------------------------------------------------------

def _clamp01(value: float, fallback: float) -> float:
    """memory-lancedb-pro's clamp01(value, fallback): non-finite -> fallback, else clamped to [0, 1]."""
    if not math.isfinite(value):
        return fallback if math.isfinite(fallback) else 0.0
    return min(1.0, max(0.0, value))


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 when either vector has zero length (as memory-lancedb-pro does)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"vector dimensions differ: {x.shape} vs {y.shape}")
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return 0.0 if norm == 0 else float(np.dot(x, y) / norm)


def _lancedb_age(path: str, now: datetime) -> float:
    """Every memory-lancedb-pro entry has a creation timestamp; here the only one a chunk has is its
    memory/YYYY-MM-DD.md name.  Undated chunks are treated as the code treats a missing timestamp:
    as created `now` (age 0: full recency boost, no time decay)."""
    age = age_days(path, now)
    return 0.0 if age is None else age


@dataclass
class CosineRerank:
    """memory-lancedb-pro's reranker fallback (no cross-encoder API key, or the API failed): only the
    first window_factor x limit fused results go on, each scored clamp01(0.7 fused + 0.3 cosine(query,
    chunk)).  The rest are dropped, as the code slices before reranking."""

    weight: float = 0.3  # of the cosine; 1 - weight of the fused score
    window_factor: int = 2

    def __post_init__(self) -> None:
        self.weight = float(self.weight)
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"cosine_rerank.weight must be in [0, 1], got {self.weight!r}")
        if int(self.window_factor) < 1:
            raise ValueError(f"cosine_rerank.window_factor must be >= 1, got {self.window_factor!r}")

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        window = hits[: int(self.window_factor) * ctx.max_results]
        if not window:
            return []
        query_vector = ctx.need("query_vector", "cosine_rerank")
        chunk_vector = ctx.need("chunk_vector", "cosine_rerank")
        out = []
        for h in window:
            vector = chunk_vector(h.id)
            similarity = 0.0 if vector is None else cosine(query_vector, vector)
            blended = (1 - self.weight) * h.score + self.weight * similarity
            out.append(replace(h, score=_clamp01(blended, h.score)))
        return rank_hits(out)


@POSTPROCESSORS.register("cosine_rerank")
def _cosine_rerank(weight: float = 0.3, window_factor: int = 2) -> CosineRerank:
    return CosineRerank(weight, window_factor)


@dataclass
class RecencyBoost:
    """memory-lancedb-pro: score + weight x exp(-age_days / half_life_days), capped at 1
    (defaults 0.1 and 14 days; the code calls it a half-life but divides by it directly)."""

    half_life_days: float = 14.0
    weight: float = 0.1
    now: Any = None

    def __post_init__(self) -> None:
        self.half_life_days = _half_life(self.half_life_days, "recency_boost")
        self.weight = float(self.weight)
        if self.now is not None:
            self.now = as_utc_datetime(self.now, "recency_boost.now")

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if not hits or self.half_life_days <= 0 or self.weight == 0:
            return list(hits)
        now = _reference_time(self.now, ctx, "recency_boost")
        chunk_path = ctx.need("chunk_path", "recency_boost")
        out = []
        for h in hits:
            boost = math.exp(-_lancedb_age(chunk_path(h.id), now) / self.half_life_days) * self.weight
            out.append(replace(h, score=_clamp01(h.score + boost, h.score)))
        return rank_hits(out)


@POSTPROCESSORS.register("recency_boost")
def _recency_boost(half_life_days: float = 14.0, weight: float = 0.1, now: Any = None) -> RecencyBoost:
    return RecencyBoost(half_life_days, weight, now)


@dataclass
class ImportanceWeight:
    """memory-lancedb-pro: score x (0.7 + 0.3 x importance).  Memory files carry no importance, so
    every chunk gets the code's default 0.7, i.e. x 0.91 - which still matters against the hard
    minimum that follows."""

    importance: float = 0.7

    def __post_init__(self) -> None:
        self.importance = float(self.importance)
        if not 0.0 <= self.importance <= 1.0:
            raise ValueError(f"importance_weight.importance must be in [0, 1], got {self.importance!r}")

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        factor = 0.7 + 0.3 * self.importance
        return rank_hits([replace(h, score=_clamp01(h.score * factor, h.score * 0.7)) for h in hits])


@POSTPROCESSORS.register("importance_weight")
def _importance_weight(importance: float = 0.7) -> ImportanceWeight:
    return ImportanceWeight(importance)


@dataclass
class LengthNorm:
    """memory-lancedb-pro: score x 1 / (1 + 0.5 log2(max(chars / anchor, 1))), anchor 500 characters:
    no change up to the anchor, 1000 chars x 0.667, 2000 x 0.5.  chars = len(chunk text) (the code
    counts UTF-16 units, the same for all BMP text).  anchor <= 0 turns it off."""

    anchor: float = 500.0

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if not hits or self.anchor <= 0:
            return list(hits)
        chunk_text = ctx.need("chunk_text", "length_norm")
        out = []
        for h in hits:
            ratio = len(chunk_text(h.id)) / self.anchor
            factor = 1.0 / (1.0 + 0.5 * math.log2(max(ratio, 1.0)))
            out.append(replace(h, score=_clamp01(h.score * factor, h.score * 0.3)))
        return rank_hits(out)


@POSTPROCESSORS.register("length_norm")
def _length_norm(anchor: float = 500.0) -> LengthNorm:
    return LengthNorm(float(anchor))


@dataclass
class HardMinScore:
    """memory-lancedb-pro's hardMinScore: drop results scoring below `threshold` (0.35), without
    cutting the list.  Named `threshold`, not `min_score`, because later stages (time decay) still
    lower the survivors' scores, so a returned result may end below it."""

    threshold: float = 0.35

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        return [h for h in hits if h.score >= self.threshold]


@POSTPROCESSORS.register("hard_min_score")
def _hard_min_score(threshold: float = 0.35) -> HardMinScore:
    return HardMinScore(float(threshold))


@dataclass
class TimeDecay:
    """memory-lancedb-pro: score x (0.5 + 0.5 exp(-age_days / half_life_days)), 60 days: never
    below half (x 0.684 at 60 days, x 0.568 at 120).  Without access records the half-life is
    never extended."""

    half_life_days: float = 60.0
    now: Any = None

    def __post_init__(self) -> None:
        self.half_life_days = _half_life(self.half_life_days, "time_decay")
        if self.now is not None:
            self.now = as_utc_datetime(self.now, "time_decay.now")

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if not hits or self.half_life_days <= 0:
            return list(hits)
        now = _reference_time(self.now, ctx, "time_decay")
        chunk_path = ctx.need("chunk_path", "time_decay")
        out = []
        for h in hits:
            factor = 0.5 + 0.5 * math.exp(-_lancedb_age(chunk_path(h.id), now) / self.half_life_days)
            out.append(replace(h, score=_clamp01(h.score * factor, h.score * 0.5)))
        return rank_hits(out)


@POSTPROCESSORS.register("time_decay")
def _time_decay(half_life_days: float = 60.0, now: Any = None) -> TimeDecay:
    return TimeDecay(half_life_days, now)


@dataclass
class CosineDiversity:
    """memory-lancedb-pro's MMR-inspired filter: walk the list in order; a chunk whose embedding has
    cosine > threshold (0.85) with one already kept is deferred; deferred chunks follow the kept ones
    in their original order.  Nothing is dropped and no score changes.  A chunk without a vector is
    never too similar."""

    threshold: float = 0.85

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


@POSTPROCESSORS.register("cosine_diversity")
def _cosine_diversity(threshold: float = 0.85) -> CosineDiversity:
    return CosineDiversity(float(threshold))
