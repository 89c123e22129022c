"""What each tokenizer matches and what it does not, on a real FTS5 table (issue 4, item 5)."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.db import connect
from harness.errors import ConfigError
from harness.stages.chunkers import Chunk
from harness.stages.fusion import Legs, WeightedFusion
from harness.stages.lexical import LEXICAL_BACKENDS, LIKE_ONLY_RAW_SCORE, FTS5Index
from harness.stages.tokenizers import (
    TOKENIZERS,
    Jieba,
    QueryPlan,
    QueryTermsTokenizer,
    Tokenizer,
    Trigram,
    TrigramFixed,
    Unicode61,
    bigrams,
    cjk_segments,
    fts5_terms,
    is_cjk_char,
    quote_fts5,
)

# One chunk per document; the key is the first letter of the chunk id.
DOCS = {
    "A": "混合检索配置说明",
    "B": "海外银行开户指南",
    "C": "VPS内存OOM排查记录",
    "D": "VPS 内存不足，进程被 OOM 杀掉",
    "E": "ＡＰＩ密钥轮换",  # full-width Latin letters
    "F": "发布完成🎉，大家辛苦了！",
    "G": "API gateway 配置",
    "H": "开x户",  # what an unescaped LIKE '%开_户%' would wrongly match
    "I": "【检索配置】",  # 检索配置 as a whole run between punctuation
}
CHUNKS = [Chunk(f"{key}.md", 1, 1, text) for key, text in DOCS.items()]

TOKENIZER_CONFIGS = {
    "unicode61": ("unicode61", {}),
    "trigram": ("trigram", {}),
    "trigram-fixed": ("trigram-fixed", {}),
    "jieba": ("jieba", {}),
    "jieba-search": ("jieba", {"mode": "search"}),
    "cjk-char": ("cjk-char", {}),
    "cjk-bigram": ("cjk-bigram", {}),
    "qmd": ("qmd", {}),
}
COLUMNS = list(TOKENIZER_CONFIGS)
# tokenizers that wrap another one (a `base` table): what they change is tested in tests/test_robustness_zh.py
WRAPPERS = {"opencc", "colloquial-expansion"}
# tokenizers made for another lexical backend than FTS5, each with its own tests
OTHER_BACKENDS = {"lancedb": "LanceDB's analyzer for the lancedb-fts leg: tests/test_lancedb_fts.py"}
PLAIN = sorted(set(TOKENIZERS.names()) - WRAPPERS - set(OTHER_BACKENDS))

# query -> the documents each tokenizer's FTS5 search returns with join = "and" (column order as COLUMNS)
AND_TABLE = {
    # the headline failure: a term inside a longer Chinese run
    "检索配置": ("I", "AI", "AI", "AI", "AI", "AI", "AI", "AI"),
    # a 2-character term: trigram cannot index it, the shipped planner sends it to LIKE
    "开户": ("", "B", "B", "B", "B", "B", "B", "B"),
    # a 4-character term that is not contiguous in the text: only word segmentation finds it
    "海外开户": ("", "", "", "B", "B", "", "", ""),
    # mixed Latin + Chinese; D has 内存不足, one word in jieba's precise mode, split in search mode
    "VPS内存OOM": ("", "C", "C", "C", "CD", "C", "CD", "C"),
    # full-width punctuation between terms
    "检索，配置！": ("", "AI", "AI", "AI", "AI", "AI", "AI", "AI"),
    # full-width forms: the CJK tokenizers NFKC-normalise, SQLite's tokenizers do not
    "API密钥": ("", "", "", "E", "E", "E", "E", ""),
    "ＡＰＩ": ("", "E", "E", "EG", "EG", "EG", "EG", "E"),
    # emoji are separators for unicode61 and never a query term
    "🎉": ("", "", "", "", "", "", "", ""),
    "发布完成🎉": ("F", "F", "F", "F", "F", "F", "F", "F"),
    "，。！？": ("", "", "", "", "", "", "", ""),
    # AND across a missing term: only the fixed trigram's OR fallback answers
    "检索配置 不存在词": ("", "", "AI", "", "", "", "", ""),
    # _ is a literal in the LIKE path (escaped), a separator for unicode61-based tokenizers
    "开_户": ("", "", "", "H", "H", "B", "H", "B"),
}
OR_TABLE = {
    "检索配置 不存在词": ("I", "AI", "AI", "AGI", "AGI", "AI", "AGI", "AI"),
    "海外开户": ("", "", "", "B", "B", "", "B", ""),
    "检索，配置！": ("G", "AGI", "AGI", "AGI", "AGI", "AGI", "AGI", "AI"),
}


def make_tokenizer(column: str, join: str):
    name, params = TOKENIZER_CONFIGS[column]
    return TOKENIZERS.create(name, join=join, **params)


@pytest.fixture(scope="module")
def fts_indexes():
    indexes = {}
    for column in COLUMNS:
        for join in ("and", "or"):
            index = FTS5Index(make_tokenizer(column, join), connect(load_vec=False))
            index.add(CHUNKS)
            indexes[column, join] = index
    return indexes


def found(index, query: str) -> str:
    return "".join(sorted(cid[0] for cid, _ in index.search(query, 20)))


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("query", list(AND_TABLE))
def test_what_matches_with_and(fts_indexes, column, query):
    assert found(fts_indexes[column, "and"], query) == AND_TABLE[query][COLUMNS.index(column)]


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("query", list(OR_TABLE))
def test_what_matches_with_or(fts_indexes, column, query):
    assert found(fts_indexes[column, "or"], query) == OR_TABLE[query][COLUMNS.index(column)]


def test_every_registered_tokenizer_is_in_the_table():
    assert {name for name, _ in TOKENIZER_CONFIGS.values()} == set(TOKENIZERS.names()) - WRAPPERS - set(OTHER_BACKENDS)


@pytest.mark.parametrize("name", PLAIN)
def test_every_tokenizer_states_the_protocol_and_its_schema(name):
    tok = TOKENIZERS.create(name)
    assert isinstance(tok, Tokenizer) and tok.name == name
    assert isinstance(tok.query_plan("检索 配置"), QueryPlan)
    schema = TOKENIZERS.json_schema(name)
    assert schema["properties"]["join"]["enum"] == ["and", "or"] and schema["additionalProperties"] is False


# --- the query plans ----------------------------------------------------------------------------

def test_trigram_as_shipped_plan():
    plan = Trigram().query_plan("开户 检索配置 AI")
    assert plan.match == '"检索配置" AND "AI"'  # 3+ characters: a quoted trigram phrase
    assert plan.like == ("开户",)  # a CJK token under 3 characters cannot match a trigram index
    assert (plan.join, plan.fallback_when, plan.fallback_join) == ("and", "error", "and")
    assert plan.fallback_like == ("开户", "检索配置", "AI")


def test_trigram_fixed_plan():
    plan = TrigramFixed(join="and").query_plan("开户 检索配置 AI")
    assert plan.match == '"AI"'
    assert plan.like == ("开户", "检索配置")  # every token containing CJK
    assert (plan.fallback_when, plan.fallback_join) == ("empty", "or")
    assert plan.fallback_like == ("开户", "检索配置", "AI")


def test_unicode61_plan_is_its_match_expression():
    tok = Unicode61()
    assert tok.query_plan("Tello eSIM") == QueryPlan(match='"Tello" AND "eSIM"', join="and")
    assert tok.query_plan("🙂").empty


def test_cjk_char_query_is_an_ordered_character_phrase():
    assert TOKENIZERS.create("cjk-char").match_expression("VPS内存OOM 开户") == '"VPS 内 存 OOM" AND "开 户"'
    assert TOKENIZERS.create("cjk-char").index_text("VPS内存") == "VPS 内  存 "


def test_cjk_bigram_terms():
    tok = TOKENIZERS.create("cjk-bigram", join="or")
    assert tok.match_expression("检索配置 VPS内存") == '"检索" OR "索配" OR "配置" OR "VPS" OR "内存"'
    assert tok.analyze("混合检索") == ["混合", "合检", "检索"]
    assert bigrams("钱") == ["钱"]


def test_cjk_helpers():
    assert is_cjk_char("检") and is_cjk_char("か") and is_cjk_char("한") and is_cjk_char("𠀀")
    assert not is_cjk_char("。") and not is_cjk_char("A") and not is_cjk_char("・")
    assert cjk_segments("VPS内存OOM") == [(False, "VPS"), (True, "内存"), (False, "OOM")]


def test_quote_drops_nul_and_quotes():
    assert quote_fts5('a"b\x00c') == '"abc"'


def test_analyze_is_fts5s_own_tokenizer():
    assert Unicode61().analyze("Éclair 混合检索 한국어") == ["eclair", "混合检索", "한국어"]
    assert fts5_terms("ab VPS", "trigram case_sensitive 0") == ["ab ", "b v", " vp", "vps"]
    jieba_tok = TOKENIZERS.create("jieba")
    assert jieba_tok.analyze("VPS内存OOM，排查！") == ["vps", "内存", "oom", "排查"]


def test_jieba_search_mode_emits_sub_words():
    assert TOKENIZERS.create("jieba").analyze("内存不足") == ["内存不足"]
    assert TOKENIZERS.create("jieba", mode="search").analyze("内存不足") == ["内存", "不足", "内存不足"]


def test_jieba_user_dictionary(tmp_path):
    text = "我需要一个美国手机号接收验证码"
    plain = Jieba()
    assert "美国手机号" not in plain.words(text)
    user_dict = tmp_path / "words.txt"
    user_dict.write_text("美国手机号 50 n\nEvoMap 10\n", encoding="utf-8")
    custom = Jieba(user_dict=str(user_dict))
    assert "美国手机号" in custom.words(text)
    assert "美国手机号" not in Jieba().words(text)  # the user dictionary did not leak into jieba's default
    index = FTS5Index(custom, connect(load_vec=False))
    index.add([Chunk("a.md", 1, 1, text)])
    assert len(index.search("美国手机号", 5)) == 1
    assert index.search("手机号", 5) == []  # now only the whole word is a term


def test_jieba_user_dictionary_errors(tmp_path):
    missing = str(tmp_path / "missing.txt")
    with pytest.raises(ConfigError, match=r"^\[tokenizer\] user_dict: no such file \(got '.*missing.txt'\)$"):
        TOKENIZERS.create("jieba", user_dict=missing)
    bad = tmp_path / "bad.txt"
    bad.write_bytes("美国手机号 5\n".encode("gbk"))  # jieba requires UTF-8
    with pytest.raises(ConfigError, match=r"bad.txt: field 'user_dict': not a jieba user dictionary"):
        TOKENIZERS.create("jieba", user_dict=str(bad))
    with pytest.raises(ValueError, match="user_dict"):  # built directly: pydantic's ValidationError
        Jieba(user_dict=missing)


@pytest.mark.parametrize("name", PLAIN)
def test_bad_join_is_rejected_naming_table_and_key(name):
    with pytest.raises(ConfigError) as caught:
        TOKENIZERS.create(name, join="xor")
    assert str(caught.value) == "[tokenizer] join: Input should be 'and' or 'or' (got 'xor')"


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_every_wrapping_tokenizer_states_the_protocol_of_its_base(name):
    tok = TOKENIZERS.create(name, base={"name": "unicode61", "join": "or"})
    assert isinstance(tok, Tokenizer) and tok.name == "unicode61" and tok.join == "or"
    assert isinstance(tok.query_plan("检索 配置"), QueryPlan)
    assert TOKENIZERS.json_schema(name)["additionalProperties"] is False
    with pytest.raises(ConfigError, match="join"):
        TOKENIZERS.create(name, base={"name": "unicode61"}, join="or")  # the base's join, not the wrapper's


def test_bad_options_are_rejected_naming_table_and_key():
    for name in ("cjk-char", "cjk-bigram", "jieba"):
        with pytest.raises(ConfigError) as caught:
            TOKENIZERS.create(name, normalize="nfc")
        assert str(caught.value) == "[tokenizer] normalize: Input should be 'nfkc' or 'none' (got 'nfc')"
    with pytest.raises(ConfigError, match=r"^\[tokenizer\] mode: Input should be 'precise' or 'search' \(got 'fast'\)$"):
        TOKENIZERS.create("jieba", mode="fast")
    with pytest.raises(ConfigError, match=r"query_tokens: Input should be 'unicode' or 'ascii' \(got 'latin'\)"):
        TOKENIZERS.create("unicode61", query_tokens="latin")
    with pytest.raises(ConfigError, match="fixed: unknown key for tokenizer 'trigram'"):
        TOKENIZERS.create("trigram", fixed=True)  # the fixed planner is its own tokenizer, trigram-fixed


# --- the LIKE paths in the FTS5 backend ---------------------------------------------------------

def test_like_only_hits_have_the_documented_raw_score_and_fuse_to_one(fts_indexes):
    hits = fts_indexes["trigram-fixed", "and"].search("检索配置", 5)
    assert hits == [("A.md:000001-000001", LIKE_ONLY_RAW_SCORE), ("I.md:000001-000001", LIKE_ONLY_RAW_SCORE)]
    for mapping in ("current", "legacy"):  # OpenClaw's textScore for a LIKE row is 1
        fused = WeightedFusion(0.0, 1.0, mapping)(Legs(lexical=hits))
        assert [h.text_score for h in fused] == [1.0, 1.0]


def test_or_join_ranks_match_rows_before_like_only_rows():
    index = FTS5Index(Trigram(join="or"), connect(load_vec=False))
    index.add([Chunk("a.md", 1, 1, "开户流程"), Chunk("b.md", 1, 1, "检索配置说明"), Chunk("c.md", 1, 1, "其他")])
    hits = index.search("开户 检索配置", 5)
    assert [cid[0] for cid, _ in hits] == ["b", "a"]  # b via MATCH (bm25 > 0), a via LIKE only
    assert hits[0][1] > 0 and hits[1][1] == LIKE_ONLY_RAW_SCORE
    assert index.routes["match+like"] == 1


class PlanTokenizer(QueryTermsTokenizer):
    """A tokenizer that returns a fixed plan, to exercise the backend's plan executor directly."""

    name = "plan"
    fts5_tokenize = "trigram case_sensitive 0"
    join = "and"

    def __init__(self, plan: QueryPlan):
        self.plan = plan

    def query_terms(self, query):
        return [query]

    def query_plan(self, query):
        return self.plan

    def match_expression(self, query):
        return self.plan.match


def plan_index(plan: QueryPlan) -> FTS5Index:
    index = FTS5Index(PlanTokenizer(plan), connect(load_vec=False))
    index.add([Chunk("a.md", 1, 1, "开户流程 abc"), Chunk("b.md", 1, 1, "检索配置")])
    return index


def test_fallback_runs_when_match_raises_only_if_the_plan_says_so():
    broken = '"unterminated'
    on_error = plan_index(QueryPlan(match=broken, fallback_like=("开户",), fallback_when="error"))
    assert on_error.search("x", 5) == [("a.md:000001-000001", LIKE_ONLY_RAW_SCORE)]
    assert on_error.routes["fallback"] == 1
    never = plan_index(QueryPlan(match=broken, fallback_like=("开户",), fallback_when="never"))
    with pytest.raises(Exception, match="unterminated"):
        never.search("x", 5)


def test_fallback_on_zero_rows_only_with_the_empty_policy():
    zero_rows = '"不存在"'
    assert plan_index(QueryPlan(match=zero_rows, fallback_like=("检索",), fallback_when="error")).search("x", 5) == []
    hits = plan_index(QueryPlan(match=zero_rows, fallback_like=("检索", "开户"), fallback_when="empty")).search("x", 5)
    assert [cid[0] for cid, _ in hits] == ["a", "b"]  # OR-joined, LIKE-only rows tie and break by id


def test_like_patterns_are_escaped():
    index = plan_index(QueryPlan(like=("%",)))
    assert index.search("x", 5) == []  # a literal %, not "anything"


def test_bad_plans_are_rejected():
    with pytest.raises(ValueError):
        QueryPlan(fallback_when="sometimes")
    with pytest.raises(ValueError):
        QueryPlan(join="xor")


# --- no tokenizer/backend pair raises on arbitrary Unicode --------------------------------------

BACKENDS = ["fts5", "rank-bm25-okapi", "rank-bm25-l", "rank-bm25-plus", "bm25s"]
TRICKY = list('检索配置开户VPS内存OOM_%\\"*()-+^:，。！？🎉ＡＰＩ한か \x00\u200b\u0301')


@pytest.fixture(scope="module")
def all_pairs():
    pairs = {}
    for column in COLUMNS:
        for backend in BACKENDS:
            for join in ("and", "or"):
                index = LEXICAL_BACKENDS.create(backend, tokenizer=make_tokenizer(column, join),
                                                conn=connect(load_vec=False))
                index.add(CHUNKS)
                pairs[column, backend, join] = index
    return pairs


@settings(max_examples=60)
@given(st.one_of(st.text(max_size=40), st.text(alphabet=st.sampled_from(TRICKY), max_size=20)))
def test_no_pair_raises_and_hits_are_well_formed(all_pairs, query):
    for index in all_pairs.values():
        hits = index.search(query, 5)
        assert len(hits) <= 5 and len({cid for cid, _ in hits}) == len(hits)
        assert all(isinstance(s, float) and math.isfinite(s) for _, s in hits)
        assert hits == sorted(hits, key=lambda h: (-h[1], h[0]))
