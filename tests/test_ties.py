"""Document-level metrics with tied documents (harness.evaluation.ties): the closed forms equal the mean
over every order of the tied documents (brute force), equal trec_eval where nothing ties, and bound the
value between the worst and the best order; the id rule reads turn ids as numbers."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from harness.evaluation.metrics import evaluate
from harness.evaluation.ties import (
    id_order,
    query_tie_metrics,
    tie_aware_metrics,
    tie_groups,
)


def brute_force(scores: dict[str, float], grades: dict[str, int], c: int) -> dict[str, list[float]]:
    """Recall, RR and nDCG at c over every order of every tie group (each order equally likely)."""
    groups = tie_groups(scores)
    relevant = sum(g > 0 for g in grades.values())
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:c]
    idcg = sum(g / math.log2(p + 1) for p, g in enumerate(ideal, start=1))
    values: dict[str, list[float]] = {"recall": [], "mrr": [], "ndcg": []}
    for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
        ranked = [doc for order in orders for doc in order][:c]
        gains = [max(grades.get(d, 0), 0) for d in ranked]
        first = next((p for p, g in enumerate(gains, start=1) if g > 0), None)
        values["recall"].append(sum(g > 0 for g in gains) / relevant)
        values["mrr"].append(1 / first if first else 0.0)
        values["ndcg"].append(sum(g / math.log2(p + 1) for p, g in enumerate(gains, start=1)) / idcg)
    return values


@pytest.mark.parametrize("seed", range(12))
def test_expectation_is_the_mean_over_every_order_and_lies_between_worst_and_best(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 8))
    docs = [f"d{i}" for i in range(n)]
    scores = {d: float(rng.integers(1, 4)) for d in docs}  # few distinct scores: ties everywhere
    grades = {d: int(rng.integers(0, 3)) for d in docs}
    if not any(grades.values()):
        grades[docs[0]] = 1
    grades["unretrieved"] = int(rng.integers(0, 2))  # a relevant document the run does not return
    for c in (1, 2, 3, n):
        figures = query_tie_metrics(scores, grades, [c])
        truth = brute_force(scores, grades, c)
        for name in ("recall", "mrr", "ndcg"):
            expected, worst, best = figures[f"{name}@{c}"]
            assert expected == pytest.approx(float(np.mean(truth[name])), abs=1e-12), (name, c)
            assert worst == pytest.approx(min(truth[name])) and best == pytest.approx(max(truth[name]))


def test_equal_to_trec_eval_where_nothing_ties():
    rng = np.random.default_rng(3)
    run = {f"q{q}": {f"d{i}": float(s) for i, s in enumerate(rng.permutation(9))} for q in range(20)}
    qrels = {q: {f"d{i}": int(rng.integers(0, 3)) for i in range(9)} | {"d0": 1} for q in run}
    values, ranges = tie_aware_metrics(run, qrels, [1, 3, 5])
    trec = evaluate(run, qrels, ["recall@1", "mrr@3", "ndcg@5", "recall@5", "mrr@5", "ndcg@1"])
    assert ranges == {}
    for q in run:
        for name in trec[q]:
            assert values[q][name] == pytest.approx(trec[q][name], abs=1e-9), (q, name)


def test_a_chunk_of_five_turns_hand_worked():
    """One relevant turn among five tied at rank 1..5: RR 1/5 (1 + 1/2 + 1/3 + 1/4 + 1/5) = 0.4567, and
    Recall@2 = 2/5; by id alone it would be 1 or 1/5 depending on how the ids sort."""
    scores = {f"D1:{i}": 0.8 for i in (1, 2, 3, 10, 11)}
    figures = query_tie_metrics(scores, {"D1:10": 1}, [2, 5])
    assert figures["mrr@5"][0] == pytest.approx(sum(1 / p for p in range(1, 6)) / 5)
    assert figures["mrr@5"][1:] == (pytest.approx(0.2), 1.0)
    assert figures["recall@2"][0] == pytest.approx(0.4)


def test_id_order_reads_turn_ids_as_numbers():
    scores = {"D1:10": 1.0, "D1:2": 1.0, "D2:1": 1.0, "D1:9": 2.0}
    assert id_order(scores) == ["D1:9", "D1:2", "D1:10", "D2:1"]
