"""Lexical leg: BM25 over chunk text.  Returns raw BM25 scores (positive, larger is better);
fusion stages map them to [0, 1] the way each system does (see bm25_rank_to_score in base.py).

Backends (LEXICAL_BACKENDS), all fed by the same tokenizer stage:
  fts5             a real SQLite FTS5 table (the reference): bm25() with FTS5's fixed k1 1.2, b 0.75;
                   executes the tokenizer's QueryPlan, including the trigram LIKE paths
  rank-bm25-okapi  rank-bm25 BM25Okapi (defaults k1 1.5, b 0.75, epsilon 0.25)
  rank-bm25-l      rank-bm25 BM25L     (k1 1.5, b 0.75, delta 0.5)
  rank-bm25-plus   rank-bm25 BM25Plus  (k1 1.5, b 0.75, delta 1)
  bm25s            bm25s, a fast in-memory engine (k1 1.5, b 0.75, method "lucene")
  qmd-documents    QMD's index: one FTS5 row per whole file, filepath / title / body columns weighted
                   1.5 / 4.0 / 1.0; with unit = "document" its hits are file paths (document-level fusion)
  lancedb-fts      LanceDB's full-text search as memory-lancedb-pro's store runs it: a flat scan with
                   running statistics (its index is made on the empty table), or an index over every row;
                   then the store's substring fallback when nothing is found
The bag-of-words backends index tokenizer.analyze(text) and score tokenizer.analyze_query(query).
They return only documents that contain the query terms - any term for join "or", every distinct term
for join "and" - because BM25L/BM25+ give every document a positive score.  They know no phrases and
no LIKE: a quoted phrase (cjk-char, trigram) is scored as its separate terms.

Modules: base (LEXICAL_BACKENDS, the LexicalIndex protocol, LIKE_ONLY_RAW_SCORE, OpenClaw's rank ->
score maps RANK_TO_SCORE), fts5, bag_of_words (rank-bm25 x 3, bm25s), qmd_documents, lancedb_fts.
"""
from harness.stages.lexical.bag_of_words import (
    BagOfWordsIndex,
    BM25sIndex,
    RankBM25Index,
    RankBM25L,
    RankBM25Okapi,
    RankBM25Plus,
)
from harness.stages.lexical.base import (
    LEXICAL_BACKENDS,
    LIKE_ONLY_RAW_SCORE,
    RANK_TO_SCORE,
    Hits,
    LexicalIndex,
    bm25_rank_to_score,
    legacy_bm25_rank_to_score,
)
from harness.stages.lexical.fts5 import FTS5Index, like_pattern
from harness.stages.lexical.lancedb_fts import LanceDBFtsIndex
from harness.stages.lexical.qmd_documents import QmdDocumentIndex, qmd_title

__all__ = ["BagOfWordsIndex", "BM25sIndex", "RankBM25Index", "RankBM25L", "RankBM25Okapi", "RankBM25Plus",
           "LEXICAL_BACKENDS", "LIKE_ONLY_RAW_SCORE", "RANK_TO_SCORE", "Hits", "LexicalIndex",
           "bm25_rank_to_score", "legacy_bm25_rank_to_score", "FTS5Index", "like_pattern",
           "QmdDocumentIndex", "qmd_title", "LanceDBFtsIndex"]
