"""LanceDB's analyzer (tokenizer "lancedb"), its full-text search as memory-lancedb-pro's store runs it and the
store's substring fallback (lexical "lancedb-fts"), and the lancedb fusions reading the fallback's scores."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.stages.chunkers import Chunk
from harness.stages.fusion import FUSIONS, Legs
from harness.stages.fusion.lancedb import sigmoid_bm25
from harness.stages.lexical import LEXICAL_BACKENDS
from harness.stages.lexical.base import RankedHits
from harness.stages.lexical.lancedb_fts import fallback_score, index_scores, scan_scores
from harness.stages.tokenizers import TOKENIZERS


def analyzer(**params):
    return TOKENIZERS.create("lancedb", params)


def backend(*texts_and_paths, **params):
    index = LEXICAL_BACKENDS.create("lancedb-fts", params, tokenizer=analyzer(), conn=None)
    chunks = [Chunk(path, n + 1, n + 1, text) for n, (text, path) in enumerate(texts_and_paths)]
    index.add(chunks)
    return index, [c.id for c in chunks]


# --- the analyzer -------------------------------------------------------------------------------------------

def test_the_analyzer_cuts_runs_of_alphanumerics_and_keeps_a_chinese_run_whole():
    assert analyzer().tokens("Tello eSIM，普通人逆袭!e-SIM") == ["tello", "esim", "普通人逆袭", "e", "sim"]


def test_tokens_of_forty_bytes_or_more_are_dropped():
    assert analyzer().tokens("一" * 13) == ["一" * 13]  # 39 UTF-8 bytes
    assert analyzer().tokens("一" * 14) == []  # 42
    assert analyzer(max_token_length=100).tokens("一" * 14) == ["一" * 14]


def test_stemming_then_stop_words_then_ascii_folding():
    tok = analyzer()
    assert tok.tokens("The agents were running") == ["agent", "were", "run"]  # "the" is a stop word
    assert analyzer(stem="none").tokens("agents running") == ["agents", "running"]
    assert analyzer(remove_stop_words=False).tokens("the cat") == ["the", "cat"]
    assert tok.tokens("Café ＡＰＩ Straße") == ["cafe", "api", "strasse"]
    assert analyzer(ascii_folding=False).tokens("café") == ["café"]


def test_a_repeated_query_word_is_kept_twice():
    assert analyzer().analyze_query("cat cat dog") == ["cat", "cat", "dog"]


@given(st.text(max_size=40), st.text(max_size=40))
def test_analysing_two_texts_apart_is_analysing_them_joined_by_a_space(a, b):
    tok = analyzer()
    assert tok.tokens(a + " " + b) == tok.tokens(a) + tok.tokens(b)


# --- LanceDB's flat scan and its index ----------------------------------------------------------------------

def test_the_scan_scores_each_row_with_the_statistics_of_the_rows_before_it():
    # row 0: N 1, n 1, avg 2 // 1, 1 query term in the row; row 1: N 2, n 2, avg 3 // 2 = 1;
    # row 2: N 3, n 4 occurrences (more than rows), so a negative IDF and no hit
    scores = scan_scores([["cat", "dog"], ["cat"], ["fox", "cat", "cat"]], ["cat"])
    assert scores[0] == pytest.approx(math.log(4 / 3) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1 / 2)))
    assert scores[1] == pytest.approx(math.log(1.2))
    assert scores[2] < 0


def test_the_backend_returns_the_scan_hits_best_first_and_drops_the_rest():
    index, ids = backend(("cat dog", "a.md"), ("cat", "b.md"), ("fox cats cat", "c.md"), ("bird", "d.md"))
    hits = index.search("cat", 10)
    assert [cid for cid, _ in hits] == [ids[0], ids[1]]
    assert not isinstance(hits, RankedHits)
    assert index.search("cat", 1) == hits[:1]


def test_the_scan_depends_on_the_order_rows_were_written():
    assert scan_scores([["cat", "dog"], ["cat"]], ["cat"])[0] != scan_scores([["cat"], ["cat", "dog"]], ["cat"])[1]


def test_over_an_index_every_row_has_the_same_statistics():
    docs = [["cat", "dog"], ["cat"], ["fox", "cat", "cat"], ["bird"]]
    avg = 7 / 4
    idf = math.log(1 + (4 - 3 + 0.5) / (3 + 0.5))  # 3 rows hold "cat"
    scores = index_scores(docs, ["cat", "cat"])  # each distinct term once

    def weight(f, length):
        return idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * length / avg))

    assert scores == pytest.approx([weight(1, 2), weight(1, 1), weight(2, 3), 0.0])


words = st.lists(st.sampled_from(["cat", "dog", "fox", "bird"]), max_size=6)


@given(st.lists(words, max_size=8), st.lists(words, max_size=4), words)
def test_rows_written_later_never_change_a_scanned_rows_score(docs, later, query):
    assert scan_scores(docs + later, query)[:len(docs)] == scan_scores(docs, query)


@given(st.lists(words, min_size=1, max_size=8).flatmap(lambda d: st.tuples(st.just(d), st.permutations(d))), words)
def test_the_index_scores_do_not_depend_on_the_row_order(docs_and_permuted, query):
    docs, permuted = docs_and_permuted
    assert sorted(index_scores(docs, query)) == pytest.approx(sorted(index_scores(permuted, query)))


# --- the store's substring fallback -------------------------------------------------------------------------

def test_the_fallback_runs_when_the_search_finds_nothing_newest_first():
    index, ids = backend(("普通人逆袭的故事", "memory/2026-02-01.md"), ("又一个普通人逆袭了", "memory/2026-02-03.md"),
                         ("笔记里的普通人逆袭", "MEMORY.md"), ("无关", "memory/2026-02-05.md"))
    hits = index.search(" 普通人逆袭 ", 10)
    assert isinstance(hits, RankedHits)
    assert [cid for cid, _ in hits] == [ids[2], ids[1], ids[0]]  # undated counts as now, then by date
    assert hits.ranking == {cid: pytest.approx(0.82) for cid in ids[:3]}  # 0.72 + 0.02 x 5
    assert [cid for cid, _ in index.search("普通人逆袭", 2)] == [ids[2], ids[1]]


def test_the_fallback_score_counts_utf16_units_and_is_capped():
    assert fallback_score("ab🙂") == pytest.approx(0.72 + 0.02 * 4)
    assert fallback_score("x" * 50) == 0.95


def test_without_the_fallback_nothing_found_is_nothing():
    index, _ = backend(("普通人逆袭的故事", "memory/2026-02-01.md"), fallback="none")
    assert index.search("普通人逆袭", 10) == []
    assert index.search("   ", 10) == []


def test_a_query_without_terms_goes_to_the_fallback():
    index, ids = backend(("it is what it is", "a.md"))
    assert [cid for cid, _ in index.search("it is", 10)] == ids  # every word a stop word: no term at all


# --- the fusions read the fallback's score as the BM25 score ------------------------------------------------

@pytest.mark.parametrize("name", ["lancedb-pro", "multiplicative"])
def test_the_lancedb_fusions_take_the_fallbacks_score_not_its_sigmoid(name):
    fusion = FUSIONS.create(name, {})
    plain = {h.id: h for h in fusion(Legs([("a", 0.9)], [("b", 0.82)]))}
    ranked = {h.id: h for h in fusion(Legs([("a", 0.9)], RankedHits([("b", 0.82)], {"b": 0.82})))}
    assert plain["b"].text_score == pytest.approx(sigmoid_bm25(0.82))
    assert ranked["b"].text_score == pytest.approx(0.82) and ranked["b"].score == pytest.approx(0.82)
