"""Study files by kind (harness.studies.spec, the registered kinds of harness.study_kinds): every file of
experiments/ declares its kind, which is the kind the Makefile runs it as; it expands into cells without
running, validates against `harness schema --kind` of its kind, and `harness study FILE` writes what the
kind's own command writes."""
import json
import re
import tomllib

import jsonschema
import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import ConfigError
from harness.studies.plan import plan
from harness.studies.spec import (
    kind_names,
    kind_of,
    kind_of_file,
    studies_reference,
    study_kind,
    study_schema,
)
from tests.conftest import ROOT

runner = CliRunner()
BUILT_IN = ["experiment", "matrix", "benchmark", "abstention", "lossless", "expansion", "language-pairs", "grid",
            "scale"]
COMMANDS = {kind: study_kind(kind).command for kind in BUILT_IN}
EXPERIMENT_FILES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "experiments").glob("*.toml"))


def makefile_kinds() -> dict[str, str]:
    """{file: the kind of the command the Makefile runs it with}: `harness matrix FILE`, `harness run FILE`,
    `harness sweep EXPERIMENT --grid FILE` ..."""
    by_command = {command: kind for kind, command in COMMANDS.items()}
    out = {}
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        for grid in re.findall(r"--grid (experiments/[\w.-]+\.toml)", line):
            out[grid] = "grid"
        match = re.search(r"\$\(HARNESS\) ([\w-]+) (experiments/[\w.-]+\.toml)", line)
        if match and match[1] == "study":  # `harness study FILE`: the kind the file declares
            out[match[2]] = tomllib.loads((ROOT / match[2]).read_text(encoding="utf-8"))["kind"]
        elif match and match[1] in by_command:  # `harness sweep EXPERIMENT`: the sweep's experiment
            out[match[2]] = "experiment" if match[1] == "sweep" else by_command[match[1]]
    return out


def test_every_file_the_makefile_runs_is_read_as_the_kind_of_its_command():
    expected = makefile_kinds()
    assert len(expected) >= 15 and set(expected.values()) == set(BUILT_IN)  # every kind is run by make
    wrong = {path: (kind_of_file(ROOT / path), kind) for path, kind in expected.items()
             if kind_of_file(ROOT / path) != kind}
    assert not wrong


def test_the_built_in_kinds_are_registered_first_in_their_order():
    assert kind_names()[:len(BUILT_IN)] == BUILT_IN


@pytest.mark.parametrize("path", EXPERIMENT_FILES)
def test_study_dry_run_resolves_every_file_to_its_declared_kind_and_cells(path):
    kind = tomllib.loads((ROOT / path).read_text(encoding="utf-8"))["kind"]  # every file declares it
    assert kind_of_file(ROOT / path) == kind
    swept = "experiments/round3.toml" if study_kind(kind).takes_experiment else None  # a grid sweeps one
    args = ["study", path, "--dry-run"] + (["--experiment", swept] if swept else [])
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    planned = plan(ROOT / path, experiment=swept)
    head = result.output.splitlines()[0]
    assert head.startswith(f"{path}: {kind} (harness {COMMANDS[kind]}), {len(planned.cells)} cell")
    assert [line.strip() for line in result.output.splitlines()[1:1 + len(planned.cells)]] == \
        [cell.label for cell in planned.cells]
    assert all(cell.config.experiment_file for cell in planned.cells)
    # a kind that runs no experiment (language-pairs reads what others wrote; scale times synthetic corpora)
    # says what it does instead
    assert planned.cells or planned.notes


def test_matrix_cells_are_the_matrix_configurations():
    from harness.studies.matrix import load_matrix, matrix_cells, matrix_configs

    spec = load_matrix(ROOT / "experiments/tokenizers.toml")
    cells = matrix_cells(spec)
    assert [(c.labels[0], c.labels[1], c.config) for c in cells] == matrix_configs(spec)
    assert cells[0].label == f"{spec.runs[0].label} / {spec.values[0].label}"


def test_benchmark_cells_are_named_as_the_results_folders():
    from harness.studies.benchmark import benchmark_cells, load_benchmark

    cells = benchmark_cells(load_benchmark(ROOT / "experiments/benchmark-locomo.toml"))
    assert len({c.label for c in cells}) == len(cells) == 8
    assert all(c.label == f"{c.labels[1]}-{c.labels[0]}" for c in cells)


@pytest.fixture(scope="module")
def validators():
    out = {}
    for kind in BUILT_IN:
        schema = study_schema(kind)
        jsonschema.Draft202012Validator.check_schema(schema)
        out[kind] = jsonschema.Draft202012Validator(schema)
    return out


@pytest.mark.parametrize("path", EXPERIMENT_FILES)
def test_every_shipped_file_validates_against_the_schema_of_its_kind(validators, path):
    doc = tomllib.loads((ROOT / path).read_text(encoding="utf-8"))
    kind = kind_of(doc, path)
    errors = sorted(validators[kind].iter_errors(doc), key=str)
    assert not errors, f"{path}: {errors[0].message}"


def test_the_schema_of_a_kind_refuses_what_its_loader_refuses(validators, tmp_path):
    from harness.studies.benchmark import load_benchmark
    from harness.studies.matrix import load_matrix

    matrix = {"kind": "matrix", "name": "m", "values": [{"label": "a"}], "runs": [{"label": "r"}], "colour": 1}
    assert len(list(validators["matrix"].iter_errors(matrix))) == 2  # runs[0].experiment, colour
    bad = tmp_path / "m.toml"
    bad.write_text('kind = "matrix"\nname = "m"\ncolour = 1\n[[values]]\nlabel = "a"\n[[runs]]\nlabel = "r"\n',
                   encoding="utf-8")
    with pytest.raises(ConfigError, match=r"m.toml: unknown key\(s\) \['colour'\] for a matrix spec"):
        load_matrix(bad)
    bench = {"kind": "benchmark", "name": "b", "hits": -1,
             "runs": [{"label": "r", "experiment": "e.toml", "presets": []}]}
    assert len(list(validators["benchmark"].iter_errors(bench))) == 2
    bad.write_text('kind = "benchmark"\nname = "b"\nhits = -1\n[[runs]]\nlabel = "r"\nexperiment = "e.toml"\n',
                   encoding="utf-8")
    with pytest.raises(ConfigError, match=r"m.toml hits: Input should be greater than or equal to 0 \(got -1\)"):
        load_benchmark(bad)


@pytest.mark.parametrize("command, text, says", [
    ("matrix", 'name = "m"\n[[values]]\nlabel = "a"\n[[runs]]\nlabel = "r"\n', "runs.0.experiment: Field required"),
    ("matrix", 'name = 3\n', "name: Input should be a valid string"),
    ("benchmark", 'name = "b"\n[[runs]]\nlabel = "r"\nexperiment = "e.toml"\npresets = []\n',
     "runs.0.presets: must be a non-empty list of preset names"),
    ("abstention", 'name = "a"\nweight = 2\n[[runs]]\nlabel = "r"\nexperiment = "e.toml"\n',
     "weight: must be a number in [0, 1] (got 2)"),
    ("expansion", 'name = "x"\n[[variants]]\nlabel = "v"\n[[runs]]\nexperiment = "e.toml"\nmetrics = []\n',
     "runs.0.label: Field required"),
    ("lossless", 'name = "l"\n', "dataset: Field required"),
    ("language-pairs", 'name = "p"\nmetrics = ["recall"]\n[pairing]\na = { path = "x" }\nb = { path = "y" }\n'
     '[[sources]]\nkind = "matrix"\nfile = "m.json"\n', "metrics: metric 'recall' has no cut-off (@k)"),
    ("matrix", 'name = "m"\nkind = "benchmark"\n[[values]]\nlabel = "a"\n[[runs]]\nlabel = "r"\nexperiment = "e"\n',
     "kind: the file says 'benchmark', but `harness matrix` reads a matrix file"),
    ("run", 'kind = "matrix"\npreset = "qmd"\n', "kind: the file says 'matrix', but an experiment file is read"),
    ("matrix", 'name = "m"\n[[values]]\nlabel = "a"\n[[runs]]\nlabel = "r"\nexperiment = "e"\n',
     'no `kind` key; a matrix spec says kind = "matrix"'),
    ("study", 'name = "m"\n[[values]]\nlabel = "a"\n[[runs]]\nlabel = "r"\nexperiment = "e"\n',
     'no `kind` key; a study file says its kind (by its tables it looks like a matrix file: add kind = "matrix")'),
    ("study", 'kind = 3\npreset = "qmd"\n', "kind: 3 is not a kind of study file; one of experiment, matrix, "),
])
def test_a_bad_study_file_is_one_line_naming_the_file_and_the_key(tmp_path, command, text, says):
    """(The file declares the kind of its command unless the case is about the `kind` key.)"""
    spec = tmp_path / "bad.toml"
    kind = {"run": "experiment", "study": None}.get(command, command)
    declared = kind is None or "kind" in tomllib.loads(text) or "no `kind`" in says
    spec.write_text(text if declared else f'kind = "{kind}"\n{text}', encoding="utf-8")
    result = runner.invoke(app, [command, str(spec), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "bad.toml" in lines[0] and says in lines[0], result.output


def test_a_declared_kind_wins_over_the_tables_and_is_accepted_by_the_loaders(tmp_path):
    from harness.config import load_experiment
    from harness.studies.abstention import load_abstention_spec

    spec = tmp_path / "a.toml"  # no weight, no `without`: by its tables a benchmark
    spec.write_text('kind = "abstention"\nname = "a"\n[[runs]]\nlabel = "r"\nexperiment = "experiments/round4.toml"\n',
                    encoding="utf-8")
    assert kind_of_file(spec) == "abstention" and load_abstention_spec(spec).name == "a"
    with pytest.raises(ConfigError, match='looks like a benchmark file: add kind = "benchmark"'):
        kind_of({"name": "a", "runs": [{"label": "r", "experiment": "e"}]})
    experiment = tmp_path / "e.toml"  # round 3 without its `kind` key: an experiment all the same
    experiment.write_text((ROOT / "experiments/round3.toml").read_text(encoding="utf-8")
                          .replace('kind = "experiment"\n', ""), encoding="utf-8")
    assert kind_of_file(experiment) == "experiment"
    assert load_experiment(experiment).as_written() == {**load_experiment(ROOT / "experiments/round3.toml").as_written(),
                                                        "experiment_file": str(experiment)}
    with pytest.raises(ConfigError, match="kind: 'survey' is not a kind of study file"):
        kind_of({"kind": "survey"}, "s.toml")


def test_a_grid_needs_its_experiment_and_options_apply_to_the_kinds_that_take_them():
    result = runner.invoke(app, ["study", "experiments/sweep.toml"])
    assert result.exit_code == 2 and "--experiment experiments/round4.toml" in result.output
    assert len(result.output.strip().splitlines()) == 1
    result = runner.invoke(app, ["study", "experiments/abstention.toml", "--preset", "qmd", "--dry-run"])
    assert result.exit_code == 2 and "--preset" in result.output
    result = runner.invoke(app, ["study", "experiments/benchmark-locomo.toml", "--executor", "ray", "--out", "x"])
    assert result.exit_code == 2 and "--executor" in result.output


def test_schema_command_of_every_kind(tmp_path):
    for kind in BUILT_IN:
        result = runner.invoke(app, ["schema", "--kind", kind, "--out", str(tmp_path / f"{kind}.json")])
        assert result.exit_code == 0, result.output
        schema = json.loads((tmp_path / f"{kind}.json").read_text(encoding="utf-8"))
        assert schema["properties"]["kind"]["const"] == kind
    assert runner.invoke(app, ["schema", "--kind", "survey"]).exit_code == 2


def test_the_models_default_weight_is_the_calibrations():
    from harness.evaluation.abstention import ABSTENTION_WEIGHT
    from harness.studies.spec.models import AbstentionStudy

    assert AbstentionStudy.model_fields["weight"].default == ABSTENTION_WEIGHT


def test_the_studies_reference_lists_every_kind_and_key():
    text = studies_reference()
    for kind in BUILT_IN:
        model = study_kind(kind).spec_model()
        section = text.split(f"## {kind}\n")[1].split("\n## ")[0]
        assert f"harness schema --kind {kind}" in section
        for name in model.model_fields:
            assert f"| `{name}` |" in section, (kind, name)


def test_harness_study_writes_what_the_kinds_command_writes(tmp_path, monkeypatch):
    """A small matrix (round 3, two tokenizers, the hash embedder) by `harness study` and by `harness
    matrix`: the same files with the same figures (harness.reporting.compare ignores timings), and the same
    console output."""
    from harness.reporting.compare import compare_trees

    spec = tmp_path / "tiny.toml"
    spec.write_text('kind = "matrix"\nname = "tiny"\n'
                    '[[values]]\nlabel = "unicode61"\ntokenizer = { name = "unicode61" }\n'
                    '[[values]]\nlabel = "trigram"\ntokenizer = { name = "trigram" }\n'
                    '[[runs]]\nlabel = "r3"\nexperiment = "experiments/round3.toml"\n'
                    'overrides = { embedder = { name = "hash" } }\n', encoding="utf-8")
    # a cache of this test's own, warmed first: both commands then find every vector cached and print the same
    # lines, whatever other tests (another xdist worker) have put in the session's cache meanwhile
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    assert runner.invoke(app, ["matrix", str(spec), "--out", str(tmp_path / "warm")]).exit_code == 0
    by_kind = runner.invoke(app, ["matrix", str(spec), "--out", str(tmp_path / "a")])
    by_study = runner.invoke(app, ["study", str(spec), "--out", str(tmp_path / "b")])
    assert by_kind.exit_code == 0 and by_study.exit_code == 0, by_kind.output + by_study.output
    assert by_study.output.replace(str(tmp_path / "b"), "OUT") == by_kind.output.replace(str(tmp_path / "a"), "OUT")
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "b").iterdir()) and "tiny.json" in files
    assert compare_trees(tmp_path / "a", tmp_path / "b") == []
    doc = json.loads((tmp_path / "b" / "tiny.json").read_text(encoding="utf-8"))
    assert [(c["run"], c["value"]) for c in doc["cells"]] == [("r3", "unicode61"), ("r3", "trigram")]
