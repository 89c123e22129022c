"""Post-processing stages: a fused ranked list -> what the agent's memory_search returns.
Stages run in the order a preset lists them; each is (hits, context) -> hits and never mutates
the hits it is given (a sweep reuses one fused list under many stage settings).

    stage              system               what it does
    min_score          OpenClaw             minScore + maxResults, relaxed / fill keyword fallback
    mmr                OpenClaw             Jaccard MMR, lambda 0.7, over snippet tokens (cjk / ascii)
    temporal_decay     OpenClaw             x exp(-ln2 age/30 d), age from memory/YYYY-MM-DD.md
    importance         OpenClaw 2026.8      x (0.75 + 0.05 importance) from <!-- importance: N --> in MEMORY.md
    reciprocal_rank    QMD                  score = 1/rank (QMD's blend with no reranker)
    qmd_rerank         QMD                  [reranker] on each file's best chunk, position-aware blend;
                                            without a reranker 1/rank
    rerank             any                  [reranker] on the first `window` hits (presets whose system
                                            does not rerank)
    adaptive_retrieval memory-lancedb-pro   a message it would not search returns nothing (auto-recall)
    noise_filter       memory-lancedb-pro   drop denials, meta-questions, boilerplate (HEARTBEAT), < 5 chars
    cosine_rerank      memory-lancedb-pro   top 2 x limit: 0.6 cross-encoder + 0.4 fused with BM25 floors
                                            ([reranker]), else 0.7 fused + 0.3 cosine(query, chunk)
    recency_boost      memory-lancedb-pro   + 0.1 exp(-age/14 d), capped at 1
    importance_weight  memory-lancedb-pro   x (0.7 + 0.3 importance), importance 0.7 by default
    length_norm        memory-lancedb-pro   x 1/(1 + 0.5 log2(max(chars/500, 1)))
    hard_min_score     memory-lancedb-pro   drop score < 0.35 (no truncation)
    time_decay         memory-lancedb-pro   x (0.5 + 0.5 exp(-age/60 d))
    cosine_diversity   memory-lancedb-pro   cosine > 0.85 to an already kept chunk -> moved to the end

Score-changing stages re-rank by (score desc, id).  `mmr` and `cosine_diversity` instead return
their own order with scores unchanged, so they must come after every stage that re-ranks.
`min_score` keeps the order it is given, so OpenClaw's order "MMR, then filter by minScore and cut
to maxResults" is `mmr` followed by `min_score`.

memory-lancedb-pro order in its hybrid path (retriever.ts, no decay engine): fusion (drops < 0.3),
cosine_rerank, recency_boost, importance_weight, length_norm, hard_min_score, time_decay,
noise_filter, cosine_diversity, cut to limit; auto-recall gates the message first (adaptive_retrieval).

Stages that read a [reranker] say `uses_reranker = True`; a configuration with a [reranker] table and no
such stage is refused (pipeline.build_stages).  A stage that can skip a whole query says
`skips_query(text)`, which the per-query rows record as `skipped`.

Each stage also states `pass_threshold`, the score a query's top hit must reach for the query to pass
(OpenClaw's minScore for `min_score`; 0.0 for every stage that sets no such bar).  A run's threshold
is the highest of its stages' (pipeline.Stages.pass_threshold).

Modules: base (SearchContext, the PostProcessor protocol, reference times and memory-file dates),
openclaw (min_score, mmr, temporal_decay, importance), qmd (reciprocal_rank, qmd_rerank, rerank), lancedb_pro
(cosine_rerank, recency_boost, importance_weight, length_norm, hard_min_score, time_decay,
cosine_diversity), lancedb_filters (noise_filter, adaptive_retrieval).
"""
from harness.stages.postprocess.base import (
    DAY_SECONDS,
    POSTPROCESSORS,
    PostProcessor,
    ReferenceTime,
    SearchContext,
    age_days,
    as_utc_datetime,
    memory_date,
    reference_time,
)
from harness.stages.postprocess.lancedb_filters import (
    AdaptiveRetrieval,
    NoiseFilter,
    is_noise,
    should_skip_retrieval,
)
from harness.stages.postprocess.lancedb_pro import (
    CosineDiversity,
    CosineRerank,
    HardMinScore,
    ImportanceWeight,
    LengthNorm,
    RecencyBoost,
    TimeDecay,
    clamp01,
    cosine,
    lancedb_age,
)
from harness.stages.postprocess.openclaw import (
    MMR,
    MMR_TOKENIZERS,
    SNIPPET_CHARS,
    ImportanceMultiplier,
    MinScore,
    TemporalDecay,
    ascii_tokens,
    cjk_tokens,
    curated_importance,
    jaccard,
    snippet_similarity,
)
from harness.stages.postprocess.qmd import QmdRerank, ReciprocalRank, Rerank

__all__ = ["DAY_SECONDS", "POSTPROCESSORS", "PostProcessor", "ReferenceTime", "SearchContext", "age_days",
           "as_utc_datetime", "memory_date", "reference_time",
           "CosineDiversity", "CosineRerank", "HardMinScore", "ImportanceWeight", "LengthNorm", "RecencyBoost",
           "TimeDecay", "clamp01", "cosine", "lancedb_age",
           "ImportanceMultiplier", "curated_importance", "MMR", "MMR_TOKENIZERS", "SNIPPET_CHARS", "MinScore",
           "TemporalDecay", "ascii_tokens", "cjk_tokens", "jaccard", "snippet_similarity", "ReciprocalRank",
           "QmdRerank", "Rerank", "AdaptiveRetrieval", "NoiseFilter", "is_noise", "should_skip_retrieval"]
