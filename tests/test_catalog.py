"""Stages declared once: `harness stages` lists every implementation with typed parameters and their
documentation, experiment files validate against `harness schema`, and errors name file, table and key."""
import json
import tomllib

import jsonschema
import pytest
from typer.testing import CliRunner

from harness.catalog import describe, experiment_schema, registries
from harness.cli import app
from harness.config import load_experiment
from harness.errors import ConfigError
from tests.conftest import ROOT

runner = CliRunner()


def test_every_registered_stage_is_described():
    items = describe()
    tables = {i.table for i in items}
    assert tables == set(registries())
    for item in items:
        assert item.doc, f"[{item.table}] {item.name} has no documentation"
        for p in item.parameters:
            assert p.type and p.type != "Any", f"[{item.table}] {item.name}.{p.name} is untyped"


def test_stages_command_prints_types_defaults_and_docs():
    result = runner.invoke(app, ["stages", "fusion"])
    assert result.exit_code == 0, result.output
    assert "[fusion] weighted" in result.output
    assert "bm25_to_score: 'current' | 'legacy' = default 'current'" in result.output
    assert runner.invoke(app, ["stages", "nope"]).exit_code == 2


@pytest.fixture(scope="module")
def validator():
    """What `harness schema` writes for experiment and preset files: the registries' schema with the
    `kind` key every experiment file of experiments/ declares."""
    from harness.studies.spec import study_schema

    schema = study_schema("experiment")
    assert {k: v for k, v in schema["properties"].items() if k != "kind"} == experiment_schema()["properties"]
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "experiments").rglob("*.toml")
                                        if p.parent.name == "presets" or p.stem.startswith(("round", "cmrc"))))
def test_shipped_experiments_and_presets_validate_against_the_schema(validator, path):
    doc = tomllib.loads((ROOT / path).read_text(encoding="utf-8"))
    errors = sorted(validator.iter_errors(doc), key=str)
    assert not errors, f"{path}: {errors[0].message}"


def test_the_schema_catches_what_the_loader_refuses(validator):
    bad = {"fusion": {"name": "weighted", "vector_weight": "x"}, "search": {"max_results": 0}}
    assert len(list(validator.iter_errors(bad))) >= 2
    with pytest.raises(ConfigError, match=r"\[search\] max_results: Input should be greater than or equal to 1"):
        load_experiment(ROOT / "experiments/round3.toml", search={"max_results": 0})


def test_schema_command_writes_json(tmp_path):
    result = runner.invoke(app, ["schema", "--out", str(tmp_path / "s.json")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["title"] == "harness experiment file"


def test_an_unexpected_exception_is_reported_as_a_bug_with_its_traceback_under_debug(monkeypatch):
    import harness.config as config  # `harness presets` imports list_presets from it when it runs

    def broken(*_args, **_kwargs):
        raise TypeError("boom")

    monkeypatch.setattr(config, "list_presets", broken)
    result = runner.invoke(app, ["presets"])
    assert result.exit_code == 3 and "internal error: TypeError: boom" in result.output
    assert "--debug" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["--debug", "presets"])
    assert result.exit_code != 0 and isinstance(result.exception, TypeError)


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("harness ")
