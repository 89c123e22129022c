"""Incomplete judgments (judged@k, bpref, condensed nDCG'), agreement (Cohen's kappa), --redact, and the
queries file's `judged` field."""
from __future__ import annotations

import math

import pytest

from harness.errors import DataError
from harness.evaluation.agreement import agreement
from harness.evaluation.incomplete import chunk_judgments, incomplete_metrics
from harness.inputs.query_files import load_query_specs
from harness.redact import redact


def bpref_by_hand(ranked, grades):
    """Buckley & Voorhees (2004) as trec_eval computes it: R relevant, N judged non-relevant; each relevant
    retrieved chunk r scores 1 - min(n above r, R) / min(R, N)."""
    relevant = [c for c, g in grades.items() if g > 0]
    nonrelevant = [c for c, g in grades.items() if g == 0]
    r, n = len(relevant), len(nonrelevant)
    seen_non, total = 0, 0.0
    for c in ranked:
        if grades.get(c) == 0:
            seen_non += 1
        elif grades.get(c, 0) > 0:
            total += 1 - (min(seen_non, r) / min(r, n) if min(r, n) else 0)
    return total / r


def test_bpref_and_condensed_ndcg_follow_their_definitions():
    grades = {"a": 2, "b": 0, "c": 1, "d": 0, "e": 3}
    ranked = ["x", "b", "a", "y", "d", "c", "z"]  # x, y, z unjudged
    out = incomplete_metrics(ranked, grades, [3, 7])
    assert out["judged@3"] == pytest.approx(2 / 3)
    assert out["judged@7"] == pytest.approx(4 / 7)
    assert out["bpref@7"] == pytest.approx(bpref_by_hand(ranked, grades))
    # nDCG' on the condensed list b, a, d, c: gains 0, 2, 0, 1 against the ideal 3, 2, 1
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    ideal = 3 / 1 + 2 / math.log2(3) + 1 / math.log2(4)
    assert out["ndcg_prime@7"] == pytest.approx(dcg / ideal)
    # an unjudged chunk above the judged ones changes nDCG@k but not nDCG'@k
    assert incomplete_metrics(["q", *ranked], grades, [7])["ndcg_prime@7"] == pytest.approx(dcg / ideal)


def test_queries_judged_only_zero_have_no_bpref_and_empty_lists_no_judged_share():
    out = incomplete_metrics(["a", "b"], {"a": 0, "b": 0}, [2])
    assert out["judged@2"] == 1.0 and math.isnan(out["bpref@2"]) and math.isnan(out["ndcg_prime@2"])
    assert math.isnan(incomplete_metrics([], {"a": 1}, [5])["judged@5"])


def test_a_chunk_is_judged_by_overlap_with_the_highest_grade():
    docs_of = {"c1": frozenset({"f#L1-L5"}), "c2": frozenset({"f#L1-L5", "f#L4-L9"}), "c3": frozenset()}
    assert chunk_judgments(docs_of, {"f#L1-L5": 0, "f#L4-L9": 2}) == {"c1": 0, "c2": 2}


def kappa(a, b, categories, weighted=None) -> float:
    return agreement("x", list(zip(a, b)), ["s"] * len(a), categories, ("a", "b"), weighted=weighted).kappa


def test_cohen_kappa_known_values_and_its_interval_at_the_cluster_level():
    assert kappa([1, 0, 1, 0], [1, 0, 1, 0], [0, 1]) == pytest.approx(1.0)
    # 20 items: 45% / 55% marginals, 14 agreements -> p_o 0.7, p_e 0.5 -> kappa 0.4
    a = [1] * 9 + [0] * 11
    b = [1] * 6 + [0] * 3 + [1] * 3 + [0] * 8
    assert kappa(a, b, [0, 1]) == pytest.approx((0.7 - (0.45 * 0.45 + 0.55 * 0.55)) / (1 - (0.45 * 0.45 + 0.55 * 0.55)))
    few = agreement("x", list(zip(a, b)), ["s1"] * 20, [0, 1], ("a", "b"))
    assert math.isnan(few.kappa_ci95[0]) and "n too small" in few.method
    many = agreement("x", list(zip(a, b)), [f"s{i // 2}" for i in range(20)], [0, 1], ("a", "b"))
    low, high = many.kappa_ci95
    assert low <= many.kappa <= high and many.clusters == 10 and many.table == [[8, 3], [3, 6]]
    weighted = kappa([0, 1, 2, 3], [0, 1, 3, 3], [0, 1, 2, 3], weighted="quadratic")
    assert 0 < weighted < 1


def test_redact_masks_numbers_mail_urls_and_keys_not_words():
    text = "finance@example.com 预算 18,000 EUR see https://x.example/a?b=1 key sk-abcdefghijklmnop1234 龙井"
    out = redact(text)
    assert "<email>" in out and "<url>" in out and "<key>" in out and "##,###" in out
    assert "龙井" in out and "预算" in out and not any(ch.isdigit() for ch in out)


def test_judged_field_is_checked_by_name(tmp_path):
    good = tmp_path / "q.yaml"
    good.write_text('- id: q1\n  text: "x"\n  judged:\n    - {path: MEMORY.md, lines: [1, 4], grade: 2, by: explicit}\n'
                    '- id: q2\n  text: "y"\n  judged: []\n', encoding="utf-8")
    specs = load_query_specs(good)
    assert specs[0].judged[0].doc_id == "MEMORY.md#L1-L4" and specs[1].judged == []
    for body, field in (('  judged:\n    - {path: a.md, lines: [1, 4], grade: 5}\n', "judged[0].grade"),
                        ('  judged:\n    - {path: a.md, lines: [4, 1], grade: 1}\n', "judged[0].lines"),
                        ('  judged:\n    - {path: a.md, lines: [1, 2], grade: 1, by: robot}\n', "judged[0].by"),
                        ('  path: a.md\n  judged: []\n', "path")):
        bad = tmp_path / "bad.yaml"
        bad.write_text('- id: q1\n  text: "x"\n' + body, encoding="utf-8")
        with pytest.raises(DataError, match=rf"field '{field.replace('[', '.').replace(']', '.')}'"):
            load_query_specs(bad)
