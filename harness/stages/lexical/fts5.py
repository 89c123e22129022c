"""The reference lexical backend: a real SQLite FTS5 table executing the tokenizer's QueryPlan."""
from __future__ import annotations

from collections import Counter
from typing import Literal, Sequence

import apsw
from pydantic.json_schema import SkipJsonSchema

from harness.db import connect
from harness.ranking import top_k
from harness.registry import stage
from harness.stages.chunkers import Chunk
from harness.stages.lexical.base import (
    LEXICAL_BACKENDS,
    LIKE_ONLY_RAW_SCORE,
    Hits,
    RankedHits,
)
from harness.stages.lexical.openclaw_fallback import (
    keyword_search_with_fallback,
    tie_order,
)
from harness.stages.tokenizers import Join, QueryPlan, Tokenizer


def like_pattern(term: str) -> str:
    """`%term%` for LIKE ... ESCAPE '\\': the term's own %, _ and \\ match literally."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


@LEXICAL_BACKENDS.register("fts5")
@stage
class FTS5Index:
    """A real SQLite FTS5 table; bm25() with FTS5's fixed k1 = 1.2, b = 0.75.

    A query is answered by executing the tokenizer's QueryPlan (tokenizers.QueryPlan): a MATCH, LIKE
    terms combined with it by AND or OR, and a LIKE fallback run on error or on zero rows.  `routes`
    counts which path answered each query ("match", "match+like", "like", "fallback", "empty").

    keyword_fallback = "2026.8" answers as OpenClaw 2026.8.1's searchKeywordWithFallback
    (lexical/openclaw_fallback.py): the strict query first, then per-keyword searches when it has fewer
    than k hits, merged and ranked by the boosted score, which the hits carry (RankedHits) for fusion.
    """

    tokenizer: SkipJsonSchema[Tokenizer]
    """the run's tokenizer (from the pipeline)"""
    conn: SkipJsonSchema[apsw.Connection | None] = None
    """the run's SQLite connection (from the pipeline); None: a new in-memory database"""
    keyword_fallback: Literal["none", "2026.8"] = "none"
    """"2026.8": OpenClaw's keyword fallback (extractKeywords terms searched one by one when the strict
    query has fewer than k hits) and boosted score; "none": the strict query only"""

    def __post_init__(self) -> None:
        self.ids: list[str] = []
        self.chunks: dict[str, Chunk] = {}
        self.routes: Counter = Counter()
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
                if self.keyword_fallback != "none":
                    self.chunks[chunk.id] = chunk  # the boosted score reads its text and path
                self.conn.execute("INSERT INTO chunks_fts(rowid, text, chunk_id) VALUES (?, ?, ?)",
                                  (len(self.ids), self.tokenizer.index_text(chunk.text), chunk.id))

    def search(self, query: str, k: int) -> Hits:
        if self.keyword_fallback == "none" or k <= 0:
            return self.search_strict(query, k)
        trigram = getattr(self.tokenizer, "name", "").startswith("trigram")
        hits = keyword_search_with_fallback(query, k, self.search_strict, self.chunks.__getitem__, trigram)
        return RankedHits([(h.id, h.raw) for h in hits], {h.id: h.score for h in hits},
                          tie_order(hits, self.chunks.__getitem__))

    def search_strict(self, query: str, k: int) -> Hits:
        """The query's own plan, no fallback: top-k (chunk id, raw BM25)."""
        plan = self.tokenizer.query_plan(query)
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

    def match(self, expression: str, k: int) -> Hits:
        """Top-k rows of a ready FTS5 MATCH expression (query expansion's OR-joined terms)."""
        return self._match(expression, k) if k > 0 else []

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
        return top_k(matched + extra, k)

    def _match(self, expression: str, k: int, like: tuple[str, ...] = ()) -> Hits:
        like_sql = "".join(" AND text LIKE ? ESCAPE '\\'" for _ in like)
        rows = self.conn.execute(
            "SELECT chunk_id, bm25(chunks_fts) FROM chunks_fts "
            f"WHERE chunks_fts MATCH ?{like_sql} ORDER BY bm25(chunks_fts), chunk_id LIMIT ?",
            (expression, *map(like_pattern, like), k),
        ).fetchall()
        return top_k([(cid, -rank) for cid, rank in rows], k)

    def _like(self, terms: tuple[str, ...], join: Join, k: int) -> Hits:
        if not terms:
            return []
        where = f" {join.upper()} ".join("text LIKE ? ESCAPE '\\'" for _ in terms)
        rows = self.conn.execute(
            f"SELECT chunk_id FROM chunks_fts WHERE {where} ORDER BY chunk_id LIMIT ?",
            (*map(like_pattern, terms), k),
        ).fetchall()
        return [(cid, LIKE_ONLY_RAW_SCORE) for (cid,) in rows]
