"""What the scale experiment measures: which backends, one backend's build time, query latency, peak
memory and recall at one size (in a child process), the stream reads beside its queries, and the
machine's memory bandwidth."""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from harness.stages.lexical import LEXICAL_BACKENDS
from harness.stages.tokenizers import TOKENIZERS
from harness.stages.vector import VECTOR_BACKENDS
from harness.studies.scale.corpus import K, ScaleCorpus
from harness.studies.scale.process import (
    current_rss_kib,
    peak_rss_kib,
    release_free_heap,
    reset_peak_rss,
)

FLOAT_BYTES = 4
STREAM_READS = 10  # streaming reads of the vectors before and again after each vector backend's queries


def recall_at_k(found: Sequence[Sequence[str]], truth: Sequence[Sequence[str]]) -> float:
    scores = [len(set(f) & set(t)) / len(t) for f, t in zip(found, truth) if t]
    return float(np.mean(scores)) if scores else float("nan")


# ---------------------------------------------------------------------------------------------
# Backends
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BackendSpec:
    leg: str  # "vector" | "lexical"
    backend: str
    tokenizer: str | None = None
    blas_threads: int | None = None  # limit BLAS to this many threads (None: the library's default)

    @property
    def label(self) -> str:
        label = self.backend if self.tokenizer is None else f"{self.backend}/{self.tokenizer}"
        if self.blas_threads is not None:
            label += f" [{self.blas_threads} BLAS thread{'s' if self.blas_threads > 1 else ''}]"
        return label


def _uses_blas(name: str) -> bool:
    return VECTOR_BACKENDS.create(name, dim=4).uses_blas  # the VectorIndex protocol states it


def default_specs(bag_tokenizer: str = "jieba", vector: Sequence[str] | None = None,
                  tokenizers: Sequence[str] | None = None,
                  lexical: Sequence[str] | None = None) -> tuple[list[BackendSpec], list[str]]:
    """Every registered vector backend; FTS5 with every registered tokenizer; every other registered
    lexical backend (rank-bm25, bm25s, ...) with `bag_tokenizer`.  Names asked for but not registered
    are skipped with a message (second return value)."""
    messages: list[str] = []

    def known(names: Sequence[str] | None, registry: Any, what: str) -> list[str]:
        if names is None:
            return registry.names()
        missing = [n for n in names if n not in registry]
        for name in missing:
            messages.append(f"{what} {name!r} is not registered (have {', '.join(registry.names())}); skipped")
        return [n for n in names if n in registry]

    specs = []
    for name in known(vector, VECTOR_BACKENDS, "vector backend"):
        specs.append(BackendSpec("vector", name))
        # a BLAS backend also on one thread: on a busy 2-core machine a multi-threaded gemv waits for
        # its descheduled worker thread, and sqlite-vec always scans on one thread
        if _uses_blas(name) and (os.cpu_count() or 1) > 1:
            specs.append(BackendSpec("vector", name, blas_threads=1))
    lexical_names = known(lexical, LEXICAL_BACKENDS, "lexical backend")
    if "fts5" in lexical_names:
        specs += [BackendSpec("lexical", "fts5", t) for t in known(tokenizers, TOKENIZERS, "tokenizer")]
    others = [name for name in lexical_names if name != "fts5"]
    if others and bag_tokenizer not in TOKENIZERS:
        messages.append(f"tokenizer {bag_tokenizer!r} is not registered; skipped {', '.join(others)}")
        others = []
    specs += [BackendSpec("lexical", name, bag_tokenizer) for name in others]
    return specs, messages


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def measure_backend(spec: BackendSpec, corpus: ScaleCorpus, k: int = K) -> dict[str, Any]:
    """Build one index over the corpus and time its queries (run in a child process)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    with threadpool_limits(limits=spec.blas_threads, user_api="blas"):
        row = _measure_backend(spec, corpus, k)
        row["blas_threads"] = max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"),
                                  default=None)
    return row


def _measure_backend(spec: BackendSpec, corpus: ScaleCorpus, k: int) -> dict[str, Any]:
    release_free_heap()
    method = reset_peak_rss()
    base = current_rss_kib()
    t0 = time.perf_counter()
    if spec.leg == "vector":
        index = VECTOR_BACKENDS.create(spec.backend, dim=corpus.vectors.shape[1])
        queries: Sequence[Any] = list(corpus.vector_queries)
    else:
        index = LEXICAL_BACKENDS.create(spec.backend, tokenizer=TOKENIZERS.create(spec.tokenizer))
        queries = corpus.text_queries
    setup_s = time.perf_counter() - t0
    setup_kib = current_rss_kib() - base
    t1 = time.perf_counter()
    if spec.leg == "vector":
        index.add(corpus.ids, corpus.vectors)
    else:
        index.add(corpus.chunks)
    index.search(queries[0], k)  # warm-up; completes lazily built models
    build_s = time.perf_counter() - t1
    # vector leg: streaming reads of the corpus's float32 vectors (the bytes an exact scan must read)
    # right before and right after the queries, so the reference sees the same machine load; not
    # interleaved, which would let BLAS worker threads fall asleep between queries and slow them
    stream = StreamRead(corpus.vectors) if spec.leg == "vector" else None
    streams = [stream.once() for _ in range(STREAM_READS)] if stream is not None else []
    latencies, found = [], []
    for query in queries[1:]:
        t = time.perf_counter()
        hits = index.search(query, k)
        latencies.append(time.perf_counter() - t)
        found.append([cid for cid, _ in hits])
    if stream is not None:
        streams += [stream.once() for _ in range(STREAM_READS)]
        stream.close()
    peak_kib = peak_rss_kib() - base  # the stream reads allocate nothing
    lat_ms = [x * 1e3 for x in latencies]
    row: dict[str, Any] = {
        "label": spec.label, "leg": spec.leg, "backend": spec.backend, "tokenizer": spec.tokenizer,
        "size": corpus.size, "setup_s": setup_s, "build_s": build_s,
        "query_ms_p50": _percentile(lat_ms, 50), "query_ms_p95": _percentile(lat_ms, 95),
        "query_ms_min": min(lat_ms), "query_ms_mean": float(np.mean(lat_ms)), "queries": len(lat_ms),
        "peak_mib": peak_kib / 1024, "setup_mib": setup_kib / 1024, "memory_method": method,
        "mean_hits": float(np.mean([len(f) for f in found])),
    }
    if spec.leg == "vector":
        row["recall_at_10"] = recall_at_k(found, corpus.truth)
        row["exact"] = index.exact  # the VectorIndex protocol states exact and scan_bytes_per_vector
        row["scan_bytes"] = int(index.scan_bytes_per_vector * corpus.size)
        # only the quantised backends (an approximate scan, then exact re-scoring) have a candidate factor
        row["oversample"] = None if index.exact else index.oversample
        row["paired_stream_ms"] = _percentile([x * 1e3 for x in streams], 50)
        row["paired_gbps"] = corpus.vectors.nbytes / (row["paired_stream_ms"] / 1e3) / 1e9
    return row


class StreamRead:
    """One streaming read of an array: the faster of np.max on one thread and on every core."""

    def __init__(self, array: np.ndarray, threads: int | None = None):
        self.flat = np.ascontiguousarray(array).reshape(-1)
        self.threads = threads or os.cpu_count() or 1
        self.parts = np.array_split(self.flat, self.threads)
        self.pool = ThreadPoolExecutor(self.threads)

    def once(self) -> float:
        one = _timed(self.flat.max)
        every = _timed(lambda: list(self.pool.map(np.max, self.parts)))
        return min(one, every)

    def close(self) -> None:
        self.pool.shutdown()


# ---------------------------------------------------------------------------------------------
# Memory bandwidth
# ---------------------------------------------------------------------------------------------


def measure_bandwidth(mib: int = 512, repeats: int = 7, threads: int | None = None) -> dict[str, Any]:
    """Streaming-read bandwidth: best time of each kernel over a buffer far larger than the caches."""
    threads = threads or os.cpu_count() or 1
    buf = np.random.default_rng(5).standard_normal(mib * 2 ** 20 // FLOAT_BYTES, dtype=np.float32)
    parts = np.array_split(buf, threads)
    pool = ThreadPoolExecutor(threads)
    kernels: dict[str, Callable[[], Any]] = {
        "max, 1 thread": buf.max,
        "float64 sum, 1 thread": lambda: buf.view(np.float64).sum(),
        "dot, 1 thread": lambda: float(buf @ buf),
        f"max, {threads} threads": lambda: list(pool.map(np.max, parts)),
        f"dot, {threads} threads": lambda: list(pool.map(lambda p: float(p @ p), parts)),
    }
    results = {}
    try:
        for name, kernel in kernels.items():
            kernel()  # warm
            best = min(_timed(kernel) for _ in range(repeats))
            results[name] = buf.nbytes / best / 1e9
    finally:
        pool.shutdown()
    best_kernel = max(results, key=results.get)
    return {"buffer_bytes": int(buf.nbytes), "repeats": repeats, "gbps": results,
            "best_gbps": results[best_kernel], "best_kernel": best_kernel}


def _timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def stream_ms(n: int, dim: int, gbps: float) -> float:
    """Time to read n x dim float32 once at `gbps` GB/s."""
    return n * dim * FLOAT_BYTES / (gbps * 1e9) * 1e3
