"""The hybrid conformance comparison is tie-aware (issue 35): chunks whose scores tie within
hybrid.TIE_TOLERANCE may come in either order on either side, so the last bits of the vectors (which differ
between CPUs and thread counts) cannot flip a row between agree and differ; anything else still differs."""
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.studies.conformance import hybrid
from harness.studies.conformance.base import Check
from harness.studies.conformance.runner import gate


def row(name: str, score: float, text: float = 0.0) -> hybrid.Row:
    return (f"memory/{name}.md", 1, 4, score, score, text)


def test_the_same_list_is_identical_and_a_swap_of_tied_chunks_is_a_tie_order():
    ours = [row("a", 0.9), row("b", 0.58891), row("c", 0.58891 - 3e-7), row("d", 0.4)]
    theirs = [ours[0], ours[2], ours[1], ours[3]]
    assert hybrid.list_agreement("vector", ours, ours) == "identical"
    assert hybrid.list_agreement("vector", ours, theirs) == "tie order"


def test_a_swap_of_chunks_whose_scores_do_not_tie_differs():
    ours = [row("a", 0.9), row("b", 0.5891), row("c", 0.5890), row("d", 0.4)]
    theirs = [ours[0], ours[2], ours[1], ours[3]]
    assert hybrid.list_agreement("vector", ours, theirs) is None


def test_a_tie_set_cut_by_the_list_length_may_hold_another_tied_chunk():
    ours = [row("a", 0.9), row("b", 0.5)]
    theirs = [row("a", 0.9), row("z", 0.5 + 2e-7)]  # z and b tie; maxResults cut the set after one of them
    assert hybrid.list_agreement("results", ours, theirs) == "tie order"
    middle = [row("a", 0.9), row("z", 0.5 + 2e-7), row("c", 0.1)]
    assert hybrid.list_agreement("results", [row("a", 0.9), row("b", 0.5), row("c", 0.1)], middle) is None


def test_scores_lengths_and_keyword_text_scores_still_count():
    ours = [row("a", 0.9), row("b", 0.5)]
    assert hybrid.list_agreement("vector", ours, [row("a", 0.9), row("b", 0.5 + 2e-6)]) is None
    assert hybrid.list_agreement("vector", ours, ours[:1]) is None
    assert hybrid.list_agreement("keyword", [row("a", 0.9, 0.3)], [row("a", 0.9, 0.31)]) is None
    assert hybrid.list_agreement("vector", [row("a", 0.9, 0.3)], [row("a", 0.9, 0.31)]) == "identical"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12),
       st.lists(st.floats(-2e-7, 2e-7), min_size=12, max_size=12), st.integers(1, 12))
def test_drift_below_the_tolerance_never_makes_a_list_differ(scores, noise, cut):
    """Two machines: the same chunks, each score moved by float drift far below the tolerance, each side
    sorting by its own scores and keeping its first `cut` (as maxResults does): always agrees."""
    names = [f"c{i}" for i in range(len(scores))]
    here = sorted(((n, s) for n, s in zip(names, scores)), key=lambda x: (-x[1], x[0]))
    there = sorted(((n, s + e) for (n, s), e in zip(zip(names, scores), noise)), key=lambda x: (-x[1], x[0][::-1]))
    ours = [row(n, s) for n, s in here][:cut]
    theirs = [row(n, s) for n, s in there][:cut]
    assert hybrid.list_agreement("vector", ours, theirs) is not None


def test_a_tie_order_counts_as_agreeing_in_the_gate_and_is_listed():
    check = Check("openclaw-hybrid", "p", "openclaw 2026.9.6", "w", "round3", 34, 34)
    committed = {"checks": [{**check.as_dict(), "agreed": 33}]}
    assert gate([check], committed) == []
    committed = {"checks": [{**check.as_dict(), "agreed": 34}]}
    check.agreed = 33
    assert gate([check], committed) and "33/34" in gate([check], committed)[0]
