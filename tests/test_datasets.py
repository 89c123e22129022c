"""BEIR-format loader and SQuAD-style converter (issue 4, item 3)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import resolve
from harness.errors import ConfigError, DataError
from harness.inputs.layout import DATASETS
from harness.inputs.public import (
    BeirDataset,
    Document,
    SquadDataset,
    document_path,
    load_beir_corpus,
    load_beir_queries,
    load_qrels,
    read_squad,
)
from harness.studies.experiment import run_experiment

from .conftest import DATA

CMRC_DEV = DATA / "cmrc2018" / "cmrc2018_dev.json"


def write_jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def write_beir(root: Path, *, cmteb: bool = False, qrels: str | None = None) -> Path:
    key = "id" if cmteb else "_id"
    write_jsonl(root / "corpus.jsonl", [
        {key: "d1", "title": "检索", "text": "混合检索配置说明"},
        {key: "d2", "text": "海外银行开户指南\n第二行"},
        {key: "d/3", "title": "", "text": "VPS内存OOM"},
    ])
    write_jsonl(root / "queries.jsonl", [
        {key: "q1", "text": "检索配置"}, {key: "q2", "text": "开户"}, {key: "q3", "text": "没有判定"},
    ])
    header = "qid\tpid\tscore" if cmteb else "query-id\tcorpus-id\tscore"
    rows = qrels if qrels is not None else "q1\td1\t1\nq2\td2\t2\nq2\td/3\t0\n"
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    (root / "qrels" / "test.tsv").write_text(f"{header}\n{rows}", encoding="utf-8")
    return root


# --- BEIR ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("cmteb", [False, True])
def test_beir_folder_loads_with_beir_or_cmteb_names(tmp_path, cmteb):
    dataset = BeirDataset(write_beir(tmp_path / "set", cmteb=cmteb))
    assert [d.id for d in dataset.documents()] == ["d1", "d2", "d/3"]
    queries = dataset.queries()
    # q3 has no judgement and is dropped; grade 0 is not relevant
    assert [(q.id, q.text, q.relevant) for q in queries] == [("q1", "检索配置", {"d1": 1}), ("q2", "开户", {"d2": 2})]
    assert all(q.in_suite(None) for q in queries)


def test_beir_render_one_file_per_document_with_provenance(tmp_path):
    layout = BeirDataset(write_beir(tmp_path / "set")).render(tmp_path / "out")
    assert layout.files == ["memory/d%2F3.md", "memory/d1.md", "memory/d2.md"]
    assert layout.read("memory/d1.md") == "# 检索\n\n混合检索配置说明\n"
    assert layout.read("memory/d2.md") == "海外银行开户指南\n第二行\n"  # no title, no heading
    spans = {s.doc_id: (s.path, s.start, s.end) for s in layout.spans}
    assert spans == {"d1": ("memory/d1.md", 1, 3), "d2": ("memory/d2.md", 1, 2), "d/3": ("memory/d%2F3.md", 1, 1)}
    assert layout.docs_overlapping("memory/d1.md", 3, 3) == {"d1"}
    assert json.loads((tmp_path / "out" / "provenance.json").read_text(encoding="utf-8"))["description"]["documents"] == 3


def test_render_without_headings(tmp_path):
    layout = BeirDataset(write_beir(tmp_path / "set")).render(title_heading=False)
    try:
        assert layout.read("memory/d1.md") == "混合检索配置说明\n"
    finally:
        layout.cleanup()


def test_document_paths_are_safe_and_distinct():
    assert document_path("DEV_0") == "memory/DEV_0.md"
    assert document_path("../etc/passwd") == "memory/..%2Fetc%2Fpasswd.md"
    assert document_path("..") == "memory/%2E%2E.md"
    assert document_path("a/b") != document_path("a%2Fb")


def test_limit_queries_keeps_the_first_in_file_order(tmp_path):
    assert [q.id for q in BeirDataset(write_beir(tmp_path / "set"), limit_queries=1).queries()] == ["q1"]
    with pytest.raises(ValueError, match="limit_queries"):
        BeirDataset(tmp_path / "set", limit_queries=0)


@pytest.mark.parametrize("rows, line, field, message", [
    ('{"_id": "d1", "text": "x"}\n{"_id": "d2", "text": \n', 2, None, "invalid JSON"),
    ('{"_id": "d1"}\n', 1, "text", "missing"),
    ('{"text": "x"}\n', 1, "_id", "missing"),
    ('{"_id": ["d1"], "text": "x"}\n', 1, "_id", "must be a string"),
    ('{"_id": "d1", "text": 5}\n', 1, "text", "must be a string"),
    ('{"_id": "d1", "text": "x"}\n\n{"_id": "d1", "text": "y"}\n', 3, "_id", "duplicate document id"),
    ('["d1", "x"]\n', 1, None, "JSON object"),
])
def test_bad_corpus_lines_name_file_line_and_field(tmp_path, rows, line, field, message):
    path = tmp_path / "corpus.jsonl"
    path.write_text(rows, encoding="utf-8")
    with pytest.raises(DataError, match=message) as err:
        load_beir_corpus(path)
    assert (err.value.path, err.value.line, err.value.field) == (str(path), line, field)
    assert str(err.value).startswith(f"{path}:{line}:")


def test_bad_query_lines(tmp_path):
    path = write_jsonl(tmp_path / "queries.jsonl", [{"_id": "q1", "text": "  "}])
    with pytest.raises(DataError, match="empty query") as err:
        load_beir_queries(path)
    assert (err.value.line, err.value.field) == (1, "text")


@pytest.mark.parametrize("content, line, field, message", [
    ("q1\td1\t1\n", 1, None, "header row"),
    ("", 1, None, "header row"),
    ("query-id\tcorpus-id\tscore\nq1\td1\n", 2, None, "3 tab-separated columns"),
    ("query-id\tcorpus-id\tscore\nq1\td1\tyes\n", 2, "score", "integer"),
    ("query-id\tcorpus-id\tscore\nq9\td1\t1\n", 2, "query-id", "unknown query id"),
    ("qid\tpid\tscore\nq1\td1\t1\n\nq1\td9\t1\n", 4, "pid", "unknown document id"),
    ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n", 3, "score", "conflicting"),
])
def test_bad_qrels_name_file_line_and_field(tmp_path, content, line, field, message):
    path = tmp_path / "test.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=message) as err:
        load_qrels(path, {"q1"}, {"d1"})
    assert (err.value.path, err.value.line, err.value.field) == (str(path), line, field)


def test_missing_beir_files(tmp_path):
    with pytest.raises(DataError, match="not a BEIR folder"):
        BeirDataset(tmp_path / "nowhere").queries()  # checked on first use
    root = write_beir(tmp_path / "set")
    (root / "qrels" / "test.tsv").unlink()
    with pytest.raises(DataError, match="missing qrels file"):
        BeirDataset(root).queries()
    with pytest.raises(DataError, match="missing qrels file"):
        BeirDataset(root, split="dev").queries()


def test_beir_is_registered(tmp_path):
    dataset = DATASETS.create("beir", path=str(write_beir(tmp_path / "set")), split="test", limit_queries=5)
    assert isinstance(dataset, BeirDataset) and len(dataset.queries()) == 2


# --- SQuAD --------------------------------------------------------------------------------------

SQUAD = {
    "version": "v1.0",
    "data": [
        {"id": "A0", "title": "检索", "paragraphs": [
            {"id": "P0", "context": "混合检索配置说明。", "qas": [
                {"id": "Q0", "question": "什么是检索配置？", "answers": [{"text": "说明", "answer_start": 6}]},
                {"id": "Q1", "question": "混合检索？", "answers": []}]},
            {"id": "P1", "context": "海外银行开户指南", "qas": [{"id": "Q2", "question": "如何开户？"}]}]},
        {"title": "无编号", "paragraphs": [{"context": "VPS内存OOM", "qas": [{"id": "Q3", "question": "OOM？"}]}]},
    ],
}


def write_squad(path: Path, data: dict | str) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, indent=2),
                    encoding="utf-8")
    return path


def test_squad_paragraphs_become_documents_and_questions_queries(tmp_path):
    data = read_squad(write_squad(tmp_path / "s.json", SQUAD))
    docs, queries = data.documents, data.queries
    assert docs == [Document("P0", "检索", "混合检索配置说明。"), Document("P1", "检索", "海外银行开户指南"),
                    Document("1-0", "无编号", "VPS内存OOM")]  # no paragraph id: article-paragraph index
    assert [(q.id, q.relevant) for q in queries] == [("Q0", {"P0": 1}), ("Q1", {"P0": 1}), ("Q2", {"P1": 1}),
                                                     ("Q3", {"1-0": 1})]
    assert queries[0].extra["answers"] == ["说明"]


def test_squad_dataset_renders_and_limits(tmp_path):
    dataset = SquadDataset(write_squad(tmp_path / "s.json", SQUAD), limit_queries=2)
    assert [q.id for q in dataset.queries()] == ["Q0", "Q1"]
    layout = dataset.render(tmp_path / "out")
    assert layout.files == ["memory/1-0.md", "memory/P0.md", "memory/P1.md"]
    assert layout.read("memory/P0.md") == "# 检索\n\n混合检索配置说明。\n"
    assert layout.description["dataset"] == "squad" and layout.description["documents"] == 3


def _broken(mutate) -> dict:
    data = json.loads(json.dumps(SQUAD))
    mutate(data)
    return data


@pytest.mark.parametrize("mutate, field, message, key_on_line", [
    (lambda d: d["data"][0]["paragraphs"][1].pop("context"), "data[0].paragraphs[1].context", "missing", "{"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][1].update(question=7), "data[0].paragraphs[0].qas[1].question",
     "must be a string", '"question": 7'),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][1].update(question=" "), "data[0].paragraphs[0].qas[1].question",
     "empty question", '"question": " "'),
    (lambda d: d["data"][1]["paragraphs"][0]["qas"][0].update(id="Q0"), "data[1].paragraphs[0].qas[0].id",
     "duplicate question id", '"id": "Q0"'),
    (lambda d: d["data"][0]["paragraphs"][1].update(id="P0"), "data[0].paragraphs[1].id", "duplicate paragraph id",
     '"id": "P0"'),
    (lambda d: d["data"][1].update(paragraphs="none"), "data[1].paragraphs", "must be a list", '"paragraphs": "none"'),
    (lambda d: d.pop("data"), "data", "missing", "{"),
])
def test_bad_squad_names_file_line_and_field(tmp_path, mutate, field, message, key_on_line):
    path = write_squad(tmp_path / "s.json", _broken(mutate))
    with pytest.raises(DataError, match=message) as err:
        read_squad(path, empty_questions="error")  # the default skips empty questions (next test)
    assert (err.value.path, err.value.field) == (str(path), field)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert err.value.line is not None and key_on_line in lines[err.value.line - 1]
    if message == "missing" and field != "data":  # a missing key: the line of its object's opening brace
        assert '"id": "P1"' in lines[err.value.line]


def test_empty_questions_are_skipped_counted_and_said(tmp_path):
    """CMRC 2018 trial has two empty questions: the file is read, they are skipped and listed."""
    data = _broken(lambda d: (d["data"][0]["paragraphs"][0]["qas"][1].update(question=" "),
                              d["data"][1]["paragraphs"][0]["qas"][0].update(question="")))
    path = write_squad(tmp_path / "s.json", data)
    assert [q.id for q in read_squad(path).queries] == ["Q0", "Q2"]
    dataset = DATASETS.create("squad", path=str(path), limit_queries=2)
    assert [q.id for q in dataset.queries()] == ["Q0", "Q2"]  # the limit counts kept questions
    layout = dataset.render(tmp_path / "out")
    assert layout.description["skipped"] == {"empty_question": ["Q1", "Q3"]}
    assert layout.description["questions"] == 4
    assert layout.description["notes"] == ["skipped 2 item(s), empty question: Q1, Q3"]
    assert layout.description["sha256_check"] == "none"  # not a published file name: nothing to check
    with pytest.raises(ConfigError, match="empty_questions"):
        DATASETS.create("squad", path=str(path), empty_questions="drop")


def test_real_cmrc2018_trial_loads_with_its_two_empty_questions_skipped():
    dataset = DATASETS.create("squad", path="datasets/cmrc2018/cmrc2018_trial.json")
    queries = dataset.queries()
    assert len(queries) == 1000 and len(dataset.documents()) == 256
    described = dataset.describe()
    assert described["skipped"] == {"empty_question": ["TRIAL_776_QUERY_4", "TRIAL_20_QUERY_0"]}
    assert described["questions"] == 1002 and described["sha256_check"] == "published"
    with pytest.raises(DataError, match="empty question") as err:
        read_squad(dataset.path, empty_questions="error")
    assert err.value.field.endswith(".question")


def test_bad_squad_json_and_files(tmp_path):
    with pytest.raises(DataError, match="invalid JSON") as err:
        read_squad(write_squad(tmp_path / "bad.json", '{\n  "data": [\n    {"title": "x",}\n  ]\n}\n'))
    assert err.value.line == 3
    with pytest.raises(DataError, match="top level must be a JSON object"):
        read_squad(write_squad(tmp_path / "list.json", "[]"))
    with pytest.raises(DataError, match="missing SQuAD JSON file"):
        read_squad(tmp_path / "absent.json")
    (tmp_path / "gbk.json").write_bytes('{"data": []}  # 中文'.encode("gbk"))
    with pytest.raises(DataError, match="not UTF-8"):
        read_squad(tmp_path / "gbk.json")


def test_squad_through_an_experiment_config(tmp_path, tmp_cache):
    """[dataset] name = "squad" in an experiment runs end to end (hash embedder: a plumbing check only)."""
    path = write_squad(tmp_path / "s.json", SQUAD)
    config = resolve({"preset": "openclaw-2026.08", "dataset": {"name": "squad", "path": str(path), "limit_queries": 3},
                      "chunker": {"name": "file"}, "tokenizer": {"name": "jieba", "join": "or"},
                      "embedder": {"name": "hash"}})
    result = run_experiment(config, cache=tmp_cache, progress=False)
    assert list(result.per_query["query_id"]) == ["Q0", "Q1", "Q2"]
    assert result.summary["index"]["files"] == 3 and result.summary["index"]["mixed_chunks"] == 0
    assert result.summary["suite"]["queries"] == 3


# --- the real CMRC 2018 dev file ----------------------------------------------------------------

def test_real_cmrc2018_dev(tmp_path):
    dataset = DATASETS.create("squad", path="datasets/cmrc2018/cmrc2018_dev.json", limit_queries=500)
    queries = dataset.queries()
    assert len(queries) == 500 and len(read_squad(CMRC_DEV).queries) == 3219
    assert queries[0].id == "DEV_0_QUERY_0" and queries[0].relevant == {"DEV_0": 1}
    docs = dataset.documents()
    assert len(docs) == 848 and len({d.id for d in docs}) == 848
    assert {d for q in queries for d in q.relevant} <= {d.id for d in docs}
    layout = dataset.render(tmp_path / "cmrc")
    assert len(layout.files) == 848 and len(layout.spans) == 848
    assert layout.read("memory/DEV_0.md").startswith("# 战国无双3\n\n《战国无双3》")
