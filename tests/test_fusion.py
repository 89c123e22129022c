"""Fusion methods: hypothesis properties, worked examples of every formula in SPEC.md sections 2-4,
and agreement with ranx's fuse on the same runs."""
from __future__ import annotations

import math

import numpy as np
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import ConfigError, UnknownStageError
from harness.stages.chunkers import document_of
from harness.stages.fusion import (
    FUSIONS,
    Fusion,
    Hit,
    LanceDBProFusion,
    Legs,
    RRFFusion,
    WeightedFusion,
    WeightedSumFusion,
    min_max,
    normalised_weights,
    rank_hits,
    ranked_leg,
    sigmoid_bm25,
)

# Every registered fusion, with its notable variants
CONFIGS = [
    ("weighted", {}),
    ("weighted", {"bm25_to_score": "legacy"}),
    ("wsum", {}),
    ("wsum", {"norm": "zscore"}),
    ("rrf", {}),
    ("rrf", {"variant": "qmd"}),
    ("multiplicative", {}),
    ("multiplicative", {"vector_to_score": "inverse_distance"}),
    ("lancedb-pro", {}),
    ("combsum", {}),
    ("combsum", {"norm": "zscore"}),
    ("combmnz", {}),
    ("lexical-only", {}),
    ("lexical-only", {"bm25_to_score": "legacy"}),
    ("keyword-only", {}),
    ("vector-only", {}),
    ("qmd-documents", {"ties": "id"}),  # "first-seen" (QMD's stable order) is tested in test_qmd_documents.py
]
SINGLE_LEG = {"lexical-only": "lexical", "keyword-only": "lexical", "vector-only": "vector"}  # ablations: one leg alone
CONFIG_IDS = [f"{name}{'-' + '-'.join(map(str, params.values())) if params else ''}" for name, params in CONFIGS]


def test_every_registered_fusion_is_covered():
    assert {name for name, _ in CONFIGS} == set(FUSIONS.names())


# --- strategies -------------------------------------------------------------------------------------

CHUNK_IDS = [f"memory/r{i:02d}.md:000001-000004" for i in range(8)]
# a few repeated values so that ties (broken by id) are common
cosines = st.one_of(st.floats(-1.0, 1.0, allow_nan=False), st.sampled_from([0.25, 0.5, 0.75]))
bm25_raw = st.one_of(st.floats(1e-6, 40.0, allow_nan=False), st.sampled_from([1.0, 2.5, 7.0]))


def leg(scores):
    return st.dictionaries(st.sampled_from(CHUNK_IDS), scores, max_size=len(CHUNK_IDS)).map(
        lambda d: sorted(d.items(), key=lambda item: (-item[1], item[0])))


legs_strategy = st.builds(Legs, leg(cosines), leg(bm25_raw))


def run(name, params, legs):
    return FUSIONS.create(name, **params)(legs)


def pairs(hits):
    return [(h.id, h.score) for h in hits]


# --- properties -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "params"), CONFIGS, ids=CONFIG_IDS)
@settings(max_examples=60, deadline=None)
@given(legs=legs_strategy, data=st.data())
def test_invariant_to_the_order_of_the_input_lists(name, params, legs, data):
    shuffled = Legs(data.draw(st.permutations(legs.vector)), data.draw(st.permutations(legs.lexical)))
    assert run(name, params, shuffled) == run(name, params, legs)


@pytest.mark.parametrize(("name", "params"), [
    ("rrf", {}), ("combsum", {}), ("combmnz", {}), ("combsum", {"norm": "zscore"}),
    ("wsum", {"vector_weight": 0.5, "text_weight": 0.5}),
    ("wsum", {"vector_weight": 0.5, "text_weight": 0.5, "norm": "zscore"}),
])
@settings(max_examples=40, deadline=None)
@given(legs=legs_strategy)
def test_symmetric_methods_do_not_care_which_list_is_which(name, params, legs):
    swapped = Legs(vector=legs.lexical, lexical=legs.vector)
    assert pairs(run(name, params, swapped)) == pairs(run(name, params, legs))


@pytest.mark.parametrize(("name", "params"), CONFIGS, ids=CONFIG_IDS)
@settings(max_examples=60, deadline=None)
@given(legs=legs_strategy)
def test_only_retrieved_documents_appear_once_each_ranked(name, params, legs):
    hits = run(name, params, legs)
    ids = [h.id for h in hits]
    assert len(ids) == len(set(ids))
    assert hits == rank_hits(hits)
    # a document-level fusion (qmd-documents) returns files: each test chunk is a file of its own
    unit = document_of if getattr(FUSIONS.get(name), "unit", "chunk") == "document" else (lambda cid: cid)
    vector_ids, lexical_ids = {unit(cid) for cid, _ in legs.vector}, {unit(cid) for cid, _ in legs.lexical}
    if name in SINGLE_LEG:
        assert set(ids) == (vector_ids if SINGLE_LEG[name] == "vector" else lexical_ids)
        assert all(h.keyword_hit == (SINGLE_LEG[name] == "lexical") for h in hits)
        return
    assert set(ids) <= vector_ids | lexical_ids
    assert all(h.keyword_hit == (h.id in lexical_ids) for h in hits)
    if name != "lancedb-pro":  # the only method that drops candidates (fused < 0.3)
        assert len(hits) == len(lexical_ids | vector_ids)


# Methods whose vector_weight / text_weight mean "how much this leg counts".  OpenClaw's weighted
# sum is monotone only for non-negative cosines (see the counterexample below), so its vector leg is
# drawn from [0, 1] here; z-score wsum is not monotone at all (counterexample below).
WEIGHTED = [
    ("weighted", {}, st.floats(0.0, 1.0)),
    ("weighted", {"bm25_to_score": "legacy"}, st.floats(0.0, 1.0)),
    ("wsum", {}, cosines),
    ("rrf", {}, cosines),
    ("rrf", {"variant": "qmd"}, cosines),
    ("lancedb-pro", {}, cosines),
    ("multiplicative", {}, cosines),
]


@pytest.mark.parametrize(("name", "params", "vector_scores"), WEIGHTED, ids=[w[0] + str(i) for i, w in enumerate(WEIGHTED)])
@settings(max_examples=60, deadline=None)
@given(data=st.data(), low=st.floats(0.0, 1.0), high=st.floats(0.0, 1.0), other=st.floats(0.0, 1.0),
       raise_text=st.booleans())
def test_raising_a_legs_weight_never_lowers_its_own_finds(name, params, vector_scores, data, low, high, other,
                                                         raise_text):
    """A chunk only leg X found never loses ground, when X's weight rises, against a chunk only the
    other leg found."""
    low, high = min(low, high), max(low, high)
    legs = data.draw(st.builds(Legs, leg(vector_scores), leg(bm25_raw)))
    if raise_text:  # raise text_weight with vector_weight fixed
        before = {h.id: h.score for h in run(name, {**params, "vector_weight": other, "text_weight": low}, legs)}
        after = {h.id: h.score for h in run(name, {**params, "vector_weight": other, "text_weight": high}, legs)}
        mine, theirs = {c for c, _ in legs.lexical}, {c for c, _ in legs.vector}
    else:
        before = {h.id: h.score for h in run(name, {**params, "vector_weight": low, "text_weight": other}, legs)}
        after = {h.id: h.score for h in run(name, {**params, "vector_weight": high, "text_weight": other}, legs)}
        mine, theirs = {c for c, _ in legs.vector}, {c for c, _ in legs.lexical}
    only_mine, only_theirs = mine - theirs, theirs - mine
    for a in only_mine & before.keys():
        assert a in after
        for b in only_theirs & before.keys() & after.keys():
            assert after[a] - after[b] >= before[a] - before[b] - 1e-12


@pytest.mark.parametrize("variant", ["plain", "qmd"])
@settings(max_examples=80, deadline=None)
@given(legs=legs_strategy, data=st.data())
def test_rrf_depends_on_ranks_only(variant, legs, data):
    """Any strictly increasing remapping of each leg's raw scores leaves RRF unchanged."""
    def remap(leg_items):
        values = sorted({s for _, s in leg_items})
        steps = data.draw(st.lists(st.floats(1e-3, 1e3), min_size=len(values), max_size=len(values)))
        new_values = np.cumsum(steps).tolist() if values else []
        mapping = dict(zip(values, new_values))
        return [(cid, mapping[s] - 500.0) for cid, s in leg_items]

    fusion = RRFFusion(variant=variant)
    assert fusion(Legs(remap(legs.vector), remap(legs.lexical))) == fusion(legs)


EXTREMES_V = st.sampled_from([-1.0, -0.0, 0.0, 1e-300, 0.5, 1.0])
EXTREMES_T = st.sampled_from([1e-300, 1e-6, 1.0, 700.0, 1e6, 1e300])


@pytest.mark.parametrize(("name", "params"), CONFIGS, ids=CONFIG_IDS)
@settings(max_examples=40, deadline=None)
@given(v=st.one_of(cosines, EXTREMES_V), t=st.one_of(bm25_raw, EXTREMES_T), same_id=st.booleans(),
       which=st.sampled_from(["vector", "lexical", "both"]))
def test_scores_stay_finite_for_empty_and_single_item_lists(name, params, v, t, same_id, which):
    assert run(name, params, Legs()) == []
    vector = [("a", v)] if which in ("vector", "both") else []
    lexical = [("a" if same_id else "b", t)] if which in ("lexical", "both") else []
    hits = run(name, params, Legs(vector, lexical))
    assert all(math.isfinite(x) for h in hits for x in (h.score, h.vector_score, h.text_score))


def test_non_finite_raw_scores_are_rejected_with_the_chunk_named():
    with pytest.raises(ValueError, match="vector leg score of chunk 'x'"):
        RRFFusion()(Legs([("x", float("nan"))], []))


@pytest.mark.parametrize(("name", "params", "message"), [
    ("wsum", {"norm": "l2"}, r"\[fusion\] norm:"),
    ("rrf", {"variant": "borda"}, r"\[fusion\] variant:"),
    ("rrf", {"k": -1}, r"\[fusion\] k:"),
    ("rrf", {"vector_weight": -1}, r"\[fusion\] vector_weight:"),
    ("multiplicative", {"vector_to_score": "dot"}, r"\[fusion\] vector_to_score:"),
    ("lancedb-pro", {"text_weight": float("inf")}, r"\[fusion\] text_weight:"),
])
def test_bad_parameters_name_the_field(name, params, message):
    with pytest.raises(ConfigError, match=message):
        FUSIONS.create(name, **params)


def test_unknown_fusion_and_parameter_are_clear_errors():
    with pytest.raises(UnknownStageError, match="unknown fusion 'borda'"):
        FUSIONS.create("borda")
    with pytest.raises(ConfigError, match=r"\[fusion\] vector_weight: unknown key for fusion 'combsum'; known: norm"):
        FUSIONS.create("combsum", vector_weight=0.5)


def test_every_fusion_states_leg_weights_for_post_processing():
    for name, params in CONFIGS:
        fusion = FUSIONS.create(name, **params)
        assert isinstance(fusion, Fusion)
        assert sum(fusion.leg_weights) == pytest.approx(1.0) and min(fusion.leg_weights) >= 0


# --- worked examples: OpenClaw (SPEC.md section 2) --------------------------------------------------

@pytest.mark.parametrize(("given_weights", "expected"), [
    ((0.7, 0.3), (0.7, 0.3)),
    ((0.5, 0.5), (0.5, 0.5)),
    ((0.8, 0.4), (2 / 3, 1 / 3)),  # normalised to sum 1
    ((1.4, -0.2), (1.0, 0.0)),  # clamped to [0, 1] first
    ((3.0, 3.0), (0.5, 0.5)),
    ((0.0, 0.0), (0.7, 0.3)),  # both zero -> the defaults
])
def test_openclaw_weights_are_clamped_then_normalised(given_weights, expected):
    assert normalised_weights(*given_weights) == pytest.approx(expected)  # OpenClaw's resolveMemorySearchConfig
    if all(0 <= w <= 1 for w in given_weights):
        assert WeightedFusion(*given_weights).leg_weights == pytest.approx(expected)
    else:  # what openclaw.json's schema refuses, the stage refuses too (issue 30)
        with pytest.raises(pydantic.ValidationError):
            WeightedFusion(*given_weights)


def test_openclaw_weighted_current_bm25_mapping():
    legs = Legs([("a", 0.8), ("b", 0.6)], [("b", 3.0), ("c", 1.0)])
    hits = WeightedFusion(0.7, 0.3, "current")(legs)
    # FTS5 rank -3 -> 3/(1+3) = 0.75; rank -1 -> 0.5
    assert [(h.id, h.score, h.text_score) for h in hits] == [
        ("b", pytest.approx(0.7 * 0.6 + 0.3 * 0.75), 0.75),
        ("a", pytest.approx(0.56), 0.0),
        ("c", pytest.approx(0.15), 0.5),
    ]
    assert [h.keyword_hit for h in hits] == [True, False, True]


def test_openclaw_weighted_legacy_bm25_mapping_scores_every_keyword_hit_one():
    legs = Legs([("a", 0.8), ("b", 0.6)], [("x", 9.0), ("b", 3.0), ("c", 1.0)])
    legacy = {h.id: h for h in WeightedFusion(0.7, 0.3, "legacy")(legs)}
    current = {h.id: h for h in WeightedFusion(0.7, 0.3, "current")(legs)}
    assert legacy["b"].score == pytest.approx(0.42 + 0.3)
    # legacy: 1/(1+max(0, r)) with r < 0 is 1.0 for every hit, so BM25 cannot order them ...
    assert legacy["x"].text_score == legacy["c"].text_score == 1.0
    assert legacy["x"].score == legacy["c"].score == pytest.approx(0.3)
    # ... current: |r|/(1+|r|) keeps the order 9.0 > 1.0
    assert current["x"].score == pytest.approx(0.3 * 0.9) and current["c"].score == pytest.approx(0.15)
    # a keyword-only hit scores at most tw = 0.3 < minScore 0.35 under either mapping
    assert max(legacy["x"].score, current["x"].score) <= 0.3 + 1e-12


def test_openclaw_weighted_with_clamped_weights_ignores_the_text_leg():
    hits = WeightedFusion(1.0, 0.0)(Legs([("a", 0.4)], [("b", 30.0)]))
    assert pairs(hits) == [("a", pytest.approx(0.4)), ("b", 0.0)]


def test_openclaw_weighted_is_not_monotone_for_negative_cosines():
    """Why the monotonicity property draws cosines from [0, 1] for `weighted`: a vector-only chunk
    with cosine -0.5 scores vw * -0.5, so more vector weight pushes it further down than the
    shrinking text weight pushes a keyword-only chunk."""
    legs = Legs([("a", -0.5)], [("b", 0.1)])
    before = {h.id: h.score for h in WeightedFusion(0.5, 0.5)(legs)}
    after = {h.id: h.score for h in WeightedFusion(1.0, 0.5)(legs)}
    assert after["a"] - after["b"] < before["a"] - before["b"]


# --- worked examples: generic wsum / CombSUM / CombMNZ ----------------------------------------------

EXAMPLE = Legs([("a", 0.9), ("b", 0.5), ("c", 0.1)], [("b", 3.0), ("d", 1.0)])


def test_wsum_min_max():
    hits = WeightedSumFusion(0.7, 0.3, "min-max")(EXAMPLE)
    # vector (0.9, 0.5, 0.1) -> (1, 0.5, 0); lexical (3, 1) -> (1, 0); the bottom of a leg ties with absent
    assert [(h.id, h.score, h.vector_score, h.text_score) for h in hits] == [
        ("a", pytest.approx(0.7), 1.0, 0.0),
        ("b", pytest.approx(0.65), 0.5, 1.0),
        ("c", 0.0, 0.0, 0.0),
        ("d", 0.0, 0.0, 0.0),
    ]


def test_wsum_z_score():
    hits = {h.id: h for h in WeightedSumFusion(0.7, 0.3, "zscore")(EXAMPLE)}
    stdev = math.sqrt((0.4 ** 2 + 0 + 0.4 ** 2) / 3)  # population stdev of (0.9, 0.5, 0.1)
    assert hits["a"].score == pytest.approx(0.7 * 0.4 / stdev)
    assert hits["b"].score == pytest.approx(0.3 * 1.0)  # vector z 0; lexical (3 - 2) / 1
    assert hits["c"].score == pytest.approx(-0.7 * 0.4 / stdev)
    assert hits["d"].score == pytest.approx(-0.3)


def test_min_max_of_a_single_hit_or_equal_scores_is_one():
    assert min_max({"x": 4.2}) == {"x": 1.0}
    assert min_max({"x": 2.0, "y": 2.0}) == {"x": 1.0, "y": 1.0}
    hits = WeightedSumFusion(0.7, 0.3)(Legs([("a", 0.9), ("b", 0.1)], [("b", 5.0)]))
    assert pairs(hits) == [("a", pytest.approx(0.7)), ("b", pytest.approx(0.3))]


def test_wsum_z_score_is_not_monotone_in_the_weights():
    """Below-mean hits get negative z-scores, so more weight on their leg pushes them further down."""
    legs = Legs([("a", 0.9), ("b", 0.5), ("x", 0.1)], [("y", 3.0), ("z", 1.0)])
    before = {h.id: h.score for h in WeightedSumFusion(0.5, 0.5, "zscore")(legs)}
    after = {h.id: h.score for h in WeightedSumFusion(0.9, 0.5, "zscore")(legs)}
    assert after["x"] - after["z"] < before["x"] - before["z"]


def test_combsum_and_combmnz():
    combsum = {h.id: h.score for h in FUSIONS.create("combsum")(EXAMPLE)}
    combmnz = {h.id: h.score for h in FUSIONS.create("combmnz")(EXAMPLE)}
    assert combsum == pytest.approx({"a": 1.0, "b": 1.5, "c": 0.0, "d": 0.0})
    assert combmnz == pytest.approx({"a": 1.0, "b": 3.0, "c": 0.0, "d": 0.0})  # b found by both legs: x 2


# --- worked examples: RRF and QMD (SPEC.md section 3) -----------------------------------------------

RANKED = Legs([("a", 0.9), ("b", 0.8), ("c", 0.7), ("e", 0.6)], [("b", 9.0), ("d", 4.0)])


def test_plain_rrf_k60():
    hits = {h.id: h for h in RRFFusion()(RANKED)}
    assert hits["b"].score == pytest.approx(1 / 62 + 1 / 61)  # vector rank 2, lexical rank 1
    assert (hits["b"].vector_score, hits["b"].text_score) == pytest.approx((1 / 62, 1 / 61))
    assert hits["a"].score == pytest.approx(1 / 61)
    assert hits["d"].score == pytest.approx(1 / 62)
    assert hits["e"].score == pytest.approx(1 / 64)
    assert [h.id for h in RRFFusion()(RANKED)] == ["b", "a", "d", "c", "e"]


def test_qmd_rrf_list_weights_and_rank_bonuses():
    hits = {h.id: h.score for h in RRFFusion(variant="qmd")(RANKED)}
    assert hits == pytest.approx({
        "a": 2 / 61 + 0.05,  # first in the vector list
        "b": 2 / 62 + 2 / 61 + 0.05,  # first in the lexical list: one bonus, not two
        "c": 2 / 63 + 0.02,  # best rank 3
        "d": 2 / 62 + 0.02,  # best rank 2
        "e": 2 / 64,  # rank 4: no bonus
    })


def test_rrf_ties_in_a_leg_are_ranked_by_id():
    hits = {h.id: h.score for h in RRFFusion()(Legs([("y", 0.5), ("x", 0.5)], []))}
    assert hits == pytest.approx({"x": 1 / 61, "y": 1 / 62})


def test_ranked_leg_keeps_the_best_score_of_a_repeated_id():
    assert ranked_leg([("a", 0.1), ("b", 0.5), ("a", 0.9)]) == [("a", 0.9), ("b", 0.5)]


# --- worked examples: memory-lancedb-pro, seed vs code (SPEC.md section 4) ---------------------------

def test_sigmoid_bm25():
    assert sigmoid_bm25(10.0) == pytest.approx(1 / (1 + math.exp(-2)))
    assert sigmoid_bm25(0.0) == 0.5 and sigmoid_bm25(-3.0) == 0.5
    assert sigmoid_bm25(1e300) == 1.0


def test_multiplicative_seed_version():
    legs = Legs([("a", 0.6), ("b", 0.9)], [("a", 10.0), ("c", 5.0)])
    hits = FUSIONS.create("multiplicative")(legs)
    assert pairs(hits) == [
        ("b", 0.9),  # vector only: unchanged
        ("c", pytest.approx(1 / (1 + math.exp(-1)))),  # BM25 only: its sigmoid(raw/5) score
        ("a", pytest.approx(0.6 * 1.15)),  # also a BM25 hit: +15%
    ]
    distance = {h.id: h.score for h in FUSIONS.create("multiplicative", vector_to_score="inverse_distance")(legs)}
    assert distance["a"] == pytest.approx(1.15 / (1 + 0.4))
    # the config's weights have no effect, as the seed found
    assert FUSIONS.create("multiplicative", vector_weight=0.1, text_weight=0.9)(legs) == hits
    # unclamped: a boosted cosine of 0.95 passes 1.0
    assert FUSIONS.create("multiplicative")(Legs([("z", 0.95)], [("z", 1.0)]))[0].score == pytest.approx(1.0925)


def test_lancedb_pro_code_version():
    legs = Legs([("a", 0.8), ("b", 0.2), ("c", 0.0), ("e", -0.5)], [("a", 10.0), ("b", 15.0), ("d", 2.0)])
    hits = {h.id: h for h in LanceDBProFusion()(legs)}
    v_a, b_a = 1 / 1.2, 1 / (1 + math.exp(-2))
    assert hits["a"].score == pytest.approx(0.7 * v_a + 0.3 * b_a)  # 0.8476 > 0.92 b = 0.8103
    assert (hits["a"].vector_score, hits["a"].text_score) == pytest.approx((v_a, b_a))
    b_b = 1 / (1 + math.exp(-3))  # 0.9526 >= 0.75: strong keyword hit
    assert hits["b"].score == pytest.approx(0.92 * b_b)  # beats 0.7/1.8 + 0.3 b = 0.6747
    assert hits["c"].score == pytest.approx(0.7 * 0.5)  # vector only: d = 1 -> v = 0.5, b = 0
    assert hits["d"].score == pytest.approx(1 / (1 + math.exp(-0.4)))  # BM25 only -> b
    assert "e" not in hits  # d = 1.5 -> v = 0.4 -> 0.28 < 0.3: dropped
    assert list(hits) == ["b", "a", "d", "c"]


def test_lancedb_pro_weak_keyword_hit_gets_no_floor_and_bm25_only_drop():
    legs = Legs([("a", 0.5)], [("a", 2.0)])
    b = 1 / (1 + math.exp(-0.4))  # 0.599 < 0.75
    assert LanceDBProFusion()(legs)[0].score == pytest.approx(0.7 / 1.5 + 0.3 * b)
    assert LanceDBProFusion(min_score=0.0)(Legs([("e", -1.0)], []))[0].score == pytest.approx(0.7 / 3)
    assert LanceDBProFusion()(Legs([("e", -1.0)], [])) == []


def test_lancedb_seed_and_code_disagree_on_a_keyword_confirmed_hit():
    """The same candidate under both readings: the seed's +15% vs the code's weighted max."""
    legs = Legs([("a", 0.8)], [("a", 10.0)])
    seed = FUSIONS.create("multiplicative")(legs)[0].score
    code = FUSIONS.create("lancedb-pro")(legs)[0].score
    assert seed == pytest.approx(0.92)
    assert code == pytest.approx(0.7 / 1.2 + 0.3 / (1 + math.exp(-2)))
    assert seed > code


# --- agreement with ranx ----------------------------------------------------------------------------

def _random_queries(n_queries: int, seed: int, degenerate_ok: bool) -> dict[str, Legs]:
    """Legs on a 1/64 grid (no near-ties that two float summation orders could split)."""
    rng = np.random.default_rng(seed)
    out = {}
    ids = [f"d{i:02d}" for i in range(20)]
    while len(out) < n_queries:
        legs = []
        for _ in range(2):
            size = int(rng.integers(1, 12))
            chosen = rng.choice(ids, size=size, replace=False)
            values = rng.integers(0, 8, size=size) / 64.0 + (rng.integers(0, 2) * 3.0)
            legs.append([(str(c), float(v)) for c, v in zip(chosen, values)])
        if not degenerate_ok and any(len({v for _, v in leg_}) < 2 for leg_ in legs):
            continue
        out[f"q{len(out):03d}"] = Legs(*legs)
    return out


def _ranx_run(queries: dict[str, Legs], which: str):
    from ranx import Run
    return Run({q: dict(getattr(legs, which)) for q, legs in queries.items()})


def _ranx_strict_run(queries: dict[str, Legs], which: str):
    """ranx orders tied scores arbitrarily; give it strictly decreasing scores that encode our
    (score desc, id) order, which RRF cannot tell from the original (it uses ranks only)."""
    from ranx import Run
    strict = {}
    for q, legs in queries.items():
        ranked = ranked_leg(getattr(legs, which))
        strict[q] = {cid: float(len(ranked) - i) for i, (cid, _) in enumerate(ranked)}
    return Run(strict)


def _assert_same(ours: dict[str, list[Hit]], theirs) -> None:
    for q, hits in ours.items():
        expected = dict(theirs.run[q])
        assert {h.id: h.score for h in hits} == pytest.approx(expected, abs=1e-12), q
        # the same order: ranx's scores never increase along our ranking; two hits whose sums are
        # mathematically equal may differ in the last bit (0.7x + 0.3y in two summation orders), so
        # only float-level ties may come in either order
        theirs_in_our_order = [expected[h.id] for h in hits]
        assert all(a >= b - 1e-12 for a, b in zip(theirs_in_our_order, theirs_in_our_order[1:])), q


@pytest.fixture(scope="module")
def ranx_fuse():
    import warnings
    pytest.importorskip("ranx")
    from ranx import fuse
    warnings.filterwarnings("ignore", module="numba")
    warnings.filterwarnings("ignore", message=".*unsafe cast.*")
    return fuse


@pytest.mark.parametrize("weights", [(0.7, 0.3), (0.5, 0.5), (0.15, 0.85)])
def test_wsum_min_max_agrees_with_ranx(ranx_fuse, weights):
    queries = _random_queries(120, seed=1, degenerate_ok=False)  # equal-score legs differ on purpose
    fusion = WeightedSumFusion(*weights, norm="min-max")
    theirs = ranx_fuse([_ranx_run(queries, "vector"), _ranx_run(queries, "lexical")], norm="min-max",
                       method="wsum", params={"weights": list(fusion.leg_weights)})
    _assert_same({q: fusion(legs) for q, legs in queries.items()}, theirs)


def test_wsum_z_score_agrees_with_ranx(ranx_fuse):
    queries = _random_queries(120, seed=2, degenerate_ok=True)
    fusion = WeightedSumFusion(0.7, 0.3, norm="zscore")
    theirs = ranx_fuse([_ranx_run(queries, "vector"), _ranx_run(queries, "lexical")], norm="zmuv",
                       method="wsum", params={"weights": [0.7, 0.3]})
    _assert_same({q: fusion(legs) for q, legs in queries.items()}, theirs)


def test_rrf_agrees_with_ranx(ranx_fuse):
    queries = _random_queries(120, seed=3, degenerate_ok=True)  # ties included: strict runs fix them
    fusion = RRFFusion()
    theirs = ranx_fuse([_ranx_strict_run(queries, "vector"), _ranx_strict_run(queries, "lexical")], norm=None,
                       method="rrf", params={"k": 60})
    _assert_same({q: fusion(legs) for q, legs in queries.items()}, theirs)


@pytest.mark.parametrize(("name", "method"), [("combsum", "sum"), ("combmnz", "mnz")])
def test_combsum_and_combmnz_agree_with_ranx(ranx_fuse, name, method):
    queries = _random_queries(120, seed=4, degenerate_ok=False)
    fusion = FUSIONS.create(name)
    theirs = ranx_fuse([_ranx_run(queries, "vector"), _ranx_run(queries, "lexical")], norm="min-max", method=method)
    _assert_same({q: fusion(legs) for q, legs in queries.items()}, theirs)


def test_the_one_documented_difference_from_ranx_min_max(ranx_fuse):
    """A leg whose scores are all equal (a single hit, say): ranx maps it to 0, as if the leg had
    found nothing; we map it to 1.0."""
    queries = {"q": Legs([("a", 0.9), ("b", 0.1)], [("b", 5.0)])}
    theirs = ranx_fuse([_ranx_run(queries, "vector"), _ranx_run(queries, "lexical")], norm="min-max",
                       method="wsum", params={"weights": [0.7, 0.3]})
    assert dict(theirs.run["q"])["b"] == pytest.approx(0.0)
    assert {h.id: h.score for h in WeightedSumFusion(0.7, 0.3)(queries["q"])}["b"] == pytest.approx(0.3)
