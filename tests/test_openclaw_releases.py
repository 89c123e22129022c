"""OpenClaw release by release (harness/conformance/NOTES.md): the chunker's size estimates,
long-line cuts and overlap carries, extractKeywords and the keyword fallback with its boosted score, the
FTS-only fusion, 2026.8.1's result selection, importance and the presets built from them.  Expected values
were computed with the real packages (2026.2.22, 2026.8.1, 2026.9.6) where the test says so."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.config import resolve
from harness.errors import ConfigError
from harness.pipeline import build_stages, fuse, index_layout, search_legs
from harness.stages.chunkers import (
    CHUNKERS,
    OpenClawChunker,
    cjk_weighted_2026_08_length,
    utf16_length,
    utf16_prefix,
    utf16_slices,
)
from harness.stages.fusion import Hit, KeywordOnly, Legs, WeightedFusion
from harness.stages.lexical import FTS5Index
from harness.stages.lexical.openclaw_fallback import (
    boosted_score,
    build_fts_query,
    extract_keywords,
    fallback_terms,
    keyword_search_with_fallback,
    locale_key,
)
from harness.stages.postprocess import (
    MMR,
    ImportanceMultiplier,
    MinScore,
    SearchContext,
    TemporalDecay,
    curated_importance,
    memory_date,
)
from harness.stages.tokenizers import Unicode61
from harness.stages.vector import VECTOR_BACKENDS


def spans(chunks):
    return [(c.start_line, c.end_line) for c in chunks]


# --- size estimates ------------------------------------------------------------------------------------

# estimateStringChars of OpenClaw 2026.8.1 (cjk-chars-*.js), run under Node 24 on each string
ESTIMATE_2026_08 = [("abc", 3), ("中", 4), ("·", 4), ("𠀀", 16), ("ｱ", 8), ("ㄱ", 4), ("﹐", 1), ("ꀀ", 12),
                    ("🔥", 2), ("中文abc🔥", 13), ("\u0305", 8), ("𝍠", 12), ("가", 4), ("，", 4), ("。", 4)]


@pytest.mark.parametrize(("text", "expected"), ESTIMATE_2026_08)
def test_cjk_weighted_2026_08_is_openclaws_estimate(text, expected):
    assert cjk_weighted_2026_08_length(text) == expected


def test_utf16_length_counts_astral_characters_twice():
    assert utf16_length("abc") == 3
    assert utf16_length("中🔥") == 3  # JavaScript: "中🔥".length
    assert utf16_prefix("ab🔥c", 3) == "ab"  # never half a surrogate pair (truncateUtf16Safe)
    assert utf16_prefix("ab🔥c", 4) == "ab🔥"
    assert utf16_slices("abcdefg", 3) == ["abc", "def", "g"]


@given(st.text(alphabet="ab 中\n🔥", max_size=40), st.integers(min_value=1, max_value=12))
def test_utf16_slices_cut_every_units_code_units_and_move_a_cut_past_a_pair(text, units):
    pieces = utf16_slices(text, units)
    assert "".join(pieces) == text and all(pieces)
    for piece in pieces[:-1]:  # a piece ends at the first character that reaches `units` code units
        assert utf16_length(piece) >= units and utf16_length(piece[:-1]) < units
    assert not pieces or utf16_length(pieces[-1]) - (2 if ord(pieces[-1][-1]) > 0xFFFF else 1) < units


# --- chunk boundaries -----------------------------------------------------------------------------------


def test_final_empty_line_is_counted_as_openclaw_splits():
    text = "a\nb\n"
    assert spans(OpenClawChunker().chunk("m.md", text)) == [(1, 2)]
    counted = OpenClawChunker(final_empty_line=True).chunk("m.md", text)
    assert spans(counted) == [(1, 3)] and counted[0].text == "a\nb\n"


def test_emoji_count_two_under_utf16_sizing():
    # budget 32 (tokens 8): 15 emoji cost 31 UTF-16 units with their newline, 16 code points
    line = "🔥" * 15
    assert spans(OpenClawChunker(tokens=8, overlap=0, sizing="utf16").chunk("m.md", f"{line}\nx\n")) == [(1, 1), (2, 2)]
    assert spans(OpenClawChunker(tokens=8, overlap=0, sizing="raw_length").chunk("m.md", f"{line}\nx\n")) == [(1, 2)]


def test_long_lines_release_by_release():
    # budget 40 (tokens 10); "ab" + 11 Han costs 2 + 44 = 46 under 2026.8.1's estimate
    line = "ab" + "中" * 11
    sized = dict(tokens=10, overlap=0, sizing="cjk_weighted_2026.08")
    pieces = {mode: [c.text for c in OpenClawChunker(long_lines=mode, **sized).chunk("m.md", line)]
              for mode in ("budget", "2026.08", "2026.09")}
    assert pieces["2026.08"] == ["ab" + "中" * 8, "中" * 3]  # pieces of `tokens` UTF-16 units
    assert pieces["2026.09"] == pieces["budget"] == ["ab" + "中" * 9, "中" * 2]  # by accumulated estimate
    # 2026.2.22: slices of the budget in UTF-16 units, whatever they cost
    assert [c.text for c in OpenClawChunker(tokens=10, overlap=0, sizing="utf16", long_lines="2026.02")
            .chunk("m.md", "x" * 90)] == ["x" * 40, "x" * 40, "x" * 10]


def test_overlap_cap_caps_a_long_carried_line():
    """The fix: at 400/80 the cap used to be min(320, 800) on whole lines, so a 1,400-character last line
    was carried whole (a 1,901-character chunk).  overlap_cap is now OpenClaw 2026.9.3's carry: the window
    min(320, 1600 - incoming line), and the tail of a last line too long to fit (keeping its line number)."""
    text = "x" * 1400 + "\n" + "y" * 500 + "\n"
    uncapped = OpenClawChunker(tokens=400, overlap=80).chunk("m.md", text)
    assert len(uncapped[1].text) == 1901  # 2026.2.22 / 2026.8.1: the crossing line is carried whole
    capped = OpenClawChunker(tokens=400, overlap=80, overlap_cap=True).chunk("m.md", text)
    assert spans(capped) == [(1, 1), (1, 2)]
    assert capped[1].text == "x" * 319 + "\n" + "y" * 500  # a 319-character tail fills the 320 window


def test_overlap_cap_window_leaves_room_for_the_incoming_line():
    # budget 40, overlap 16; lines of 9 (+1); an incoming 35-character line leaves a window of 4
    text = "\n".join(["a" * 9] * 4 + ["b" * 35])
    carried = OpenClawChunker(tokens=10, overlap=4, overlap_cap=True).chunk("m.md", text)
    assert spans(carried) == [(1, 4), (4, 5)] and carried[1].text == "aaa\n" + "b" * 35
    whole = OpenClawChunker(tokens=10, overlap=4).chunk("m.md", text)
    assert spans(whole) == [(1, 4), (3, 5)]  # two whole lines (20 >= 16), the chunk passes the budget


def test_curated_entries_split_memory_md_only():
    text = "# Notes\n- one\n- two\nplain\n"
    chunker = OpenClawChunker(curated_entries=True, final_empty_line=True)
    assert spans(chunker.chunk("MEMORY.md", text)) == [(1, 1), (2, 2), (3, 5)]
    assert spans(chunker.chunk("memory/x.md", text)) == [(1, 5)]


def test_whitespace_only_chunks_are_dropped():
    assert OpenClawChunker(final_empty_line=True).chunk("m.md", "\n\n") == []


# --- extractKeywords and the keyword fallback ---------------------------------------------------------

# extractKeywords of OpenClaw 2026.8.1 (query-expansion-*.js), run under Node 24: (query, unicode61, trigram)
EXTRACT_KEYWORDS = [
    ("普通人逆袭", ["普", "通", "人", "逆", "袭", "普通", "通人", "人逆", "逆袭"], ["普通人逆袭"]),
    ("VPS内存OOM", ["内", "存", "内存"], ["内存"]),
    ("EvoMap", ["evomap"], ["evomap"]),
    ("多Agent工厂", ["多", "工", "厂", "多工", "工厂"], ["多工厂"]),
    ("that thing we discussed about the API", ["discussed", "api"], ["discussed", "api"]),
    ("之前讨论的那个方案", ["之", "讨", "论", "个", "方", "案", "前讨", "讨论", "论的", "的那", "个方", "方案"],
     ["之前讨论的那个方案"]),
    ("서울에서 만난 친구", ["서울에서", "서울", "만난", "친구"], ["서울에서", "서울", "만난", "친구"]),
    ("東京のラーメン屋さん", ["東京", "ラーメン", "屋", "さん"], ["東京", "ラーメン", "屋", "さん"]),
    ("A+B 测试-用例！", ["a+b", "测", "试", "测试", "例", "用例"], ["a+b", "测试", "用例"]),
    ("ｱｲｳ ２０２６年", ["ｱｲｳ", "年"], ["ｱｲｳ", "年"]),
]


@pytest.mark.parametrize(("query", "unicode61", "trigram"), EXTRACT_KEYWORDS)
def test_extract_keywords_is_openclaws(query, unicode61, trigram):
    assert extract_keywords(query) == unicode61
    assert extract_keywords(query, trigram=True) == trigram


def test_fallback_terms_drop_the_whole_query_and_keep_six():
    assert fallback_terms("普通人逆袭") == ["普", "通", "人", "逆", "袭", "普通"]
    assert fallback_terms("EvoMap") == []  # the only keyword is the query itself
    assert build_fts_query("Tello eSIM") == '"Tello" AND "eSIM"'
    assert build_fts_query("？！") is None


def test_boosted_score_hand_worked():
    # Q = {tello, esim}; T = {tello, esim, plan} -> overlap 2: 0.45*2/2 + 0.2*2/3 + 0 (path) + min(15/160, .18)
    text = "Tello eSIM plan"
    expected = 0.1 + (0.45 + 0.2 * 2 / 3 + 0.0 + 15 / 160)
    assert boosted_score("Tello eSIM", "memory/a.md", text, 0.1) == pytest.approx(expected)  # 0.777
    assert boosted_score("Tello eSIM", "memory/tello.md", text, 0.1) == pytest.approx(expected + 0.18)
    assert boosted_score("Tello eSIM", "memory/tello.md", text, 0.3) == 1.0  # capped at 1
    assert boosted_score("？", "memory/a.md", text, 0.25) == 0.25  # no query token: the FTS score alone


def test_locale_key_orders_like_locale_compare():
    paths = ["memory/recB1.md", "memory/reca2.md", "memory/2026-02-19.md", "memory/rec_x.md"]
    assert sorted(paths, key=locale_key) == ["memory/2026-02-19.md", "memory/rec_x.md", "memory/reca2.md",
                                             "memory/recB1.md"]


@pytest.fixture()
def fallback_index():
    texts = {
        "memory/a.md": "# 记录\n关键词：内存、OOM\nVPS 内存不足的处理",
        "memory/b.md": "# 另一条\n内存\n存",
        "memory/c.md": "# 无关\n完全不同的内容",
    }
    chunker = OpenClawChunker(sizing="cjk_weighted_2026.08", final_empty_line=True)
    chunks = [c for path, text in texts.items() for c in chunker.chunk(path, text + "\n")]
    index = FTS5Index(tokenizer=Unicode61(), keyword_fallback="2026.8")
    index.add(chunks)
    return index, {c.id: c for c in chunks}


def test_keyword_fallback_searches_keywords_when_the_strict_query_is_short(fallback_index):
    index, chunks = fallback_index
    assert index.search_strict("VPS内存OOM", 24) == []  # no chunk holds the run 内存OOM ... AND-joined
    hits = index.search("VPS内存OOM", 24)  # terms 内, 存, 内存: 内存 stands alone in a and b, 存 in b
    assert {chunks[c].path for c, _ in hits} == {"memory/a.md", "memory/b.md"}
    assert set(hits.ranking) == {c for c, _ in hits}
    scores = [hits.ranking[c] for c, _ in hits]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)


def test_keyword_fallback_keeps_a_full_strict_list(fallback_index):
    index, chunks = fallback_index
    calls = []

    def search(term, k):
        calls.append(term)
        return index.search_strict(term, k)

    full = keyword_search_with_fallback("内存", 1, search, chunks.__getitem__)
    assert len(full) == 1 and calls == ["内存"]  # as many hits as asked: no keyword search


# --- fusion and selection -----------------------------------------------------------------------------


def test_weighted_fusion_takes_the_keyword_legs_own_score():
    legs = Legs([("a", 0.8)], [("a", 3.0), ("b", 1.0)], lexical_ranking={"a": 1.0, "b": 0.6})
    hits = {h.id: h for h in WeightedFusion(0.7, 0.3, "current")(legs)}
    assert hits["a"].score == pytest.approx(0.7 * 0.8 + 0.3 * 1.0)
    assert hits["b"].score == pytest.approx(0.3 * 0.6) and hits["b"].text_score == 0.6


def test_keyword_only_fusion_breaks_equal_scores_by_text_score():
    legs = Legs([], [("a", 1.0), ("b", 3.0), ("c", 2.0)], lexical_ranking={"a": 1.0, "b": 1.0, "c": 0.9})
    hits = KeywordOnly()(legs)
    assert [h.id for h in hits] == ["b", "a", "c"]  # 1.0 (text 0.75), 1.0 (text 0.5), 0.9
    assert hits[0].text_score == pytest.approx(0.75)
    assert [h.id for h in TemporalDecay()(hits, SearchContext("q", 6, 0, 1, chunk_path=lambda c: c))] == \
        ["b", "a", "c"]  # undated: no reference time needed, the order is kept


def test_fill_takes_keyword_only_hits():
    """The fix: "fill" appends hits the vector leg did not find (vector score 0), not any keyword hit."""
    ctx = SearchContext("q", 6, 0.7, 0.3)
    hits = [Hit("p", 0.8, 0.9, 0.5, True), Hit("both", 0.3, 0.2, 0.5, True), Hit("kw", 0.2, 0.0, 0.66, True),
            Hit("vec", 0.1, 0.14, 0.0, False)]
    assert [h.id for h in MinScore(0.35, "fill")(hits, ctx)] == ["p", "kw"]


def test_fill_when_nothing_passes_keeps_keyword_hits_above_the_floor():
    ctx = SearchContext("q", 6, 0.7, 0.3)
    hits = [Hit("both", 0.3, 0.2, 0.5, True), Hit("kw", 0.2, 0.0, 0.66, True), Hit("vec", 0.1, 0.14, 0.0, False)]
    assert [h.id for h in MinScore(0.35, "fill", relaxed_floor=0.0)(hits, ctx)] == ["both", "kw"]
    assert [h.id for h in MinScore(0.35, "fill")(hits, ctx)] == ["both"]  # floor min(0.35, 0.3)


def test_importance_multiplier():
    text = "- 重要的事 <!-- importance: 8 -->\n- 其他 <!-- trigger: x --> <!-- importance: 12 -->"
    assert curated_importance("MEMORY.md", text) == 8  # 12 is out of 1-10
    assert curated_importance("memory/a.md", text) is None  # not a curated root file
    assert ImportanceMultiplier.multiplier(8) == pytest.approx(1.15)
    assert ImportanceMultiplier.multiplier(None) == 1.0
    texts = {"MEMORY.md:1": text, "memory/b.md:1": "x"}
    ctx = SearchContext("q", 6, 0.7, 0.3, chunk_text=texts.__getitem__, chunk_path=lambda c: c.split(":")[0])
    out = ImportanceMultiplier()([Hit("memory/b.md:1", 0.6), Hit("MEMORY.md:1", 0.55)], ctx)
    assert [(h.id, round(h.score, 4)) for h in out] == [("MEMORY.md:1", 0.6325), ("memory/b.md:1", 0.6)]


def test_decay_dates_named_daily_files_as_2026_8_1():
    assert memory_date("memory/2026-02-19-standup.md") is None
    assert memory_date("memory/2026-02-19-standup.md", True) is not None
    ctx = SearchContext("q", 6, 0.7, 0.3, chunk_path=lambda c: c, now="2026-03-21")
    decayed = TemporalDecay()([Hit("memory/2026-02-19-standup.md", 1.0)], ctx)
    assert decayed[0].score == pytest.approx(math.exp(-math.log(2) / 30 * 30))


def test_mmr_token_less_snippets_are_alike_only_if_equal():
    ctx = SearchContext("q", 6, 0.7, 0.3, chunk_text={"a": "…!", "b": "…!", "c": "?!"}.__getitem__)
    hits = [Hit("a", 0.9), Hit("b", 0.8), Hit("c", 0.7)]
    # a and b are the same text: b is pushed below c; c differs from a, so it counts as dissimilar
    assert [h.id for h in MMR(0.5)(hits, ctx)] == ["a", "c", "b"]


# --- the fixes ------------------------------------------------------------------------------------------


class _CountingEmbedder:
    """A stand-in embedder that can count tokens (hash vectors; the count is the character count)."""

    model_id = "counting-test"
    dim = 8
    batch_size = 16
    max_tokens = None

    @staticmethod
    def token_count(text: str) -> int:
        return len(text)

    def embed(self, texts, role):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = 1.0
        return out


def test_token_count_embedder_from_toml(tmp_cache):
    """The fix: `token_count = "embedder"` in [chunker] hands the chunker the embedder's counter."""
    config = resolve({"preset": "qmd", "chunker": {"name": "qmd", "token_count": "embedder"}})
    stages = build_stages(config, cache=tmp_cache, embedder=_CountingEmbedder(), progress=False)
    assert stages.chunker.token_count is _CountingEmbedder.token_count
    assert stages.chunker.chars_per_token == 3  # QMD's token path
    file_config = resolve({"preset": "qmd", "chunker": {"name": "file", "input_limit": 5, "token_count": "embedder"}})
    file_chunker = build_stages(file_config, cache=tmp_cache, embedder=_CountingEmbedder(), progress=False).chunker
    assert [c.text for c in file_chunker.chunk("m.md", "abcdefgh\n")] == ["abcde"]  # real-token truncation


def test_token_count_takes_only_embedder(tmp_cache):
    config = resolve({"preset": "qmd", "chunker": {"name": "qmd", "token_count": 3}})
    with pytest.raises(ConfigError, match='token_count: must be "embedder"'):
        build_stages(config, cache=tmp_cache, embedder=_CountingEmbedder(), progress=False)
    config = resolve({"preset": "qmd", "chunker": {"name": "qmd", "token_count": "embedder"},
                      "embedder": {"name": "hash"}})
    with pytest.raises(ConfigError, match="cannot count tokens"):
        build_stages(config, cache=tmp_cache, progress=False)


@pytest.mark.parametrize(("backend", "params"), [("sqlite-vec", {}), ("sqlite-vec-l2", {}),
                                                 ("sqlite-vec-int8", {"oversample": 1}),
                                                 ("sqlite-vec-bit", {"oversample": 1})])
def test_vector_cut_breaks_ties_by_id(backend, params):
    """The fix: five equal vectors, k = 2: the two smallest ids, not the ones sqlite-vec lists first."""
    index = VECTOR_BACKENDS.create(backend, params, dim=8)
    unit = np.eye(8, dtype=np.float32)
    index.add(["a", "b", "c", "d", "e", "z"], np.stack([unit[0]] * 5 + [unit[1]]))
    assert [cid for cid, _ in index.search(unit[0], 2)] == ["a", "b"]


# --- presets built from these stages ------------------------------------------------------------------


def test_fts_only_preset_runs_without_an_embedding_model(tmp_path):
    config = resolve({"preset": "openclaw-2026.08-fts", "evaluation": {"now": "2026-02-23"},
                      "dataset": {"name": "king78", "path": "datasets/king78"},
                      "layout": {"daily_logs": False, "combined": False, "records": "all", "keywords": True}})
    from harness.pipeline import load_dataset
    from harness.stages.embedders import EmbeddingCache

    stages = build_stages(config, cache=EmbeddingCache(":memory:"), progress=False)
    layout = load_dataset(config).render(dest=tmp_path / "ws", **config.layout)
    index = index_layout(layout, stages)
    queries = [q for q in load_dataset(config).queries() if q.id == "T3"]
    legs = search_legs(index, stages, queries)
    assert legs["T3"].legs.vector == [] and legs["T3"].query_vector is None
    hits, _ = fuse(stages, queries[0], legs["T3"].legs, index, None)
    assert hits and index.by_id[hits[0].id].path == "memory/rec6wBc33Xcxr.md"  # the Tello record, round 4


def test_presets_use_the_release_options():
    assert CHUNKERS.create("openclaw", {"sizing": "utf16", "long_lines": "2026.02", "final_empty_line": True})
    for preset, sizing in (("openclaw-2026.02", "utf16"), ("openclaw-2026.08", "cjk_weighted_2026.08")):
        config = resolve({"preset": preset})
        assert config.chunker.params["sizing"] == sizing and config.chunker.params["final_empty_line"] is True
    assert [p.name for p in resolve({"preset": "openclaw-2026.08"}).postprocess] == \
        ["temporal_decay", "importance", "mmr", "min_score"]
    assert resolve({"preset": "openclaw-2026.02"}).as_written()["postprocess"] == \
        [{"name": "min_score", "min_score": 0.35, "keyword_fallback": "none"}]
