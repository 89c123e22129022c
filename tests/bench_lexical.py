"""Lexical hot paths on real Chinese data: indexing CMRC 2018 dev with jieba, and query latency."""
import pytest

from harness.db import connect
from harness.inputs.public import SquadDataset
from harness.stages.chunkers import FileChunker
from harness.stages.lexical import FTS5Index
from harness.stages.tokenizers import TOKENIZERS
from tests.conftest import DATA

CMRC = DATA / "cmrc2018" / "cmrc2018_dev.json"


@pytest.fixture(scope="module")
def cmrc_chunks():
    dataset = SquadDataset(CMRC, limit_queries=500)
    layout = dataset.render()
    chunks = [c for path in layout.files for c in FileChunker().chunk(path, layout.read(path))]
    layout.cleanup()
    return chunks, dataset.queries()


@pytest.mark.parametrize("tokenizer", ["unicode61", "jieba", "cjk-bigram"])
def test_index_cmrc_dev(benchmark, cmrc_chunks, tokenizer):
    chunks, _ = cmrc_chunks
    tok = TOKENIZERS.create(tokenizer, join="or")
    tok.analyze("预热")  # jieba loads its dictionary once per process, outside the timing

    def build():
        index = FTS5Index(tok, connect(load_vec=False))
        index.add(chunks)
        return index

    index = benchmark.pedantic(build, rounds=3, iterations=1)
    assert len(index.ids) == 848


@pytest.mark.parametrize("tokenizer", ["unicode61", "jieba", "cjk-bigram"])
def test_query_cmrc_dev(benchmark, cmrc_chunks, tokenizer):
    chunks, queries = cmrc_chunks
    index = FTS5Index(TOKENIZERS.create(tokenizer, join="or"), connect(load_vec=False))
    index.add(chunks)
    texts = [q.text for q in queries[:200]]
    state = {"i": 0}

    def one_query():
        state["i"] += 1
        return index.search(texts[state["i"] % len(texts)], 40)

    benchmark.pedantic(one_query, rounds=400, iterations=1)
