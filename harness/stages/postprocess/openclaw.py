"""OpenClaw's post-processing (SPEC.md section 2): minScore + maxResults, MMR, temporal decay."""
from __future__ import annotations

import math
import re
from dataclasses import replace
from functools import lru_cache
from typing import Callable, Literal, Optional, Sequence

import numpy as np
from pydantic import Field

from harness.registry import stage
from harness.selection import Threshold, positions
from harness.stages.chunkers.openclaw import utf16_prefix
from harness.stages.cjk import OPENCLAW_MMR_CJK_RUN
from harness.stages.fusion import Hit, rank_hits
from harness.stages.postprocess.base import (
    POSTPROCESSORS,
    ReferenceTime,
    SearchContext,
    age_days,
    memory_date,
    reference_time,
)


@POSTPROCESSORS.register("min_score")
@stage
class MinScore:
    """OpenClaw's minScore + maxResults, with its keyword fallback (release bisection in
    harness/conformance/NOTES.md 4b).

    keyword_fallback:
      none     plain threshold (2026.2.22 and earlier)
      relaxed  if nothing clears min_score but the lexical leg found something, keep the keyword hits
               scoring >= `relaxed_floor` (2026.3.1: min(min_score, text_weight), since a keyword-only hit
               scores at most tw; 0 from 2026.5.12); FTS-only mode (2026.3.31+) keeps all hits >= 0
      fill     (2026.8.1 selectHybridSearchResults) as relaxed when nothing clears min_score; when some
               but fewer than max_results do, keyword-ONLY hits (vector score 0) below min_score fill the
               spare slots in the order given, after the passing ones
    A query passes only if its top hit reaches min_score (a hit kept by the fallback does not).
    """

    min_score: float = Field(0.35, ge=0, le=1, allow_inf_nan=False)  # the range openclaw.json accepts
    """minScore: hits scoring below it are dropped (and a query's top hit must reach it to pass)"""
    keyword_fallback: Literal["relaxed", "fill", "none"] = "relaxed"
    """what happens to keyword hits below min_score: "relaxed", "fill" or "none" (see above)"""
    relaxed_floor: Optional[float] = Field(None, ge=0, le=1, allow_inf_nan=False)
    """the floor of the relaxed branch: None = min(min_score, the fusion's text weight) (2026.3.1),
    0.0 = any keyword hit (2026.5.12 on)"""

    @property
    def pass_threshold(self) -> float:
        return self.min_score

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        """The selection of harness.selection (the one the sweep's fast scorer applies) on this list as a
        one-row array: each hit's place in what is kept, in the order given."""
        if not hits:
            return []
        score = np.array([[h.score for h in hits]], dtype=float)
        keyword = np.array([[h.keyword_hit for h in hits]], dtype=bool)
        no_vector = np.array([[h.vector_score == 0 for h in hits]], dtype=bool)
        place = positions(score, np.ones(score.shape, dtype=bool), keyword,
                          Threshold(self.min_score, self.keyword_fallback, self.relaxed_floor),
                          np.float64(ctx.text_weight), no_vector)[0].tolist()
        # no re-sort: a stage before this one (MMR) may have chosen the order, as in OpenClaw
        kept = sorted((p, i) for i, p in enumerate(place) if p > 0)
        return [hits[i] for _, i in kept][: ctx.max_results]


# --- MMR --------------------------------------------------------------------------------------------

_ASCII_WORD = re.compile(r"[a-z0-9_]+")


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
    for run in OPENCLAW_MMR_CJK_RUN.findall(lower):
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
    ta, tb = tokenize(a), tokenize(b)
    if tokens == "cjk" and not ta and not tb:
        # newer OpenClaw (textSimilarity): two token-less snippets are alike only if equal
        return 1.0 if a.strip().lower() == b.strip().lower() else 0.0
    return jaccard(ta, tb)


def snippet_similarity(tokens: str, a: str, b: str) -> float:
    """Jaccard of two snippets' token sets, memoised: a sweep re-runs MMR over the same candidates
    many times, and intersecting two ~500-token sets costs more than everything else in MMR."""
    if hash(a) > hash(b):  # symmetric: one cache entry per pair
        a, b = b, a
    return _cached_similarity(tokens, a, b)


SNIPPET_CHARS = 700  # OpenClaw's snippet: the first 700 characters of the chunk


@POSTPROCESSORS.register("mmr")
@stage
class MMR:
    """OpenClaw's MMR re-ranking (Carbonell & Goldstein 1998) over all fused candidates.

    Relevance is the score min-max normalised over the list (all equal -> 1); similarity is the
    Jaccard of snippet token sets.  Repeatedly pick the candidate with the largest
    lambda * relevance - (1 - lambda) * max similarity to those already picked; an exact tie goes to
    the higher original score, then to the earlier candidate (the input order, i.e. (score desc, id)).
    Scores are unchanged; only the order changes.

    tokens:
      cjk    (newer) ASCII words + CJK unigrams + adjacent CJK bigrams; two snippets with no such token
             are similar only if equal (2026.8.1's textSimilarity)
      ascii  (older) [a-z0-9_] words only, which reproduces its CJK bug: two pure-Chinese snippets
             both have empty token sets, Jaccard 1, and so are treated as duplicates of each other.
    """

    # OpenClaw's key `lambda` is a Python keyword: the field is lambda_, its TOML key the alias
    lambda_: float = Field(0.7, alias="lambda", ge=0, le=1, allow_inf_nan=False)
    """relevance weight against diversity (clamped to [0, 1], as OpenClaw does; 1 = no re-ranking)"""
    tokens: Literal["cjk", "ascii"] = "cjk"
    """snippet tokens: "cjk" (words, CJK unigrams and bigrams) or "ascii" (the older words-only bug)"""
    snippet_chars: int = Field(SNIPPET_CHARS, gt=0)
    """UTF-16 code units of each chunk compared (OpenClaw's snippet, 700)"""

    pass_threshold = 0.0  # reorders only

    def __post_init__(self) -> None:
        self.lambda_ = min(1.0, max(0.0, self.lambda_))  # OpenClaw clamps lambda

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if len(hits) <= 1:
            return list(hits)
        if self.lambda_ == 1.0:
            return rank_hits(hits)
        chunk_text = ctx.need("chunk_text", "mmr")
        snippets = [utf16_prefix(chunk_text(h.id), self.snippet_chars) for h in hits]
        n = len(hits)
        similarity = np.zeros((1, n, n))
        for i in range(n):
            for j in range(i + 1, n):
                similarity[0, i, j] = similarity[0, j, i] = snippet_similarity(self.tokens, snippets[i], snippets[j])
        score = np.array([[h.score for h in hits]], dtype=float)
        order = mmr_array_order(score, np.ones(score.shape, dtype=bool), np.arange(n)[None, :], np.zeros(1, dtype=int),
                                self.lambda_, similarity)[0]
        return [hits[i] for i in order.tolist() if i >= 0]


def mmr_array_order(score: np.ndarray, present: np.ndarray, rank: np.ndarray, query: np.ndarray, lambda_: float,
                    similarity: np.ndarray, needs: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
                    score_ordered: bool = False) -> np.ndarray:
    """MMR's order of each row's present candidates: rows x candidates of column indices, -1 after the
    last one picked.  score, present, rank (each candidate's place in the input order, the final
    tie-break): rows x candidates; query: each row's query (its row of `similarity`, queries x candidates
    x candidates).  The one definition of the MMR stage's greedy selection: MMR's call runs it on its list
    as one row, the sweep's fast scorer on every query at once.

    With `needs`, a row stops as soon as, for every (mask, count), `count` of its masked candidates have
    been picked: what the minScore selection and the cut read of the order is then decided (the
    candidates it never picks are beyond the cut), which saves most of the O(n^2) greedy.
    `score_ordered`: the input order is (score desc, id), so it is already the tie-break's order."""
    rows, width = score.shape
    order = np.full((rows, width), -1, dtype=np.int64)
    lam = lambda_
    if lam == 1.0:  # the stage re-ranks by (score desc, id) instead of running the greedy selection
        key = np.where(present, -score, np.inf)
        ranked = np.argsort(key, axis=1, kind="stable")
        return np.where(np.take_along_axis(present, ranked, axis=1), ranked, -1)
    with np.errstate(invalid="ignore"):
        lo = np.where(present, score, np.inf).min(axis=1, keepdims=True)
        hi = np.where(present, score, -np.inf).max(axis=1, keepdims=True)
        span = hi - lo
        relevance = np.where(span == 0, 1.0, (score - lo) / np.where(span == 0, 1.0, span))
    # lambda x relevance is the same float at every step; a picked or absent candidate gets -inf instead
    weighted = np.where(present, lam * relevance, -np.inf)
    # the stage's tie-break among equal values: the higher score, then the earlier in its input order
    if score_ordered:
        tie_rank = rank
    else:
        tie_order = np.lexsort((rank, -np.where(present, score, -np.inf)), axis=1)
        tie_rank = np.empty_like(tie_order)
        np.put_along_axis(tie_rank, tie_order, np.arange(width)[None, :], axis=1)
    big = np.iinfo(np.int64).max
    active = np.arange(rows)
    left = present.sum(axis=1)  # candidates not yet picked
    max_similarity = np.zeros((rows, width))
    counts = [np.zeros(rows, dtype=np.int64) for _ in (needs or ())]
    diversity = 1 - lam
    weighted_a, tie_a = weighted, tie_rank
    t = 0
    while active.size:
        exhausted = left[active] == 0
        enough = np.full(active.size, bool(needs))  # every need met (none given: run to the end)
        for (_, need), count in zip(needs or (), counts):
            enough &= count[active] >= need[active]
        done = exhausted | enough
        if done.all():
            break
        # compact: a row with nothing left to pick must go; rows whose needs are met go once they are many
        # (a row that stays picks on, which is still the stage's order)
        if exhausted.any() or done.mean() > 0.25:
            keep = ~done
            active, weighted_a, max_similarity, tie_a = active[keep], weighted_a[keep], max_similarity[keep], tie_a[keep]
        elif t == 0:
            weighted_a = weighted_a.copy()  # picks are marked in it
        value = weighted_a - diversity * max_similarity
        best = value.max(axis=1, keepdims=True)
        pick = np.where(value == best, tie_a, big).argmin(axis=1)
        order[active, t] = pick
        local = np.arange(active.size)
        weighted_a[local, pick] = -np.inf
        left[active] -= 1
        max_similarity = np.maximum(max_similarity, similarity[query[active], pick])
        for (mask, _), count in zip(needs or (), counts):
            count[active] += mask[active, pick]
        t += 1
    return order


# --- temporal decay ---------------------------------------------------------------------------------


@POSTPROCESSORS.register("temporal_decay")
@stage
class TemporalDecay:
    """OpenClaw's temporal decay: score x exp(-ln2 x age_days / half_life_days), half-life 30 days.

    Age comes from a memory/YYYY-MM-DD.md file name (or memory/YYYY-MM-DD-name.md, which OpenClaw 2026.8.1
    also dates).  MEMORY.md, memory.md and undated files under
    memory/ are evergreen and never decay.  (OpenClaw falls back to the file's mtime for other
    files; rendered layouts have no meaningful mtime, so here every undated file is evergreen.)
    half_life_days = 0 turns the decay off, as in OpenClaw."""

    half_life_days: float = Field(30.0, ge=0, allow_inf_nan=False)
    """days after which a dated memory's score is halved (0: off)"""
    now: ReferenceTime = None
    """reference time for ages (date, date-time or ISO string); default: the run's evaluation.now"""

    pass_threshold = 0.0  # rescales only

    def multiplier(self, age: float | None) -> float:
        if age is None or self.half_life_days <= 0:
            return 1.0
        return math.exp(-math.log(2) / self.half_life_days * age)

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if not hits or self.half_life_days <= 0:
            return list(hits)
        chunk_path = ctx.need("chunk_path", "temporal_decay")
        if not any(memory_date(chunk_path(h.id), True) for h in hits):
            return rank_hits(list(hits))  # nothing dated: no reference time needed, every factor is 1
        now = reference_time(self.now, ctx, "temporal_decay")
        return rank_hits([replace(h, score=h.score * self.multiplier(age_days(chunk_path(h.id), now, True)))
                          for h in hits])


# --- importance -------------------------------------------------------------------------------------

CURATED_ROOT_FILES = ("MEMORY.md", "memory.md", "USER.md")  # where OpenClaw reads curated annotations
_ANNOTATION_SUFFIX = re.compile(r"(?:\s*<!--\s*(?:trigger|importance|project)\s*:[\s\S]*?-->\s*)+$", re.IGNORECASE)
_ANNOTATION = re.compile(r"<!--\s*(trigger|importance|project)\s*:\s*([\s\S]*?)\s*-->", re.IGNORECASE)


def curated_importance(path: str, text: str) -> int | None:
    """The importance OpenClaw 2026.8.1 records for a chunk of a curated memory file (MEMORY.md, memory.md,
    USER.md at the root): the largest `<!-- importance: N -->` (N a whole number 1-10) among the
    annotations that end its lines; None elsewhere or without one."""
    if path.replace("\\", "/").removeprefix("./") not in CURATED_ROOT_FILES:
        return None
    best: int | None = None
    for line in text.split("\n"):
        suffix = _ANNOTATION_SUFFIX.search(line)
        if not suffix:
            continue
        for kind, value in _ANNOTATION.findall(suffix.group(0)):
            if kind.lower() == "importance" and value.isascii() and value.isdigit() and 1 <= int(value) <= 10:
                best = max(best or 0, int(value))
    return best


@POSTPROCESSORS.register("importance")
@stage
class ImportanceMultiplier:
    """OpenClaw 2026.8.1's importance multiplier: score x (0.75 + 0.05 x clamp(floor(importance), 1, 10)),
    importance from `<!-- importance: N -->` annotations in curated memory files (curated_importance); x1
    without one.  Applied after temporal decay, in FTS-only and hybrid mode; re-ranks.
    Deviations: OpenClaw strips the annotation comments before indexing and reads them from the chunk's
    whole curated entry; here they stay in the chunk text and are read from the chunk's own lines."""

    pass_threshold = 0.0  # rescales only

    @staticmethod
    def multiplier(importance: float | None) -> float:
        if importance is None:
            return 1.0
        return 0.75 + max(1, min(10, math.floor(importance))) * 0.05

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        if not hits:
            return list(hits)
        chunk_text = ctx.need("chunk_text", "importance")
        chunk_path = ctx.need("chunk_path", "importance")
        out = []
        for h in hits:
            factor = self.multiplier(curated_importance(chunk_path(h.id), chunk_text(h.id)))
            out.append(h if factor == 1.0 else replace(h, score=h.score * factor))
        return rank_hits(out)
