"""QMD's LLM query expansion (SPEC.md section 3): the model rewrites the query into typed lines,
`lex:` (keywords, searched on the lexical index), `vec:` (a rephrased question) and `hyde:` (a
hypothetical answer), both searched on the vector index; each line a list with weight 1.0.  The
request goes through the run's chat model and its completion cache, so a rerun is offline."""
from __future__ import annotations

import re
from typing import Any

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

_LINE = re.compile(r"^\s*(lex|vec|hyde)\s*:\s*(.+?)\s*$", re.IGNORECASE)

SYSTEM_PROMPT = "You expand search queries for a personal memory search engine. Reply with the lines asked for only."


def expansion_prompt(query: str, lex: int, vec: int, hyde: bool) -> str:
    parts = [f"Query: {query}", "",
             f"Write {lex} line(s) 'lex: <keywords>' with 2-5 keywords or synonyms in the query's language,",
             f"{vec} line(s) 'vec: <the question rephrased>'"]
    if hyde:
        parts.append("and one line 'hyde: <a short passage that would answer it>'")
    parts.append("Nothing else.")
    return "\n".join(parts)


def parse_expansion(reply: str) -> list[tuple[str, str]]:
    """(kind, text) of every `lex:` / `vec:` / `hyde:` line, in order, repeats dropped."""
    out: list[tuple[str, str]] = []
    for line in reply.splitlines():
        match = _LINE.match(line)
        if match and (match[1].lower(), match[2]) not in out:
            out.append((match[1].lower(), match[2]))
    return out


@EXPANSIONS.register("llm")
@stage
class LLMExpansion:
    """QMD's expansion through the run's [chat] model (cached): lex lines searched on the lexical
    index, vec and hyde lines embedded as queries and searched on the vector index."""

    lex: int = Field(2, ge=0)
    """lex lines asked for"""
    vec: int = Field(1, ge=0)
    """vec lines asked for"""
    hyde: bool = True
    """ask for a hypothetical answer too"""
    probe: bool = True
    """skip expansion on a strong BM25 signal, as QMD does"""
    weight: float = Field(EXPANSION_WEIGHT, ge=0, allow_inf_nan=False)
    """RRF weight of each expansion list"""
    list_size: int = Field(LIST_SIZE, ge=1)
    """length of each expansion list"""
    chat: Any = None
    """the run's chat model (from the [chat] table, behind the completion cache)"""

    def __post_init__(self) -> None:
        if self.chat is None:
            raise ConfigError("expansion 'llm' needs a [chat] table naming the chat model "
                              "(e.g. name = \"openai-compatible\", base_url, model)")

    def expand(self, ctx: ExpansionContext) -> list[RankedList]:
        if self.probe and strong_signal(ctx.lexical):
            ctx.stats["expansion_skipped"] = True
            return []
        ctx.stats["expansion_skipped"] = False
        reply = self.chat.complete([{"role": "system", "content": SYSTEM_PROMPT},
                                    {"role": "user", "content": expansion_prompt(ctx.query, self.lex, self.vec,
                                                                                 self.hyde)}])
        lines = parse_expansion(reply)
        ctx.stats["expansion_terms"] = " | ".join(f"{k}: {t}" for k, t in lines)
        out = []
        for i, (kind, text) in enumerate(lines):
            if kind == "lex":
                out.append(RankedList(ctx.search_lexical(text, self.list_size), self.weight, "lexical", f"lex{i}"))
            else:
                out.append(RankedList(ctx.search_vector(ctx.embed_query(text), self.list_size), self.weight,
                                      "vector", f"{kind}{i}"))
        return out
