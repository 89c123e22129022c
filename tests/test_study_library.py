"""harness.study: one library function per study kind, which both the kind's command and `harness study FILE`
call, and whose returned lines are what the command prints."""
from pathlib import Path

import pytest
from typer.testing import CliRunner

import harness.study as study
from harness.cli import app
from harness.studies.spec import kind_names, kind_of_file, study_kind
from harness.study import StudyRun
from tests.conftest import ROOT

runner = CliRunner()

# kind -> (the library function, a shipped file of the kind, the kind's own command on that file)
BY_KIND = {
    "experiment": ("run_experiment_file", "experiments/round3.toml", ["run", "experiments/round3.toml"]),
    "grid": ("run_sweep_file", "experiments/sweep.toml",
             ["sweep", "experiments/round3.toml", "--grid", "experiments/sweep.toml"]),
    "matrix": ("run_matrix_file", "experiments/tokenizers.toml", ["matrix", "experiments/tokenizers.toml"]),
    "benchmark": ("run_benchmark_file", "experiments/benchmark-locomo.toml",
                  ["benchmark", "experiments/benchmark-locomo.toml"]),
    "abstention": ("run_abstention_file", "experiments/abstention.toml", ["abstention", "experiments/abstention.toml"]),
    "lossless": ("run_lossless_file", "experiments/lossless-locomo.toml",
                 ["lossless", "experiments/lossless-locomo.toml"]),
    "expansion": ("run_expansion_file", "experiments/expansion.toml", ["expansion", "experiments/expansion.toml"]),
    "language-pairs": ("run_language_pairs_file", "experiments/paired-locomo-zh.toml",
                       ["language-pairs", "experiments/paired-locomo-zh.toml"]),
    "scale": ("run_scale_file", "experiments/scale.toml", ["study", "experiments/scale.toml"]),  # no own command
}


def recording(monkeypatch, name: str, kind: str) -> list:
    """Replace harness.study.<name> by a stand-in that records its call and returns one line."""
    calls = []

    def stand_in(*args, **kwargs):
        calls.append((args, kwargs))
        return StudyRun(kind, (), (f"stand-in for {name}",))

    monkeypatch.setattr(study, name, stand_in)
    return calls


def test_every_kind_has_a_case():
    assert set(BY_KIND) == set(kind_names())
    assert all(kind_of_file(ROOT / path) == kind for kind, (_, path, _) in BY_KIND.items())


@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_the_command_and_harness_study_call_the_same_function(monkeypatch, tmp_path, kind):
    name, path, command = BY_KIND[kind]
    calls = recording(monkeypatch, name, kind)
    out = ["--out", str(tmp_path / "out")]
    by_command = runner.invoke(app, command + out)
    by_study = runner.invoke(app, ["study", path] + out
                             + (["--experiment", "experiments/round3.toml"] if study_kind(kind).takes_experiment
                                else []))
    assert by_command.exit_code == 0 and by_study.exit_code == 0, by_command.output + by_study.output
    assert by_command.output == by_study.output == f"stand-in for {name}\n"
    assert len(calls) == 2
    (command_args, command_options), (study_args, study_options) = calls
    assert Path(command_args[0]) == Path(study_args[0])  # the same file (a grid's experiment for a sweep)
    assert Path(command_options["out"]) == Path(study_options["out"]) == tmp_path / "out"
    if study_kind(kind).takes_experiment:  # a grid: the file is the sweep's grid
        assert Path(command_options["grid"]) == Path(study_options["grid"]) == Path(path)


@pytest.mark.parametrize("kind", ["matrix", "benchmark", "abstention", "lossless", "expansion", "language-pairs"])
def test_redraw_goes_through_the_kinds_redraw_function(monkeypatch, tmp_path, kind):
    function = f"redraw_{kind.replace('-', '_')}_file"
    _, path, command = BY_KIND[kind]
    calls = recording(monkeypatch, function, kind)
    result = runner.invoke(app, command + ["--out", str(tmp_path), "--redraw"])
    assert result.exit_code == 0, result.output
    assert result.output == f"stand-in for {function}\n" and len(calls) == 1
    assert study.redraw(path, out=tmp_path).lines == (f"stand-in for {function}",)  # the dispatcher: the same


def test_the_commands_options_reach_the_function(monkeypatch, tmp_path):
    calls = recording(monkeypatch, "run_matrix_file", "matrix")
    runner.invoke(app, ["matrix", "experiments/tokenizers.toml", "--run", "king78 r3", "--preset", "qmd",
                        "--out", str(tmp_path)])
    assert calls[0][1] == {"preset": "qmd", "runs": ["king78 r3"], "out": tmp_path, "executor": "local"}
    calls = recording(monkeypatch, "run_benchmark_file", "benchmark")
    runner.invoke(app, ["study", "experiments/benchmark-locomo.toml", "--preset", "qmd", "--out", str(tmp_path)])
    assert calls[0][1] == {"presets": ["qmd"], "out": tmp_path}


def tiny_matrix(tmp_path: Path) -> Path:
    spec = tmp_path / "tiny.toml"
    spec.write_text('kind = "matrix"\nname = "tiny"\n'
                    '[[values]]\nlabel = "unicode61"\ntokenizer = { name = "unicode61" }\n'
                    '[[values]]\nlabel = "trigram"\ntokenizer = { name = "trigram" }\n'
                    '[[runs]]\nlabel = "r3"\nexperiment = "experiments/round3.toml"\n'
                    'overrides = { embedder = { name = "hash" } }\n', encoding="utf-8")
    return spec


def test_the_returned_lines_are_what_the_command_prints(tmp_path):
    """A small matrix and one experiment (round 3, the hash embedder): run from Python, then by the
    command into another folder; the command prints the returned lines (an experiment's after its table)."""
    spec = tiny_matrix(tmp_path)
    done = study.run(spec, out=tmp_path / "a")
    assert done.kind == "matrix" and done.written[0] == tmp_path / "a" / "tiny.json" and done.written[0].is_file()
    by_command = runner.invoke(app, ["matrix", str(spec), "--out", str(tmp_path / "b")])
    assert by_command.exit_code == 0, by_command.output
    assert by_command.output.replace(str(tmp_path / "b"), "OUT") == \
        "".join(line + "\n" for line in done.lines).replace(str(tmp_path / "a"), "OUT")

    done = study.run_experiment_file("experiments/round3.toml", out=tmp_path / "c",
                                     overrides={"embedder": {"name": "hash"}})
    assert done.kind == "experiment" and all(path.is_file() for path in done.written)
    by_command = runner.invoke(app, ["run", "experiments/round3.toml", "--set", "embedder.name=hash",
                                     "--out", str(tmp_path / "d")])
    assert by_command.exit_code == 0, by_command.output
    printed = by_command.output.replace(str(tmp_path / "d"), "OUT")
    lines = "".join(line + "\n" for line in done.lines).replace(str(tmp_path / "c"), "OUT")
    assert done.lines and printed.endswith(lines) and len(printed) > len(lines)  # the table comes first


def test_a_redraw_redraws_what_the_run_wrote(tmp_path):
    spec = tiny_matrix(tmp_path)
    study.run_matrix_file(spec, out=tmp_path)
    (tmp_path / "tiny.md").unlink()
    done = study.redraw(spec, out=tmp_path)
    assert done.lines == (f"redrew {tmp_path}/tiny.md, .png",) and (tmp_path / "tiny.md").is_file()


def test_the_ablation_command_calls_its_function_and_prints_each_round_as_it_finishes(monkeypatch, tmp_path):
    from harness.reporting.markdown import print_round

    calls = recording(monkeypatch, "run_ablation_study", "ablation")
    result = runner.invoke(app, ["ablation", "--preset", "qmd", "--out", str(tmp_path)])
    assert result.exit_code == 0 and result.output == "stand-in for run_ablation_study\n", result.output
    (preset,), options = calls[0]
    assert preset == "qmd" and options["out"] == tmp_path and options["on_round"] is print_round
