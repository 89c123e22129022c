"""Fusion: the two legs' candidate lists -> one ranked list.  Each method maps raw leg scores the
way its system does (see SPEC.md sections 2-4).

Every fusion is a callable Legs -> list[Hit], ranked by (score desc, id), with vector_score and
text_score holding the per-leg scores that went into the sum (0.0 when that leg did not find the
chunk) and keyword_hit telling whether the lexical leg found it.  Each also states `leg_weights`: its
(vector, text) weights scaled to sum 1, which post-processing reads (OpenClaw's keyword fallback floor).

    name            leg scores                                  fused score
    weighted        cosine ; OpenClaw bm25RankToScore (or the   vw*v + tw*t   (OpenClaw)
                    keyword leg's boosted score, 2026.8)
    keyword-only    the keyword leg's boosted score (or         t; ties by mapped BM25 (OpenClaw FTS-only)
                    bm25RankToScore)
    wsum            min-max or z-score per query and leg        vw*v + tw*t   (generic, = ranx wsum)
    rrf  plain      rank r (1-based) in each leg                sum w/(k + r), k = 60
    rrf  qmd        as plain, list weights 2.0                  + 0.05 if first anywhere, else
                                                                + 0.02 if best rank is 2 or 3 (QMD)
    multiplicative  cosine ; sigmoid(raw/5)                     v * 1.15 if BM25 hit, else v; BM25-only
                                                                -> b  (memory-lancedb-pro per seed 004)
    lancedb-pro     1/(1+d), d = 1-cos ; sigmoid(raw/5)         max(0.7v+0.3b, 0.92b if b >= 0.75);
                                                                BM25-only -> b; drop < 0.3 (its code
                                                                since 2026-03-12)
    combsum         min-max or z-score                          v + t
    combmnz         min-max or z-score                          (v + t) x number of legs that found it
    qmd-documents   rank of each FILE in each list (the vector  sum w/(k + r) over any number of lists
                    list keeps a file's best chunk), 20 files   (+ Legs.extra), QMD's weights and
                    per list                                    bonuses; top 40 files, ids = paths

Each method but qmd-documents is one formula over arrays, `fuse_arrays(LegArrays) -> FusedArrays`
(harness.trace): its per-query call fuses the query's legs as a one-row array through it, and the
sweep's fast scorer (harness.evaluation.fast_scoring) fuses every query of a sweep through the same
method, so the two cannot disagree.  qmd-documents fuses files, not the chunks of the candidate
matrix, and has no array form: the sweep scores it through its per-query call.

A leg is read best first by (raw score desc, id) whatever order it arrives in, so every method is
invariant to the order of its input lists and rank-based methods break ties the same way everywhere.
QMD's "1/rank when there is no reranker" is not a fusion: it is the post-processing stage
`reciprocal_rank` (see harness.stages.postprocess for why).

Modules: base (Legs, Hit, the Fusion protocol, shared helpers), openclaw (weighted, keyword-only,
lexical-only, vector-only), normalised (wsum, combsum, combmnz), rrf, lancedb (multiplicative, lancedb-pro),
qmd_documents (qmd-documents, reciprocal_rank_fusion, best_chunk_per_document).
"""
from harness.stages.fusion.base import (
                                       FUSIONS,
                                       Fusion,
                                       Hit,
                                       Legs,
                                       RankedList,
                                       fused_hits,
                                       normalised_weights,
                                       rank_hits,
                                       ranked_leg,
)
from harness.stages.fusion.lancedb import (
                                       LanceDBProFusion,
                                       MultiplicativeFusion,
                                       clamp01,
                                       inverse_distance,
                                       sigmoid_bm25,
)
from harness.stages.fusion.normalised import (
                                       NORMALISATIONS,
                                       CombMNZ,
                                       CombSum,
                                       WeightedSumFusion,
                                       min_max,
                                       z_score,
)
from harness.stages.fusion.openclaw import (
                                       KeywordOnly,
                                       LexicalOnly,
                                       VectorOnly,
                                       WeightedFusion,
)
from harness.stages.fusion.qmd_documents import (
                                       FusedDocument,
                                       QmdDocumentFusion,
                                       best_chunk_per_document,
                                       reciprocal_rank_fusion,
)
from harness.stages.fusion.rrf import RRFFusion

__all__ = ["FUSIONS", "Fusion", "Hit", "Legs", "RankedList", "fused_hits", "normalised_weights", "rank_hits", "ranked_leg",
           "LanceDBProFusion", "MultiplicativeFusion", "clamp01", "inverse_distance", "sigmoid_bm25",
           "NORMALISATIONS", "CombMNZ", "CombSum", "WeightedSumFusion", "min_max", "z_score",
           "KeywordOnly", "LexicalOnly", "VectorOnly", "WeightedFusion", "RRFFusion",
           "FusedDocument", "QmdDocumentFusion", "best_chunk_per_document", "reciprocal_rank_fusion"]
