"""In-memory BM25 backends over the tokenizer's analyzed terms: rank-bm25 (Okapi, BM25L, BM25+) and
bm25s.  Parameters default to each library's own."""
from __future__ import annotations

from typing import Any, Literal, Sequence

import numpy as np
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from harness.ranking import top_k
from harness.registry import stage
from harness.stages.chunkers import Chunk
from harness.stages.lexical.base import LEXICAL_BACKENDS, Hits
from harness.stages.tokenizers import Tokenizer


@stage
class BagOfWordsIndex:
    """Shared part of the in-memory backends: documents as analyzed terms, a postings map for the
    AND/OR candidate filter, a model (re)built lazily on the first search after an add()."""

    tokenizer: SkipJsonSchema[Tokenizer]
    """the run's tokenizer (from the pipeline)"""
    conn: SkipJsonSchema[Any] = None
    """the run's SQLite connection: unused, these backends keep their index in memory"""

    def __post_init__(self) -> None:
        self.ids: list[str] = []
        self.docs: list[list[str]] = []
        self.postings: dict[str, set[int]] = {}
        self._model: Any = None

    def add(self, chunks: Sequence[Chunk]) -> None:
        for chunk in chunks:
            terms = self.tokenizer.analyze(chunk.text)
            index = len(self.ids)
            self.ids.append(chunk.id)
            self.docs.append(terms)
            for term in set(terms):
                self.postings.setdefault(term, set()).add(index)
        self._model = None

    def candidates(self, terms: list[str]) -> list[int]:
        """Documents holding every distinct term (join "and") or any of them (join "or")."""
        distinct = list(dict.fromkeys(terms))
        sets = [self.postings.get(t, set()) for t in distinct]
        if self.tokenizer.join == "and":
            found = set.intersection(*sets) if sets else set()
        else:
            found = set().union(*sets)
        return sorted(found)

    def search(self, query: str, k: int) -> Hits:
        terms = self.tokenizer.analyze_query(query)
        if k <= 0 or not terms:
            return []
        docs = self.candidates(terms)
        if not docs:
            return []
        if self._model is None:
            self._model = self.build()
        scores = self.scores(terms, docs)
        return top_k([(self.ids[d], float(s)) for d, s in zip(docs, scores)], k)

    def build(self) -> Any:
        raise NotImplementedError

    def scores(self, terms: list[str], docs: list[int]) -> Sequence[float]:
        raise NotImplementedError


@stage
class RankBM25Index(BagOfWordsIndex):
    """rank-bm25's shared parameters and scoring; the variants below choose the model."""

    k1: float = Field(1.5, ge=0, allow_inf_nan=False)
    """term frequency saturation"""
    b: float = Field(0.75, ge=0, le=1, allow_inf_nan=False)
    """document length normalisation"""

    def scores(self, terms: list[str], docs: list[int]) -> Sequence[float]:
        return self._model.get_batch_scores(terms, docs)


@LEXICAL_BACKENDS.register("rank-bm25-okapi")
@stage
class RankBM25Okapi(RankBM25Index):
    """rank-bm25 BM25Okapi (library defaults k1 1.5, b 0.75, epsilon 0.25)."""

    epsilon: float = Field(0.25, allow_inf_nan=False)
    """a negative idf is floored at epsilon x the mean idf"""

    def build(self) -> Any:
        import rank_bm25

        return rank_bm25.BM25Okapi(self.docs, k1=self.k1, b=self.b, epsilon=self.epsilon)


@LEXICAL_BACKENDS.register("rank-bm25-l")
@stage
class RankBM25L(RankBM25Index):
    """rank-bm25 BM25L (library defaults k1 1.5, b 0.75, delta 0.5)."""

    delta: float = Field(0.5, ge=0, allow_inf_nan=False)
    """added to the length-normalised term frequency"""

    def build(self) -> Any:
        import rank_bm25

        return rank_bm25.BM25L(self.docs, k1=self.k1, b=self.b, delta=self.delta)


@LEXICAL_BACKENDS.register("rank-bm25-plus")
@stage
class RankBM25Plus(RankBM25Index):
    """rank-bm25 BM25+ (library defaults k1 1.5, b 0.75, delta 1)."""

    delta: float = Field(1.0, ge=0, allow_inf_nan=False)
    """lower bound of a matching term's contribution"""

    def build(self) -> Any:
        import rank_bm25

        return rank_bm25.BM25Plus(self.docs, k1=self.k1, b=self.b, delta=self.delta)


@LEXICAL_BACKENDS.register("bm25s")
@stage
class BM25sIndex(BagOfWordsIndex):
    """bm25s: scores precomputed into a sparse matrix at index time, so a query is a few array sums
    (library defaults k1 1.5, b 0.75, method "lucene")."""

    method: Literal["robertson", "lucene", "atire", "bm25l", "bm25+"] = "lucene"
    """the BM25 variant: "robertson", "lucene", "atire", "bm25l" or "bm25+\""""
    k1: float = Field(1.5, ge=0, allow_inf_nan=False)
    """term frequency saturation"""
    b: float = Field(0.75, ge=0, le=1, allow_inf_nan=False)
    """document length normalisation"""
    delta: float = Field(0.5, ge=0, allow_inf_nan=False)
    """used by "bm25l" and "bm25+\""""

    def build(self) -> Any:
        import bm25s

        model = bm25s.BM25(k1=self.k1, b=self.b, delta=self.delta, method=self.method)
        model.index(self.docs, show_progress=False)
        return model

    def scores(self, terms: list[str], docs: list[int]) -> Sequence[float]:
        token_ids = self._model.get_tokens_ids(terms)
        all_scores = np.asarray(self._model.get_scores_from_ids(token_ids), dtype=np.float64)
        return all_scores[docs]
