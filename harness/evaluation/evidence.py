"""Evidence metrics that memory projects publish on LoCoMo, as small pure functions over plain dicts.

    run    {query id: {doc id: score}}     higher is better; ties break by doc id (SPEC.md section 5)
    qrels  {query id: {doc id: grade}}     grade > 0 relevant; 0 (or below) judged non-relevant

Every function returns one value per judged query (a query with at least one relevant document);
queries absent from the run score 0.  `k` cuts the ranked run (None: the whole run).

    recall_any@k   1 when at least one relevant document is among the top k, else 0 ("hit rate")
    recall_all@k   1 when every relevant document is among the top k, else 0 (LoCoMo's own retrieval
                   evaluation counts a question as recalled only when all its evidence turns are)
    reciprocal_rank  1 / rank of the first relevant document (MRR is its mean)
    ndcg@k         trec_eval's nDCG: gain = grade, discount log2(rank + 1), ideal from the grades
    ndcg_any@k     LongMemEval's nDCG (src/retrieval/eval_utils.py): binary gain (any relevant document
                   counts 1), ranks 1 and 2 undiscounted, rank r > 2 discounted by log2(r)

What a "document" is and how a ranked list of chunks becomes a run is the caller's choice; doc_scores
gives the harness's: every document a returned chunk overlaps, at its best chunk's score.  With chunks
that hold several turns, cut the chunks first (top-k chunks -> their documents, k = None here), so that
"@k" counts what memory_search returns rather than turns tied inside one chunk.
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from harness.ranking import by_score_then_id

Run = Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, Mapping[str, int]]


def ranked_docs(scores: Mapping[str, float], k: int | None = None) -> list[str]:
    """Doc ids by (score desc, id), the first k."""
    order = [doc for doc, _ in by_score_then_id(scores.items())]
    return order if k is None else order[:k]


def _relevant(grades: Mapping[str, int]) -> set[str]:
    return {doc for doc, grade in grades.items() if grade > 0}


def _judged(qrels: Qrels) -> dict[str, set[str]]:
    return {qid: rel for qid, grades in qrels.items() if (rel := _relevant(grades))}


def recall_any(run: Run, qrels: Qrels, k: int | None = None) -> dict[str, float]:
    return {qid: float(bool(rel & set(ranked_docs(run.get(qid, {}), k)))) for qid, rel in _judged(qrels).items()}


def recall_all(run: Run, qrels: Qrels, k: int | None = None) -> dict[str, float]:
    return {qid: float(rel <= set(ranked_docs(run.get(qid, {}), k))) for qid, rel in _judged(qrels).items()}


def reciprocal_rank(run: Run, qrels: Qrels, k: int | None = None) -> dict[str, float]:
    out = {}
    for qid, rel in _judged(qrels).items():
        ranks = [i for i, doc in enumerate(ranked_docs(run.get(qid, {}), k), start=1) if doc in rel]
        out[qid] = 1.0 / ranks[0] if ranks else 0.0
    return out


def ndcg(run: Run, qrels: Qrels, k: int) -> dict[str, float]:
    out = {}
    for qid in _judged(qrels):
        grades = qrels[qid]
        dcg = sum(max(grades.get(doc, 0), 0) / math.log2(i + 1)
                  for i, doc in enumerate(ranked_docs(run.get(qid, {}), k), start=1))
        ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
        idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
        out[qid] = dcg / idcg
    return out


def ndcg_any(run: Run, qrels: Qrels, k: int) -> dict[str, float]:
    def dcg(gains: Sequence[int]) -> float:
        return sum(g / (1.0 if i <= 2 else math.log2(i)) for i, g in enumerate(gains, start=1))

    out = {}
    for qid, rel in _judged(qrels).items():
        gains = [int(doc in rel) for doc in ranked_docs(run.get(qid, {}), k)]
        out[qid] = dcg(gains) / dcg([1] * min(len(rel), k))
    return out


def doc_scores(hits: Sequence[tuple[str, float]], docs_of: Mapping[str, Iterable[str]]) -> dict[str, float]:
    """Ranked (chunk id, score) hits -> {doc: score of the best hit that overlaps it}."""
    out: dict[str, float] = {}
    for chunk, score in hits:
        for doc in docs_of.get(chunk, ()):
            if doc not in out or score > out[doc]:
                out[doc] = score
    return out


def mean(values: Mapping[str, float]) -> float | None:
    return sum(values.values()) / len(values) if values else None
