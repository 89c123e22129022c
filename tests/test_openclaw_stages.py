"""The OpenClaw preset's stages, each against SPEC.md section 2."""

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from harness.db import connect
from harness.stages.chunkers import Chunk, OpenClawChunker, cjk_weighted_length
from harness.stages.fusion import Hit, Legs, WeightedFusion, normalised_weights
from harness.stages.lexical import (
    FTS5Index,
    bm25_rank_to_score,
    legacy_bm25_rank_to_score,
)
from harness.stages.postprocess import MinScore, SearchContext
from harness.stages.tokenizers import Unicode61

# --- chunker ----------------------------------------------------------------------------------

def lines_of(chunks):
    return sorted({(c.start_line, c.end_line) for c in chunks})


def test_chunks_pack_lines_and_overlap_by_whole_lines():
    text = "\n".join(f"line {i:03d} " + "x" * 90 for i in range(1, 41))  # 99 chars + newline = 100 each
    chunks = OpenClawChunker(tokens=100, overlap=20).chunk("a.md", text)  # 400 / 80 chars
    # 4 lines cost exactly 400 and fit; the 5th would pass 400: flush, carry 1 line (100 >= 80)
    assert [(c.start_line, c.end_line) for c in chunks[:3]] == [(1, 4), (4, 7), (7, 10)]
    assert chunks[-1].end_line == 40
    for c in chunks:
        assert c.text == "\n".join(text.split("\n")[c.start_line - 1:c.end_line])
        assert len(c.hash) == 64


def test_over_long_line_is_cut_into_pieces_keeping_its_line_number():
    text = "short\n" + "长" * 3500 + "\nend"
    chunks = OpenClawChunker(tokens=400, overlap=0, sizing="raw_length").chunk("a.md", text)
    pieces = [c for c in chunks if c.start_line == 2]
    assert [len(c.text) for c in pieces] == [1600, 1600, 300 + len("\nend")]
    assert "".join(c.text for c in pieces) == "长" * 3500 + "\nend"
    assert [c.end_line for c in pieces] == [2, 2, 3]  # the last piece shares a chunk with the next line
    assert len({c.id for c in chunks}) == len(chunks)


def test_cjk_weighting_counts_a_chinese_character_as_one_token():
    assert cjk_weighted_length("检索abc") == 2 * 4 + 3
    line = "中" * 500
    raw = OpenClawChunker(sizing="raw_length", overlap=0).chunk("a.md", "\n".join([line] * 6))
    weighted = OpenClawChunker(sizing="cjk_weighted", overlap=0).chunk("a.md", "\n".join([line] * 6))
    assert [len(c.text.split("\n")) for c in raw] == [3, 3]  # 1600 raw characters hold 3 lines
    assert all(len(c.text) <= 400 for c in weighted)  # 400 tokens = 400 Chinese characters
    assert len(weighted) > len(raw)


@given(st.lists(st.text(alphabet=st.sampled_from("ab 中文\t。"), max_size=300), max_size=40),
       st.sampled_from(["raw_length", "cjk_weighted"]), st.integers(8, 120), st.integers(0, 40))
def test_no_text_lost_and_ranges_valid(lines, sizing, tokens, overlap):
    assume(overlap < tokens)  # the chunker's domain: an overlap of the whole budget is refused
    text = "\n".join(lines)
    chunks = OpenClawChunker(tokens=tokens, overlap=overlap, sizing=sizing).chunk("f.md", text)
    n = len(text.split("\n"))
    covered = set()
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= n
        covered.update(range(c.start_line, c.end_line + 1))
    for i, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            assert i in covered
    assert [c.start_line for c in chunks] == sorted(c.start_line for c in chunks)
    assert [c.end_line for c in chunks] == sorted(c.end_line for c in chunks)
    assert len({c.id for c in chunks}) == len(chunks)


# --- query building and rank mapping ------------------------------------------------------------

def test_query_building_matches_openclaw():
    tok = Unicode61()
    assert tok.match_expression("Tello eSIM") == '"Tello" AND "eSIM"'
    assert tok.match_expression('美国"手机号" OR x*') == '"美国" AND "手机号" AND "OR" AND "x"'
    assert tok.match_expression("—！？ 🙂") is None
    assert Unicode61(query_tokens="ascii").match_expression("美国手机号") is None


@pytest.fixture(scope="module")
def fts():
    index = FTS5Index(Unicode61(), connect(load_vec=False))
    index.add([Chunk("a.md", 1, 1, "混合检索配置说明 Tello eSIM"), Chunk("b.md", 1, 1, "检索配置、AND OR NEAR")])
    return index


@given(st.text(max_size=60))
def test_query_builder_never_raises_an_fts5_syntax_error(fts, query):
    fts.search(query, 10)  # any Unicode string: quotes, AND/OR/NEAR, *, -, emoji, empty


def test_unicode61_indexes_a_chinese_run_as_one_token(fts):
    assert [cid for cid, _ in fts.search("检索配置", 10)] == ["b.md:000001-000001"]
    assert fts.search("混合检索", 10) == []  # the CJK failure: no partial match inside a run


def test_rank_to_score_formulas():
    assert bm25_rank_to_score(-3.0) == pytest.approx(0.75)
    assert bm25_rank_to_score(1.0) == pytest.approx(0.5)
    assert bm25_rank_to_score(float("nan")) == pytest.approx(0.001)
    assert legacy_bm25_rank_to_score(-3.0) == 1.0 and legacy_bm25_rank_to_score(-0.01) == 1.0
    assert legacy_bm25_rank_to_score(float("-inf")) == pytest.approx(0.001)


def test_current_mapping_jumps_at_zero():
    # As written in OpenClaw: r >= 0 uses 1/(1+r), so rank 0 maps to 1.0 while rank -0.5 maps to 0.33.
    # FTS5's bm25() is never positive, so only the r < 0 branch is reached in practice.
    assert bm25_rank_to_score(0.0) == 1.0 and bm25_rank_to_score(-0.5) == pytest.approx(1 / 3)


@given(st.floats(-1e6, -1e-9), st.floats(-1e6, -1e-9))
def test_rank_mapping_is_monotonic_over_fts5_ranks(a, b):
    better, worse = min(a, b), max(a, b)  # more negative rank = better match
    assert bm25_rank_to_score(better) >= bm25_rank_to_score(worse)
    assert legacy_bm25_rank_to_score(better) >= legacy_bm25_rank_to_score(worse)
    assert 0 < bm25_rank_to_score(a) <= 1


# --- weighted merge and min score ---------------------------------------------------------------

def test_weights_clamped_and_normalised():
    assert normalised_weights(0.7, 0.3) == pytest.approx((0.7, 0.3))
    assert normalised_weights(2.0, 1.0) == pytest.approx((0.5, 0.5))
    assert normalised_weights(-1, 0.5) == pytest.approx((0.0, 1.0))
    assert normalised_weights(0, 0) == pytest.approx((0.7, 0.3))


def test_weighted_union_with_missing_side_zero():
    legs = Legs(vector=[("a", 0.9), ("b", 0.5)], lexical=[("b", 3.0), ("c", 1.0)])
    hits = {h.id: h for h in WeightedFusion(0.7, 0.3, "current")(legs)}
    assert hits["a"].score == pytest.approx(0.63)
    assert hits["b"].score == pytest.approx(0.7 * 0.5 + 0.3 * 0.75)
    assert hits["c"].score == pytest.approx(0.3 * 0.5) and hits["c"].keyword_hit
    legacy = {h.id: h.score for h in WeightedFusion(0.7, 0.3, "legacy")(legs)}
    assert legacy["c"] == pytest.approx(0.3)  # every keyword hit scores 1.0 under the legacy mapping
    ranked = WeightedFusion()(Legs(vector=[("z", 0.5), ("y", 0.5)]))
    assert [h.id for h in ranked] == ["y", "z"]  # ties break by id


def test_min_score_relaxed_keyword_fallback():
    ctx = SearchContext("q", 6, 0.7, 0.3)
    hits = [Hit("a", 0.33, 0.0, 1.0, True), Hit("b", 0.34, 0.48, 0.0, False), Hit("c", 0.1, 0, 0.33, True)]
    assert [h.id for h in MinScore(0.35, "relaxed")(hits, ctx)] == ["a"]  # keyword hits >= min(0.35, 0.3)
    assert MinScore(0.35, "none")(hits, ctx) == []
    assert [h.id for h in MinScore(0.35, "fill")(hits, ctx)] == ["a"]  # none pass: the relaxed branch
    assert [h.id for h in MinScore(0.35, "fill", relaxed_floor=0.0)(hits, ctx)] == ["a", "c"]
    many = [Hit(str(i), 0.9 - i / 100) for i in range(10)]
    assert len(MinScore(0.35)(many, ctx)) == 6
