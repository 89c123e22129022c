"""The pipeline: the configured stages of one run, and the retrieval they do.

    layout -> chunker -> lexical index (tokenizer) + embedder -> vector index      index_layout()
    query  -> vector leg + lexical leg (searched once)                            search_legs()
           -> fusion -> post-processing stages -> the hits memory_search returns  fuse()
           (and what each stage did, harness.trace.QueryTrace, which evaluation reads) trace_queries()

Evaluation (judgments, metrics, summaries) lives in harness.evaluation and the drivers of runs
(`run_experiment`, ablation, sweep, matrix) in harness.studies, so a sweep can search once and fuse
many times with the same functions:

    >>> from harness.config import load_experiment
    >>> from harness.studies.experiment import run_experiment
    >>> result = run_experiment(load_experiment("experiments/round4.toml"))
"""
from __future__ import annotations

import dataclasses
import inspect
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from harness.config import Experiment, StageTable
from harness.db import connect
from harness.errors import ConfigError, HarnessError
from harness.evaluation.chunk_stats import chunk_stats
from harness.inputs.layout import DATASETS, Layout, Query, Span
from harness.progress import progress_bar
from harness.stages.chunkers import CHUNKERS, Chunk, Chunker
from harness.stages.embedders import (
    EMBEDDERS,
    CachedEmbedder,
    EmbeddingCache,
    provides_vectors,
    text_sha256,
)
from harness.stages.expansion import EXPANSIONS, ExpansionContext
from harness.stages.fusion import FUSIONS, Hit, Legs
from harness.stages.lexical import LEXICAL_BACKENDS
from harness.stages.postprocess import (
    POSTPROCESSORS,
    SNIPPET_CHARS,
    ImportanceMultiplier,
    MinScore,
    PostProcessor,
    SearchContext,
    TemporalDecay,
    age_days,
    as_utc_datetime,
    curated_importance,
    memory_date,
)
from harness.stages.rerankers import build_reranker
from harness.stages.tokenizers import TOKENIZERS
from harness.stages.vector import VECTOR_BACKENDS
from harness.stages.vector.base import NoVectorIndex
from harness.trace import QueryTrace, StageResult

CANDIDATE_CAP = 200  # OpenClaw caps maxResults x candidateMultiplier at 200


def where(experiment: Experiment, table: str) -> str:
    """`experiments/round3.toml [fusion]`: how errors about a stage table name their place."""
    return f"{experiment.source} [{table}]"


@dataclass
class Stages:
    """The configured stage objects of one run."""

    config: Experiment
    chunker: Chunker
    tokenizer: Any
    embedder: CachedEmbedder
    fusion: Any
    postprocess: list[PostProcessor]
    max_results: int
    candidates: int
    expansion: Any = None  # query expansion (stages/expansion): extra lists for the fusion
    chat: Any = None  # the run's chat model behind the completion cache ([chat]), when one is configured
    reranker: Any = None  # the [reranker] stage behind its cache, or None (stages that rerank fall back)

    @property
    def unit(self) -> str:
        """What a result is: "chunk", or "document" (a whole file) when the fusion fuses per file (QMD)."""
        return getattr(self.fusion, "unit", "chunk")

    @property
    def pass_threshold(self) -> float:
        """The score a query's top hit must reach to pass: the highest any post-processing stage states
        (PostProcessor.pass_threshold; OpenClaw's minScore), 0.0 without one."""
        return max([p.pass_threshold for p in self.postprocess] or [0.0])

    def new_lexical(self, conn):
        table = self.config.lexical
        return LEXICAL_BACKENDS.create(table.name, dict(table.params), where=where(self.config, "lexical"),
                                       tokenizer=self.tokenizer, conn=conn)

    def new_vector(self, conn):
        if not provides_vectors(self.embedder):
            return NoVectorIndex()
        table = self.config.vector
        return VECTOR_BACKENDS.create(table.name, dict(table.params), where=where(self.config, "vector"),
                                      dim=self.embedder.dim, conn=conn)


EMBEDDER_TOKEN_COUNT = "embedder"  # [chunker] token_count = "embedder": count with the embedder's own tokenizer


def build_chunker(config: Experiment, embedder: Any = None) -> Chunker:
    """The [chunker] stage.  `token_count = "embedder"` in the table hands the chunker the embedder's own
    token counter (QMD's token path, the file chunker's real-token truncation); a counter is a function,
    so that string is the only value a TOML file can give."""
    table = dict(config.chunker.params)
    name = config.chunker.name
    place = where(config, "chunker")
    runtime: dict[str, Any] = {}
    if "token_count" in table:
        value = table.pop("token_count")
        if value != EMBEDDER_TOKEN_COUNT:
            raise ConfigError(f"{place} token_count: must be \"{EMBEDDER_TOKEN_COUNT}\" (count tokens with the "
                              f"embedder's own tokenizer), got {value!r}")
        count = getattr(embedder, "token_count", None)
        if count is None:
            raise ConfigError(f"{place} token_count = \"{EMBEDDER_TOKEN_COUNT}\": embedder "
                              f"{config.embedder.name!r} cannot count tokens")
        runtime["token_count"] = count
    return CHUNKERS.create(name, table, where=place, **runtime)


def build_stages(config: Experiment, *, cache: EmbeddingCache | None = None,
                 embedder: Any = None, progress: bool = True) -> Stages:
    table = config.embedder
    inner = embedder if embedder is not None else EMBEDDERS.create(table.name, dict(table.params),
                                                                              where=where(config, "embedder"))
    if isinstance(inner, CachedEmbedder):
        cached = inner
    else:
        cached = CachedEmbedder(inner, cache if cache is not None else EmbeddingCache(), progress=progress,
                                batch_size=inner.batch_size)
    search = config.search
    max_results = int(search.max_results)
    chat = build_chat(config)
    fusion = FUSIONS.create(config.fusion.name, dict(config.fusion.params), where=where(config, "fusion"))
    expansion = None
    if config.expansion is not None:
        table = config.expansion
        expansion = EXPANSIONS.create(table.name, dict(table.params), where=where(config, "expansion"), chat=chat)
        if not getattr(fusion, "accepts_extra_lists", False):
            raise ConfigError(f"{where(config, 'expansion')}: query expansion adds lists that fusion "
                              f"{config.fusion.name!r} cannot fuse; use fusion rrf or qmd-documents")
    reranker = None
    if config.reranker is not None:
        reranker = build_reranker({"name": config.reranker.name, **config.reranker.params}, where(config, "reranker"),
                                  cache=cache)
    postprocess = [POSTPROCESSORS.create(p.name, dict(p.params), where=where(config, f"postprocess {i + 1}"))
                   for i, p in enumerate(config.postprocess)]
    if reranker is not None and not any(getattr(p, "uses_reranker", False) for p in postprocess):
        raise ConfigError(f"{where(config, 'reranker')}: no postprocess stage of this configuration reranks "
                          f"(preset {config.preset!r}); add [[postprocess]] name = \"rerank\" where it "
                          "should apply, or use a preset whose system reranks (qmd, lancedb-pro)")
    return Stages(
        config=config,
        chunker=build_chunker(config, cached),
        tokenizer=TOKENIZERS.create(config.tokenizer.name, dict(config.tokenizer.params),
                                    where=where(config, "tokenizer")),
        embedder=cached,
        fusion=fusion,
        postprocess=postprocess,
        max_results=max_results,
        candidates=min(CANDIDATE_CAP, int(search.candidates or max_results * int(search.candidate_multiplier))),
        expansion=expansion,
        chat=chat,
        reranker=reranker,
    )


def build_chat(config: Experiment) -> Any:
    """The [chat] model behind the completion cache, or None when the run names none."""
    return chat_model(config.chat, where(config, "chat")) if config.chat is not None else None


def chat_model(table: StageTable, place: str) -> Any:
    """A [chat] table's model behind the completion cache; `place` names the table in errors."""
    # local: the chat models (HTTP clients, the completion cache) are for the runs that use one, not every run's start-up
    from harness.stages.chat import CHATS, CachedChat, CompletionCache

    inner = CHATS.create(table.name, dict(table.params), where=place)
    return CachedChat(inner, CompletionCache())


@dataclass
class Index:
    layout: Layout
    chunks: list[Chunk]
    by_id: dict[str, Chunk]
    docs_of: dict[str, frozenset[str]]
    lexical: Any
    vector: Any
    timings_ms: dict[str, float]
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # for diversity / rerank stages
    unit: str = "chunk"  # what a result is: "chunk", or "document" (Stages.unit)
    documents: dict[str, Chunk] = field(default_factory=dict)  # document unit: path -> the whole file
    document_docs: dict[str, frozenset[str]] = field(default_factory=dict)  # path -> records in the file

    @property
    def unit_docs(self) -> dict[str, frozenset[str]]:
        """Provenance of the units results are made of: chunks' records, or for a document-level pipeline
        each file's records (the union over its lines), so that judging a file is judging a chunk that
        spans the whole file."""
        return self.document_docs if self.unit == "document" else self.docs_of

    def lookup(self, ident: str) -> Chunk:
        """A result id -> its chunk, or the whole-file unit of a document id."""
        found = self.by_id.get(ident)
        return found if found is not None else self.documents[ident]

    def provenance(self) -> dict[str, frozenset[str]]:
        """Records of any id a leg or a result may hold (chunk ids and file paths never collide)."""
        return {**self.docs_of, **self.document_docs} if self.document_docs else self.docs_of

    def document_chunks(self, path: str) -> list[Chunk]:
        """A file's chunks in position order (what QMD reranks one of)."""
        if not hasattr(self, "_chunks_by_path"):
            grouped: dict[str, list[Chunk]] = {}
            for c in self.chunks:
                grouped.setdefault(c.path, []).append(c)
            self._chunks_by_path = {p: sorted(cs, key=lambda c: (c.start_line, c.piece)) for p, cs in grouped.items()}
        return self._chunks_by_path.get(path, [])


def chunk_layout(layout: Layout, chunker: Any) -> list[Chunk]:
    chunks: list[Chunk] = []
    for path in sorted(layout.files):
        chunks.extend(chunker.chunk(path, layout.read(path)))
    return sorted(chunks, key=lambda c: c.id)


def index_layout(layout: Layout, stages: Stages) -> Index:
    t0 = time.perf_counter()
    chunks = chunk_layout(layout, stages.chunker)
    t1 = time.perf_counter()
    vectors = stages.embedder.embed([c.text for c in chunks], "passage")
    t2 = time.perf_counter()
    conn = connect()
    lexical = stages.new_lexical(conn)
    if getattr(lexical, "unit", "chunk") == "document":
        if stages.unit != "document":
            raise ConfigError(f"{where(stages.config, 'lexical')} unit: \"document\" gives file paths, which "
                              f"fusion {stages.config.fusion.name!r} cannot fuse with chunks; use fusion "
                              "\"qmd-documents\" or unit = \"chunk\"")
        lexical.add_documents([(p, layout.read(p)) for p in sorted(layout.files)])
    else:
        lexical.add(chunks)
    vector = stages.new_vector(conn)
    vector.add([c.id for c in chunks], vectors)
    t3 = time.perf_counter()
    docs_of = {c.id: frozenset(layout.docs_overlapping(c.path, c.start_line, c.end_line)) for c in chunks}
    documents: dict[str, Chunk] = {}
    document_docs: dict[str, frozenset[str]] = {}
    if stages.unit == "document":
        for path in sorted({c.path for c in chunks}):
            text = layout.read(path)
            last = max(1, len(text.split("\n")) - (1 if text.endswith("\n") else 0))
            documents[path] = Chunk(path, 1, last, text)
            document_docs[path] = frozenset(layout.docs_overlapping(path, 1, last))
    return Index(layout, chunks, {c.id: c for c in chunks}, docs_of, lexical, vector,
                 {"chunking": (t1 - t0) * 1e3, "embedding": (t2 - t1) * 1e3, "inserts": (t3 - t2) * 1e3},
                 {c.id: v for c, v in zip(chunks, vectors)}, stages.unit, documents, document_docs)


@dataclass
class QueryLegs:
    legs: Legs
    timings_ms: dict[str, float]
    query_vector: np.ndarray | None = None
    expansion: dict[str, Any] = field(default_factory=dict)  # what query expansion did (per-query rows)


def search_legs(index: Index, stages: Stages, queries: Sequence[Query]) -> dict[str, QueryLegs]:
    """Run both legs once per query text; fusion and post-processing can then be repeated cheaply
    (sweeps).  Queries are embedded one at a time so that every query has its own embedding latency.
    Queries with the same text are embedded and searched once (the legs depend on the text alone): a
    file that asks one question a thousand times costs one search, and each query keeps its own target
    and judgment (duplicate_texts counts the folded ones)."""
    out: dict[str, QueryLegs] = {}
    by_text: dict[str, QueryLegs] = {}
    with _query_progress(stages, queries) as bar:
        for q in queries:
            if q.text not in by_text:
                by_text[q.text] = _search_one(index, stages, q)
            out[q.id] = by_text[q.text]
            if bar is not None:
                bar.advance()
    return out


def duplicate_texts(queries: Sequence[Query]) -> int:
    """How many queries repeat the text of an earlier one (searched once, judged each)."""
    return len(queries) - len({q.text for q in queries})


def _query_progress(stages: Stages, queries: Sequence[Query]) -> Any:
    """A progress bar when at least 8 queries still need embedding (queries are embedded one by one)."""
    embedder = stages.embedder
    if not getattr(embedder, "progress", False) or len(queries) < 8:
        return nullcontext()
    shas = [text_sha256(q.text) for q in queries]
    missing = len(set(shas)) - len(embedder.cache.get_many(embedder.model_id, "query", shas))
    return progress_bar(f"embedding and searching {len(queries)} queries", len(queries)) if missing >= 8 \
        else nullcontext()


def _search_one(index: Index, stages: Stages, q: Query) -> QueryLegs:
    t0 = time.perf_counter()
    qvec = stages.embedder.embed([q.text], "query")[0] if provides_vectors(stages.embedder) else None
    t1 = time.perf_counter()
    vector_hits = index.vector.search(qvec, stages.candidates)
    t2 = time.perf_counter()
    lexical_hits = index.lexical.search(q.text, stages.candidates)
    t3 = time.perf_counter()
    legs = Legs(vector_hits, lexical_hits)
    timings = {"query_embedding": (t1 - t0) * 1e3, "vector": (t2 - t1) * 1e3, "lexical": (t3 - t2) * 1e3}
    stats: dict[str, Any] = {}
    if stages.expansion is not None:
        legs.extra, stats = expand_query(index, stages, q, legs, qvec)
        timings["expansion"] = (time.perf_counter() - t3) * 1e3
    return QueryLegs(legs, timings, qvec, stats)


def expand_query(index: Index, stages: Stages, query: Query, legs: Legs, qvec: np.ndarray) -> tuple[list, dict]:
    """The expansion's extra lists for one query, and what it did (skipped by the probe, its terms)."""
    ctx = ExpansionContext(
        query.text, qvec, legs.vector, legs.lexical, index, stages.tokenizer,
        embed_query=lambda text: stages.embedder.embed([text], "query")[0],
        first_pass=lambda: stages.fusion(Legs(legs.vector, legs.lexical)))
    return stages.expansion.expand(ctx), ctx.stats


def fuse(stages: Stages, query: Query, legs: Legs, index: Index | None = None,
         query_vector: np.ndarray | None = None) -> tuple[list[Hit], dict[str, float]]:
    """Fusion then the post-processing stages in the preset's order; `index` lets stages read chunk
    text, paths and vectors (MMR, decay, diversity)."""
    hits, _, timings = fuse_with_candidates(stages, query, legs, index, query_vector)
    return hits, timings


def fuse_with_candidates(stages: Stages, query: Query, legs: Legs, index: Index | None = None,
                         query_vector: np.ndarray | None = None) -> tuple[list[Hit], list[Hit], dict[str, float]]:
    """fuse(), also returning the fusion's whole ranked list before post-processing and the cut: the
    candidates a near-tie check compares the returned ones with (the first chunk below the cut)."""
    hits, fused, _, _, timings = _fused_and_post_processed(stages, query, legs, index, query_vector)
    return hits, fused, timings


def _fused_and_post_processed(stages: Stages, query: Query, legs: Legs, index: Index | None,
                              query_vector: np.ndarray | None) -> tuple[list[Hit], list[Hit], list, SearchContext,
                                                                        dict[str, float]]:
    """The returned hits, the fused list, each post-processing stage's (input, output) and the context."""
    t0 = time.perf_counter()
    fused = stages.fusion(legs)
    t1 = time.perf_counter()
    ctx = search_context(stages, query, index, query_vector)
    hits = fused
    steps = []
    for stage in stages.postprocess:
        before, hits = hits, stage(hits, ctx)
        steps.append((before, hits))
    hits = hits[: stages.max_results]
    t2 = time.perf_counter()
    return hits, fused, steps, ctx, {"fusion": (t1 - t0) * 1e3, "postprocess": (t2 - t1) * 1e3}


def trace_queries(index: Index, stages: Stages, queries: Sequence[Query],
                  legs: dict[str, QueryLegs]) -> dict[str, QueryTrace]:
    """Every query's retrieval from its searched legs (search_legs) as a trace (harness.trace.QueryTrace): the
    fusion, each post-processing stage's output with what it did to each chunk, the returned hits as
    records.  Evaluation (harness.evaluation.per_query) scores the traces."""
    names = {POSTPROCESSORS.get(name): name for name in POSTPROCESSORS.names()}
    stage_names = [names.get(type(stage), type(stage).__name__) for stage in stages.postprocess]
    gates = [p for p in stages.postprocess if hasattr(p, "skips_query")]  # adaptive retrieval
    explainable = stages.expansion is None and not getattr(stages.fusion, "accepts_extra_lists", False)
    details: dict[tuple[int, str, Any], str] = {}  # (stage, chunk, now) -> detail: the same for queries asked together
    out: dict[str, QueryTrace] = {}
    for q in queries:
        searched = legs[q.id]
        hits, fused, steps, ctx, timings = _fused_and_post_processed(stages, q, searched.legs, index,
                                                                     searched.query_vector)
        results = []
        for i, (stage, name, (before, after)) in enumerate(zip(stages.postprocess, stage_names, steps)):
            said = {}
            if isinstance(stage, (TemporalDecay, ImportanceMultiplier)):
                for h in before:
                    key = (i, h.id, ctx.now)  # ages differ between queries asked at different times
                    if key not in details:
                        details[key] = _stage_detail(stage, h.id, ctx, index)
                    said[h.id] = details[key]
            results.append(StageResult(name, after, stage.min_score if isinstance(stage, MinScore) else None, said))
        out[q.id] = QueryTrace(
            q.id, list(searched.legs.vector), list(searched.legs.lexical), fused, results, hits,
            hit_records(index, hits), stages.max_results, stages.pass_threshold, tuple(stages.fusion.leg_weights),
            bool(getattr(stages.fusion, "scales_weights", False)), explainable,
            any(g.skips_query(q.text) for g in gates), {**searched.timings_ms, **timings}, searched.expansion,
            len(searched.legs.extra))
    return out


def _stage_detail(stage: Any, cid: str, ctx: SearchContext, index: Index) -> str:
    """What a rescaling stage did to a chunk: its age and factor (decay), its importance (importance)."""
    try:
        path = index.lookup(cid).path
    except (KeyError, AttributeError):
        return ""
    if isinstance(stage, TemporalDecay):
        if memory_date(path, True) is None:
            return f"{path} is undated: x1.00"
        now = stage.now if stage.now is not None else ctx.now
        if now is None:
            return ""
        age = age_days(path, now, True)
        return f"{path} is {age:.0f} days old: x{stage.multiplier(age):.2f}"
    importance = curated_importance(path, index.lookup(cid).text)
    return f"importance {importance}: x{stage.multiplier(importance):.2f}" if importance is not None else "x1.00"


def search_context(stages: Stages, query: Query, index: Index | None = None,
                   query_vector: np.ndarray | None = None) -> SearchContext:
    """What the post-processing stages may read about one query: its text, the cut, the fusion's weights,
    and with `index` the chunks' text, paths and vectors and the run's reference time (evaluation.now)."""
    ctx = SearchContext(query.text, stages.max_results, *stages.fusion.leg_weights)
    ctx.reranker = stages.reranker
    if index is not None:
        ctx.chunk_text = lambda cid: index.lookup(cid).text
        ctx.chunk_path = lambda cid: index.lookup(cid).path
        ctx.document_chunks = lambda path: [c.text for c in index.document_chunks(path)]
        ctx.chunk_vector = index.vectors.get
        ctx.query_vector = query_vector
        ctx.now = query_time(stages, query)
    return ctx


def query_time(stages: Stages, query: Query) -> Any:
    """The reference time a query is searched at: the time it was asked (its `asked` extra field) when the
    experiment replays as asked ([evaluation] replay = "as-asked"), else evaluation.now (None: unset)."""
    evaluation = stages.config.evaluation
    asked = (query.extra or {}).get("asked") if evaluation.replay == "as-asked" else None
    if asked:
        return as_utc_datetime(asked, f"query {query.id!r}: asked")
    return as_utc_datetime(evaluation.now, "evaluation.now") if evaluation.now is not None else None


def render_layout(part: Any, config: Experiment, dest: Path | str | None = None) -> Layout:
    """part.render() with the experiment's [layout] options, checked first: an option the data set does
    not take, one it needs and was not given, or a value it refuses is a ConfigError naming the file and
    [layout] (the data set's `check_layout`, else the signature of its render)."""
    options = config.layout
    place = where(config, "layout")
    if not isinstance(options, dict):
        raise ConfigError(f"{place}: must be a table of the data set's layout options")
    check = getattr(part, "check_layout", None)
    try:
        if check is not None:
            check(options)
        else:
            inspect.signature(part.render).bind(dest, **options)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, HarnessError):
            raise
        if config.dataset is None:  # the default data set is king78, whose rounds need layout options
            raise ConfigError(f"{place}: {exc}; the experiment has no [dataset] table, so the king78 rounds are "
                              "read: name your data set in [dataset] (e.g. name = \"workspace\")") from None
        raise ConfigError(f"{place}: {exc}") from None
    return part.render(dest=dest, **options) if dest is not None else part.render(**options)


def load_dataset(config: Experiment):
    table = config.dataset or StageTable(name="king78")
    return DATASETS.create(table.name, dict(table.params), where=where(config, "dataset"))


def dataset_parts(dataset: Any) -> list[tuple[str | None, Any]]:
    """The memory workspaces a data set holds: itself (scope None), or, when it has `scopes()`, one part
    per scope (LoCoMo: one per conversation, whose turn ids repeat across conversations).  Each part
    has render() and queries() and is indexed, searched and evaluated apart, so a query only ever sees
    its own part's memory, as an agent only sees its own; query ids are unique across parts."""
    scopes = getattr(dataset, "scopes", None)
    return [(None, dataset)] if scopes is None else list(scopes())


def scoped_chunks(scope: str, index: Index) -> tuple[list[Chunk], list[Span], dict[str, str]]:
    """A part's chunks, provenance spans and file texts with every path under <scope>/, so that the
    parts of a scoped data set can be described together (chunk statistics)."""
    chunks = [dataclasses.replace(c, path=f"{scope}/{c.path}") for c in index.chunks]
    spans = [dataclasses.replace(s, path=f"{scope}/{s.path}") for s in index.layout.spans]
    texts = {f"{scope}/{p}": index.layout.read(p) for p in index.layout.files}
    return chunks, spans, texts

def hit_records(index: Index, hits: list[Hit]) -> list[dict[str, Any]]:
    """Returned hits as plain dictionaries (for results.json and reports)."""
    out = []
    docs_of = index.unit_docs
    for i, h in enumerate(hits, start=1):
        chunk = index.lookup(h.id)
        out.append({"rank": i, "chunk": h.id, "path": chunk.path, "start_line": chunk.start_line,
                    "end_line": chunk.end_line, "score": h.score, "vector_score": h.vector_score,
                    "text_score": h.text_score, "docs": sorted(docs_of[h.id]),
                    "snippet": chunk.text[:SNIPPET_CHARS]})
    return out



def chunk_statistics(index: Index, stages: Stages) -> dict[str, Any]:
    """Chunk sizes, purity and what the embedder's input limit cuts (real tokens when it can count)."""
    return layout_chunk_statistics(index.chunks, index.layout, stages)


def layout_chunk_statistics(chunks: Sequence[Chunk], layout: Layout, stages: Stages,
                            texts: dict[str, str] | None = None) -> dict[str, Any]:
    embedder = stages.embedder
    token_count = getattr(embedder, "cached_token_count", embedder.token_count)  # kept in the embedding cache
    if token_count is not None:
        token_count = _remembered_counts(token_count, embedder.model_id)
    return chunk_stats(chunks, layout, token_count=token_count, input_limit=embedder.max_tokens, texts=texts)


# (model id, text) -> real tokens: counting is slow (~10-25 ms a chunk with e5's tokenizer) and the cells
# of a matrix or benchmark count the same chunks again and again
_TOKEN_COUNTS: dict[tuple[str, str], int] = {}
_TOKEN_COUNTS_MAX = 200_000


def _remembered_counts(count: Any, model_id: str | None) -> Any:
    if model_id is None:
        return count

    def remembered(text: str) -> int:
        key = (model_id, text)
        if key not in _TOKEN_COUNTS:
            if len(_TOKEN_COUNTS) >= _TOKEN_COUNTS_MAX:
                _TOKEN_COUNTS.clear()
            _TOKEN_COUNTS[key] = int(count(text))
        return _TOKEN_COUNTS[key]

    return remembered
