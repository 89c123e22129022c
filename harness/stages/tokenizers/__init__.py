"""Tokenizers: how text is cut into terms at index time and how a query becomes a search.

A tokenizer stage is shared by every lexical backend (the Tokenizer protocol in base.py):

* the FTS5 backend creates its table with `fts5_tokenize`, stores `index_text(text)` and answers a query
  by executing `query_plan(query)` (see `QueryPlan`; `match_expression(query)` is its MATCH part);
* the bag-of-words backends (rank-bm25, bm25s) index `analyze(text)` and score `analyze_query(query)`.
  `analyze` runs SQLite's own FTS5 tokenizer over `index_text(text)`, so every backend ranks exactly the
  terms FTS5 indexes (same folding, same Unicode tables, same document lengths).

Registered tokenizers (all take `join = "and" | "or"`: how query terms combine; multi-term Chinese
queries joined with AND return nothing, OpenClaw issue #83384):

  unicode61      SQLite's default; a run of Chinese characters is ONE token (the CJK failure).
  trigram        FTS5 trigram (case_sensitive 0) as OpenClaw ships it: a CJK token under 3 characters
                 goes to LIKE, longer ones are quoted trigram phrases; LIKE fallback only if MATCH raises.
  trigram-fixed  as proposed upstream (#92164/#92341): every CJK token goes to LIKE, and an OR-joined
                 LIKE fallback over all query tokens runs when the query returns zero rows.
  jieba          jieba segmentation at index and query time, words stored space-separated in a unicode61
                 table (seed 002); mode "precise" or "search"; optional user dictionary.
  cjk-char       every Han/Kana/Hangul character its own token; CJK query terms become ordered character
                 phrases (QMD, 2026-05).
  cjk-bigram     overlapping character bigrams for CJK runs (a lone CJK character stays a unigram).
  opencc         OpenCC script folding (t2s) around a `base` tokenizer, at index and query time.
  colloquial-expansion  a colloquial -> technical list around a `base` tokenizer (query side, OR-ed).
  lancedb        LanceDB's default full-text analyzer (tantivy simple tokenizer, 40-byte limit, lower case,
                 English stemming and stop words, ASCII folding): memory-lancedb-pro's table.
  qmd            QMD 2.8.3: porter unicode61 over CJK-spaced text; QMD's query builder (prefix terms,
                 phrases, negation, hyphen/dot branches; `qmd_query_bug` keeps its CJK '-'/'.' failure).

jieba, cjk-char and cjk-bigram NFKC-normalise index and query text by default (`normalize = "nfkc"`),
so full-width ＡＰＩ matches API; unicode61 and the trigram variants reproduce SQLite/OpenClaw as they are
and do not normalise.

Modules: base (TOKENIZERS, the Tokenizer protocol, QueryPlan, QueryTermsTokenizer, FTS5 helpers),
unicode61, trigram (trigram, trigram-fixed), cjk (cjk-char, cjk-bigram and the CJK character table),
jieba, lancedb, qmd.
"""
from harness.stages.tokenizers.base import (
    TOKENIZERS,
    Join,
    Normalize,
    QueryPlan,
    QueryTermsTokenizer,
    Tokenizer,
    fts5_terms,
    has_token_char,
    join_terms,
    quote_fts5,
)
from harness.stages.tokenizers.cjk import (
    CjkBigram,
    CjkChar,
    CjkTermsTokenizer,
    bigrams,
    cjk_segments,
    is_cjk_char,
)
from harness.stages.tokenizers.folding import ColloquialExpansion, OpenCCFolding
from harness.stages.tokenizers.jieba import Jieba
from harness.stages.tokenizers.lancedb import LanceDBAnalyzer
from harness.stages.tokenizers.qmd import (
    QmdTokenizer,
    normalize_cjk_for_fts,
    qmd_query_parts,
)
from harness.stages.tokenizers.trigram import Trigram, TrigramFixed
from harness.stages.tokenizers.unicode61 import Unicode61

__all__ = ["TOKENIZERS", "Join", "Normalize", "QueryPlan", "QueryTermsTokenizer", "Tokenizer", "fts5_terms",
           "has_token_char", "join_terms", "quote_fts5",
           "CjkBigram", "CjkChar", "CjkTermsTokenizer", "bigrams", "cjk_segments", "is_cjk_char",
           "ColloquialExpansion", "OpenCCFolding", "Jieba", "LanceDBAnalyzer", "QmdTokenizer", "normalize_cjk_for_fts", "qmd_query_parts", "Trigram", "TrigramFixed", "Unicode61"]
