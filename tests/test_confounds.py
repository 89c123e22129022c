"""The confound guard (issue 40): diff and gate refuse runs that differ in embedder, result count, candidate
pool or corpus unless told that is the point; a matrix flags such arms."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.evaluation.confounds import allowed_confounds, config_confounds
from harness.gate.run import run_gate
from harness.studies.query_diff import diff_files

ROOT = Path(__file__).resolve().parents[1]
ROUND4 = ROOT / "reports" / "round4" / "results.json"


def variant(tmp_path: Path, name: str, change) -> Path:
    doc = json.loads(ROUND4.read_text(encoding="utf-8"))
    change(doc["config"])
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_config_confounds_names_each_difference():
    base = {"embedder": {"name": "e5-small-q4"}, "search": {"max_results": 6, "candidate_multiplier": 4},
            "dataset": {"name": "king78"}, "layout": {"records": "all"}, "fusion": {"name": "weighted"}}
    assert config_confounds(base, json.loads(json.dumps(base))) == {}
    other = {**base, "fusion": {"name": "rrf"}}
    assert config_confounds(base, other) == {}  # what a comparison is about is not a confound
    now = {**base, "embedder": {"name": "use-multilingual-v3"}, "search": {"max_results": 10, "candidate_multiplier": 4},
           "layout": {"records": 16}}
    assert set(config_confounds(base, now)) == {"embedder", "result-count", "candidate-pool", "corpus"}
    pool = {**base, "search": {"max_results": 6, "candidate_multiplier": 4, "candidates": 200}}
    assert set(config_confounds(base, pool)) == {"candidate-pool"}
    with pytest.raises(ConfigError, match="not a confound"):
        allowed_confounds(["embeder"])
    assert allowed_confounds(["all"]) == {"embedder", "result-count", "candidate-pool", "corpus"}


def test_gate_refuses_another_embedder_unless_allowed(tmp_path):
    same = variant(tmp_path, "same.json", lambda c: None)
    assert run_gate(same, ROUND4).confounds == []
    other = variant(tmp_path, "other.json", lambda c: c.update(embedder={"name": "use-multilingual-v3"}))
    with pytest.raises(ConfigError, match=r"differ in embedder .*--allow-confound embedder"):
        run_gate(other, ROUND4)
    result = run_gate(other, ROUND4, allow_confounds=["embedder"])
    assert any("embedder" in line for line in result.confounds) and "NOTE" in result.text()


def test_diff_refuses_another_result_count_or_corpus_unless_allowed(tmp_path):
    more = variant(tmp_path, "more.json", lambda c: c["search"].update(max_results=10))
    with pytest.raises(ConfigError, match=r"result-count 6 vs 10.*candidate-pool 24 vs 40"):
        diff_files(ROUND4, more)
    assert any("result-count" in n for n in diff_files(ROUND4, more, ["result-count", "candidate-pool"]).notes)
    fewer = variant(tmp_path, "fewer.json", lambda c: c["layout"].update(records=16))
    with pytest.raises(ConfigError, match="corpus"):
        diff_files(ROUND4, fewer, ["embedder"])


def test_a_matrix_flags_values_that_differ_in_more_than_their_stage_unless_declared():
    from harness.studies.matrix import matrix_confounds

    config = {"embedder": {"name": "e5-small-q4"}, "search": {"max_results": 6}, "tokenizer": {"name": "unicode61"}}
    cells = [{"run": "r", "value": "a", "config": config},
             {"run": "r", "value": "b", "config": {**config, "tokenizer": {"name": "jieba"}}},
             {"run": "r", "value": "c", "config": {**config, "embedder": {"name": "use-multilingual-v3"}}}]
    from harness.studies.spec.models import MatrixStudy

    spec = MatrixStudy(kind="matrix", name="m", values=[{"label": "a"}, {"label": "b"}, {"label": "c"}], runs=[])
    (flag,) = matrix_confounds(spec, cells)
    assert flag["value"] == "c" and set(flag["confounds"]) == {"embedder"}
    assert matrix_confounds(spec.model_copy(update={"intended_confounds": ["embedder"]}), cells) == []
