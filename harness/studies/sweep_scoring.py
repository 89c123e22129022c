"""A sweep's settings scored from legs searched once, here or on an executor.

    legs = search_sweep_legs(config, {"unicode61": {...}, "jieba": {...}})   # an index per tokenizer, once
    scores = score_grid(settings, legs, cutoffs=[6])                        # settings x queries arrays

Scoring uses the fast scorer (harness.evaluation.fast_scoring: every setting of a tokenizer at once, on
query x candidate arrays) for settings whose post-processing is at most OpenClaw's min_score and whose
fusion it knows, and the pipeline's own stages otherwise (a setting at a time); both give the same
figures (tests/test_fast_scoring.py, tests/test_sweep.py).  With an executor, the settings are cut into
one contiguous slice per worker and the arrays travel once (`executor.map` shares them).

Lexical legs are kept in a small cache beside the embedding cache (`legs/`, one JSON file per tokenizer,
lexical backend, corpus and query set, keyed by the sha256 of all of them and of the SQLite and jieba
versions), since building a jieba or bigram index is most of a warm sweep's time.
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
    Index,
    QueryLegs,
    Stages,
    build_stages,
    chunk_layout,
    fuse_with_candidates,
    load_dataset,
)
from harness.stages.embedders.cache import default_cache_path
from harness.stages.fusion import FUSIONS, Legs
from harness.stages.lexical import LEXICAL_BACKENDS
from harness.stages.postprocess import POSTPROCESSORS
from harness.stages.tokenizers import TOKENIZERS

LEG_CACHE_VERSION = 1


@dataclass(frozen=True)
class Setting:
    """One point of the grid, as plain data (it travels to workers)."""

    tokenizer: str  # label of the tokenizer whose lexical legs it fuses
    fusion: dict[str, Any]  # the [fusion] table: name and parameters
    min_score: float | None  # None: no min_score stage
    keyword_fallback: str
    post: list[dict[str, Any]]  # other post-processing tables, before min_score (any: the pipeline path)
    labels: dict[str, Any]  # tokenizer, fusion, vector_weight, text_weight, min_score (the report's columns)

    @property
    def threshold(self) -> Threshold | None:
        return None if self.min_score is None else Threshold(self.min_score, self.keyword_fallback)

    @cached_property
    def fusion_key(self) -> str:
        return json.dumps(self.fusion, sort_keys=True)

    def stages(self, config: dict[str, Any], max_results: int, candidates: int) -> Stages:
        fusion = FUSIONS.create(self.fusion["name"], **{k: v for k, v in self.fusion.items() if k != "name"})
        post = [POSTPROCESSORS.create(p["name"], **{k: v for k, v in p.items() if k != "name"}) for p in self.post]
        if self.min_score is not None:
            post.append(POSTPROCESSORS.create("min_score", min_score=self.min_score,
                                              keyword_fallback=self.keyword_fallback))
        return Stages(config, None, None, None, fusion, post, max_results, candidates)


@dataclass
class SweepLegs:
    """Both legs of every query, searched once, with what scoring them needs."""

    config: dict[str, Any]
    index: Index  # chunks, provenance and vectors; no search backends
    queries: list[Query]
    query_vectors: dict[str, np.ndarray]
    vector: dict[str, list[tuple[str, float]]]
    lexical: dict[str, dict[str, list[tuple[str, float]]]]  # tokenizer label -> query id -> leg
    max_results: int
    candidates: int
    chunk_qrels: dict[str, dict[str, int]]
    cached_tokenizers: list[str] = field(default_factory=list)  # lexical legs read from the leg cache
    unit: str = "query"  # what the queries' clusters are (layout.resampling_unit of the data set)

    def legs(self, tokenizer: str) -> dict[str, Legs]:
        return {q.id: Legs(self.vector[q.id], self.lexical[tokenizer][q.id]) for q in self.queries}


def search_sweep_legs(config: dict[str, Any], tokenizers: dict[str, dict[str, Any]], *, embedder: Any = None,
                      progress: bool = True, leg_cache: bool = True) -> SweepLegs:
    """Render, chunk and embed once; the vector leg once per query and the lexical leg once per query and
    tokenizer (read from the leg cache when it holds them)."""
    base = build_stages(config, embedder=embedder, progress=progress)
    document_lexical = config["lexical"].get("unit", "document" if config["lexical"]["name"] == "qmd-documents"
                                             else "chunk") == "document"
    if base.unit != "chunk" or document_lexical:
        raise ConfigError(f"{config.get('experiment_file', 'the experiment')}: the sweep re-fuses chunk lists; "
                          f"preset {config.get('preset')!r} fuses whole files (fusion {config['fusion']['name']!r}, "
                          f"lexical {config['lexical']['name']!r}): run it with `harness run`")
    dataset = load_dataset(config)
    if hasattr(dataset, "scopes"):  # legs per scope and a join of the parts' rows are not written yet
        raise ConfigError(f"{config.get('experiment_file', 'the experiment')}: the sweep indexes one workspace; "
                          f"data set {config['dataset']['name']!r} holds one per scope (run it with "
                          f"`harness run` or `harness benchmark`)")
    layout = dataset.render(**config.get("layout", {}))
    try:
        chunks = chunk_layout(layout, base.chunker)
        vectors = base.embedder.embed([c.text for c in chunks], "passage")
        queries = dataset.queries()
        qvecs = base.embedder.embed([q.text for q in queries], "query")
        docs_of = {c.id: frozenset(layout.docs_overlapping(c.path, c.start_line, c.end_line)) for c in chunks}
        vector_index = base.new_vector(connect())
        vector_index.add([c.id for c in chunks], vectors)
        vector_legs = {q.id: vector_index.search(v, base.candidates) for q, v in zip(queries, qvecs)}
        lexical_legs, cached = {}, []
        for label, table in tokenizers.items():
            key = _leg_key(config, table, chunks, queries, base.candidates) if leg_cache else None
            found = _read_legs(key) if key else None
            if found is None:
                tok = TOKENIZERS.create(table["name"], **{k: v for k, v in table.items() if k != "name"})
                ltable = config["lexical"]
                lexical = LEXICAL_BACKENDS.create(ltable["name"], tokenizer=tok, conn=connect(load_vec=False),
                                                  **{k: v for k, v in ltable.items() if k != "name"})
                lexical.add(chunks)
                found = {q.id: [(c, float(s)) for c, s in lexical.search(q.text, base.candidates)] for q in queries}
                if key:
                    _write_legs(key, found)
            else:
                cached.append(label)
            lexical_legs[label] = found
    finally:
        layout.cleanup()
    index = Index(layout, chunks, {c.id: c for c in chunks}, docs_of, None, None, {},
                  {c.id: v for c, v in zip(chunks, vectors)})
    return SweepLegs(config, index, queries, {q.id: v for q, v in zip(queries, qvecs)}, vector_legs, lexical_legs,
                     base.max_results, base.candidates, chunk_qrels(docs_of, queries), cached,
                     resampling_unit(dataset))


# --- the lexical leg cache ------------------------------------------------------------------------------


def _leg_key(config: dict[str, Any], tokenizer: dict[str, Any], chunks: Sequence[Any], queries: Sequence[Query],
             candidates: int) -> str:
    import jieba

    digest = hashlib.sha256()
    head = {"version": LEG_CACHE_VERSION, "tokenizer": tokenizer, "lexical": config["lexical"],
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
        return {qid: [(c, float(s)) for c, s in leg] for qid, leg in doc.items()}
    except (OSError, ValueError, TypeError):  # absent, or unreadable: search again (and rewrite it)
        return None


def _write_legs(key: str, legs: dict[str, list[tuple[str, float]]]) -> None:
    path = _leg_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(legs, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
    except OSError:
        pass  # a read-only cache only costs the next sweep the search


# --- scoring ----------------------------------------------------------------------------------------------


@dataclass
class ScoringState:
    """What a slice of settings is scored from; shipped once to every worker."""

    arrays: dict[str, CandidateLegs]  # tokenizer label -> its legs as arrays
    legs: SweepLegs | None  # for settings that need the pipeline's stages (None when none does)
    max_results: int
    cutoffs: list[int]


def fast_supported(setting: Setting) -> bool:
    """A setting the fast scorer can score: no post-processing besides min_score, a fusion it knows."""
    return not setting.post and _fast_fusion(setting.fusion_key)


@lru_cache(maxsize=None)
def _fast_fusion(fusion_key: str) -> bool:
    fusion = fusion_stage(fusion_key)
    try:
        fused(candidate_legs({"q": Legs([("a", 0.5)], [("a", 1.0)])}, {}), fusion)
        return True
    except ValueError:  # the fast scorer names what it does not support
        return False


def score_grid(settings: Sequence[Setting], legs: SweepLegs, cutoffs: Sequence[int], *, executor: Any = None,
               parts: int | None = None) -> SettingScores:
    """Every setting's per-query figures (settings x queries, queries in legs.queries order)."""
    state = scoring_state(settings, legs, cutoffs)
    if executor is None:
        return score_slice(list(settings), state)
    from harness.studies.distributed import score_settings as score_on

    return score_on(executor, settings, state, parts=parts)


def scoring_state(settings: Sequence[Setting], legs: SweepLegs, cutoffs: Sequence[int]) -> ScoringState:
    """The legs of each tokenizer the settings use, as arrays; the searched legs only if some setting needs
    the pipeline's stages."""
    slow = any(not fast_supported(s) for s in _distinct_kinds(settings))
    ids = [q.id for q in legs.queries]
    used = dict.fromkeys(s.tokenizer for s in settings)
    arrays = {label: candidate_legs(legs.legs(label), legs.chunk_qrels, ids) for label in used}
    return ScoringState(arrays, legs if slow else None, legs.max_results, sorted(set(cutoffs) | {legs.max_results}))


def _distinct_kinds(settings: Sequence[Setting]) -> list[Setting]:
    """One setting per (fusion name, post-processing): what decides the scoring path."""
    seen: dict[str, Setting] = {}
    for s in settings:
        seen.setdefault(json.dumps([s.fusion["name"], s.post], sort_keys=True), s)
    return list(seen.values())


def score_slice(settings: list[Setting], state: ScoringState) -> SettingScores:
    """A contiguous slice of the grid: runs of settings with the same tokenizer go through the fast
    scorer together (their fusions x their thresholds, the rows they name picked out), the others one
    by one through the pipeline's stages."""
    parts = []
    for (tokenizer, fast), group in groupby(settings, key=lambda s: (s.tokenizer, fast_supported(s))):
        group = list(group)
        if fast:
            parts.append(_fast(group, state.arrays[tokenizer], state))
        else:
            parts += [_slow(s, state) for s in group]
    return concatenated(parts)


def _fast(group: list[Setting], arrays: CandidateLegs, state: ScoringState) -> SettingScores:
    fusions = {s.fusion_key: i for i, s in enumerate(dict((s.fusion_key, s) for s in group).values())}
    thresholds = {t: i for i, t in enumerate(dict.fromkeys(s.threshold for s in group))}
    stages = {key: fusion_stage(key) for key in fusions}
    scores = score_settings(arrays, list(stages.values()), list(thresholds), max_results=state.max_results,
                            cutoffs=state.cutoffs)
    rows = [fusions[s.fusion_key] * len(thresholds) + thresholds[s.threshold] for s in group]
    return picked(scores, rows, [(stages[s.fusion_key], s.threshold) for s in group])


def fusion_stage(fusion_key: str) -> Any:
    table = json.loads(fusion_key)
    return FUSIONS.create(table["name"], **{k: v for k, v in table.items() if k != "name"})


def _slow(setting: Setting, state: ScoringState) -> SettingScores:
    """One setting through the pipeline's fusion and post-processing stages, scored as the fast scorer
    scores (reciprocal rank within the returned list, pass, hit@k, chunk nDCG@k, top-1, spread)."""
    legs = state.legs
    stages = setting.stages(legs.config, legs.max_results, legs.candidates)
    by_tokenizer = legs.legs(setting.tokenizer)
    n = len(legs.queries)
    out = SettingScores([(stages.fusion, setting.threshold)], [q.id for q in legs.queries], np.zeros((1, n)),
                        np.zeros((1, n), dtype=bool), {k: np.zeros((1, n), dtype=bool) for k in state.cutoffs},
                        {k: np.zeros((1, n)) for k in state.cutoffs}, np.full((1, n), np.nan),
                        np.zeros((1, n), dtype=int), np.zeros((1, n)))
    run = {}
    for j, q in enumerate(legs.queries):
        hits, fused, _ = fuse_with_candidates(stages, q, by_tokenizer[q.id], legs.index, legs.query_vectors[q.id])
        grades = legs.chunk_qrels.get(q.id, {})
        ranks = [i for i, h in enumerate(hits, start=1) if grades.get(h.id, 0) > 0]
        first = ranks[0] if ranks else math.inf
        out.reciprocal_rank[0, j] = 1.0 / first if ranks else 0.0
        for k in state.cutoffs:
            out.hits[k][0, j] = first <= k
        out.returned[0, j] = len(hits)
        out.top1_score[0, j] = hits[0].score if hits else np.nan
        out.passed[0, j] = first == 1 and hits[0].score >= stages.pass_threshold
        out.spread[0, j] = score_spread([[h.score for h in fused]])[0]
        run[q.id] = {h.id: float(len(hits) - i) for i, h in enumerate(hits)}  # strictly decreasing: the order kept
    evaluator = Evaluator(legs.chunk_qrels)
    values = evaluator(run, [f"ndcg@{k}" for k in state.cutoffs])
    for j, q in enumerate(legs.queries):
        for k in state.cutoffs:
            out.ndcg[k][0, j] = values.get(q.id, {}).get(f"ndcg@{k}", 0.0)
    return out


def picked(scores: SettingScores, rows: list[int], settings: list[Any]) -> SettingScores:
    return SettingScores(settings, scores.query_ids, scores.reciprocal_rank[rows], scores.passed[rows],
                         {k: v[rows] for k, v in scores.hits.items()}, {k: v[rows] for k, v in scores.ndcg.items()},
                         scores.top1_score[rows], scores.returned[rows], scores.spread[rows])


def concatenated(parts: Sequence[SettingScores]) -> SettingScores:
    first = parts[0]
    stack = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
    return SettingScores([s for p in parts for s in p.settings], first.query_ids, stack("reciprocal_rank"),
                         stack("passed"), {k: np.concatenate([p.hits[k] for p in parts]) for k in first.hits},
                         {k: np.concatenate([p.ndcg[k] for p in parts]) for k in first.ndcg}, stack("top1_score"),
                         stack("returned"), stack("spread"))


# --- record-level figures of a few settings ------------------------------------------------------------


def headline_frame(setting: Setting, legs: SweepLegs, cutoffs: Sequence[int]) -> tuple[Any, dict[str, Any]]:
    """One setting run through the whole evaluation (evaluate_queries + summarise): its per-query rows and
    summary, with record-level Recall, MRR and nDCG and their intervals, passes, near ties."""
    config = legs.config
    stages = setting.stages(config, legs.max_results, legs.candidates)
    by_tokenizer = legs.legs(setting.tokenizer)
    query_legs = {q.id: QueryLegs(by_tokenizer[q.id], {"query_embedding": 0.0, "vector": 0.0, "lexical": 0.0},
                                  legs.query_vectors[q.id]) for q in legs.queries}
    evaluation = config.get("evaluation", {})
    frame, _, _ = evaluate_queries(legs.index, stages, legs.queries, query_legs, evaluation.get("round"), cutoffs,
                                   ties=evaluation.get("ties", "expected"))
    summary = summarise(frame, legs.max_results, unit=legs.unit)
    summary.pop("latency_ms", None)  # zeros here: the legs were searched once for every setting
    return frame, summary


def headline_summary(setting: Setting, legs: SweepLegs, cutoffs: Sequence[int]) -> dict[str, Any]:
    """The summary of headline_frame: what a report shows for the configured and the chosen setting."""
    return headline_frame(setting, legs, cutoffs)[1]
