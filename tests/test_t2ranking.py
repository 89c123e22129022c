"""The T2Ranking sample loader: passages deduplicated with stable ids, pos relevant, neg judged
non-relevant, conflicting labels as documented."""
from __future__ import annotations

import json

import pytest

from harness.config import resolve
from harness.errors import ConfigError, DataError
from harness.inputs.layout import DATASETS
from harness.inputs.t2ranking import passage_id, read_t2ranking
from harness.studies.experiment import run_experiment

ROWS = [
    {"query": "鹦鹉吃什么", "pos": ["鹦鹉吃种子和水果。", "鹦鹉也吃蔬菜。"], "neg": ["硬盘坏了怎么办。", "鹦鹉也吃蔬菜。"]},
    {"query": "硬盘修复", "pos": ["硬盘坏了怎么办。"], "neg": ["鹦鹉吃种子和水果。"]},
    {"query": "没有正例", "pos": [], "neg": ["营业执照。"]},
]


@pytest.fixture()
def sample(tmp_path):
    path = tmp_path / "sample.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")
    return path


def test_passages_are_deduplicated_with_ids_from_their_text(sample):
    docs, queries, facts = read_t2ranking(sample)
    texts = ["鹦鹉吃种子和水果。", "鹦鹉也吃蔬菜。", "硬盘坏了怎么办。", "营业执照。"]
    assert [d.text for d in docs] == texts and [d.id for d in docs] == [passage_id(t) for t in texts]
    assert passage_id("鹦鹉也吃蔬菜。").startswith("p") and len(passage_id("x")) == 13
    q1, q2 = queries
    assert (q1.id, q1.relevant) == ("q001", {passage_id(texts[0]): 1, passage_id(texts[1]): 1})
    # judged non-relevant passages are kept, not dropped; the conflicting one counts as relevant
    assert q1.extra["nonrelevant"] == [passage_id(texts[2])]
    assert q2.relevant == {passage_id(texts[2]): 1} and q2.extra["nonrelevant"] == [passage_id(texts[0])]
    assert facts["conflicting_labels"] == {"treated_as": "relevant", "pairs": [["q001", passage_id(texts[1])]]}
    assert facts["skipped"] == {"no_relevant_passage": ["q003"]}


def test_conflicting_labels_can_count_as_nonrelevant(sample):
    _, queries, _ = read_t2ranking(sample, "nonrelevant")
    assert queries[0].relevant == {passage_id("鹦鹉吃种子和水果。"): 1}
    assert passage_id("鹦鹉也吃蔬菜。") in queries[0].extra["nonrelevant"]
    with pytest.raises(ConfigError, match="conflicting_labels"):
        DATASETS.create("t2ranking", path=str(sample), conflicting_labels="drop")


def test_bad_lines_name_file_line_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"query": "q", "pos": ["a"], "neg": ["b"]}\n{"query": "q2", "pos": "a", "neg": []}\n',
                    encoding="utf-8")
    with pytest.raises(DataError, match="list of passage texts") as err:
        read_t2ranking(path)
    assert (err.value.line, err.value.field) == (2, "pos")


def test_renders_one_file_per_passage_and_runs(sample, tmp_cache):
    config = resolve({"preset": "openclaw-2026.02", "postprocess": [], "embedder": {"name": "hash"},
                      "tokenizer": {"name": "cjk-bigram", "join": "or"},
                      "dataset": {"name": "t2ranking", "path": str(sample)}, "search": {"max_results": 4}})
    result = run_experiment(config, cache=tmp_cache, progress=False)
    assert result.summary["index"]["files"] == 4 and result.summary["suite"]["queries"] == 2
    assert result.dataset["passages"] == 4 and result.dataset["nonrelevant_labels"] == 2
    assert result.dataset["sha256_check"] == "none"


def test_the_real_sample():
    dataset = DATASETS.create("t2ranking")
    described = dataset.describe()
    assert described["sha256_check"] == "published"
    assert (described["queries"], described["passages"]) == (100, 1987)
    assert (described["relevant_labels"], described["nonrelevant_labels"]) == (505, 1494)
    assert len(described["conflicting_labels"]["pairs"]) == 6
    assert any("contamination" in note for note in described["notes"])
