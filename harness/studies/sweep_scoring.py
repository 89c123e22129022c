"""A sweep's settings scored from legs searched once, here or on an executor.

    legs = search_sweep_legs(config, {"unicode61": {...}, "jieba": {...}})   # an index per tokenizer, once
    scores = score_grid(settings, legs, cutoffs=[6])                        # settings x queries arrays

Legs are searched once per chunking (a grid over chunk_tokens rebuilds the index per value, its
embeddings from the cache), tokenizer and candidate count (maxResults x candidateMultiplier) the grid
needs.  Scoring uses the fast scorer (harness.evaluation.fast_scoring: every setting of a group at once,
on query x candidate arrays) for settings whose fusion it knows and whose post-processing it models
(OpenClaw's temporal decay, importance, MMR and min_score, harness.stages.postprocess.arrays), and
the pipeline's own stages otherwise (a setting at a time); both give the same figures
(tests/test_fast_scoring.py, tests/test_fast_postprocess.py, tests/test_sweep.py).  With an executor,
the settings are cut into one contiguous slice per worker and the arrays travel once (`executor.map`
shares them).

Lexical legs are kept in a small cache beside the embedding cache (`legs/`, one JSON file per tokenizer,
lexical backend, corpus, query set and candidate count, keyed by the sha256 of all of them and of the
SQLite and jieba versions; a keyword leg's own ranking score is kept with it), since building a jieba or
bigram index is most of a warm sweep's time.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import groupby
from typing import Any, Sequence

import numpy as np

from harness.config import Experiment
from harness.db import connect, sqlite_version
from harness.errors import ConfigError
from harness.evaluation.fast_scoring import (
    CandidateLegs,
    SettingScores,
    Threshold,
    candidate_legs,
    fused,
    score_settings,
)
from harness.evaluation.judgments import chunk_qrels
from harness.evaluation.metrics import Evaluator
from harness.evaluation.per_query import evaluate_queries
from harness.evaluation.statistics import score_spread
from harness.evaluation.summary import summarise
from harness.inputs.layout import Query, resampling_unit
from harness.pipeline import (
    CANDIDATE_CAP,
    Index,
    QueryLegs,
    Stages,
    build_chunker,
    build_stages,
    chunk_layout,
    fuse_with_candidates,
    load_dataset,
    render_layout,
    trace_queries,
)
from harness.progress import progress_bar
from harness.stages.chunkers import CHUNKERS
from harness.stages.embedders.cache import default_cache_path
from harness.stages.fusion import FUSIONS, Legs
from harness.stages.lexical import LEXICAL_BACKENDS
from harness.stages.lexical.base import RankedHits
from harness.stages.postprocess import POSTPROCESSORS
from harness.stages.postprocess.arrays import ArrayStep, array_steps, supported
from harness.stages.tokenizers import TOKENIZERS
from harness.evaluation.incomplete import chunk_judgments
from harness.evaluation.stage_trace import stage_summary
from harness.studies.executor import partition

LEG_CACHE_VERSION = 2  # 2: a keyword leg's own ranking score and tie order are kept (OpenClaw 2026.8)


@dataclass(frozen=True)
class Setting:
    """One point of the grid, as plain data (it travels to workers)."""

    tokenizer: str  # label of the tokenizer whose lexical legs it fuses
    fusion: dict[str, Any]  # the [fusion] table: name and parameters
    min_score: float | None  # None: no min_score stage
    keyword_fallback: str
    post: list[dict[str, Any]]  # the other post-processing tables, in order, before min_score
    labels: dict[str, Any]  # the report's columns: tokenizer, fusion, vector_weight, text_weight, min_score, ...
    relaxed_floor: float | None = None  # the min_score stage's relaxed_floor
    chunk_tokens: int | None = None  # [chunker] tokens (None: the experiment's own chunking)
    max_results: int | None = None  # [search] max_results (None: the experiment's own)
    candidate_multiplier: int | None = None  # [search] candidate_multiplier (None: the experiment's own)

    @property
    def threshold(self) -> Threshold | None:
        return None if self.min_score is None else Threshold(self.min_score, self.keyword_fallback, self.relaxed_floor)

    @cached_property
    def fusion_key(self) -> str:
        return json.dumps(self.fusion, sort_keys=True)

    @cached_property
    def post_key(self) -> str:
        return json.dumps(self.post, sort_keys=True)

    def results(self, config: Experiment) -> int:
        return int(self.max_results if self.max_results is not None else config.search.max_results)

    def candidates(self, config: Experiment) -> int:
        multiplier = self.candidate_multiplier if self.candidate_multiplier is not None else \
            config.search.candidate_multiplier
        return min(CANDIDATE_CAP, self.results(config) * int(multiplier))

    def leg_key(self, config: Experiment) -> tuple[int | None, str, int]:
        """(chunking, tokenizer, candidates): which searched legs the setting fuses."""
        return self.chunk_tokens, self.tokenizer, self.candidates(config)

    def stages(self, config: Experiment) -> Stages:
        fusion = FUSIONS.create(self.fusion["name"], **{k: v for k, v in self.fusion.items() if k != "name"})
        post = [POSTPROCESSORS.create(p["name"], {k: v for k, v in p.items() if k != "name"}) for p in self.post]
        if self.min_score is not None:
            post.append(POSTPROCESSORS.create("min_score", min_score=self.min_score,
                                              keyword_fallback=self.keyword_fallback, relaxed_floor=self.relaxed_floor))
        return Stages(config, None, None, None, fusion, post, self.results(config), self.candidates(config))


def chunker_table(config: Experiment, tokens: int | None) -> dict[str, Any]:
    """The [chunker] table with chunking.tokens = `tokens` (None: as configured); the overlap is clamped
    below the budget, as OpenClaw clamps it."""
    table = config.chunker.as_written()
    if tokens is None:
        return table
    if "tokens" not in {p.name for p in CHUNKERS.parameters(table["name"])}:
        raise ConfigError(f"{config.experiment_file or 'the experiment'}: the grid varies chunk_tokens, but "
                          f"chunker {table['name']!r} has no `tokens` budget")
    table["tokens"] = int(tokens)
    if "overlap" in table:
        table["overlap"] = max(0, min(int(table["overlap"]), int(tokens) - 1))
    return table


@dataclass
class ChunkingLegs:
    """One chunking of the layout: its chunks and both legs of every query at each candidate count."""

    index: Index  # chunks, provenance and vectors; no search backends
    chunk_qrels: dict[str, dict[str, int]]
    vector: dict[int, dict[str, list[tuple[str, float]]]]  # candidates -> query id -> leg
    lexical: dict[tuple[str, int], dict[str, list[tuple[str, float]]]]  # (tokenizer, candidates) -> query id -> leg


@dataclass
class SweepLegs:
    """Both legs of every query, searched once per chunking, tokenizer and candidate count the grid
    needs, with what scoring them needs."""

    config: Experiment
    queries: list[Query]
    query_vectors: dict[str, np.ndarray]
    max_results: int  # the experiment's own
    candidates: int  # the experiment's own
    chunkings: dict[int | None, ChunkingLegs]  # None: the experiment's own chunking
    cached_tokenizers: list[str] = field(default_factory=list)  # lexical legs read from the leg cache
    unit: str = "query"  # what the queries' clusters are (layout.resampling_unit of the data set)

    @property
    def index(self) -> Index:
        return self.chunkings[None].index

    @property
    def chunk_qrels(self) -> dict[str, dict[str, int]]:
        return self.chunkings[None].chunk_qrels

    @property
    def vector(self) -> dict[str, list[tuple[str, float]]]:
        return self.chunkings[None].vector[self.candidates]

    @property
    def lexical(self) -> dict[str, dict[str, list[tuple[str, float]]]]:
        return {tok: legs for (tok, n), legs in self.chunkings[None].lexical.items() if n == self.candidates}

    def legs(self, tokenizer: str, chunk_tokens: int | None = None, candidates: int | None = None) -> dict[str, Legs]:
        part = self.chunkings[chunk_tokens]
        n = self.candidates if candidates is None else candidates
        return {q.id: Legs(part.vector[n][q.id], part.lexical[(tokenizer, n)][q.id]) for q in self.queries}

    def setting_legs(self, setting: Setting) -> tuple[ChunkingLegs, dict[str, Legs]]:
        chunk_tokens, tokenizer, n = setting.leg_key(self.config)
        return self.chunkings[chunk_tokens], self.legs(tokenizer, chunk_tokens, n)


def leg_needs(config: Experiment, settings: Sequence[Setting]) -> dict[int | None, set[int]]:
    """chunking -> the candidate counts the settings search."""
    out: dict[int | None, set[int]] = {}
    for s in settings:
        out.setdefault(s.chunk_tokens, set()).add(s.candidates(config))
    return out


def search_sweep_legs(config: Experiment, tokenizers: dict[str, dict[str, Any]], *, embedder: Any = None,
                      progress: bool = True, leg_cache: bool = True,
                      needs: dict[int | None, set[int]] | None = None) -> SweepLegs:
    """Render once; chunk and embed once per chunking (`needs`: chunking -> candidate counts, default the
    experiment's own of both); the vector leg once per query and candidate count, the lexical leg once
    per query, tokenizer and candidate count (read from the leg cache when it holds them)."""
    base = build_stages(config, embedder=embedder, progress=progress)
    document_lexical = config.lexical.params.get("unit", "document" if config.lexical.name == "qmd-documents"
                                                 else "chunk") == "document"
    if base.unit != "chunk" or document_lexical:
        raise ConfigError(f"{config.experiment_file or 'the experiment'}: the sweep re-fuses chunk lists; "
                          f"preset {config.preset!r} fuses whole files (fusion {config.fusion.name!r}, "
                          f"lexical {config.lexical.name!r}): run it with `harness run`")
    dataset = load_dataset(config)
    if hasattr(dataset, "scopes"):  # legs per scope and a join of the parts' rows are not written yet
        raise ConfigError(f"{config.experiment_file or 'the experiment'}: the sweep indexes one workspace; "
                          f"data set {config.dataset.name if config.dataset else 'king78'!r} holds one per scope (run it with "
                          f"`harness run` or `harness benchmark`)")
    needs = dict(needs or {})
    needs.setdefault(None, set()).add(base.candidates)
    layout = render_layout(dataset, config)
    chunkings: dict[int | None, ChunkingLegs] = {}
    cached: list[str] = []
    try:
        queries = dataset.queries()
        qvecs = base.embedder.embed([q.text for q in queries], "query")
        for chunk_tokens in sorted(needs, key=lambda t: (t is not None, t or 0)):
            chunker = base.chunker if chunk_tokens is None else \
                build_chunker(config.with_overrides({"chunker": chunker_table(config, chunk_tokens)}), base.embedder)
            chunks = chunk_layout(layout, chunker)
            vectors = base.embedder.embed([c.text for c in chunks], "passage")
            docs_of = {c.id: frozenset(layout.docs_overlapping(c.path, c.start_line, c.end_line)) for c in chunks}
            vector_index = base.new_vector(connect())
            vector_index.add([c.id for c in chunks], vectors)
            counts = sorted(needs[chunk_tokens])
            vector_legs = {n: {q.id: vector_index.search(v, n) for q, v in zip(queries, qvecs)} for n in counts}
            lexical_legs: dict[tuple[str, int], dict[str, list]] = {}
            for label, table in tokenizers.items():
                lexical = None
                for n in counts:
                    key = _leg_key(config, table, chunks, queries, n) if leg_cache else None
                    found = _read_legs(key) if key else None
                    if found is None:
                        if lexical is None:
                            tok = TOKENIZERS.create(table["name"], **{k: v for k, v in table.items() if k != "name"})
                            ltable = config.lexical
                            lexical = LEXICAL_BACKENDS.create(ltable.name, tokenizer=tok,
                                                              conn=connect(load_vec=False), **ltable.params)
                            lexical.add(chunks)
                        found = {q.id: _plain_leg(lexical.search(q.text, n)) for q in queries}
                        if key:
                            _write_legs(key, found)
                    elif chunk_tokens is None and n == base.candidates:
                        cached.append(label)
                    lexical_legs[(label, n)] = found
            index = Index(layout, chunks, {c.id: c for c in chunks}, docs_of, None, None, {},
                          {c.id: v for c, v in zip(chunks, vectors)})
            chunkings[chunk_tokens] = ChunkingLegs(index, chunk_qrels(docs_of, queries), vector_legs, lexical_legs)
    finally:
        layout.cleanup()
    return SweepLegs(config, queries, {q.id: v for q, v in zip(queries, qvecs)}, base.max_results, base.candidates,
                     chunkings, cached, resampling_unit(dataset))


def _plain_leg(hits: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """A lexical leg as plain pairs, keeping the leg's own ranking score and tie order when it has them."""
    pairs = [(c, float(s)) for c, s in hits]
    ranking = getattr(hits, "ranking", None)
    if ranking is None:
        return pairs
    return RankedHits(pairs, {c: float(v) for c, v in ranking.items()}, getattr(hits, "tie_order", None))


# --- the lexical leg cache ------------------------------------------------------------------------------


def _leg_key(config: Experiment, tokenizer: dict[str, Any], chunks: Sequence[Any], queries: Sequence[Query],
             candidates: int) -> str:
    import jieba

    digest = hashlib.sha256()
    head = {"version": LEG_CACHE_VERSION, "tokenizer": tokenizer, "lexical": config.lexical.as_written(),
            "candidates": candidates, "sqlite": sqlite_version(), "jieba": jieba.__version__}
    digest.update(json.dumps(head, sort_keys=True, default=str).encode("utf-8"))
    for c in chunks:
        digest.update(f"\0{c.id}\0{c.text}".encode("utf-8"))
    for q in queries:
        digest.update(f"\1{q.id}\0{q.text}".encode("utf-8"))
    return digest.hexdigest()


def _leg_path(key: str):
    return default_cache_path().parent / "legs" / f"{key}.json"


def _read_legs(key: str) -> dict[str, list[tuple[str, float]]] | None:
    try:
        doc = json.loads(_leg_path(key).read_text(encoding="utf-8"))
        out: dict[str, list[tuple[str, float]]] = {}
        for qid, leg in doc.items():
            pairs = [(c, float(s)) for c, s in leg["hits"]]
            out[qid] = pairs if leg.get("ranking") is None else RankedHits(pairs, leg["ranking"], leg.get("tie_order"))
        return out
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # absent or unreadable: search again
        return None


def _write_legs(key: str, legs: dict[str, list[tuple[str, float]]]) -> None:
    path = _leg_path(key)
    doc = {qid: {"hits": list(leg), "ranking": getattr(leg, "ranking", None),
                 "tie_order": getattr(leg, "tie_order", None)} for qid, leg in legs.items()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
    except OSError:
        pass  # a read-only cache only costs the next sweep the search


# --- scoring ----------------------------------------------------------------------------------------------


@dataclass
class ScoringState:
    """What a slice of settings is scored from; shipped once to every worker."""

    config: Experiment
    arrays: dict[tuple, CandidateLegs]  # leg key (chunking, tokenizer, candidates) -> its legs as arrays
    steps: dict[tuple, list[ArrayStep]]  # (chunking, candidates, post key) -> the post-processing array steps
    legs: SweepLegs | None  # for settings that need the pipeline's stages (None when none does)
    cutoffs: list[int]


def fast_supported(setting: Setting) -> bool:
    """A setting the fast scorer can score: a fusion it knows and post-processing it models (OpenClaw's
    temporal decay, importance, MMR; min_score)."""
    return _fast_fusion(setting.fusion_key) and _fast_post(setting.post_key)


@lru_cache(maxsize=None)
def _fast_fusion(fusion_key: str) -> bool:
    fusion = fusion_stage(fusion_key)
    try:
        fused(candidate_legs({"q": Legs([("a", 0.5)], [("a", 1.0)])}, {}), fusion)
        return True
    except ValueError:  # the fast scorer names what it does not support
        return False


@lru_cache(maxsize=None)
def _fast_post(post_key: str) -> bool:
    return all(supported(stage) for stage in _post_stages(post_key))


@lru_cache(maxsize=None)
def _post_stages(post_key: str) -> tuple:
    return tuple(POSTPROCESSORS.create(p["name"], {k: v for k, v in p.items() if k != "name"})
                 for p in json.loads(post_key))


def score_grid(settings: Sequence[Setting], legs: SweepLegs, cutoffs: Sequence[int], *, executor: Any = None,
               parts: int | None = None, progress: bool = False) -> SettingScores:
    """Every setting's per-query figures (settings x queries, queries in legs.queries order); with
    `progress`, a bar of the settings scored (on an executor, of the slices)."""
    state = scoring_state(settings, legs, cutoffs)
    if executor is None:
        if not progress:
            return score_slice(list(settings), state)
        with progress_bar(f"scoring {len(settings):,} settings", len(settings)) as bar:
            return score_slice(list(settings), state, bar)
    return score_on_executor(executor, settings, state, parts=parts)


def scoring_state(settings: Sequence[Setting], legs: SweepLegs, cutoffs: Sequence[int]) -> ScoringState:
    """The legs of each (chunking, tokenizer, candidates) the settings use, as arrays, and the
    post-processing array steps of each; the searched legs only if some setting needs the pipeline's stages."""
    config = legs.config
    kinds = _distinct_kinds(settings)
    slow = any(not fast_supported(s) for s in kinds)
    ids = [q.id for q in legs.queries]
    arrays: dict[tuple, CandidateLegs] = {}
    for s in settings:
        key = s.leg_key(config)
        if key not in arrays:
            part, by_query = legs.setting_legs(s)
            arrays[key] = candidate_legs(by_query, part.chunk_qrels, ids, judged=judged_chunks(part.index, legs.queries))
    steps: dict[tuple, list[ArrayStep]] = {}
    now = config.evaluation.now
    for s in settings:
        key = s.leg_key(config)
        step_key = (key, s.post_key)
        if step_key in steps or not s.post or not fast_supported(s):
            continue
        index = legs.chunkings[s.chunk_tokens].index
        steps[step_key] = array_steps(_post_stages(s.post_key), arrays[key].chunk_ids,
                                      chunk_path=lambda cid, index=index: index.lookup(cid).path,
                                      chunk_text=lambda cid, index=index: index.lookup(cid).text,
                                      now=now, cache=arrays[key].cache.setdefault("post", {}))
    results = sorted({s.results(config) for s in settings})
    return ScoringState(config, arrays, steps, legs if slow else None,
                        sorted(set(cutoffs) | set(results)))


def judged_chunks(index: Index, queries: Sequence[Query]) -> dict[str, set[str]] | None:
    """Per query with pooled or mined judgments, the chunk ids that carry one (None: no such query)."""
    if not any(q.extra.get("judged") for q in queries):
        return None

    return {q.id: set(chunk_judgments(index.unit_docs, q.extra["judged"])) for q in queries if q.extra.get("judged")}


def _distinct_kinds(settings: Sequence[Setting]) -> list[Setting]:
    """One setting per (fusion name, post-processing): what decides the scoring path."""
    seen: dict[str, Setting] = {}
    for s in settings:
        seen.setdefault(json.dumps([s.fusion["name"], s.post], sort_keys=True), s)
    return list(seen.values())


def score_slice(settings: list[Setting], state: ScoringState, bar: Any = None) -> SettingScores:
    """A contiguous slice of the grid: runs of settings with the same legs, post-processing and
    maxResults go through the fast scorer together (their fusions x their thresholds, the rows they
    name picked out), the others one by one through the pipeline's stages."""
    config = state.config
    parts = []
    group_of = lambda s: (s.leg_key(config), s.post_key, s.results(config), fast_supported(s))  # noqa: E731
    for (leg_key, post_key, _, fast), group in groupby(settings, key=group_of):
        group = list(group)
        if fast:
            parts.append(_fast(group, state.arrays[leg_key], state.steps.get((leg_key, post_key), []), state))
            if bar is not None:
                bar.advance(len(group))
        else:
            for s in group:
                parts.append(_slow(s, state))
                if bar is not None:
                    bar.advance()
    return concatenated(parts)


def _fast(group: list[Setting], arrays: CandidateLegs, steps: list[ArrayStep], state: ScoringState) -> SettingScores:
    fusions = {s.fusion_key: i for i, s in enumerate(dict((s.fusion_key, s) for s in group).values())}
    thresholds = {t: i for i, t in enumerate(dict.fromkeys(s.threshold for s in group))}
    stages = {key: fusion_stage(key) for key in fusions}
    scores = score_settings(arrays, list(stages.values()), list(thresholds), max_results=group[0].results(state.config),
                            cutoffs=state.cutoffs, post=steps, short_lists=True)
    rows = [fusions[s.fusion_key] * len(thresholds) + thresholds[s.threshold] for s in group]
    return picked(scores, rows, [(stages[s.fusion_key], s.threshold) for s in group])


def fusion_stage(fusion_key: str) -> Any:
    table = json.loads(fusion_key)
    return FUSIONS.create(table["name"], **{k: v for k, v in table.items() if k != "name"})


def _slow(setting: Setting, state: ScoringState) -> SettingScores:
    """One setting through the pipeline's fusion and post-processing stages, scored as the fast scorer
    scores (reciprocal rank within the returned list, pass, hit@k, chunk nDCG@k, top-1, spread)."""
    legs = state.legs
    stages = setting.stages(legs.config)
    part, by_query = legs.setting_legs(setting)
    n = len(legs.queries)
    out = SettingScores([(stages.fusion, setting.threshold)], [q.id for q in legs.queries], np.zeros((1, n)),
                        np.zeros((1, n), dtype=bool), {k: np.zeros((1, n), dtype=bool) for k in state.cutoffs},
                        {k: np.zeros((1, n)) for k in state.cutoffs}, np.full((1, n), np.nan),
                        np.zeros((1, n), dtype=int), np.zeros((1, n)), np.zeros((1, n), dtype=bool))
    run = {}
    marked = judged_chunks(part.index, legs.queries)
    if marked is not None:
        out.judged = {k: np.full((1, n), np.nan) for k in state.cutoffs}
    for j, q in enumerate(legs.queries):
        hits, fused, _ = fuse_with_candidates(stages, q, by_query[q.id], part.index, legs.query_vectors[q.id])
        if marked is not None:
            for k in state.cutoffs:
                top = hits[:k]
                if top:
                    out.judged[k][0, j] = sum(h.id in marked.get(q.id, ()) for h in top) / len(top)
        grades = part.chunk_qrels.get(q.id, {})
        ranks = [i for i, h in enumerate(hits, start=1) if grades.get(h.id, 0) > 0]
        first = ranks[0] if ranks else math.inf
        out.reciprocal_rank[0, j] = 1.0 / first if ranks else 0.0
        out.found[0, j] = bool(ranks)
        for k in state.cutoffs:
            out.hits[k][0, j] = first <= k
        out.returned[0, j] = len(hits)
        out.top1_score[0, j] = hits[0].score if hits else np.nan
        out.passed[0, j] = first == 1 and hits[0].score >= stages.pass_threshold
        out.spread[0, j] = score_spread([[h.score for h in fused]])[0]
        run[q.id] = {h.id: float(len(hits) - i) for i, h in enumerate(hits)}  # strictly decreasing: the order kept
    evaluator = Evaluator(part.chunk_qrels)
    values = evaluator(run, [f"ndcg@{k}" for k in state.cutoffs])
    for j, q in enumerate(legs.queries):
        for k in state.cutoffs:
            out.ndcg[k][0, j] = values.get(q.id, {}).get(f"ndcg@{k}", 0.0)
    return out


def picked(scores: SettingScores, rows: list[int], settings: list[Any]) -> SettingScores:
    return SettingScores(settings, scores.query_ids, scores.reciprocal_rank[rows], scores.passed[rows],
                         {k: v[rows] for k, v in scores.hits.items()}, {k: v[rows] for k, v in scores.ndcg.items()},
                         scores.top1_score[rows], scores.returned[rows], scores.spread[rows], scores.found[rows],
                         None if scores.judged is None else {k: v[rows] for k, v in scores.judged.items()})


def concatenated(parts: Sequence[SettingScores]) -> SettingScores:
    first = parts[0]
    stack = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
    return SettingScores([s for p in parts for s in p.settings], first.query_ids, stack("reciprocal_rank"),
                         stack("passed"), {k: np.concatenate([p.hits[k] for p in parts]) for k in first.hits},
                         {k: np.concatenate([p.ndcg[k] for p in parts]) for k in first.ndcg}, stack("top1_score"),
                         stack("returned"), stack("spread"), stack("found"),
                         None if any(p.judged is None for p in parts) else
                         {k: np.concatenate([p.judged[k] for p in parts]) for k in first.judged})


# --- record-level figures of a few settings ------------------------------------------------------------


def headline_frame(setting: Setting, legs: SweepLegs, cutoffs: Sequence[int]) -> tuple[Any, dict[str, Any]]:
    """One setting run through the whole evaluation (evaluate_queries + summarise): its per-query rows and
    summary, with record-level Recall, MRR and nDCG and their intervals, passes, near ties."""
    config = legs.config
    stages = setting.stages(config)
    part, by_query = legs.setting_legs(setting)
    query_legs = {q.id: QueryLegs(by_query[q.id], {"query_embedding": 0.0, "vector": 0.0, "lexical": 0.0},
                                  legs.query_vectors[q.id]) for q in legs.queries}
    traces = trace_queries(part.index, stages, legs.queries, query_legs)
    frame, _, _ = evaluate_queries(part.index, stages, legs.queries, traces, config.evaluation.round, cutoffs,
                                   ties="expected")
    summary = summarise(frame, stages.max_results, unit=legs.unit)
    summary.pop("latency_ms", None)  # zeros here: the legs were searched once for every setting

    summary["stages"] = stage_summary(frame)  # why its failed queries failed, by stage
    return frame, summary


def headline_summary(setting: Setting, legs: SweepLegs, cutoffs: Sequence[int]) -> dict[str, Any]:
    """The summary of headline_frame: what a report shows for the configured and the chosen setting."""
    return headline_frame(setting, legs, cutoffs)[1]


def score_on_executor(executor: Any, settings: Sequence[Any], state: Any, *, parts: int | None = None) -> Any:
    """Every sweep setting's per-query figures (score_slice), one contiguous
    slice of the settings per worker (default: as many slices as workers); the state (the legs as query x
    candidate arrays) is shared, so it travels once.  The slices come back in order: the same
    SettingScores as scoring every setting in this process."""
    return concatenated(executor.map(score_slice, partition(list(settings), parts or executor.workers), state))
