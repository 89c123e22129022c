"""Runs and qrels: the evaluation boundary, in the shape ranx, BEIR and pytrec_eval use.

    Run   = {query id: {doc id: score}}    what a system returned for each query
    Qrels = {query id: {doc id: grade}}    what is relevant to each query (grade > 0)

Plain dictionaries: a run of this harness and a run of any other system (QMD's, OpenClaw's own
memory_search output) are scored by the same function (harness.evaluation.metrics.evaluate) and move
in and out as TREC or ranx JSON files (harness.evaluation.run_files).

A run is a ranking: each query's list is read in (score desc, id) order (harness.ranking), so a tie
never depends on a library's own rule.  Two granularities, both built from the layout's provenance map
(chunk id -> the documents whose lines the chunk overlaps):

    chunk      ids are chunk ids (`path:start-end`), what memory_search returns   chunk_run()
    document   ids are record ids, each scored by its best chunk (MaxP)         max_passage_run()

    >>> runs = judged_runs(hits, index.docs_of, chunk_qrels(index.docs_of, queries), document_qrels(queries))
    >>> runs.chunk_run["T1"]        # {'memory/rec....md:000001-000025': 0.608, ...}
    >>> runs.document_run["T1"]     # {'recAhKVobGxBo': 0.608, ...}
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterable, Mapping, Sequence

from harness.errors import DataError
from harness.ranking import by_score_then_id
from harness.text_files import shown
from harness.trace import Hit

Run = dict[str, dict[str, float]]  # query id -> doc id -> score
Qrels = dict[str, dict[str, int]]  # query id -> doc id -> grade

LEVELS = ("chunk", "document")


def ranked_ids(scores: Mapping[str, float]) -> list[str]:
    """One query's doc ids best first: (score desc, id asc)."""
    return [doc for doc, _ in by_score_then_id(scores.items())]


def cut(run: Run, k: int | None) -> Run:
    """Each query's first k documents (in ranked order); k None leaves the run whole."""
    if k is None:
        return {qid: dict(scores) for qid, scores in run.items()}
    return {qid: {doc: scores[doc] for doc in ranked_ids(scores)[:k]} for qid, scores in run.items()}


def ranking_scores(ranked: Sequence[tuple[str, float]]) -> dict[str, float]:
    """A returned list (id, score), best first, as one query of a run.

    The scores are kept when they already give the list's order by (score desc, id), which every fusion
    and every score-changing stage guarantees.  A stage that returns its own order with the scores
    unchanged (mmr, cosine_diversity) gets 1/rank instead, so that every reader of the run (our metrics,
    trec_eval, ranx, MaxP) sees the order the agent saw."""
    ids = [doc for doc, _ in ranked]
    if len(set(ids)) != len(ids):
        raise ValueError(f"a ranked list names a document twice: {ids}")
    if [doc for doc, _ in by_score_then_id(ranked)] == ids:
        return {doc: float(score) for doc, score in ranked}
    return {doc: 1.0 / rank for rank, doc in enumerate(ids, start=1)}


def chunk_run(hits: Mapping[str, Sequence[Hit]]) -> Run:
    """The chunk-level run of the hits each query returned (see ranking_scores)."""
    return {qid: ranking_scores([(h.id, h.score) for h in query_hits]) for qid, query_hits in hits.items()}


def max_passage_run(run: Run, docs_of: Mapping[str, Iterable[str]]) -> Run:
    """A document run from a chunk run by MaxP: each document scores its best chunk's score.  Documents of
    one chunk tie and break by id; a chunk that overlaps no document adds nothing."""
    out: Run = {}
    for qid, scores in run.items():
        docs: dict[str, float] = {}
        for chunk in ranked_ids(scores):  # best first: a document's first chunk is its best
            for doc in docs_of.get(chunk, ()):
                docs.setdefault(doc, scores[chunk])
        out[qid] = {doc: docs[doc] for doc in ranked_ids(docs)}
    return out


@dataclass
class JudgedRuns:
    """One evaluation's runs and qrels at both granularities, with the provenance of the run's chunks
    (enough to rebuild every reported metric: harness.evaluation.metrics.standard_metrics)."""

    chunk_run: Run
    chunk_qrels: Qrels
    document_qrels: Qrels
    chunk_documents: dict[str, list[str]]  # chunk id -> documents it overlaps, for the chunks in chunk_run

    @cached_property
    def document_run(self) -> Run:
        """The chunk run by MaxP (built when first read: a sweep's metrics do not need it)."""
        return max_passage_run(self.chunk_run, self.chunk_documents)

    def run(self, level: str) -> Run:
        return {"chunk": self.chunk_run, "document": self.document_run}[level]

    def qrels(self, level: str) -> Qrels:
        return {"chunk": self.chunk_qrels, "document": self.document_qrels}[level]

    def only(self, query_ids: Iterable[str]) -> "JudgedRuns":
        """The same runs and qrels restricted to `query_ids` (e.g. a round's suite)."""
        keep = set(query_ids)
        pick = lambda mapping: {q: v for q, v in mapping.items() if q in keep}  # noqa: E731
        runs = pick(self.chunk_run)
        chunks = {c for scores in runs.values() for c in scores}
        return JudgedRuns(runs, pick(self.chunk_qrels), pick(self.document_qrels),
                          {c: d for c, d in self.chunk_documents.items() if c in chunks})

    def to_dict(self) -> dict[str, Any]:
        """The keys results.json stores: runs, qrels (each by level) and chunk_documents."""
        return {"runs": {"chunk": self.chunk_run, "document": self.document_run},
                "qrels": {"chunk": self.chunk_qrels, "document": self.document_qrels},
                "chunk_documents": self.chunk_documents}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], path: str = "<results>") -> "JudgedRuns":
        """Read back what to_dict wrote (a results.json); bad content raises DataError naming `path`.  The
        document run is rebuilt from the chunk run and chunk_documents (it is stored for other readers, and
        left out of a benchmark's compact results.json)."""
        for key in ("runs", "qrels", "chunk_documents"):
            if not isinstance(doc.get(key), dict):
                raise DataError(path, None, key, "missing: this results.json was written before runs were "
                                "stored; run the experiment again")
        runs, qrels = doc["runs"], doc["qrels"]
        for level in LEVELS:
            if (level == "chunk" and level not in runs) or level not in qrels:
                raise DataError(path, None, f"runs.{level}" if level not in runs else f"qrels.{level}", "missing")
        provenance = doc["chunk_documents"]
        for chunk, docs in provenance.items():
            if not isinstance(docs, list) or not all(isinstance(d, str) for d in docs):
                raise DataError(path, None, f"chunk_documents.{chunk}", f"must be a list of ids (got {docs!r})")
        return cls(checked_run(runs["chunk"], path, "runs.chunk"), checked_qrels(qrels["chunk"], path, "qrels.chunk"),
                   checked_qrels(qrels["document"], path, "qrels.document"), provenance)


def scoped_runs(parts: Sequence[tuple[str, JudgedRuns]]) -> JudgedRuns:
    """The runs of a scoped data set's parts (one workspace per conversation, say) as one: chunk and
    document ids are prefixed with their scope ("conv-26/memory/x.md:..."), since they repeat across
    scopes; query ids are already unique."""
    def prefixed(scope: str, mapping: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        return {q: {f"{scope}/{d}": v for d, v in docs.items()} for q, docs in mapping.items()}

    merged = JudgedRuns({}, {}, {}, {})
    for scope, runs in parts:
        merged.chunk_run.update(prefixed(scope, runs.chunk_run))
        merged.chunk_qrels.update(prefixed(scope, runs.chunk_qrels))
        merged.document_qrels.update(prefixed(scope, runs.document_qrels))
        merged.chunk_documents.update({f"{scope}/{c}": [f"{scope}/{d}" for d in docs]
                                       for c, docs in runs.chunk_documents.items()})
    return merged


def judged_runs(hits: Mapping[str, Sequence[Hit]], docs_of: Mapping[str, Iterable[str]],
                chunk_qrels: Qrels, document_qrels: Qrels) -> JudgedRuns:
    """Runs at both granularities from the hits each query returned and the provenance map `docs_of`."""
    chunks = chunk_run(hits)
    provenance = {c: sorted(docs_of.get(c, ())) for scores in chunks.values() for c in scores}
    return JudgedRuns(chunks, chunk_qrels, document_qrels, provenance)


# --- validation of runs and qrels read from files --------------------------------------------------


def _mapping_of_mappings(obj: Any, path: str, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(obj, dict):
        raise DataError(path, None, where or None, f"must be an object of query id -> {{doc id: value}} "
                        f"(got {type(obj).__name__})")
    for qid, docs in obj.items():
        if not qid.strip():
            raise DataError(path, None, where or None, f"a query id is empty ({qid!r}); every query needs one")
        if not isinstance(docs, dict):
            raise DataError(path, None, _field(where, qid), f"must be an object of doc id -> value "
                            f"(got {type(docs).__name__})")
        if any(not doc.strip() for doc in docs):
            raise DataError(path, None, _field(where, qid), "a document id is empty; every document needs one")
    return obj


def _field(where: str, *parts: str) -> str:
    return ".".join([where, *parts] if where else parts)


MAX_GRADE = 2**31 - 1  # trec_eval (and pytrec_eval, which the metrics run on) hold a grade in a C int


def _finite_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer past float's range
        return False


def checked_run(obj: Any, path: str, where: str = "") -> Run:
    """`obj` as a Run: every score a finite number, else DataError naming the query and document."""
    out: Run = {}
    for qid, docs in _mapping_of_mappings(obj, path, where).items():
        out[qid] = {}
        for doc, score in docs.items():
            if not _finite_number(score):
                raise DataError(path, None, _field(where, qid, doc),
                                f"score must be a finite number (got {shown(score)})")
            out[qid][doc] = float(score)
    return out


def checked_qrels(obj: Any, path: str, where: str = "") -> Qrels:
    """`obj` as Qrels: every grade an integer, else DataError naming the query and document."""
    out: Qrels = {}
    for qid, docs in _mapping_of_mappings(obj, path, where).items():
        out[qid] = {}
        for doc, grade in docs.items():
            if isinstance(grade, bool) or not isinstance(grade, int) or not -MAX_GRADE <= grade <= MAX_GRADE:
                raise DataError(path, None, _field(where, qid, doc),
                                f"grade must be an integer between {-MAX_GRADE:,} and {MAX_GRADE:,} (got {shown(grade)})")
            out[qid][doc] = grade
    return out
