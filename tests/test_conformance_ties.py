"""The hybrid conformance comparison is tie-aware (issue 35): chunks whose scores tie within
hybrid.TIE_TOLERANCE may come in either order on either side, so the last bits of the vectors (which differ
between CPUs and thread counts) cannot flip a row between agree and differ; anything else still differs."""
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.conformance import hybrid
from harness.conformance.base import Check
from harness.conformance.runner import gate


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


# --- the fused list of a preset with MMR: ordered by MMR's objective, not by the score -------------------------

WORDS = ["记忆", "搜索", "向量", "关键词", "memory", "search", "vector", "weight", "衰减", "片段"]


def mmr_replay(snippets: dict[str, str]) -> hybrid.MMRReplay:
    from harness.stages.postprocess.openclaw import MMR

    return hybrid.MMRReplay(MMR(**{"lambda": 0.7}), {row(n, 0)[:3]: text for n, text in snippets.items()})


def mmr_rows(scores: dict[str, float], snippets: dict[str, str]) -> list[hybrid.Row]:
    """The MMR stage's own order of these candidates (the harness's mmr_array_order), as rows."""
    import numpy as np

    from harness.stages.postprocess.openclaw import mmr_array_order, snippet_similarity

    names = sorted(scores, key=lambda n: (-scores[n], n))
    n = len(names)
    similarity = np.zeros((1, n, n))
    for i in range(n):
        for j in range(i + 1, n):
            similarity[0, i, j] = similarity[0, j, i] = snippet_similarity("cjk", snippets[names[i]], snippets[names[j]])
    score = np.array([[scores[x] for x in names]])
    order = mmr_array_order(score, np.ones((1, n), dtype=bool), np.arange(n)[None, :], np.zeros(1, dtype=int), 0.7,
                            similarity)[0]
    return [row(names[i], scores[names[i]]) for i in order.tolist() if i >= 0]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(0.3, 1.0), st.lists(st.sampled_from(WORDS), min_size=1, max_size=5)),
                min_size=2, max_size=10),
       st.lists(st.floats(-2e-7, 2e-7), min_size=10, max_size=10))
def test_mmr_on_drifted_scores_never_makes_the_fused_list_differ(candidates, noise):
    """Two machines run MMR over the same candidates whose scores drift far below the tolerance: where MMR's
    objective ties, each may take another chunk first, and every later position changes; still agrees."""
    snippets = {f"c{i}": " ".join(words) for i, (_, words) in enumerate(candidates)}
    here = {f"c{i}": s for i, (s, _) in enumerate(candidates)}
    there = {name: s + e for (name, s), e in zip(here.items(), noise)}
    ours, theirs = mmr_rows(here, snippets), mmr_rows(there, snippets)
    assert hybrid.list_agreement("merged", ours, theirs, mmr_replay(snippets)) is not None


def test_an_order_mmr_would_not_take_differs_and_mmr_ties_are_read_only_in_the_fused_list():
    snippets = {"a": "记忆 搜索", "b": "记忆 搜索", "c": "向量 weight"}  # b repeats a: MMR puts c before it
    scores = {"a": 0.9, "b": 0.65, "c": 0.6}
    ours = mmr_rows(scores, snippets)
    assert [r[0] for r in ours] == ["memory/a.md", "memory/c.md", "memory/b.md"]
    swapped = [ours[0], ours[2], ours[1]]  # b before c: MMR's objective says c by far
    assert hybrid.list_agreement("merged", ours, swapped, mmr_replay(snippets)) is None
    # a tie of the objective: c's relevance raised until it equals b's penalised one, then drifted by 1e-8
    lam = 0.7
    # after a: objective(b) = lam * (b - 0.6) / 0.3 - (1 - lam) x 1, objective(c) = 0: b's score that ties them
    tied = {"a": 0.9, "b": 0.6 + (1 - lam) / lam * 0.3 + 1e-8, "c": 0.6}
    ours = mmr_rows(tied, snippets)
    other = [ours[0], ours[2], ours[1]]
    assert hybrid.list_agreement("merged", ours, other, mmr_replay(snippets)) == "tie order"
    assert hybrid.list_agreement("results", ours, other, mmr_replay(snippets)) is None
    assert hybrid.list_agreement("merged", ours, other) is None  # no MMR stage: the scores decide
