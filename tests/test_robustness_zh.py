"""The Chinese robustness suite (issue 40): its data, the folding and expansion tokenizers on a real FTS5
table, and the leg metrics."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.db import connect
from harness.errors import ConfigError, DataError, HarnessError
from harness.evaluation.knowledge_update import leg_columns
from harness.inputs.layout import DATASETS
from harness.inputs.robustness_zh import FORMS, fullwidth, generated_files, load_forms
from harness.stages.chunkers import Chunk
from harness.stages.lexical import LEXICAL_BACKENDS
from harness.stages.tokenizers import TOKENIZERS

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "datasets" / "robustness-zh"

DOCS = {"a": "频道里的消息同步到飞书", "b": "VPS 内存 OOM，网关被杀掉", "c": "海外银行开户指南",
        "d": "記憶體不足時伺服器會當機"}
CHUNKS = [Chunk(f"{k}.md", 1, 1, text) for k, text in DOCS.items()]


def index(table: dict) -> object:
    name, params = table["name"], {k: v for k, v in table.items() if k != "name"}
    lexical = LEXICAL_BACKENDS.create("fts5", {}, tokenizer=TOKENIZERS.create(name, params), conn=connect())
    lexical.add(CHUNKS)
    return lexical


def found(lexical, query: str) -> set[str]:
    return {cid.split(".")[0].split(":")[0][0] for cid, _ in lexical.search(query, 10)}


def test_committed_files_are_what_the_generator_writes():
    for name, text in generated_files(SUITE, ROOT / "datasets" / "king78").items():
        assert (SUITE / name).read_text(encoding="utf-8") == text, f"{name}: rerun python -m harness.inputs.robustness_zh"


def test_every_form_keeps_the_question_id_and_its_relevant_records():
    rows = load_forms(SUITE / "queries.jsonl")
    by_form = {form: DATASETS.create("king78-forms", {"form": form, "suite": str(SUITE)}).queries() for form in FORMS}
    clean = {q.id: q for q in by_form["clean"]}
    assert len(clean) == len(rows)
    for form, queries in by_form.items():
        for q in queries:
            assert q.relevant == clean[q.id].relevant and q.extra["form"] == form
    assert {q.id for q in by_form["fullwidth"]} == {r["id"] for r in rows if fullwidth(r["clean"])}
    assert all(q.text != clean[q.id].text for q in by_form["english"])


def test_traditional_memory_keeps_ids_and_converts_text():
    trad = [json.loads(line) for line in (SUITE / "traditional" / "records.jsonl").read_text("utf-8").splitlines()]
    simp = [json.loads(line) for line in (ROOT / "datasets/king78/records.jsonl").read_text("utf-8").splitlines()]
    assert [r["record_id"] for r in trad] == [r["record_id"] for r in simp]
    assert sum(a["summary"] != b["summary"] for a, b in zip(trad, simp)) > len(simp) // 2
    layout = DATASETS.create("king78-forms", {"memory": "traditional", "suite": str(SUITE)}).render(
        daily_logs=False, combined=False, records="all", keywords=True, tags=True)
    try:
        assert len(layout.files) == len(simp)
    finally:
        layout.cleanup()


def test_fullwidth_widens_ascii_only():
    assert fullwidth("VPS内存OOM") == "ＶＰＳ内存ＯＯＭ"
    assert fullwidth("Tello eSIM") == "Ｔｅｌｌｏ\u3000ｅＳＩＭ"
    assert fullwidth("普通人逆袭") is None


def test_bad_suite_line_names_file_line_and_field(tmp_path):
    (tmp_path / "queries.jsonl").write_text('{"id": "x", "clean": "a", "traditional": "b", "english": "c", '
                                            '"colloquial": "d", "relevant": []}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"queries.jsonl.*1.*relevant"):
        load_forms(tmp_path / "queries.jsonl")


def test_opencc_folding_finds_the_other_script_at_index_and_query_time():
    plain = index({"name": "unicode61", "join": "and"})
    folded = index({"name": "opencc", "base": {"name": "unicode61", "join": "and"}})
    assert found(plain, "頻道裡的消息同步到飛書") == set()  # the whole run is one token, in the other script
    assert found(folded, "頻道裡的消息同步到飛書") == {"a"}
    assert found(folded, "频道里的消息同步到飞书") == {"a"}
    assert found(plain, "記憶體不足時伺服器會當機") == {"d"} and found(folded, "记忆体不足时伺服器会当机") == {"d"}


def test_opencc_tw2sp_folds_phrases_t2s_does_not():
    t2s = TOKENIZERS.create("opencc", {"base": {"name": "unicode61"}})
    tw2sp = TOKENIZERS.create("opencc", {"base": {"name": "unicode61"}, "config": "tw2sp"})
    assert t2s.index_text("記憶體") == "记忆体" and tw2sp.index_text("記憶體") == "内存"


def test_colloquial_expansion_ors_the_technical_terms(tmp_path):
    listing = tmp_path / "list.tsv"
    listing.write_text("# comment\n爆了\tOOM 溢出\n挂了\t被杀\n", encoding="utf-8")
    plain = index({"name": "unicode61", "join": "and"})
    expanded = index({"name": "colloquial-expansion", "base": {"name": "unicode61", "join": "and"}, "file": str(listing)})
    assert found(plain, "小鸡内存爆了") == set()
    assert found(expanded, "小鸡内存爆了") == {"b"}
    assert found(expanded, "海外银行开户指南") == {"c"}  # nothing listed: the base's own plan


def test_colloquial_expansion_bad_list_is_one_line(tmp_path):
    listing = tmp_path / "list.tsv"
    listing.write_text("爆了 OOM\n", encoding="utf-8")
    with pytest.raises(HarnessError, match="list.tsv:1: expected"):
        TOKENIZERS.create("colloquial-expansion", {"base": {"name": "unicode61"}, "file": str(listing)})
    with pytest.raises(ConfigError, match="no expansion list"):
        TOKENIZERS.create("colloquial-expansion", {"base": {"name": "unicode61"}, "file": str(tmp_path / "none.tsv")})
    with pytest.raises(ConfigError, match="base"):
        TOKENIZERS.create("opencc", {"base": {"join": "and"}})


def test_leg_columns():
    docs = {"c1": frozenset({"r1"}), "c2": frozenset({"r2"}), "c3": frozenset({"r1", "r3"})}
    out = leg_columns(["c2", "c3"], [], ["r1", "r3"], docs, [1, 2])
    assert out == {"keyword_zero": 1.0, "keyword_recall@1": 0.0, "vector_recall@1": 0.0,
                   "keyword_recall@2": 0.0, "vector_recall@2": 1.0}
    assert leg_columns([], ["c1"], ["r1"], docs, [1])["keyword_zero"] == 0.0
