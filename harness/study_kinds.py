"""The kinds of study file: a StudyKind each, registered in harness.studies.spec.STUDY_KINDS like a stage.

A kind is one class: its name (the value of a file's `kind` key), the command that runs its file, its
typed model, which of `harness study`'s options it takes, how a file of it expands into cells (each a
label and a resolved experiment configuration), and how it runs.  `harness study FILE`, the dry run
(harness.studies.plan), `harness embed` and `harness cache-key` ask the file's kind; nothing chooses by
the kind's name.

A new kind is one spec (a pydantic model), one `cells`, one `analyse` and one `render`; the run is the
base class's (`run`: load -> cells -> run_cells -> analyse -> write the JSON -> render).  Registered here
with `@STUDY_KINDS.register("name")`, or from an installed package through the entry-point group
`harness.study_kinds` (tests/plugin_example registers one without touching harness/):

    [project.entry-points."harness.study_kinds"]
    preset-passes = "harness_example_plugin.study_kind:PresetPasses"

The built-in kinds keep their own commands' functions (harness.study), which their `run` calls, so
`harness study FILE` and `harness matrix FILE` say and write the same.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Sequence

import harness.study as study  # looked up at call time: a test may stand in for a kind's function
from harness.errors import ConfigError
from harness.studies.spec import STUDY_KINDS


class StudyKind:
    """One kind of study file.  Subclass it, set what differs from the defaults, and register it."""

    registered_name: ClassVar[str]  # set by the registry: the value of a file's `kind` key
    command: ClassVar[str] = "study"
    """the command that runs a file of this kind (`harness COMMAND FILE`); "study" for a kind without one"""
    what: ClassVar[str] = "study spec"
    """what the file is called in an error ("matrix spec")"""
    model: ClassVar[Any] = None
    """the pydantic model of the file (a built-in kind's is read from harness.studies.spec.models on use)"""
    takes_preset: ClassVar[bool] = False
    """`harness study FILE --preset` applies to it"""
    takes_executor: ClassVar[bool] = False
    """`harness study FILE --executor` applies to it"""
    takes_experiment: ClassVar[bool] = False
    """the file names no experiment and is given one (a sweep grid: `--experiment`)"""
    redraws: ClassVar[bool] = False
    """`--redraw` draws its Markdown again from the JSON an earlier run wrote"""
    document_form: ClassVar[str] = "results"
    """how its JSON is written (harness.reporting.documents.DOCUMENT_FORMS)"""

    @property
    def name(self) -> str:
        return self.registered_name

    # --- the spec and its cells --------------------------------------------------------------------

    def spec_model(self) -> Any:
        return self.model

    def load(self, path: Path) -> Any:
        """The file read and validated: its model, frozen (a built-in kind's loader returns the same)."""
        from harness.config import load_toml
        from harness.studies.spec import validated

        return validated(self.name, load_toml(path, self.what), path)

    def cells(self, spec: Any, *, preset: str | None = None) -> list[Any]:
        """The runs the file stands for (harness.studies.spec.cells.StudyCell), every configuration
        resolved, nothing run; `preset` replaces the presets the file names."""
        raise NotImplementedError(f"study kind {self.name!r} has no cells")

    def notes(self, spec: Any) -> list[str]:
        """What the study does besides running its cells, for the dry run."""
        return []

    def plan(self, path: Path, *, preset: str | None = None, experiment: Path | str | None = None
             ) -> tuple[Any, list[Any], list[str]]:
        """(spec, cells, notes): what `harness study FILE --dry-run` prints."""
        spec = self.load(path)
        return spec, self.cells(spec, preset=preset), self.notes(spec)

    def configs(self, path: Path, *, preset: str | None = None, overrides: dict[str, Any] | None = None) -> list[Any]:
        """The configurations whose texts `harness embed` and `harness cache-key` read: the cells'."""
        spec = self.load(path)
        return [cell.config.with_overrides(overrides or {}) for cell in self.cells(spec, preset=preset)]

    def schema(self) -> dict[str, Any]:
        """JSON schema (draft 2020-12) of its file, for editors (`harness schema --kind KIND`)."""
        schema = self.spec_model().model_json_schema()
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema,
                "title": f"harness {self.name} file"}

    # --- the study --------------------------------------------------------------------------------

    def analyse(self, spec: Any, cells: Sequence[Any], results: Sequence[Any]) -> dict[str, Any]:
        """The study's document (JSON-able) from its cells' results (harness RunResults, in order)."""
        raise NotImplementedError(f"study kind {self.name!r} has no analysis")

    def render(self, spec: Any, document: dict[str, Any], out_dir: Path) -> Path:
        """Write the study's page (Markdown) from its document into `out_dir`; returns its path."""
        raise NotImplementedError(f"study kind {self.name!r} has no renderer")

    def run(self, path: Path, *, out: Path | None = None, preset: str | None = None, executor: str = "local",
            experiment: Path | str | None = None) -> Any:
        """Run a file of this kind: load -> cells -> run_cells -> analyse -> write NAME.json -> render
        NAME.md, into OUT (default ./harness-results/<name>-<hash>/); returns a harness.study.StudyRun."""
        from harness.inputs.layout import project_path
        from harness.reporting.documents import write_document
        from harness.run_folders import check_output, default_output_dir, published
        from harness.studies.spec.cells import run_cells

        path = project_path(path)
        spec = self.load(path)
        name = getattr(spec, "name", None) or path.stem
        out_dir = Path(out or default_output_dir(name, path.resolve()))
        check_output(out_dir, folder=True)
        cells = self.cells(spec, preset=preset)
        if executor in (None, "", "local"):
            results = run_cells(cells)
        else:
            from harness.studies.executor import make_executor

            with make_executor(executor) as ex:
                results = run_cells(cells, executor=ex)
        document = self.analyse(spec, cells, results)
        with published(out_dir, f"{name}.json") as folder:
            write_document(folder / f"{name}.json", self.document_form, document)
            page = self.render(spec, document, folder)
        written = (out_dir / f"{name}.json", out_dir / Path(page).name)
        return study.StudyRun(self.name, written, (f"wrote {written[0]} and {written[1]} ({len(cells)} cells)",),
                              document=document)

    def redraw(self, path: Path, *, out: Path | None = None) -> Any:
        """`--redraw`: the page again from the JSON an earlier run wrote; nothing is run."""
        redrawn = [name for name in STUDY_KINDS.registered() if STUDY_KINDS.get(name).redraws]
        raise ConfigError(f"{path} is a {self.name} file: only {', '.join(redrawn)} files are redrawn")


class _BuiltIn(StudyKind):
    """A kind this package ships: its model is harness.studies.spec.models.<model_name>, imported on use
    (pydantic's models are not needed to list the kinds)."""

    model_name: ClassVar[str]

    def spec_model(self) -> Any:
        from harness.studies.spec import models

        return getattr(models, self.model_name)


# The built-in kinds, in the order the reference of study files lists them.


@STUDY_KINDS.register("experiment")
class Experiment(_BuiltIn):
    """One experiment: a preset and the tables that override it."""

    model_name = "ExperimentStudy"
    command, what, takes_preset = "run", "experiment file", True

    def load(self, path: Path) -> Any:
        from harness.config import load_experiment

        return load_experiment(path)

    def plan(self, path: Path, *, preset: str | None = None, experiment: Path | str | None = None
             ) -> tuple[Any, list[Any], list[str]]:
        from harness.config import load_experiment
        from harness.studies.spec.cells import StudyCell

        config = load_experiment(path, preset=preset)
        return config, [StudyCell(config.name, config)], []

    def configs(self, path: Path, *, preset: str | None = None, overrides: dict[str, Any] | None = None) -> list[Any]:
        from harness.config import load_experiment

        return [load_experiment(path, preset=preset, **(overrides or {}))]

    def schema(self) -> dict[str, Any]:
        """The stage registries' schema (harness.catalog.experiment_schema), with its `kind` key."""
        from harness.catalog import experiment_schema

        schema = experiment_schema()
        schema["properties"] = {"kind": {"const": "experiment", "default": "experiment"}, **schema["properties"]}
        return schema

    def run(self, path: Path, *, out: Path | None = None, preset: str | None = None, executor: str = "local",
            experiment: Path | str | None = None) -> Any:
        return study.run_experiment_file(path, preset=preset, out=out)


@STUDY_KINDS.register("matrix")
class Matrix(_BuiltIn):
    """One stage varied over several runs."""

    model_name = "MatrixStudy"
    command, what, takes_preset, takes_executor, redraws, document_form = ("matrix", "matrix spec", True, True,
                                                                           True, "matrix")

    def load(self, path: Path) -> Any:
        from harness.studies.matrix import load_matrix

        return load_matrix(path)

    def cells(self, spec: Any, *, preset: str | None = None) -> list[Any]:
        from harness.studies.matrix import matrix_cells

        return matrix_cells(spec, preset=preset)

    def run(self, path: Path, *, out: Path | None = None, preset: str | None = None, executor: str = "local",
            experiment: Path | str | None = None) -> Any:
        return study.run_matrix_file(path, preset=preset, out=out, executor=executor)

    def redraw(self, path: Path, *, out: Path | None = None) -> Any:
        return study.redraw_matrix_file(path, out=out)


@STUDY_KINDS.register("benchmark")
class Benchmark(_BuiltIn):
    """A public data set with one or more presets."""

    model_name = "BenchmarkStudy"
    command, what, takes_preset, redraws, document_form = "benchmark", "benchmark spec", True, True, "benchmark"

    def load(self, path: Path) -> Any:
        from harness.studies.benchmark import load_benchmark

        return load_benchmark(path)

    def cells(self, spec: Any, *, preset: str | None = None) -> list[Any]:
        from harness.studies.benchmark import benchmark_cells

        return benchmark_cells(spec, presets=[preset] if preset else None)

    def run(self, path: Path, *, out: Path | None = None, preset: str | None = None, executor: str = "local",
            experiment: Path | str | None = None) -> Any:
        return study.run_benchmark_file(path, presets=[preset] if preset else None, out=out)

    def redraw(self, path: Path, *, out: Path | None = None) -> Any:
        return study.redraw_benchmark_file(path, out=out)


@STUDY_KINDS.register("abstention")
class Abstention(_BuiltIn):
    """Top-1 score distributions and the cross-validated minScore per preset."""

    model_name = "AbstentionStudy"
    command, what, redraws, document_form = "abstention", "abstention spec", True, "abstention"

    def load(self, path: Path) -> Any:
        from harness.studies.abstention import load_abstention_spec

        return load_abstention_spec(path)

    def cells(self, spec: Any, *, preset: str | None = None) -> list[Any]:
        from harness.studies.abstention import abstention_cells

        if preset:  # `harness embed --preset`: each run with this preset instead of its own
            spec = spec.model_copy(update={"runs": [run.model_copy(update={"presets": [preset]}) for run in spec.runs]})
        return abstention_cells(spec)

    def run(self, path: Path, *, out: Path | None = None, preset: str | None = None, executor: str = "local",
            experiment: Path | str | None = None) -> Any:
        return study.run_abstention_file(path, out=out)

    def redraw(self, path: Path, *, out: Path | None = None) -> Any:
        return study.redraw_abstention_file(path, out=out)


@STUDY_KINDS.register("lossless")
class Lossless(_BuiltIn):
    """lossless-claw beside the Markdown-memory presets."""

    model_name = "LosslessStudy"
    command, what, redraws, document_form = "lossless", "lossless spec", True, "lossless"

    def load(self, path: Path) -> Any:
        from harness.studies.lossless import load_lossless

        return load_lossless(path)

    def cells(self, spec: Any, *, preset: str | None = None) -> list[Any]:
        from harness.studies.lossless import markdown_cells

        return markdown_cells(spec.model_copy(update={"presets": [preset]}) if preset else spec)

    def notes(self, spec: Any) -> list[str]:
        from harness.studies.lossless import context_settings

        return [f"lossless-claw itself: lcm_grep and {len(context_settings(spec))} compaction settings"]

    def run(self, path: Path, *, out: Path | None = None, preset: str | None = None, executor: str = "local",
            experiment: Path | str | None = None) -> Any:
        return study.run_lossless_file(path, out=out)

    def redraw(self, path: Path, *, out: Path | None = None) -> Any:
        return study.redraw_lossless_file(path, out=out)


@STUDY_KINDS.register("expansion")
class Expansion(_BuiltIn):
    """Query-expansion variants of a preset."""

    model_name = "ExpansionStudy"
    command, what, redraws, document_form = "expansion", "expansion spec", True, "expansion"

    def load(self, path: Path) -> Any:
        from harness.studies.expansion import load_expansion_spec

        return load_expansion_spec(path)

    def cells(self, spec: Any, *, preset: str | None = None) -> list[Any]:
        from harness.studies.expansion import expansion_cells

        return expansion_cells(spec.model_copy(update={"preset": preset}) if preset else spec)

    def run(self, path: Path, *, out: Path | None = None, preset: str | None = None, executor: str = "local",
            experiment: Path | str | None = None) -> Any:
        return study.run_expansion_file(path, out=out)

    def redraw(self, path: Path, *, out: Path | None = None) -> Any:
        return study.redraw_expansion_file(path, out=out)


@STUDY_KINDS.register("language-pairs")
class LanguagePairs(_BuiltIn):
    """The same questions in two languages, paired, from studies already written."""

    model_name = "LanguagePairsStudy"
    command, what, redraws, document_form = "language-pairs", "language-pairs spec", True, "language-pairs"

    def load(self, path: Path) -> Any:
        from harness.studies.language_pairs import load_pairs_spec

        return load_pairs_spec(path)

    def cells(self, spec: Any, *, preset: str | None = None) -> list[Any]:
        return []  # it reads what its sources wrote

    def notes(self, spec: Any) -> list[str]:
        return ["runs nothing: it reads what its sources wrote (" +
                ", ".join(source.file for source in spec.sources) + ")"]

    def configs(self, path: Path, *, preset: str | None = None, overrides: dict[str, Any] | None = None) -> list[Any]:
        """What the studies it reads run (each source's `spec`), their kinds asked in turn."""
        from harness.inputs.layout import project_path
        from harness.studies.spec import kind_of_file, study_kind

        out = []
        for source in self.load(path).sources:
            if source.spec:
                spec_file = project_path(source.spec)
                out += study_kind(kind_of_file(spec_file)).configs(spec_file, preset=preset, overrides=overrides)
        return out

    def run(self, path: Path, *, out: Path | None = None, preset: str | None = None, executor: str = "local",
            experiment: Path | str | None = None) -> Any:
        return study.run_language_pairs_file(path, out=out)

    def redraw(self, path: Path, *, out: Path | None = None) -> Any:
        return study.redraw_language_pairs_file(path, out=out)


@STUDY_KINDS.register("grid")
class Grid(_BuiltIn):
    """A sweep grid: the settings an experiment is swept over."""

    model_name = "GridStudy"
    command, what, takes_preset, takes_executor, takes_experiment = "sweep", "grid file", True, True, True

    def plan(self, path: Path, *, preset: str | None = None, experiment: Path | str | None = None
             ) -> tuple[Any, list[Any], list[str]]:
        """The sweep searches the experiment's legs once and scores every setting (its fast path): one cell."""
        from harness.config import load_experiment
        from harness.inputs.layout import project_path
        from harness.studies.spec.cells import StudyCell

        config = load_experiment(project_path(experiment), preset=preset)
        spec = self.load(path)
        sizes = [f"{key} ({count})" for key, count in spec.grid.sizes().items()]
        return spec, [StudyCell(config.name, config)], [
            f"sweeps {config.name} over the grid's {', '.join(sizes)}, the configured value of each included"]

    def configs(self, path: Path, *, preset: str | None = None, overrides: dict[str, Any] | None = None) -> list[Any]:
        raise ConfigError(f"{path} is a sweep grid, which embeds nothing of its own: give the experiment it sweeps")

    def run(self, path: Path, *, out: Path | None = None, preset: str | None = None, executor: str = "local",
            experiment: Path | str | None = None) -> Any:
        return study.run_sweep_file(Path(experiment), grid=path, preset=preset, out=out, executor=executor)


@STUDY_KINDS.register("scale")
class Scale(_BuiltIn):
    """Index build, query latency and peak memory against corpus size, every backend (its own engine:
    harness.studies.scale, a synthetic corpus, each backend and size in a child process)."""

    model_name = "ScaleStudy"
    what = "scale spec"

    def load(self, path: Path) -> Any:
        from harness.studies.scale.run import load_scale_spec

        return load_scale_spec(path)

    def cells(self, spec: Any, *, preset: str | None = None) -> list[Any]:
        return []  # no experiment is run: the corpus is synthetic, its vectors drawn, not embedded

    def notes(self, spec: Any) -> list[str]:
        from harness.studies.scale.run import DEFAULT_SIZES

        sizes = ", ".join(f"{n:,}" for n in spec.sizes or DEFAULT_SIZES)
        return [f"runs no experiment: every vector and lexical backend timed on synthetic corpora of {sizes} "
                "chunks, each backend and size in a child process (harness.studies.scale)"]

    def run(self, path: Path, *, out: Path | None = None, preset: str | None = None, executor: str = "local",
            experiment: Path | str | None = None) -> Any:
        return study.run_scale_file(path, out=out)
