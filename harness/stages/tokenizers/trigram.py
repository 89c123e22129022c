"""FTS5's trigram tokenizer with OpenClaw's query planner, as shipped and as proposed upstream
(SPEC.md section 2)."""
from __future__ import annotations

from typing import ClassVar, Iterable

from harness.registry import stage
from harness.stages.cjk import OPENCLAW_TRIGRAM_CJK
from harness.stages.tokenizers.base import (
    TOKENIZERS,
    UNICODE_QUERY_TOKEN,
    Join,
    QueryPlan,
    QueryTermsTokenizer,
    join_terms,
)


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


@TOKENIZERS.register("trigram")
@stage
class Trigram(QueryTermsTokenizer):
    """FTS5 `trigram case_sensitive 0` with OpenClaw's query planner as shipped: a CJK token of fewer
    than 3 characters cannot match a trigram index, so it goes to LIKE (combined with the MATCH by
    `join`); every other token is a quoted phrase that must occur contiguously; the LIKE fallback over
    all tokens (also joined by `join`) runs only when MATCH raises, not on zero rows.

    A bag-of-words backend scores the trigrams of each query token; it has no LIKE path, so a token
    under 3 characters contributes nothing there, as in a trigram index."""

    join: Join = "and"
    """how MATCH and LIKE terms combine: "and" (OpenClaw) or "or\""""

    name: ClassVar[str] = "trigram"
    fts5_tokenize: ClassVar[str] = "trigram case_sensitive 0"
    fixed: ClassVar[bool] = False  # the planner proposed upstream (TrigramFixed)

    def query_terms(self, query: str) -> list[str]:
        return UNICODE_QUERY_TOKEN.findall(query)

    def _goes_to_like(self, token: str) -> bool:
        if not OPENCLAW_TRIGRAM_CJK.search(token):
            return False
        return self.fixed or len(token) < 3

    def query_plan(self, query: str) -> QueryPlan:
        tokens = self.query_terms(query)
        like = _unique(t for t in tokens if self._goes_to_like(t))
        match_terms = [t for t in tokens if not self._goes_to_like(t)]
        if self.fixed:
            return QueryPlan(join_terms(match_terms, self.join), like, self.join,
                             fallback_like=_unique(tokens), fallback_join="or", fallback_when="empty")
        return QueryPlan(join_terms(match_terms, self.join), like, self.join,
                         fallback_like=_unique([*tokens, *like]), fallback_join=self.join, fallback_when="error")

    def match_expression(self, query: str) -> str | None:
        return self.query_plan(query).match


@TOKENIZERS.register("trigram-fixed")
@stage
class TrigramFixed(Trigram):
    """FTS5 trigram with the planner proposed upstream (#92164/#92341): every token containing CJK goes
    to LIKE, and when the query returns zero rows an OR-joined LIKE fallback over all query tokens runs
    (always OR, whatever `join`)."""

    name: ClassVar[str] = "trigram-fixed"
    fixed: ClassVar[bool] = True
