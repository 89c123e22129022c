"""Document-level metrics when documents tie: the expectation over every order of the tied documents.

A document run made from chunks by MaxP (harness.evaluation.runs.max_passage_run) scores every document
by its best chunk, so the records (or LoCoMo turns) of one chunk tie.  Ordering them by id, as trec_eval
does, makes record-level MRR, nDCG and Recall depend on how the ids happen to sort: a chunk of five turns
gives reciprocal rank 1 or 1/5 by the turn ids alone.  Here each tie group is a set of positions the
group's documents share at random, and each metric is its expectation over the orders of the groups
(closed forms, McSherry & Najork 2008):

    positions    group k (equal scores, best group first) holds positions s_k .. e_k, g_k documents,
                 r_k of them relevant, G_k the sum of their gains (grades)
    Recall@c     sum_k r_k / g_k * |[s_k, e_k] n [1, c]|  /  R           (R: relevant documents judged)
    DCG@c        sum_k G_k / g_k * sum_{p in [s_k, e_k] n [1, c]} 1 / log2(p + 1);  nDCG = DCG / IDCG@c
    RR@c         the first group with r > 0: sum_j P(first relevant at s + j - 1) / (s + j - 1) over
                 positions <= c, P(first at offset j) = C(g - j, r - 1) / C(g, r)

The best and the worst order (relevant documents first, or last, in every tie group) bound the value; a
query whose best and worst differ is one where ties decide.  The trec_eval rule (ties broken by id, read
as numbers where ids hold them: "D1:2" before "D1:10") stays available as `ties = "id_order"`.
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from harness.ranking import natural_key

NEAR_TIE_FRACTION = 0.0025  # a margin below this share of the query's fused-score spread is a near tie
NEAR_TIE = 0.001  # the absolute near-tie threshold of results written before it became relative

TIE_RULES = ("expected", "id_order")
MEASURES = ("recall", "mrr", "ndcg")
EXPECTED_MEASURES = ("recall", "mrr", "ndcg", "precision", "hit_rate")  # those with a closed form here


def tie_groups(scores: Mapping[str, float]) -> list[list[str]]:
    """Document ids in groups of equal score, best group first; within a group by id (natural order)."""
    ordered = sorted(scores.items(), key=lambda item: (-item[1], natural_key(item[0])))
    groups: list[list[str]] = []
    last = None
    for doc, score in ordered:
        if groups and score == last:
            groups[-1].append(doc)
        else:
            groups.append([doc])
        last = score
    return groups


def id_order(scores: Mapping[str, float]) -> list[str]:
    """The trec_eval order with numeric-aware ids: (score desc, natural id)."""
    return [doc for group in tie_groups(scores) for doc in group]


def _discount(position: int) -> float:
    return 1.0 / math.log2(position + 1)


def _ideal_dcg(grades: Mapping[str, int], c: int) -> float:
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:c]
    return sum(g * _discount(p) for p, g in enumerate(ideal, start=1))


def _ordered_values(order: Sequence[int], relevant_total: int, idcg: float, c: int) -> dict[str, float]:
    """Recall, RR, nDCG, precision and hit at c of one explicit order, given as the gain at each position."""
    top = order[:c]
    first = next((p for p, g in enumerate(top, start=1) if g > 0), None)
    dcg = sum(g * _discount(p) for p, g in enumerate(top, start=1))
    found = sum(g > 0 for g in top)
    return {"recall": found / relevant_total, "mrr": 1.0 / first if first else 0.0,
            "ndcg": dcg / idcg if idcg > 0 else 0.0, "precision": found / c, "hit_rate": float(first is not None)}


def query_tie_metrics(scores: Mapping[str, float], grades: Mapping[str, int], cutoffs: Iterable[int],
                      measures: Sequence[str] = MEASURES) -> dict[str, tuple[float, float, float]]:
    """For one query: {"recall@c": (expected, worst, best), "mrr@c": ..., "ndcg@c": ...} (and precision@c,
    hit_rate@c when asked).  `grades` are the query's judgments (grade > 0: relevant)."""
    relevant_total = sum(g > 0 for g in grades.values())
    groups = tie_groups(scores)
    gains = [[max(grades.get(doc, 0), 0) for doc in group] for group in groups]
    best = [g for group in gains for g in sorted(group, reverse=True)]
    worst = [g for group in gains for g in sorted(group)]
    out: dict[str, tuple[float, float, float]] = {}
    for c in cutoffs:
        idcg = _ideal_dcg(grades, c)
        recall = dcg = rr = hit = 0.0
        start, first_found = 1, False
        for group in gains:
            g, r = len(group), sum(x > 0 for x in group)
            end = start + g - 1
            inside = max(0, min(end, c) - start + 1)
            if r and inside:
                recall += r / g * inside
                dcg += sum(group) / g * sum(_discount(p) for p in range(start, start + inside))
            if r and not first_found:
                first_found = True
                total = math.comb(g, r)
                for j in range(1, g - r + 2):  # the first relevant document at offset j of the group
                    position = start + j - 1
                    if position > c:
                        break
                    rr += math.comb(g - j, r - 1) / total / position
                if inside:  # some of the group's positions are within c: P(one of its relevant is)
                    hit = 1.0 - math.comb(g - r, inside) / math.comb(g, inside)
            start = end + 1
        worst_values = _ordered_values(worst, relevant_total, idcg, c)
        best_values = _ordered_values(best, relevant_total, idcg, c)
        expected = {"recall": recall / relevant_total, "mrr": rr, "ndcg": dcg / idcg if idcg > 0 else 0.0,
                    "precision": recall / c, "hit_rate": hit}
        for name in measures:
            out[f"{name}@{c}"] = (expected[name], worst_values[name], best_values[name])
    return out


def tie_aware_metrics(document_run: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Mapping[str, int]],
                      cutoffs: Iterable[int]) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, list[float]]]]:
    """Per judged query (a query with a relevant document): the expected recall@c, mrr@c and ndcg@c over
    the orders of tied documents, and the [worst, best] range of the metrics where ties decide (only
    those entries whose worst and best differ).  Queries the run does not answer score 0."""
    cutoffs = sorted(set(cutoffs))
    values: dict[str, dict[str, float]] = {}
    ranges: dict[str, dict[str, list[float]]] = {}
    for qid, grades in qrels.items():
        if not any(g > 0 for g in grades.values()):
            continue
        figures = query_tie_metrics(document_run.get(qid, {}), grades, cutoffs)
        values[qid] = {name: expected for name, (expected, _, _) in figures.items()}
        decided = {name: [worst, best] for name, (_, worst, best) in figures.items() if best - worst > 1e-12}
        if decided:
            ranges[qid] = decided
    return values, ranges


def expected_in_top(groups: Sequence[Sequence[str]], c: int) -> dict[str, float]:
    """P(document in the first c) when each tie group's documents share its positions at random."""
    out: dict[str, float] = {}
    start = 1
    for group in groups:
        inside = max(0, min(start + len(group) - 1, c) - start + 1)
        for doc in group:
            out[doc] = inside / len(group)
        start += len(group)
    return out
