"""Lexical leg: BM25 over chunk text.  Returns raw BM25 scores (positive, larger is better);
fusion stages map them to [0, 1] the way each system does (see bm25_rank_to_score below).

Backends (LEXICAL_BACKENDS), all fed by the same tokenizer stage:
  fts5             a real SQLite FTS5 table (the reference): bm25() with FTS5's fixed k1 1.2, b 0.75;
                   executes the tokenizer's QueryPlan, including the trigram LIKE paths
  rank-bm25-okapi  rank-bm25 BM25Okapi (defaults k1 1.5, b 0.75, epsilon 0.25)
  rank-bm25-l      rank-bm25 BM25L     (k1 1.5, b 0.75, delta 0.5)
  rank-bm25-plus   rank-bm25 BM25Plus  (k1 1.5, b 0.75, delta 1)
  bm25s            bm25s, a fast in-memory engine (k1 1.5, b 0.75, method "lucene")
The bag-of-words backends index tokenizer.analyze(text) and score tokenizer.analyze_query(query).
They return only documents that contain the query terms - any term for join "or", every distinct term
for join "and" - because BM25L/BM25+ give every document a positive score.  They know no phrases and
no LIKE: a quoted phrase (cjk-char, trigram) is scored as its separate terms.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

import apsw
import numpy as np

from harness.db import connect
from harness.registry import Registry
from harness.stages.chunkers import Chunk
from harness.stages.tokenizers import (
    QueryPlan,
    Tokenizer,
    plan_query,
    query_terms_for_bag_of_words,
)

LEXICAL_BACKENDS = Registry("lexical backend", table="lexical", group="harness.lexical", builtins="harness.stages.lexical", runtime=("tokenizer", "conn"))

# A leg's candidate list: (chunk id, raw score), best first.
Hits = list[tuple[str, float]]

# Raw score of a row found only through LIKE (the trigram paths): such a row has no bm25.  0.0 is the
# rank OpenClaw's own SQL gives it (`0 AS rank`), so every rank-to-score mapping below turns it into the
# text score OpenClaw reports for it, 1.0 (1/(1+0)).  In the leg's own order it sorts after every
# MATCH hit (whose raw bm25 is > 0), and LIKE-only rows tie among themselves and break by chunk id.
LIKE_ONLY_RAW_SCORE = 0.0


def bm25_rank_to_score(rank: float) -> float:
    """OpenClaw since 2026-03-07: FTS5 rank r (negative, more negative is better) -> (0, 1)."""
    if not math.isfinite(rank):
        return 1 / 1000
    if rank < 0:
        relevance = -rank
        return relevance / (1 + relevance)
    return 1 / (1 + rank)


def legacy_bm25_rank_to_score(rank: float) -> float:
    """OpenClaw before 2026-03-07: 1/(1+max(0, r)); FTS5 ranks are negative, so every hit scores 1.0."""
    if not math.isfinite(rank):
        return 1 / 1000
    return 1 / (1 + max(0.0, rank))


RANK_TO_SCORE = {"current": bm25_rank_to_score, "legacy": legacy_bm25_rank_to_score}


class LexicalIndex(Protocol):
    tokenizer: Tokenizer

    def add(self, chunks: Sequence[Chunk]) -> None: ...

    def search(self, query: str, k: int) -> Hits:
        """Top-k (chunk id, raw BM25 = -FTS5 rank) pairs, ties broken by chunk id."""
        ...


def rank_leg(hits: Hits, k: int) -> Hits:
    return sorted(hits, key=lambda h: (-h[1], h[0]))[:k]


def like_pattern(term: str) -> str:
    """`%term%` for LIKE ... ESCAPE '\\': the term's own %, _ and \\ match literally."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


# ---------------------------------------------------------------------------------------------
# FTS5
# ---------------------------------------------------------------------------------------------


@dataclass
class FTS5Index:
    """A real SQLite FTS5 table; bm25() with FTS5's fixed k1 = 1.2, b = 0.75.

    A query is answered by executing the tokenizer's QueryPlan (tokenizers.QueryPlan): a MATCH, LIKE
    terms combined with it by AND or OR, and a LIKE fallback run on error or on zero rows.  `routes`
    counts which path answered each query ("match", "match+like", "like", "fallback", "empty").
    """

    tokenizer: Tokenizer
    conn: apsw.Connection | None = None
    ids: list[str] = field(default_factory=list)
    routes: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        if self.conn is None:
            self.conn = connect(load_vec=False)
        tokenize = self.tokenizer.fts5_tokenize.replace("'", "''")
        # chunk_id is UNINDEXED: no tokens, so bm25() is unchanged; it lets SQL break ties by chunk id
        self.conn.execute(
            f"CREATE VIRTUAL TABLE chunks_fts USING fts5(text, chunk_id UNINDEXED, tokenize='{tokenize}')"
        )

    def add(self, chunks: Sequence[Chunk]) -> None:
        with self.conn:  # one transaction
            for chunk in chunks:
                self.ids.append(chunk.id)
                self.conn.execute("INSERT INTO chunks_fts(rowid, text, chunk_id) VALUES (?, ?, ?)",
                                  (len(self.ids), self.tokenizer.index_text(chunk.text), chunk.id))

    def search(self, query: str, k: int) -> Hits:
        plan = plan_query(self.tokenizer, query)
        if plan.empty or k <= 0:
            self.routes["empty"] += 1
            return []
        failed = False
        try:
            hits = self._primary(plan, k)
        except apsw.SQLError:
            if plan.fallback_when == "never":
                raise
            failed, hits = True, []
        if (failed or (not hits and plan.fallback_when == "empty")) and plan.fallback_like:
            self.routes["fallback"] += 1
            return self._like(plan.fallback_like, plan.fallback_join, k)
        self.routes["match+like" if plan.match and plan.like else "match" if plan.match else "like"] += 1
        return hits

    def _primary(self, plan: QueryPlan, k: int) -> Hits:
        if plan.match is None:
            return self._like(plan.like, plan.join, k)
        if not plan.like:
            return self._match(plan.match, k)
        if plan.join == "and":
            return self._match(plan.match, k, like=plan.like)
        # OR: MATCH rows keep their bm25, LIKE-only rows follow them (LIKE_ONLY_RAW_SCORE)
        matched = self._match(plan.match, k)
        seen = {cid for cid, _ in matched}
        extra = [h for h in self._like(plan.like, "or", k + len(matched)) if h[0] not in seen]
        return rank_leg(matched + extra, k)

    def _match(self, expression: str, k: int, like: tuple[str, ...] = ()) -> Hits:
        like_sql = "".join(" AND text LIKE ? ESCAPE '\\'" for _ in like)
        rows = self.conn.execute(
            "SELECT chunk_id, bm25(chunks_fts) FROM chunks_fts "
            f"WHERE chunks_fts MATCH ?{like_sql} ORDER BY bm25(chunks_fts), chunk_id LIMIT ?",
            (expression, *map(like_pattern, like), k),
        ).fetchall()
        return rank_leg([(cid, -rank) for cid, rank in rows], k)

    def _like(self, terms: tuple[str, ...], join: str, k: int) -> Hits:
        if not terms:
            return []
        where = f" {join.upper()} ".join("text LIKE ? ESCAPE '\\'" for _ in terms)
        rows = self.conn.execute(
            f"SELECT chunk_id FROM chunks_fts WHERE {where} ORDER BY chunk_id LIMIT ?",
            (*map(like_pattern, terms), k),
        ).fetchall()
        return [(cid, LIKE_ONLY_RAW_SCORE) for (cid,) in rows]


@LEXICAL_BACKENDS.register("fts5")
def _fts5(tokenizer: Tokenizer, conn: apsw.Connection | None = None) -> FTS5Index:
    return FTS5Index(tokenizer=tokenizer, conn=conn)


# ---------------------------------------------------------------------------------------------
# Bag-of-words backends: rank-bm25 and bm25s
# ---------------------------------------------------------------------------------------------


@dataclass
class BagOfWordsIndex:
    """Shared part of the in-memory backends: documents as analyzed terms, a postings map for the
    AND/OR candidate filter, a model (re)built lazily on the first search after an add()."""

    tokenizer: Tokenizer
    ids: list[str] = field(default_factory=list)
    docs: list[list[str]] = field(default_factory=list, repr=False)
    postings: dict[str, set[int]] = field(default_factory=dict, repr=False)
    _model: Any = field(default=None, init=False, repr=False)

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
        distinct = list(dict.fromkeys(terms))
        sets = [self.postings.get(t, set()) for t in distinct]
        if getattr(self.tokenizer, "join", "or") == "and":
            found = set.intersection(*sets) if sets else set()
        else:
            found = set().union(*sets)
        return sorted(found)

    def search(self, query: str, k: int) -> Hits:
        terms = query_terms_for_bag_of_words(self.tokenizer, query)
        if k <= 0 or not terms:
            return []
        docs = self.candidates(terms)
        if not docs:
            return []
        if self._model is None:
            self._model = self.build()
        scores = self.scores(terms, docs)
        return rank_leg([(self.ids[d], float(s)) for d, s in zip(docs, scores)], k)

    def build(self) -> Any:
        raise NotImplementedError

    def scores(self, terms: list[str], docs: list[int]) -> Sequence[float]:
        raise NotImplementedError


RANK_BM25_VARIANTS = ("okapi", "bm25l", "bm25plus")


@dataclass
class RankBM25Index(BagOfWordsIndex):
    """rank-bm25 (Okapi, BM25L or BM25+).  Parameters default to the library's own."""

    variant: str = "okapi"
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25  # Okapi: negative idf floored at epsilon x mean idf
    delta: float | None = None  # BM25L 0.5, BM25+ 1.0

    def __post_init__(self) -> None:
        if self.variant not in RANK_BM25_VARIANTS:
            raise ValueError(f"rank-bm25 variant must be one of {RANK_BM25_VARIANTS}, got {self.variant!r}")

    def build(self) -> Any:
        import rank_bm25

        if self.variant == "okapi":
            return rank_bm25.BM25Okapi(self.docs, k1=self.k1, b=self.b, epsilon=self.epsilon)
        if self.variant == "bm25l":
            return rank_bm25.BM25L(self.docs, k1=self.k1, b=self.b, delta=0.5 if self.delta is None else self.delta)
        return rank_bm25.BM25Plus(self.docs, k1=self.k1, b=self.b, delta=1.0 if self.delta is None else self.delta)

    def scores(self, terms: list[str], docs: list[int]) -> Sequence[float]:
        return self._model.get_batch_scores(terms, docs)


@LEXICAL_BACKENDS.register("rank-bm25-okapi")
def _rank_bm25_okapi(tokenizer: Tokenizer, conn: Any = None, k1: float = 1.5, b: float = 0.75,
                     epsilon: float = 0.25) -> RankBM25Index:
    return RankBM25Index(tokenizer, variant="okapi", k1=k1, b=b, epsilon=epsilon)


@LEXICAL_BACKENDS.register("rank-bm25-l")
def _rank_bm25_l(tokenizer: Tokenizer, conn: Any = None, k1: float = 1.5, b: float = 0.75,
                 delta: float = 0.5) -> RankBM25Index:
    return RankBM25Index(tokenizer, variant="bm25l", k1=k1, b=b, delta=delta)


@LEXICAL_BACKENDS.register("rank-bm25-plus")
def _rank_bm25_plus(tokenizer: Tokenizer, conn: Any = None, k1: float = 1.5, b: float = 0.75,
                    delta: float = 1.0) -> RankBM25Index:
    return RankBM25Index(tokenizer, variant="bm25plus", k1=k1, b=b, delta=delta)


BM25S_METHODS = ("robertson", "lucene", "atire", "bm25l", "bm25+")


@dataclass
class BM25sIndex(BagOfWordsIndex):
    """bm25s: scores precomputed into a sparse matrix at index time, so a query is a few array sums."""

    method: str = "lucene"
    k1: float = 1.5
    b: float = 0.75
    delta: float = 0.5

    def __post_init__(self) -> None:
        if self.method not in BM25S_METHODS:
            raise ValueError(f"bm25s method must be one of {BM25S_METHODS}, got {self.method!r}")

    def build(self) -> Any:
        import bm25s

        model = bm25s.BM25(k1=self.k1, b=self.b, delta=self.delta, method=self.method)
        model.index(self.docs, show_progress=False)
        return model

    def scores(self, terms: list[str], docs: list[int]) -> Sequence[float]:
        token_ids = self._model.get_tokens_ids(terms)
        all_scores = np.asarray(self._model.get_scores_from_ids(token_ids), dtype=np.float64)
        return all_scores[docs]


@LEXICAL_BACKENDS.register("bm25s")
def _bm25s(tokenizer: Tokenizer, conn: Any = None, method: str = "lucene", k1: float = 1.5, b: float = 0.75,
           delta: float = 0.5) -> BM25sIndex:
    return BM25sIndex(tokenizer, method=method, k1=k1, b=b, delta=delta)
