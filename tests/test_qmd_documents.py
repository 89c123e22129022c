"""QMD's lexical index (tokenizer `qmd`, backend `qmd-documents`) and its document-level fusion, on hand-
worked cases; the real QMD comparison is in test_conformance_qmd.py."""
from __future__ import annotations

import pytest

from harness.db import connect
from harness.stages.chunkers import Chunk, document_of
from harness.stages.fusion import (
    FUSIONS,
    Legs,
    RankedList,
    best_chunk_per_document,
    reciprocal_rank_fusion,
)
from harness.stages.lexical import LEXICAL_BACKENDS, qmd_title
from harness.stages.tokenizers import TOKENIZERS, normalize_cjk_for_fts, qmd_query_parts


def qmd_index(documents, **params):
    tok = TOKENIZERS.create("qmd", **{k: params.pop(k) for k in list(params) if k == "qmd_query_bug"})
    index = LEXICAL_BACKENDS.create("qmd-documents", tokenizer=tok, conn=connect(load_vec=False), **params)
    index.add_documents(documents)
    return index


# --- the query builder (expressions measured on the real QMD 2.8.3, conformance/MEASUREMENTS.md) --------

@pytest.mark.parametrize(("query", "expected"), [
    ("普通人逆袭", '"普 通 人 逆 袭"'),
    ("Tello eSIM", '"tello"* AND "esim"*'),
    ("多Agent工厂", '"多 agent 工 厂"'),
    ("Kubernetes 集群升级到 1.30 的步骤", '"kubernetes"* AND "集 群 升 级 到" AND "1"* AND "30"* AND "的 步 骤"'),
    ("iPhone 电池健康低于 80% 要不要换", '"iphone"* AND "电 池 健 康 低 于" AND "80"* AND "要 不 要 换"'),
    ("德意志-奥地利共和国", '"德意志 奥地利共和国"'),  # the hyphen branch comes first: no CJK spacing
    ("364.6公里", '"364"* AND "6公里"*'),  # the dot branch comes first
    ("performance -sports", '"performance"* NOT "sports"*'),
    ('"machine learning" multi-agent', '"machine learning" AND "multi agent"'),
    ("-multi-agent", None),  # negation alone searches nothing
    ("2026.4.10 -v1.2", '"2026"* AND "4"* AND "10"* NOT ("v1"* AND "2"*)'),
    ("  ！？  ", None),
])
def test_qmd_builds_the_expressions_qmd_builds(query, expected):
    assert TOKENIZERS.create("qmd").match_expression(query) == expected


def test_the_bug_switch_tests_cjk_first():
    fixed = TOKENIZERS.create("qmd", qmd_query_bug=False)
    assert fixed.match_expression("德意志-奥地利共和国") == '"德 意 志 奥 地 利 共 和 国"'
    assert fixed.match_expression("364.6公里") == '"364 6 公 里"'
    assert qmd_query_parts("Tello-eSIM", hyphen_dot_first=False) == (['"tello esim"'], [])


def test_cjk_spacing_and_the_script_class():
    assert normalize_cjk_for_fts("VPS内存OOM") == "VPS 内 存 OOM"
    assert normalize_cjk_for_fts("カタカナーと한글") == " カ タ カ ナ " + "ー" + " と 한 글 "  # ー is Common
    assert normalize_cjk_for_fts("，。🎉") == "，。🎉"  # CJK punctuation and emoji are not in the class


def test_a_cjk_term_with_a_hyphen_or_a_dot_finds_nothing_in_qmd_and_the_file_with_the_fix():
    docs = [("memory/a.md", "德意志-奥地利共和国成立。全长364.6公里。\n")]
    for bug, expected in ((True, 0), (False, 1)):
        index = qmd_index(docs, qmd_query_bug=bug)
        assert len(index.search("德意志-奥地利共和国", 10)) == expected
        assert len(index.search("364.6公里", 10)) == expected
        assert len(index.search("奥地利共和国", 10)) == 1 and len(index.search("公里", 10)) == 1


def test_english_terms_are_porter_stemmed_prefixes():
    index = qmd_index([("memory/a.md", "The agents were running.\n"), ("memory/b.md", "An agentic workflow.\n"),
                       ("memory/c.md", "Nothing here.\n")])
    assert {d for d, _ in index.search("agent", 10)} == {"memory/a.md", "memory/b.md"}  # prefix
    assert {d for d, _ in index.search("runs", 10)} == {"memory/a.md"}  # porter: runs -> run*, running -> run
    assert index.search("nothing", 10)[0][0] == "memory/c.md"


# --- the index: whole files, three columns ----------------------------------------------------------

def test_titles_as_qmd_extracts_them():
    assert qmd_title("intro\n## Second\n# First\n", "memory/x.md") == "Second"  # first H1 or H2
    assert qmd_title("# Notes\ntext\n## Real title\n", "m/x.md") == "Real title"
    assert qmd_title("### deep\nplain\n", "memory/2026-02-15.md") == "2026-02-15"
    assert qmd_title("#\n\nspans lines\n", "x.md") == "spans lines"  # \s+ runs over line ends, as in JS
    assert qmd_title("#  padded title  \r\nbody", "x.md") == "padded title"


def test_the_title_column_weighs_four_times_the_body():
    # the same term once in a title vs once in a body of the same length: the title wins
    docs = [("memory/a.md", "# zebra\nalpha beta\n"), ("memory/b.md", "# alpha\nzebra beta\n")]
    docs += [(f"memory/f{i}.md", f"# gamma{i}\ndelta beta\n") for i in range(4)]  # zebra's idf stays positive
    index = qmd_index(docs)
    hits = index.search("zebra", 10)
    assert [d for d, _ in hits] == ["memory/a.md", "memory/b.md"]
    flat = qmd_index(docs, title_weight=1.0)
    assert flat.search("zebra", 10)[0][1] < hits[0][1]  # weight 4 scores the title hit higher


def test_the_filepath_column_is_searched_and_empty_files_skipped():
    index = qmd_index([("memory/tello-notes.md", "nothing relevant\n"), ("memory/blank.md", " \n\t\n")],
                      collection="ws")
    assert [d for d, _ in index.search("tello", 10)] == ["memory/tello-notes.md"]
    assert index.ids == ["memory/tello-notes.md"]


def test_whole_documents_one_row_each_and_chunk_rows_when_asked():
    text = "# 普通人逆袭\n" + "填充内容。\n" * 200 + "普通人逆袭的故事\n"
    docs = qmd_index([("memory/a.md", text)])
    assert docs.search("普通人逆袭", 5) and all(":" not in d for d, _ in docs.search("普通人逆袭", 5))
    chunks = LEXICAL_BACKENDS.create("qmd-documents", tokenizer=TOKENIZERS.create("qmd"), unit="chunk")
    chunks.add([Chunk("memory/a.md", 1, 1, "# 普通人逆袭"), Chunk("memory/a.md", 2, 3, "填充内容。")])
    assert [c for c, _ in chunks.search("普通人逆袭", 5)] == ["memory/a.md:000001-000001"]


def test_like_planning_tokenizers_are_refused():
    with pytest.raises(ValueError, match="LIKE"):
        LEXICAL_BACKENDS.create("qmd-documents", tokenizer=TOKENIZERS.create("trigram"))


# --- document-level fusion, hand-worked ---------------------------------------------------------------

def test_reciprocal_rank_fusion_hand_worked():
    # list 0 (w 2): a b c ; list 1 (w 2): c d
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "d"]], [2.0, 2.0])
    scores = {f.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(2 / 61 + 0.05)
    assert scores["b"] == pytest.approx(2 / 62 + 0.02)
    assert scores["c"] == pytest.approx(2 / 63 + 2 / 61 + 0.05)  # first in list 1
    assert scores["d"] == pytest.approx(2 / 62 + 0.02)
    # b and d tie exactly: QMD's stable sort keeps the first met (b, list 0) first
    assert [f.id for f in fused] == ["c", "a", "b", "d"]
    assert [f.id for f in reciprocal_rank_fusion([["a", "d", "c"], ["c", "b"]], [2.0, 2.0], ties="id")] == \
        ["c", "a", "b", "d"]
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], [1.0, 2.0])


def test_best_chunk_per_file_and_the_vector_window():
    hits = [("m/a.md:000001-000004", 0.9), ("m/a.md:000005-000009", 0.95), ("m/b.md:000001-000004", 0.92)]
    assert best_chunk_per_document(hits) == [("m/a.md", "m/a.md:000005-000009", 0.95),
                                              ("m/b.md", "m/b.md:000001-000004", 0.92)]
    assert document_of("m/a:b.md:000001-000004~2") == "m/a:b.md" and document_of("m/a.md") == "m/a.md"
    fusion = FUSIONS.create("qmd-documents", list_limit=1, vector_overfetch=2)
    # only the first 2 chunks are read: b's chunk is third, so only a's file makes the one-file list
    vector = [("m/a.md:000001-000004", 0.95), ("m/a.md:000005-000009", 0.94), ("m/b.md:000001-000004", 0.93)]
    hits = fusion(Legs(vector=vector, lexical=[("m/c.md", 3.0), ("m/d.md", 2.0)]))
    assert [h.id for h in hits] == ["m/c.md", "m/a.md"]  # tie (2/61 + 0.05 each): lexical list met first
    assert hits[0].keyword_hit and not hits[1].keyword_hit
    assert hits[0].text_score == pytest.approx(2 / 61) and hits[1].vector_score == pytest.approx(2 / 61)


def test_more_than_two_lists_with_their_weights():
    fusion = FUSIONS.create("qmd-documents")
    legs = Legs(vector=[("m/a.md:000001-000002", 0.9)], lexical=[("m/b.md", 5.0)],
                extra=[RankedList([("m/a.md", 4.0), ("m/b.md", 3.0)], 1.0, "lexical", "expansion"),
                       RankedList([("m/c.md:000001-000002", 0.8)], 1.0, "vector", "hyde")])
    scores = {h.id: h.score for h in fusion(legs)}
    assert scores["m/a.md"] == pytest.approx(2 / 61 + 1 / 61 + 0.05)
    assert scores["m/b.md"] == pytest.approx(2 / 61 + 1 / 62 + 0.05)
    assert scores["m/c.md"] == pytest.approx(1 / 61 + 0.05)
    lists = fusion.document_lists(legs)
    assert [(rl.leg, rl.weight) for rl in lists] == [("lexical", 2.0), ("lexical", 1.0), ("vector", 2.0),
                                                       ("vector", 1.0)]


# --- the pipeline judges a file as the union of its records ------------------------------------------

def test_a_document_level_run_returns_files_judged_by_their_records():
    from harness.config import load_experiment
    from harness.inputs.layout import project_path
    from harness.pipeline import build_stages
    from harness.stages.embedders import HashEmbedder
    from harness.studies.experiment import run_experiment

    config = load_experiment(project_path("experiments/round1.toml"), preset="qmd")
    result = run_experiment(config, stages=build_stages(config, embedder=HashEmbedder(), progress=False))
    runs = result.runs
    combined = "memory/ai-knowledge-base.md"
    returned = {unit for scores in runs.chunk_run.values() for unit in scores}
    assert returned and all(document_of(u) == u for u in returned)  # files, never chunk ids
    assert len(runs.chunk_documents[combined]) == 16  # the combined file holds 16 records
    t4 = result.hits["T4"]
    assert t4[0]["start_line"] == 1 and t4[0]["docs"] == sorted(runs.chunk_documents[t4[0]["chunk"]])
    # MaxP: every record of a returned file scores the file's score
    first = max(runs.chunk_run["T4"], key=runs.chunk_run["T4"].get)
    assert all(runs.document_run["T4"][d] == runs.chunk_run["T4"][first] for d in runs.chunk_documents[first])
    assert {h["score"] for h in t4} <= {1 / r for r in range(1, 7)}  # no reranker: 1/rank
