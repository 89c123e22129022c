"""SQLite's default tokenizer, with OpenClaw's query tokens (SPEC.md section 2)."""
from __future__ import annotations

from typing import ClassVar, Literal

from harness.registry import stage
from harness.stages.tokenizers.base import (
    ASCII_QUERY_TOKEN,
    TOKENIZERS,
    UNICODE_QUERY_TOKEN,
    Join,
    QueryTermsTokenizer,
    join_terms,
)


@TOKENIZERS.register("unicode61")
@stage
class Unicode61(QueryTermsTokenizer):
    """SQLite's default tokenizer.  A run of Chinese characters is ONE token, so 检索配置 never
    matches 混合检索配置说明 - the CJK failure this harness measures."""

    query_tokens: Literal["unicode", "ascii"] = "unicode"
    """"unicode" (OpenClaw since 2026-02-15) or "ascii" (before: Chinese queries -> no FTS query)"""
    join: Join = "and"
    """how query terms combine: "and" (OpenClaw) or "or\""""

    name: ClassVar[str] = "unicode61"
    fts5_tokenize: ClassVar[str] = "unicode61"

    def __post_init__(self) -> None:
        self._pattern = UNICODE_QUERY_TOKEN if self.query_tokens == "unicode" else ASCII_QUERY_TOKEN

    def query_terms(self, query: str) -> list[str]:
        return self._pattern.findall(query)

    def match_expression(self, query: str) -> str | None:
        # every OpenClaw query token is quoted, even one without a token character (e.g. "_")
        return join_terms(self.query_terms(query), self.join)
