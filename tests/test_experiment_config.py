"""The typed experiment (harness.config.Experiment): attributes for every table, the written form a results
file records (as_written, key order included), variants that are validated again (with_overrides), and
no string-key access to the experiment in the pipeline or the studies."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from harness.config import (
    EvaluationSettings,
    Experiment,
    SearchSettings,
    StageTable,
    load_experiment,
    load_toml,
    resolve,
)
from harness.errors import ConfigError
from tests.conftest import ROOT


def experiment_files() -> list[Path]:
    """Every file of experiments/ that is an experiment (load_experiment refuses grids and study specs)."""
    out = []
    for path in sorted((ROOT / "experiments").glob("*.toml")):
        try:
            load_experiment(path)
        except ConfigError:
            continue
        out.append(path)
    return out


def test_a_loaded_experiment_has_typed_attributes():
    experiment = load_experiment(ROOT / "experiments/round4.toml", fusion={"vector_weight": 0.5})
    assert isinstance(experiment.search, SearchSettings) and isinstance(experiment.evaluation, EvaluationSettings)
    assert experiment.name == "round4" and experiment.preset == "openclaw-2026.02"
    assert experiment.evaluation.round == 4 and experiment.evaluation.cutoffs is None
    assert experiment.search.max_results == 6 and experiment.search.candidate_multiplier == 4
    assert isinstance(experiment.fusion, StageTable) and experiment.fusion.name == "weighted"
    assert experiment.fusion.params["vector_weight"] == 0.5 and "name" not in experiment.fusion.params
    assert [p.name for p in experiment.postprocess] == ["min_score"]
    assert experiment.dataset.name == "king78" and experiment.dataset.params == {"path": "datasets/king78"}
    assert experiment.reranker is None and experiment.system is None and experiment.profile is None
    assert resolve({"preset": "openclaw-2026.02"}).dataset is None  # no [dataset]: pipeline.load_dataset reads king78
    assert experiment.experiment_file == str(ROOT / "experiments/round4.toml")
    with pytest.raises(ValueError, match="frozen"):
        experiment.name = "other"


@pytest.mark.parametrize("path", experiment_files(), ids=lambda p: p.name)
def test_the_written_form_round_trips_and_records_what_the_file_says(path):
    experiment = load_experiment(path)
    written = experiment.as_written()
    again = Experiment.from_written(written, str(path)).as_written()
    assert json.dumps(again, default=str) == json.dumps(written, default=str)  # key order included
    for table, value in load_toml(path).items():  # what the file wrote is recorded as it wrote it
        if isinstance(value, dict) and table not in ("dataset",):  # a workspace's paths are made absolute
            assert {k: written[table][k] for k in value} == value, table
    for table in ("chunker", "tokenizer", "lexical", "embedder", "vector", "fusion"):
        stage = getattr(experiment, table)
        assert {"name": stage.name, **stage.params} == written[table] and stage.as_written() == written[table]
    assert [p.as_written() for p in experiment.postprocess] == written["postprocess"]
    assert experiment.search.max_results == written["search"]["max_results"]


def test_the_written_form_is_a_copy():
    experiment = load_experiment(ROOT / "experiments/round3.toml")
    written = experiment.as_written()
    written["fusion"]["vector_weight"] = 0.1
    written["postprocess"].clear()
    assert experiment.as_written()["fusion"]["vector_weight"] != 0.1 and experiment.as_written()["postprocess"]


def test_a_stage_table_keeps_the_order_it_was_written_in():
    experiment = load_experiment(ROOT / "experiments/round4.toml", embedder={"dim": 64, "name": "hash"})
    assert list(experiment.embedder.as_written()) == ["dim", "name"]
    assert list(experiment.as_written()["embedder"]) == ["dim", "name"]
    assert experiment.embedder.name == "hash" and experiment.embedder.params == {"dim": 64}


def test_with_overrides_merges_as_a_preset_is_merged_and_leaves_the_original():
    base = load_experiment(ROOT / "experiments/round4.toml")
    variant = base.with_overrides({"name": "variant", "search": {"max_results": 8}, "embedder": {"name": "hash"},
                                   "postprocess": []})
    assert variant.name == "variant" and variant.search.max_results == 8
    assert variant.search.candidate_multiplier == base.search.candidate_multiplier  # merged key by key
    assert variant.embedder.params == {} and variant.postprocess == ()  # another stage, a list: replaced
    assert base.name == "round4" and base.search.max_results == 6 and base.embedder.name != "hash"
    assert list(variant.as_written()) == list(base.as_written())  # a replaced value keeps its place


@pytest.mark.parametrize("overrides, message", [
    ({"search": {"max_results": 0}}, r"round4.toml \[search\] max_results"),
    ({"evaluation": {"cutof": [3]}}, r"\[evaluation\].*cutof"),
    ({"bogus": {}}, r"unknown key\(s\) \['bogus'\]"),
    ({"reranker": {"model": "x"}}, r"\[reranker\] needs a name"),
    ({"fusion": {"name": ""}}, r"\[fusion\] name: must not be empty"),
    ({"profile": {"name": "mainframe"}}, r"\[profile\] name"),
])
def test_with_overrides_validates_again_and_names_the_key(overrides, message):
    base = load_experiment(ROOT / "experiments/round4.toml")
    with pytest.raises(ConfigError, match=message):
        base.with_overrides(overrides)


# --- no string-key access to the experiment -------------------------------------------------------------

EXPERIMENT_NAMES = {"config", "cfg", "experiment", "exp"}
# report writers read documents already written (their `config` is the recorded dict); they move to reporting/
def _experiment_key_access(tree: ast.AST) -> list[tuple[int, str]]:
    """Subscripts and .get( calls on a name that holds the experiment, or on `<x>.config` (a Stages' or a
    cell's; a run result's `config` is the recorded dict, a document)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            target = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            target = node.func.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in EXPERIMENT_NAMES:
            out.append((node.lineno, ast.unparse(node)))
        elif isinstance(target, ast.Attribute) and target.attr == "config" and not (
                isinstance(target.value, ast.Name) and "result" in target.value.id):
            out.append((node.lineno, ast.unparse(node)))
    return out


def test_the_check_finds_string_key_access():
    found = _experiment_key_access(ast.parse("config['fusion']\ncfg.get('search', {})\nstages.config['lexical']\n"
                                             "config.fusion.name\nresult.config['preset']\ndoc['config']\n"))
    assert [line for line, _ in found] == [1, 2, 3]


def test_the_pipeline_and_the_studies_read_the_experiment_by_attribute():
    package = ROOT / "harness"
    files = [package / "pipeline.py", *sorted((package / "studies").rglob("*.py"))]  # the writers are in reporting/
    offenders = [f"{path.relative_to(package)}:{line}: {text}" for path in files
                 for line, text in _experiment_key_access(ast.parse(path.read_text(encoding="utf-8")))]
    assert not offenders, "string-key access to the experiment (use its attributes):\n" + "\n".join(offenders)
