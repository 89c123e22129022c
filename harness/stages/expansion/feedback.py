"""LLM-free expansions from pseudo-relevance feedback (the first pass's top results taken as relevant):
RM3-style terms for a second lexical query, and the centroid of the top results' vectors for a second
vector query.  Both run only when QMD's BM25 probe finds no strong signal (unless probe = false)."""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Literal

import numpy as np
from pydantic import Field

from harness.errors import ConfigError
from harness.registry import stage
from harness.stages.expansion.base import (
    EXPANSION_WEIGHT,
    EXPANSIONS,
    LIST_SIZE,
    ExpansionContext,
    RankedList,
    strong_signal,
)
from harness.stages.tokenizers import join_terms

_DF_CACHE: dict[int, tuple[int, Counter]] = {}


def document_frequencies(index: Any, tokenizer: Any) -> tuple[int, Counter]:
    """(chunks, df of every indexed term), computed once per index."""
    key = id(index)
    if key not in _DF_CACHE:
        df: Counter = Counter()
        for chunk in index.chunks:
            df.update(set(tokenizer.analyze(chunk.text)))
        _DF_CACHE.clear()  # one index at a time: a run's parts are searched one after the other
        _DF_CACHE[key] = (len(index.chunks), df)
    return _DF_CACHE[key]


def feedback_hits(ctx: ExpansionContext, source: str, docs: int) -> list[tuple[str, float]]:
    """The top `docs` results taken as relevant, with weights summing to 1: the fused first pass
    (weights from its scores) or the lexical leg alone (weights from its raw BM25)."""
    if source == "lexical":
        top = ctx.lexical[:docs]
    else:
        top = [(h.id, h.score) for h in ctx.first_pass()[:docs]]
    total = sum(max(s, 0.0) for _, s in top)
    if total <= 0:
        return [(cid, 1 / len(top)) for cid, _ in top] if top else []
    return [(cid, max(s, 0.0) / total) for cid, s in top]


def rm3_terms(ctx: ExpansionContext, source: str, docs: int, terms: int, max_df: float) -> list[str]:
    """The relevance model's best terms: sum over feedback chunks of P(t|d) x P(d|q), times log(N/df)
    (FTS5 cannot weight query terms, so the idf keeps characters and words found everywhere out); terms
    in more than `max_df` of the chunks are skipped."""
    feedback = feedback_hits(ctx, source, docs)
    if not feedback:
        return []
    n, df = document_frequencies(ctx.index, ctx.tokenizer)
    model: Counter = Counter()
    for cid, weight in feedback:
        analyzed = ctx.tokenizer.analyze(ctx.index.lookup(cid).text)  # a chunk or a whole file (QMD)
        if not analyzed:
            continue
        for term, tf in Counter(analyzed).items():
            model[term] += weight * tf / len(analyzed)
    scored = [(t, p * math.log(n / df[t])) for t, p in model.items() if df[t] and df[t] / n <= max_df]
    scored.sort(key=lambda tp: (-tp[1], tp[0]))
    return [t for t, s in scored[:terms] if s > 0]


@EXPANSIONS.register("prf")
@stage
class PseudoRelevanceFeedback:
    """LLM-free expansion: an RM3-style lexical query (the relevance model's top terms of the first
    pass's top results, OR-joined on the FTS5 index) and/or a vector query from the centroid of the top
    results' vectors, each a list fused with `weight` beside the original query's lists.  QMD's BM25
    probe skips it when the original query's lexical list already has a strong signal."""

    lexical: bool = True
    """add the RM3-style lexical list"""
    vector: bool = True
    """add the centroid vector list"""
    probe: bool = True
    """skip expansion on a strong BM25 signal (top >= 0.85, lead >= 0.15), as QMD does"""
    source: Literal["fused", "lexical"] = "fused"
    """feedback chunks: the fused first pass, or the lexical leg (classic RM3: silent when BM25 is)"""
    feedback_docs: int = Field(3, ge=1)
    """top results taken as relevant"""
    terms: int = Field(10, ge=1)
    """expansion terms of the lexical query"""
    max_df: float = Field(0.2, gt=0, le=1, allow_inf_nan=False)
    """terms found in more than this share of the chunks are not expansion terms"""
    query_weight: float = Field(0.0, ge=0, allow_inf_nan=False)
    """weight of the query's own vector in the centroid query (0: the results' centroid alone)"""
    weight: float = Field(EXPANSION_WEIGHT, ge=0, allow_inf_nan=False)
    """RRF weight of each expansion list (QMD: 1.0; the original query's lists have 2.0)"""
    list_size: int = Field(LIST_SIZE, ge=1)
    """length of each expansion list"""
    chat: Any = None
    """unused (the run's chat model, passed to every expansion)"""

    def __post_init__(self) -> None:
        if not (self.lexical or self.vector):
            raise ValueError("prf: set lexical or vector (or both)")

    def expand(self, ctx: ExpansionContext) -> list[RankedList]:
        if self.probe and strong_signal(ctx.lexical):
            ctx.stats["expansion_skipped"] = True
            return []
        ctx.stats["expansion_skipped"] = False
        out: list[RankedList] = []
        if self.lexical:
            terms = rm3_terms(ctx, self.source, self.feedback_docs, self.terms, self.max_df)
            ctx.stats["expansion_terms"] = " ".join(terms)
            expression = join_terms(terms, "or") if terms else None
            if expression is not None:
                match = getattr(ctx.index.lexical, "match", None)
                if match is None:
                    raise ConfigError("expansion prf with lexical = true needs a lexical backend that runs an OR-joined "
                                      "MATCH (fts5, qmd-documents); set lexical = false for the others")
                out.append(RankedList(match(expression, self.list_size), self.weight, "lexical", "rm3"))
        if self.vector:
            centroid = self.centroid(ctx)
            if centroid is not None:
                out.append(RankedList(ctx.search_vector(centroid, self.list_size), self.weight, "vector",
                                      "centroid"))
        return out

    def centroid(self, ctx: ExpansionContext) -> np.ndarray | None:
        top = [h.id for h in ctx.first_pass()[:self.feedback_docs]]
        # a whole-file result (QMD's document-level lists) stands for its chunks' vectors
        vectors = [v for c in top for v in ([ctx.index.vectors[c]] if c in ctx.index.vectors else
                                            [ctx.index.vectors[x.id] for x in ctx.index.document_chunks(c)
                                             if x.id in ctx.index.vectors])]
        if not vectors:
            return None
        centroid = np.mean(np.asarray(vectors, dtype=np.float64), axis=0)
        if self.query_weight and ctx.query_vector is not None:
            centroid = centroid + self.query_weight * np.asarray(ctx.query_vector, dtype=np.float64)
        norm = np.linalg.norm(centroid)
        return (centroid / norm).astype(np.float32) if norm > 0 else None
