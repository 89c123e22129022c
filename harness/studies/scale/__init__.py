"""Scale experiment: how index build time, query latency and peak memory grow with corpus size, for
every vector and lexical backend, beside the physical limit of a vector scan (memory bandwidth).

The corpus is synthetic, so 100k chunks need no hour-long embedding:

* Text: words drawn from the project's own datasets/king78 prose (records and daily logs), segmented
  with the registered jieba tokenizer.  Chinese words and Latin terms (Python, n8n, API, 2025) keep
  their king78 frequencies, Latin terms appear with king78's share of word tokens, clause and sentence
  marks at king78's rate.  Chinese is written without spaces, Latin terms are space-separated, as in
  king78 ("自学 Python 和 n8n").  The vocabulary is closed (king78's words only), so posting lists grow
  linearly with the corpus: a pessimistic case for the inverted indexes.
* Vectors: unit vectors of the embedder's dimension (384) from a seeded hierarchical topic model:
  v = a*T + b*S + c*E (topic, sub-topic and own random unit directions, normalised), so chunks of one
  sub-topic have cosine ~ `subtopic_cos`, of one topic ~ `topic_cos`, others ~ 0; topic popularity is
  Zipf-like.  A query is a chunk's vector plus noise (cosine ~ `query_cos` to it).  Text and vectors
  are independent: each leg is timed on its own.

Method:
* Each (backend, size) runs in a forked child process, so one backend's caches, dictionaries and
  allocator state cannot leak into another's figures.  The child returns freed heap pages to the
  kernel (malloc_trim), resets its resident-set high-water mark (writing 5 to /proc/self/clear_refs),
  builds the index, runs the queries, and reports
  peak memory = VmHWM - VmRSS at the reset: the memory the backend added on top of the shared corpus.
* build = tokenizer/connection setup excluded (reported as setup), then add() of every chunk plus one
  warm-up query, since rank-bm25 and bm25s build their model lazily on the first search.
* latency: median and p95 over a fixed number of queries after the warm-up, k = 10.
* stream time of a size: in each vector backend's child, 10 streaming reads of the corpus's float32
  vectors (np.max, one thread or every core, the faster) right before and 10 right after its queries;
  the fastest backend median of these at that size is the size's stream time, taken under the same
  machine load as the queries.  The headline verdict (within 2x) uses it; the ratio to the run's best
  bandwidth is reported beside it.
* bandwidth: best of several repetitions of streaming reads (max, dot, float64 sum) over a 512 MiB
  buffer, on one thread and on every core, measured at the start, before the largest size and at the
  end of the same run; the best is the limit (other work on a shared machine only lowers a reading).
  stream time = n x dim x 4 bytes / bandwidth; each vector backend is also shown as a ratio of its
  median latency to that time.
* fitted exponent: least-squares slope of log(value) over log(size).

Entry points: run_scale(...) returns the result; harness.reporting.scale writes it (scale.json, scale.md,
scale.png) and harness.cli.scale.main(argv) does both for reports/scale/; `--quick` runs 1k and 10k only.

Modules: corpus (vocabulary, synthetic text and vectors, queries and their exact top-k), process
(forked children, resident-set readings), measure (backends, one backend at one size, bandwidth),
run (the driver, exponents, headline); the report is harness.reporting.scale, the command line
harness.cli.scale.
"""
from harness.studies.scale.corpus import (
    DEFAULT_MEAN_CHARS,
    DIM,
    K,
    ScaleCorpus,
    SyntheticText,
    Vocabulary,
    build_vocabulary,
    exact_top_ids,
    king78_prose,
    lexical_queries,
    make_corpus,
    query_vectors,
    script_mix,
    synthetic_texts,
    synthetic_vectors,
    vocabulary_from_texts,
)
from harness.studies.scale.measure import (
    BackendSpec,
    StreamRead,
    default_specs,
    measure_backend,
    measure_bandwidth,
    recall_at_k,
    stream_ms,
)
from harness.studies.scale.process import ChildError, run_in_child
from harness.studies.scale.run import (
    DEFAULT_SIZES,
    QUICK_SIZES,
    fit_exponent,
    run_scale,
    summarize,
)

__all__ = [
    "DEFAULT_MEAN_CHARS", "DEFAULT_SIZES", "DIM", "K", "QUICK_SIZES", "BackendSpec", "ChildError", "ScaleCorpus",
    "StreamRead", "SyntheticText", "Vocabulary", "build_vocabulary", "default_specs", "exact_top_ids",
    "fit_exponent", "king78_prose", "lexical_queries", "make_corpus", "measure_backend",
    "measure_bandwidth", "query_vectors", "recall_at_k", "run_in_child", "run_scale",
    "script_mix", "stream_ms", "summarize", "synthetic_texts", "synthetic_vectors", "vocabulary_from_texts",
]
