"""Query expansion (QMD's query side): extra ranked lists with weights, for a multi-list RRF.

    prf   LLM-free: RM3-style terms of the first pass's top results (lexical list) and the centroid of
          their vectors (vector list)
    llm   QMD's lex / vec / hyde lines from a chat model (cached)

Both run QMD's BM25 probe first (skip on a strong signal).  The lists ride on Legs.extra and are fused
by a fusion that accepts extra lists (rrf).

Modules: base (EXPANSIONS, RankedList, ExpansionContext, the probe), feedback (prf), llm (llm).
"""
from harness.stages.expansion.base import (
    EXPANSION_WEIGHT,
    EXPANSIONS,
    LIST_SIZE,
    ExpansionContext,
    QueryExpansion,
    RankedList,
    normalised_bm25,
    strong_signal,
)
from harness.stages.expansion.feedback import PseudoRelevanceFeedback, rm3_terms
from harness.stages.expansion.llm import LLMExpansion, expansion_prompt, parse_expansion

__all__ = ["EXPANSION_WEIGHT", "EXPANSIONS", "LIST_SIZE", "ExpansionContext", "QueryExpansion", "RankedList",
           "normalised_bm25", "strong_signal", "PseudoRelevanceFeedback", "rm3_terms", "LLMExpansion",
           "expansion_prompt", "parse_expansion"]
