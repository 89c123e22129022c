"""Fill the embedding cache ahead of a run (`harness embed EXPERIMENT`), on this machine or a Ray cluster.

    >>> from harness.config import load_experiment
    >>> from harness.studies.embed import fill_cache
    >>> from harness.studies.executor import make_executor
    >>> with make_executor("ray") as ex:
    ...     report = fill_cache([load_experiment("experiments/cmrc2018-dev.toml")], executor=ex)
    >>> report.computed, report.cached

Every configuration's layout is rendered and chunked with its own chunker; its chunks (role "passage")
and queries (role "query") are exactly the texts a run of it embeds.  Texts already in the cache are
skipped; the rest are cut into batches, one task each.  Workers only compute vectors; the driver is the
one writer, and it commits each batch in its own transaction as the batch comes back.  So an
interrupted run (an error, Ctrl-C, a lost cluster) keeps every vector already written, and a rerun
embeds only the rest.  A worker whose embedder reports another model id (a different package version on
the cluster) is refused: its vectors would be stored under the wrong model.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from harness.config import Experiment
from harness.errors import EmbeddingError
from harness.stages.embedders import (
    EMBEDDERS,
    NO_VECTORS_MODEL_ID,
    EmbeddingCache,
    text_sha256,
)
from harness.studies.executor import Executor, LocalExecutor
from harness.pipeline import (
    build_chunker,
    chunk_layout,
    dataset_parts,
    load_dataset,
    render_layout,
)

# 32 passages are ~13 s of e5 on one core: a task's scheduling (~4 ms) is noise, and an interruption
# loses at most the batches in flight
DEFAULT_BATCH_SIZE = 32


@dataclass(frozen=True)
class EmbeddingWork:
    """What one configuration embeds: its [embedder] table, the model id its vectors are stored
    under, and the distinct texts of each role (first-seen order)."""

    embedder: dict[str, Any]
    model_id: str
    texts: dict[str, list[str]]


def embedding_work(config: Experiment) -> EmbeddingWork:
    """Render and chunk the configuration's layout and read its queries (no embedding)."""
    counts_tokens = "token_count" in config.chunker.params  # only then is the model loaded here
    chunker = build_chunker(config, embedder_of_this_process(config.embedder.as_written()) if counts_tokens else None)
    passages, queries = [], []
    for _, part in dataset_parts(load_dataset(config)):  # a scoped data set (LoCoMo): each workspace
        layout = render_layout(part, config)
        try:
            passages += [c.text for c in chunk_layout(layout, chunker)]
        finally:
            layout.cleanup()
        queries += [q.text for q in part.queries()]
    model_id = embedder_of_this_process(config.embedder.as_written()).model_id
    return EmbeddingWork(config.embedder.as_written(), model_id,
                         {"passage": list(dict.fromkeys(passages)), "query": list(dict.fromkeys(queries))})


_EMBEDDERS: dict[str, Any] = {}


def embedder_of_this_process(table: dict[str, Any]) -> Any:
    """One embedder per [embedder] table per process: a Ray worker runs many batches and loads the
    model once, not once per batch."""
    key = json.dumps(table, sort_keys=True, default=str)
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = EMBEDDERS.create(table["name"], {k: v for k, v in table.items() if k != "name"},
                                           where="[embedder]")
    return _EMBEDDERS[key]


@dataclass(frozen=True)
class EmbedBatch:
    """One task: texts of one role for one embedder table."""

    embedder: dict[str, Any]
    model_id: str
    role: str
    texts: list[str]


def embed_batch(batch: EmbedBatch) -> tuple[str, np.ndarray]:
    """On a worker: (the worker's model id, float32 vectors of the batch's texts)."""
    inner = embedder_of_this_process(batch.embedder)
    return inner.model_id, np.asarray(inner.embed(batch.texts, batch.role), dtype=np.float32)


@dataclass
class EmbedReport:
    executor: str
    workers: int
    texts: int  # distinct (model, role, text) the configurations embed
    cached: int  # of those, already in the cache
    computed: int = 0  # embedded and written by this run
    batches: int = 0
    seconds: float = 0.0
    models: list[str] = field(default_factory=list)


def missing_batches(works: Iterable[EmbeddingWork], cache: EmbeddingCache,
                    batch_size: int) -> tuple[list[EmbedBatch], int, int]:
    """(batches of the texts not yet cached, distinct texts, of which cached)."""
    by_key: dict[tuple[str, str], tuple[dict[str, Any], dict[str, str]]] = {}
    for work in works:
        for role, texts in work.texts.items():
            table, seen = by_key.setdefault((work.model_id, role), (work.embedder, {}))
            for text in texts:
                seen.setdefault(text_sha256(text), text)
    batches, total, cached = [], 0, 0
    for (model_id, role), (table, by_sha) in by_key.items():
        have = cache.get_many(model_id, role, list(by_sha))
        missing = [text for sha, text in by_sha.items() if sha not in have]
        total, cached = total + len(by_sha), cached + len(have)
        batches += [EmbedBatch(table, model_id, role, missing[i:i + batch_size])
                    for i in range(0, len(missing), batch_size)]
    return batches, total, cached


def fill_cache(configs: Iterable[Experiment], *, executor: Executor | None = None,
               cache: EmbeddingCache | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
               on_batch: Callable[[EmbedReport, int], None] | None = None,
               compute: Callable[[EmbedBatch], tuple[str, np.ndarray]] = embed_batch,
               works: list[EmbeddingWork] | None = None) -> EmbedReport:
    """Embed every chunk and query of the configurations not yet in the cache, batch by batch.

    `on_batch(report, total_batches)` is called after each batch is committed (progress);
    `compute` runs on the workers (tests substitute a failing one); `works` skips re-rendering when the
    caller already has them.  On a failure, the batches already returned are in the cache and
    EmbeddingError says how many vectors were kept.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    t0 = time.perf_counter()
    executor = executor or LocalExecutor()
    cache = cache if cache is not None else EmbeddingCache()
    works = works if works is not None else [embedding_work(c) for c in configs]
    # an FTS-only preset's `none` embedder has no vectors to compute or keep (the cache would hold junk)
    works = [w for w in works if w.model_id != NO_VECTORS_MODEL_ID]
    batches, total, cached = missing_batches(works, cache, batch_size)
    report = EmbedReport(executor.name, executor.workers, total, cached,
                         models=sorted({w.model_id for w in works}))
    new = sum(len(b.texts) for b in batches)
    try:
        for position, (model_id, vectors) in executor.as_completed(compute, batches):
            batch = batches[position]
            if model_id != batch.model_id:
                raise EmbeddingError(f"a worker embeds with {model_id!r}, this machine with {batch.model_id!r}: "
                                     "install the same harness and model versions on the cluster")
            if len(vectors) != len(batch.texts):
                raise EmbeddingError(f"a worker returned {len(vectors)} vectors for {len(batch.texts)} texts")
            cache.put_many(batch.model_id, batch.role,  # one transaction: the batch is kept whole or not at all
                           [(text_sha256(t), v) for t, v in zip(batch.texts, vectors)])
            report.computed += len(batch.texts)
            report.batches += 1
            if on_batch is not None:
                on_batch(report, len(batches))
    except Exception as exc:
        raise EmbeddingError(f"embedding stopped after {report.computed} of {new} new vectors (those are kept "
                             f"in {cache.path}; a rerun embeds only the rest): {exc}") from exc
    finally:
        report.seconds = time.perf_counter() - t0
    return report


def cache_key(configs: Iterable[Experiment], *, prefix: str = "harness-embeddings") -> tuple[str, str]:
    """(key, restore prefix) for a CI cache of the embedding cache: `<prefix>-<model>-<corpus hash>`.

    The corpus hash is the sha256 over every (model id, role, sha256 of the text) the configurations
    embed, sorted: it changes when a memory file, a query, the chunker's settings or the model change,
    and not when a file is only renamed or the run's other settings (weights, tokenizer) change.  The
    restore prefix `<prefix>-<model>-` lets a CI restore the newest cache of the same model when the
    corpus changed, so only the new texts are embedded."""
    import hashlib
    import re

    works = [embedding_work(c) for c in configs]
    items = sorted({(w.model_id, role, text_sha256(t)) for w in works for role, texts in w.texts.items() for t in texts})
    digest = hashlib.sha256("\n".join("\t".join(item) for item in items).encode("utf-8")).hexdigest()[:16]
    models = "+".join(sorted({w.model_id for w in works}))
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", models).strip("_")
    return f"{prefix}-{slug}-{digest}", f"{prefix}-{slug}-"
