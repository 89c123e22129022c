"""Lexical backends behind one interface: FTS5 (the reference), rank-bm25 (Okapi, BM25L, BM25+), bm25s."""
from __future__ import annotations

import pytest

from harness.db import connect
from harness.errors import ConfigError
from harness.stages.chunkers import Chunk
from harness.stages.lexical import (
    LEXICAL_BACKENDS,
    BM25sIndex,
    FTS5Index,
    LexicalIndex,
)
from harness.stages.tokenizers import TOKENIZERS

FTS5_K1, FTS5_B = 1.2, 0.75  # fixed inside SQLite's bm25()

# No query term below occurs in more than half of the documents: there FTS5 floors a negative idf at
# 1e-6 while rank-bm25 floors it at epsilon x mean idf, so the two would differ by design.
ENGLISH = ["alpha beta gamma", "alpha alpha delta", "beta epsilon zeta eta theta", "gamma gamma gamma delta",
           "zeta iota kappa", "lambda mu nu alpha", "xi omicron pi", "rho sigma tau beta beta",
           "upsilon phi chi", "psi omega"]
ENGLISH_QUERIES = ["alpha", "alpha gamma", "beta delta zeta", "gamma gamma", "omega kappa tau"]
CHINESE = ["混合检索配置说明，检索效果很好", "海外银行开户指南", "内存不足导致进程被杀", "向量检索与全文检索的混合",
           "银行开户需要护照", "美国手机号用于接收验证码", "服务器内存升级记录", "今天天气晴朗", "检索配置的默认值",
           "护照办理流程"]
CHINESE_QUERIES = ["检索配置", "银行开户", "内存 检索", "护照 手机号", "混合检索"]


def chunks(texts: list[str]) -> list[Chunk]:
    return [Chunk(f"doc{i:02d}.md", 1, 1, t) for i, t in enumerate(texts)]


def build(backend: str, tokenizer, texts: list[str], **params):
    index = LEXICAL_BACKENDS.create(backend, tokenizer=tokenizer, conn=connect(load_vec=False), **params)
    index.add(chunks(texts))
    return index


@pytest.mark.parametrize("tokenizer_name, texts, queries", [
    ("unicode61", ENGLISH, ENGLISH_QUERIES),
    ("jieba", CHINESE, CHINESE_QUERIES),
    ("cjk-bigram", CHINESE, CHINESE_QUERIES),
])
def test_fts5_and_okapi_with_fts5_parameters_agree(tokenizer_name, texts, queries):
    tokenizer = TOKENIZERS.create(tokenizer_name, join="or")
    fts5 = build("fts5", tokenizer, texts)
    okapi = build("rank-bm25-okapi", tokenizer, texts, k1=FTS5_K1, b=FTS5_B)
    for query in queries:
        expected = fts5.search(query, 10)
        got = okapi.search(query, 10)
        assert expected, f"{query!r} should match something"
        assert [cid for cid, _ in got] == [cid for cid, _ in expected], query  # same ranking
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-9)  # same BM25


def test_bm25s_robertson_with_fts5_parameters_ranks_like_fts5():
    tokenizer = TOKENIZERS.create("jieba", join="or")
    fts5 = build("fts5", tokenizer, CHINESE)
    fast = build("bm25s", tokenizer, CHINESE, method="robertson", k1=FTS5_K1, b=FTS5_B)
    for query in CHINESE_QUERIES:
        expected, got = fts5.search(query, 10), fast.search(query, 10)
        assert [cid for cid, _ in got] == [cid for cid, _ in expected], query
        # bm25s leaves out BM25's constant (k1 + 1) factor and stores float32
        assert [s * (FTS5_K1 + 1) for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-5)


BAG_BACKENDS = ["rank-bm25-okapi", "rank-bm25-l", "rank-bm25-plus", "bm25s"]
ALL_BACKENDS = ["fts5", "qmd-documents", *BAG_BACKENDS]
# backends that model a system whose contract is its own, tested against that system's behaviour instead
OWN_CONTRACT = {"lancedb-fts": "LanceDB's flat scan: terms OR-ed whatever the join, identical rows scored apart by "
                               "its running statistics (tests/test_lancedb_fts.py)"}


def test_every_backend_is_registered():
    assert set(ALL_BACKENDS) | set(OWN_CONTRACT) == set(LEXICAL_BACKENDS.names())


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_only_documents_with_the_terms_come_back(backend):
    # BM25L and BM25+ give every document a positive score; the backend must still filter
    for join, expected in (("or", {"doc01.md", "doc04.md", "doc09.md"}), ("and", {"doc04.md"})):
        index = build(backend, TOKENIZERS.create("jieba", join=join), CHINESE)
        hits = index.search("银行 护照", 10)
        assert {cid.split(":")[0] for cid, _ in hits} == expected, join
        assert all(score > 0 for _, score in hits)


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_contract_best_first_ties_by_id_and_k(backend):
    # identical documents tie exactly; they are added out of id order
    texts = ["检索配置", "其他内容", "检索配置", "检索配置"]
    index = LEXICAL_BACKENDS.create(backend, tokenizer=TOKENIZERS.create("jieba", join="or"),
                                    conn=connect(load_vec=False))
    index.add([Chunk(f"{name}.md", 1, 1, t) for name, t in zip("dcba", texts)])
    hits = index.search("检索配置", 10)
    assert [cid[0] for cid, _ in hits] == ["a", "b", "d"]
    assert len({s for _, s in hits}) == 1
    assert index.search("检索配置", 2) == hits[:2]
    assert index.search("检索配置", 0) == []
    assert index.search("", 5) == [] and index.search("！？", 5) == []


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_empty_index_and_incremental_adds(backend):
    index = LEXICAL_BACKENDS.create(backend, tokenizer=TOKENIZERS.create("cjk-bigram", join="or"),
                                    conn=connect(load_vec=False))
    assert index.search("检索", 5) == []
    # enough other documents that 检索 keeps a positive idf in every variant after the second add
    index.add([Chunk("a.md", 1, 1, "检索配置")] + [Chunk(f"z{i}.md", 1, 1, "天气晴朗") for i in range(4)])
    assert [cid for cid, _ in index.search("检索", 5)] == ["a.md:000001-000001"]
    index.add([Chunk("b.md", 1, 1, "检索检索检索")])  # the model is rebuilt with the new document
    assert [cid for cid, _ in index.search("检索", 5)][0] == "b.md:000001-000001"


def test_library_defaults_and_bad_parameters():
    tok = TOKENIZERS.create("unicode61")
    okapi = LEXICAL_BACKENDS.create("rank-bm25-okapi", tokenizer=tok)
    assert (okapi.k1, okapi.b, okapi.epsilon) == (1.5, 0.75, 0.25)
    assert LEXICAL_BACKENDS.create("rank-bm25-l", tokenizer=tok).delta == 0.5
    assert LEXICAL_BACKENDS.create("rank-bm25-plus", tokenizer=tok).delta == 1.0
    fast = LEXICAL_BACKENDS.create("bm25s", tokenizer=tok)
    assert (fast.k1, fast.b, fast.method) == (1.5, 0.75, "lucene")
    with pytest.raises(ValueError):
        BM25sIndex(tok, method="tfidf")
    with pytest.raises(ConfigError, match=r"^\[lexical\] method: Input should be 'robertson', 'lucene', 'atire', "
                                          r"'bm25l' or 'bm25\+' \(got 'tfidf'\)$"):
        LEXICAL_BACKENDS.create("bm25s", tokenizer=tok, method="tfidf")
    with pytest.raises(ConfigError, match=r"^\[lexical\] b: Input should be less than or equal to 1 \(got 1.5\)$"):
        LEXICAL_BACKENDS.create("rank-bm25-okapi", tokenizer=tok, b=1.5)
    with pytest.raises(ConfigError, match=r"^\[lexical\] delta: Input should be greater than or equal to 0"):
        LEXICAL_BACKENDS.create("rank-bm25-plus", tokenizer=tok, delta=-1.0)
    with pytest.raises(ConfigError, match=r"^\[lexical\] epsilon: unknown key for lexical backend 'bm25s'; "
                                          r"known: method, k1, b, delta$"):
        LEXICAL_BACKENDS.create("bm25s", tokenizer=tok, epsilon=0.1)
    with pytest.raises(ConfigError, match=r"^\[lexical\]: tokenizer cannot be set in a configuration file$"):
        LEXICAL_BACKENDS.create("fts5", {"tokenizer": "jieba"})
    with pytest.raises(ConfigError, match=r"^\[lexical\] tokenizer: Input should be an instance of Tokenizer"):
        LEXICAL_BACKENDS.create("fts5", tokenizer="jieba")  # the pipeline's object must state the protocol


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_every_backend_states_the_protocol_and_its_schema(backend):
    index = LEXICAL_BACKENDS.create(backend, tokenizer=TOKENIZERS.create("unicode61"), conn=connect(load_vec=False))
    assert isinstance(index, LexicalIndex)
    schema = LEXICAL_BACKENDS.json_schema(backend)
    assert schema["title"] == f"lexical backend {backend}" and schema["required"] == ["name"]
    assert not {"tokenizer", "conn"} & set(schema["properties"])  # runtime arguments, not configuration


def test_fts5_keeps_its_constructor():
    index = FTS5Index(TOKENIZERS.create("unicode61"))  # makes its own connection
    index.add(chunks(ENGLISH))
    assert index.search("alpha", 1)[0][0] == "doc01.md:000001-000001"
