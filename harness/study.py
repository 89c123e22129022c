"""Running a study file from Python: one function per built-in kind, and `run`, which asks the file's
kind (its StudyKind, harness.study_kinds) to run it.

Each function does what the kind's command does (`harness run`, `harness matrix`, ...): it loads the
file, runs it (in this process, or on an executor for a matrix or a sweep), writes its documents through
harness.reporting, and returns a StudyRun: the files written and the lines the command prints.  Nothing
is printed here; the commands (harness.cli) print the lines, so `harness study FILE` and the kind's own
command go through the same function and say the same thing.

    >>> from harness.study import run
    >>> done = run("experiments/tokenizers.toml", out="out/tokenizers")     # = harness matrix ... --out ...
    >>> done.kind, done.written[0]                   # the study's JSON first, then its Markdown and plot
    ('matrix', PosixPath('out/tokenizers/tokenizers.json'))
    >>> print("\\n".join(done.lines))
    wrote out/tokenizers/tokenizers.json, .md, .png (N cells)

Layering: this module sits above harness.studies (which compute) and harness.reporting (which writes),
and below harness.study_kinds (whose built-in kinds call these functions) and harness.cli; neither of
those lower floors imports it.  Each kind's modules are imported inside its functions, when a study of that
kind runs: they bring pandas, scipy and matplotlib, which `harness run` and the gate must not pay for
(tests/bench_startup.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from harness.errors import ConfigError



@dataclass(frozen=True)
class StudyRun:
    """What running (or redrawing) a study did.

    kind: the file's kind (harness.studies.spec.kind_names(); "ablation" for the ablation); written: the
    documents written, the study's JSON first; lines: what the command prints, in order; document: the
    study's Document (harness.studies.document) written (or redrawn from), when the study has one; round_table: an experiment's
    (RunResult, seed scores), whose table the command prints (harness.reporting.markdown.print_round)
    before the lines."""

    kind: str
    written: tuple[Path, ...]
    lines: tuple[str, ...]
    document: Any = None
    round_table: tuple[Any, Any] | None = field(default=None, repr=False)


def read_written_study(path: Path) -> Any:
    """The JSON a study wrote earlier, for a redraw; a missing or broken file is the user's error, named."""
    from harness.inputs.layout import read_json

    return read_json(path, "study JSON (--redraw redraws what an earlier run wrote there; run it without "
                           "--redraw first, or give the --out it used)")[1]


def _as_path(value: Path | str | None) -> Path | None:
    return Path(value) if value is not None else None


def _study_folder(name: str, spec_file: Path, out: Path | str | None, *, check: bool = True) -> Path:
    """The output folder: OUT, else ./harness-results/<name>-<hash of the spec file>/; checked writable
    before any work starts."""
    from harness.run_folders import check_output, default_output_dir

    out_dir = Path(out or default_output_dir(name, spec_file.resolve()))
    if check:
        check_output(out_dir, folder=True)
    return out_dir


# --- one function per kind ----------------------------------------------------------------------------


def run_experiment_file(path: Path | str, *, preset: str | None = None, out: Path | str | None = None,
                        overrides: dict[str, Any] | None = None, system: str | None = None) -> StudyRun:
    """`harness run`: one experiment (or a real system, e.g. system="openclaw@2026.9.6", instead of the
    preset); writes results.json and report.md (and redraws report.html when the folder had one)."""
    from harness.config import load_experiment, merge
    from harness.inputs.layout import project_path
    from harness.reporting.markdown import write_round
    from harness.studies.ablation_analysis import load_seed_scores
    from harness.run_folders import (
        REPORT_PAGE,
        check_output,
        clear_previous_run,
        default_output_dir,
        published,
    )
    from harness.studies.experiment import run_experiment

    overrides = dict(overrides or {})
    if system is not None:
        from harness.studies.real_system import parse_system

        overrides = merge(overrides, {"system": parse_system(system)})
    config = load_experiment(project_path(Path(path)), preset=preset, **overrides)
    real = config.as_written().get("system") or {}  # the folder is named by the table as written
    out_dir = Path(out or default_output_dir(config.name or "run", Path(config.experiment_file),
                                             config.preset, *real.values()))
    check_output(out_dir, folder=True)
    if real:
        from harness.studies.real_system import run_real_system

        result = run_real_system(config)
    else:
        result = run_experiment(config)
    seed = load_seed_scores(project_path(config.dataset.params.get("path", "datasets/king78") if config.dataset
                                         else "datasets/king78"))
    previous = clear_previous_run(out_dir) if out_dir.is_dir() else []
    with published(out_dir, "results.json") as folder:  # a killed run never leaves it looking complete
        write_round(result, folder, seed)
    lines = [f"note: {note}" for note in result.dataset.get("notes", []) + result.notes]
    lines += [line for line in previous if line != REPORT_PAGE]
    written = [out_dir / "results.json", out_dir / "report.md"]
    if REPORT_PAGE in previous:  # the page of the previous run would describe other results: redrawn
        from harness.reporting.html import write_report

        written.append(write_report(out_dir / "results.json"))
    lines.append("wrote " + ", ".join(str(p) for p in written[:-1]) + f" and {written[-1]}"
                 + ("" if REPORT_PAGE in previous else f" (the HTML page: harness report {written[0]})"))
    return StudyRun("experiment", tuple(written), tuple(lines), round_table=(result, seed))


def run_ablation_study(preset: str, *, out: Path | str | None = None, rounds_out: Path | str | None = None,
                       overrides: dict[str, Any] | None = None, executor: str = "local",
                       on_round: Callable[[Any, Any], None] | None = None) -> StudyRun:
    """`harness ablation`: rounds 1-4 with one preset; each round's results.json and report.md are written
    to OUT/roundN/ (or ROUNDS_OUT/roundN/) as soon as it finishes (kept if a later round fails), then
    ablation.json, ablation.md and ablation.png to OUT.  on_round(result, seed scores) is called after
    each round is written (the command prints its table there)."""
    from harness.inputs.layout import project_path
    from harness.reporting.ablation import write_ablation
    from harness.reporting.markdown import write_round
    from harness.run_folders import check_output, default_output_dir, published
    from harness.studies.ablation_analysis import ablation_document, load_seed_scores, reproduction_tolerance

    seed = load_seed_scores(project_path("datasets/king78"))
    out_dir = Path(out or default_output_dir(f"ablation-{preset}"))
    check_output(out_dir, folder=True)
    check_output(rounds_out, folder=True, option="--rounds-out")

    def keep(round_no: int, result: Any) -> None:
        with published(Path(rounds_out or out_dir) / result.name, "results.json") as folder:
            write_round(result, folder, seed)
        if on_round is not None:
            on_round(result, seed)

    from harness.studies.ablation import run_ablation

    if executor == "local":
        results = run_ablation(preset, overrides=overrides, on_round=keep)
    else:
        from harness.studies.executor import make_executor

        with make_executor(executor) as ex:
            results = run_ablation(preset, overrides=overrides, on_round=keep, executor=ex)
    doc = ablation_document(results, seed, reproduction_tolerance())  # the analysis, then its page
    with published(out_dir, "ablation.json") as folder:
        write_ablation(doc, folder)
    lines = [f"differs from seed: {line}" for line in doc["differences_from_seed"]]
    lines.append(f"wrote {out_dir}/ablation.json, ablation.md, ablation.png")
    return StudyRun("ablation", (out_dir / "ablation.json", out_dir / "ablation.md", out_dir / "ablation.png"),
                    tuple(lines), document=doc)


def run_sweep_file(experiment: Path | str, *, grid: Path | str | None = None, preset: str | None = None,
                   out: Path | str | None = None, overrides: dict[str, Any] | None = None,
                   holdout: Path | str | None = None, folds: int = 5, objective: str = "pass",
                   abstention_weight: float = 0.5, executor: str = "local") -> StudyRun:
    """`harness sweep`: the experiment swept over a grid (default: the experiment's default grid),
    cross-validated; writes sweep.json, sweep.md and sweep.png."""
    from harness.config import load_experiment
    from harness.evaluation.cross_validation import kind_sentence
    from harness.inputs.layout import project_path
    from harness.evaluation.formatting import difference_text, interval_text, p_cell
    from harness.reporting.sweep import label, other_releases, stage_link_lines
    from harness.run_folders import published
    from harness.studies.sweep import run_sweep
    from harness.studies.sweep_grid import load_grid

    config, grid, out_dir = _sweep_folder(experiment, grid, preset, out, overrides, objective)
    held_out = load_experiment(project_path(Path(holdout)), preset=preset) if holdout is not None else None
    options = dict(folds=folds, holdout=held_out, objective=objective, abstention_weight=abstention_weight)
    if executor == "local":
        result = run_sweep(config, load_grid(project_path(grid)), **options)
    else:
        from harness.studies.executor import make_executor

        with make_executor(executor) as ex:
            result = run_sweep(config, load_grid(project_path(grid)), executor=ex, **options)
    with published(out_dir, "sweep.json") as folder:  # a killed sweep never leaves it looking complete
        doc = write_sweep_study(result, folder, config.as_written())
    d, b, cv = result.default, result.best, result.cv
    lines = [f"{len(result.settings)} settings in {result.timings['total_s']:.1f} s "
             f"(fused and scored in {result.timings['fuse_and_score_s']:.2f} s)",
             f"objective: {result.objective.description}",
             f"configured:     {label(d)}: objective {d['objective']:.3f}, passed {d['passed']}/{d['suite_queries']}",
             f"in-sample best: {label(b)}: objective {b['objective']:.3f}, passed {b['passed']}/{b['suite_queries']} "
             f"(max-statistic p = {result.selection.p_text()} vs configured, selection accounted for)",
             f"cross-validated ({doc['cv']['scheme']}): held-out {cv.held_out_mean:.3f} vs configured "
             f"{cv.configured_mean:.3f}, gain {interval_text(cv.gain.estimate, [cv.gain.low, cv.gain.high], sign='+')}, "
             f"p = {cv.p_text}"]
    if cv.carried_by:
        lines.append(f"the gain rests on the {cv.carried_by}: {kind_sentence(cv.by_kind)}")
    if result.recommended is not None:
        lines.append(f"recommended: {label(result.recommended)} ({cv.reason})")
        if doc["openclaw_snippet"] is not None:
            partial = "; what it cannot set follows" if doc["not_expressible_in_openclaw_json"] else ""
            lines.append(f"openclaw.json snippet (the settings that change{partial}):\n" + doc["openclaw_snippet"])
        else:
            lines.append("none of the change can be written in this release's openclaw.json")
        lines += [f"not expressible in openclaw.json: {item}{other_releases(item)}"
                  for item in doc["not_expressible_in_openclaw_json"]]
    else:
        lines.append(f"{cv.reason[0].upper() + cv.reason[1:]}; no snippet.")
    lines += stage_link_lines(doc)
    if result.holdout:
        h = result.holdout
        lines.append(f"held out ({h['experiment']}, {h['queries']} queries): {h['which']} objective "
                     f"{h['configured_mean']:.3f} -> {h['chosen_mean']:.3f}, gain {difference_text(h['gain'])}, "
                     f"p = {p_cell(h)}")
    lines.append(f"wrote {out_dir}/sweep.json, sweep.md, sweep.png")
    return StudyRun("grid", (out_dir / "sweep.json", out_dir / "sweep.md", out_dir / "sweep.png"),
                    tuple(lines), document=doc)


def _sweep_folder(experiment: Path | str, grid: Path | str | None, preset: str | None, out: Path | str | None,
                  overrides: dict[str, Any] | None, objective: str) -> tuple[Any, Path, Path]:
    """A sweep's experiment (loaded), grid file (default: the experiment's default grid) and folder: OUT,
    else ./harness-results/sweep-<name>[-<objective>]-<hash>/; checked writable before any work starts."""
    from harness.config import load_experiment
    from harness.inputs.layout import project_path
    from harness.run_folders import check_output, default_output_dir
    from harness.studies.sweep_grid import default_grid

    config = load_experiment(project_path(Path(experiment)), preset=preset, **(overrides or {}))
    grid = Path(grid) if grid is not None else default_grid(config)
    suffix = "" if objective == "pass" else f"-{objective}"  # an abstention sweep never shares a pass sweep's folder
    out_dir = Path(out or default_output_dir(f"sweep-{config.name}{suffix}", Path(config.experiment_file),
                                             config.preset, project_path(grid).resolve()))
    check_output(out_dir, folder=True)
    return config, grid, out_dir


def write_sweep_study(result: Any, out_dir: Path, config: dict[str, Any]) -> Any:
    """A sweep's files from its result (harness.studies.sweep.SweepResult): extend.toml when queries are
    unjudged, then the analysis (harness.studies.sweep_analysis.sweep_document) and its page (sweep.json,
    sweep.md, sweep.png); returns the Document."""
    from harness.reporting.sweep import write_extend_of, write_sweep
    from harness.studies.sweep_analysis import sweep_document

    write_extend_of(result, out_dir, config)
    return write_sweep(sweep_document(result, config), out_dir)


def run_matrix_file(path: Path | str, *, preset: str | None = None, runs: Sequence[str] | None = None,
                    out: Path | str | None = None, executor: str = "local") -> StudyRun:
    """`harness matrix`: one stage varied over several runs (only the labelled `runs` when given);
    writes <name>.json, .md and .png."""
    from harness.inputs.layout import project_path
    from harness.reporting.matrix import write_matrix
    from harness.run_folders import published
    from harness.studies.matrix import load_matrix, matrix_document, run_matrix

    spec_file = project_path(Path(path))
    matrix_spec = load_matrix(spec_file)
    out_dir = _study_folder(matrix_spec.name, spec_file, out)
    if executor == "local":
        cells = run_matrix(matrix_spec, preset=preset, only_runs=list(runs) if runs else None)
    else:  # embeds every cell's texts across the cluster first, then runs the cells there
        from harness.studies.executor import make_executor

        with make_executor(executor) as ex:
            cells = run_matrix(matrix_spec, preset=preset, only_runs=list(runs) if runs else None, executor=ex)
    document = matrix_document(matrix_spec, cells, matrix_spec.metrics)  # the analysis, then its report
    with published(out_dir, f"{matrix_spec.name}.json") as folder:
        write_matrix(document, folder)
    name = matrix_spec.name
    return StudyRun("matrix", (out_dir / f"{name}.json", out_dir / f"{name}.md", out_dir / f"{name}.png"),
                    (f"wrote {out_dir}/{name}.json, .md, .png ({len(cells)} cells)",), document=document)


def run_abstention_file(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness abstention`: top-1 score distributions, the AUROC of "nothing relevant" and the
    cross-validated minScore per preset; writes <name>.json, .md and .png."""
    from harness.inputs.layout import project_path
    from harness.reporting.abstention import write_abstention
    from harness.studies.abstention import abstention_document, load_abstention_spec, run_abstention
    from harness.studies.document import Document

    spec_file = project_path(Path(path))
    spec = load_abstention_spec(spec_file)
    out_dir = _study_folder(spec.name, spec_file, out)
    doc = Document("abstention", abstention_document(spec, run_abstention(spec)), spec)  # the analysis, then its page
    write_abstention(doc, out_dir)
    lines = []
    for run_doc in doc["runs"]:
        auroc = run_doc["auroc"]
        recommended = run_doc["recommended_threshold"]
        lines.append(f"{run_doc['label']} / {run_doc['preset']}: AUROC {auroc['estimate']:.3f} "
                     f"[{auroc['ci95'][0]:.3f}, {auroc['ci95'][1]:.3f}], best minScore {run_doc['best_threshold']:.4g} "
                     f"(U {run_doc['best']['utility']:.3f}), verdict: "
                     f"{run_doc.get('verdict') or ('none' if recommended is None else format(recommended, '.4g'))}")
    name = spec.name
    lines.append(f"wrote {out_dir}/{name}.json, .md, .png")
    return StudyRun("abstention", (out_dir / f"{name}.json", out_dir / f"{name}.md", out_dir / f"{name}.png"),
                    tuple(lines), document=doc)


def run_benchmark_file(path: Path | str, *, presets: Sequence[str] | None = None, runs: Sequence[str] | None = None,
                       out: Path | str | None = None) -> StudyRun:
    """`harness benchmark`: a public data set with one or more presets (these `presets` instead of the
    spec's, only the labelled `runs`: then `out` is required); writes <name>.json, <name>.md and one
    results.json per run."""
    from harness.inputs.layout import project_path
    from harness.reporting.benchmark import write_benchmark
    from harness.studies.benchmark import benchmark_document, load_benchmark, run_benchmark

    spec_file = project_path(Path(path))
    bench = load_benchmark(spec_file)
    out_dir = _study_folder(bench.name, spec_file, out)
    if (presets or runs) and out is None:
        raise ConfigError("--preset/--run change what is run: give --out so that the whole benchmark's results "
                          "are not overwritten")
    results = run_benchmark(bench, presets=list(presets) if presets else None, only_runs=list(runs) if runs else None)
    doc = write_benchmark(benchmark_document(bench, results), results, out_dir)  # the analysis, then its report
    lines = []
    for r in doc["runs"]:
        lines += [f"note ({r['slug']}): {note}" for note in r["dataset"].get("notes", [])]
        lines.append(f"{r['slug']}: {r['summary']['suite'].get('queries', 0)} suite queries in "
                     f"{r['timings']['total_s']:.1f} s (embeddings computed "
                     f"{r['timings']['embedding_cache'].get('computed', 0)})")
    name = bench.name
    lines.append(f"wrote {out_dir}/{name}.json, {name}.md and one results.json per run")
    return StudyRun("benchmark", (out_dir / f"{name}.json", out_dir / f"{name}.md"), tuple(lines), document=doc)


def run_language_pairs_file(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness language-pairs`: the same questions in two languages, paired, per system (from benchmark
    and matrix runs already written); writes <name>.json, .md and .png."""
    from harness.inputs.layout import project_path
    from harness.reporting.language_pairs import write_language_pairs
    from harness.studies.document import Document
    from harness.studies.language_pairs import load_pairs_spec, run_language_pairs

    spec_file = project_path(Path(path))
    loaded = load_pairs_spec(spec_file)
    out_dir = _study_folder(loaded.name, spec_file, out, check=False)
    doc = run_language_pairs(loaded)
    total = doc["pairing"]["total"]
    name = loaded.name
    document = write_language_pairs(Document("language-pairs", doc, loaded), out_dir)
    lines = (f"paired {total['questions_paired']} of {total['questions'][1]} questions "
             f"({doc['pairing']['mismatch_count']} mismatches); {len(doc['systems'])} systems compared",
             f"wrote {document}, {name}.md and {name}.png")
    return StudyRun("language-pairs", (Path(document), out_dir / f"{name}.md", out_dir / f"{name}.png"), lines,
                    document=doc)


def run_lossless_file(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness lossless`: lossless-claw on LoCoMo beside the Markdown-memory presets; writes
    lossless.json and the Markdown."""
    from harness.inputs.layout import project_path
    from harness.reporting.lossless import write_lossless
    from harness.studies.document import Document
    from harness.studies.lossless import load_lossless, run_lossless

    spec_file = project_path(Path(path))
    loaded = load_lossless(spec_file)
    out_dir = _study_folder(loaded.name, spec_file, out)
    doc = run_lossless(loaded)
    page = write_lossless(Document("lossless", doc, loaded), out_dir)
    line = (f"wrote {page} and lossless.json "
            f"({', '.join(f'{k} {v:.0f} s' for k, v in doc['timings_s'].items())})")
    return StudyRun("lossless", (out_dir / "lossless.json", Path(page)), (line,), document=doc)


def run_expansion_file(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness expansion`: expansion variants of a preset with intervals and paired differences;
    writes expansion.json and the Markdown."""
    from harness.inputs.layout import project_path
    from harness.studies.document import Document
    from harness.studies.expansion import load_expansion_spec, run_expansion_study

    spec_file = project_path(Path(path))
    loaded = load_expansion_spec(spec_file)
    out_dir = _study_folder(loaded.name, spec_file, out)
    return _written_expansion(Document("expansion", run_expansion_study(loaded), loaded), out_dir)


def _written_expansion(doc: Any, out_dir: Path) -> StudyRun:
    from harness.reporting.expansion import write_expansion_study

    page = write_expansion_study(doc, out_dir)
    return StudyRun("expansion", (out_dir / "expansion.json", Path(page)), (f"wrote {page} and expansion.json",),
                    document=doc)


def run_scale_file(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness study SCALE_FILE` (experiments/scale.toml): the scale study with the file's settings (the
    others `harness scale`'s defaults); writes scale.json, scale.md and scale.png."""
    from harness.inputs.layout import project_path
    from harness.reporting.scale import write_scale_report
    from harness.studies.scale.run import headline_lines, load_scale_spec, run_scale

    spec_file = project_path(Path(path))
    spec = load_scale_spec(spec_file)
    out_dir = _study_folder(spec.name, spec_file, out)
    result = run_scale(**spec.run_options())
    write_scale_report(result, out_dir)
    written = tuple(out_dir / f"scale.{ext}" for ext in ("json", "md", "png"))
    return StudyRun("scale", written, (*headline_lines(result), f"wrote {out_dir}/scale.json, scale.md, scale.png"),
                    document=result)


# --- redraw: the Markdown (and plots) again from the JSON an earlier run wrote -----------------------


def redraw(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness <kind> FILE --redraw`: the study's Markdown and plots drawn again from the JSON an earlier
    run wrote in OUT (default: the kind's default folder), with the spec's current text; nothing is run.
    For the kinds that redraw (harness.study_kinds: matrix, abstention, benchmark, language-pairs,
    lossless and expansion files; a sweep, whose file is its experiment, by redraw_sweep_file)."""
    from harness.studies.spec import kind_of_file, study_kind

    return study_kind(kind_of_file(Path(path))).redraw(Path(path), out=_as_path(out))


def _read_back(path: Path | str, out: Path | str | None, load: Any, kind: str, json_name: str | None = None, *,
               check: bool = True) -> tuple[Any, Path, Any]:
    """What a redraw starts from: the spec as loaded now, the study's folder, and the Document the run wrote
    there (`json_name`, default `<name>.json`; Document.from_json, its config the spec as loaded now)."""
    from harness.inputs.layout import project_path
    from harness.studies.document import Document

    spec_file = project_path(Path(path))
    spec = load(spec_file)
    out_dir = _study_folder(spec.name, spec_file, out, check=check)
    body = read_written_study(out_dir / (json_name or f"{spec.name}.json"))
    return spec, out_dir, Document(kind, body, spec)


def redraw_matrix_file(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness matrix FILE --redraw`."""
    from harness.reporting.matrix import render
    from harness.studies.matrix import load_matrix, redrawn_matrix_document

    matrix_spec, out_dir, written = _read_back(path, out, load_matrix, "matrix")
    name = matrix_spec.name
    doc = redrawn_matrix_document(matrix_spec, written.to_dict(), matrix_spec.metrics)
    render(doc, out_dir)
    return StudyRun("matrix", (out_dir / f"{name}.md", out_dir / f"{name}.png"),
                    (f"redrew {out_dir}/{name}.md, .png",), document=doc)


def redraw_abstention_file(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness abstention FILE --redraw`."""
    from harness.reporting.abstention import write_abstention
    from harness.studies.abstention import load_abstention_spec

    spec, out_dir, written = _read_back(path, out, load_abstention_spec, "abstention")
    # the spec's current description and notes into the JSON and the report, figures as they were (so the
    # JSON a reader traces a number to says what the Markdown says)
    doc = written.with_body(description=spec.description, notes=spec.notes)
    page = write_abstention(doc, out_dir)
    return StudyRun("abstention", (Path(page),), (f"redrew {page} with the spec's text",), document=doc)


def recalibrate_abstention_file(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness abstention FILE --recalibrate`: the calibrations anew from the stored per-query scores."""
    from harness.reporting.abstention import write_abstention
    from harness.studies.abstention import load_abstention_spec, recalibrated_document
    from harness.studies.document import Document

    spec, out_dir, written = _read_back(path, out, load_abstention_spec, "abstention")
    doc = Document("abstention", recalibrated_document(spec, written.to_dict()), spec)
    page = write_abstention(doc, out_dir)
    lines = [f"{r['label']} / {r['preset']}: verdict: {r['verdict']}" for r in doc["runs"]]
    return StudyRun("abstention", (Path(page),), (*lines, f"recalibrated {page} from the stored scores"), document=doc)


def redraw_benchmark_file(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness benchmark FILE --redraw`."""
    from harness.reporting.benchmark import render
    from harness.studies.benchmark import load_benchmark

    bench, out_dir, doc = _read_back(path, out, load_benchmark, "benchmark")  # its paired differences included
    page = render(doc, out_dir)
    return StudyRun("benchmark", (Path(page),), (f"redrew {page}",), document=doc)


def redraw_language_pairs_file(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness language-pairs FILE --redraw`."""
    from harness.reporting.language_pairs import render
    from harness.studies.language_pairs import load_pairs_spec

    loaded, out_dir, doc = _read_back(path, out, load_pairs_spec, "language-pairs", check=False)
    page = render(doc, out_dir)
    return StudyRun("language-pairs", (Path(page),), (f"redrew {page}",), document=doc)


def redraw_lossless_file(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness lossless FILE --redraw`."""
    from harness.reporting.lossless import render
    from harness.studies.lossless import load_lossless

    loaded, out_dir, doc = _read_back(path, out, load_lossless, "lossless", "lossless.json")
    page = render(doc, out_dir)
    return StudyRun("lossless", (Path(page),), (f"redrew {page}",), document=doc)


def redraw_expansion_file(path: Path | str, *, out: Path | str | None = None) -> StudyRun:
    """`harness expansion FILE --redraw`."""
    from harness.studies.expansion import load_expansion_spec

    loaded, out_dir, doc = _read_back(path, out, load_expansion_spec, "expansion", "expansion.json")
    # as the command's redraw always has, this writes expansion.json again beside the Markdown
    return _written_expansion(doc, out_dir)


def redraw_sweep_file(experiment: Path | str, *, grid: Path | str | None = None, preset: str | None = None,
                      out: Path | str | None = None, overrides: dict[str, Any] | None = None,
                      objective: str = "pass") -> StudyRun:
    """`harness sweep EXPERIMENT --redraw`: sweep.md and sweep.png again from the sweep.json a run wrote in
    OUT (default: the folder `harness sweep` with these options writes), its "page" included; nothing is
    swept.  A sweep.json written before it held the page is refused, naming the file and the field."""
    from harness.reporting.sweep import render
    from harness.studies.document import Document

    config, _, out_dir = _sweep_folder(experiment, grid, preset, out, overrides, objective)
    path = out_dir / "sweep.json"
    body = read_written_study(path)
    if not isinstance(body, dict) or "page" not in body:
        raise ConfigError(f'{path}: no "page" field (written before sweep.json held what sweep.md and sweep.png '
                          "draw): run the sweep again to rewrite it (`make sweep` rewrites reports/sweep; `make workspaces` and "
                          "`make abstention` theirs)")
    doc = Document("sweep", body, config.as_written())
    render(doc, out_dir)
    return StudyRun("grid", (out_dir / "sweep.md", out_dir / "sweep.png"), (f"redrew {out_dir}/sweep.md, .png",),
                    document=doc)


# --- any study file, by its kind -------------------------------------------------------------------------


def run(path: Path | str, *, out: Path | str | None = None, preset: str | None = None, executor: str = "local",
        experiment: Path | str | None = None) -> StudyRun:
    """Run any study file by its kind (its `kind` key: harness.studies.spec.kind_of_file), as the kind's
    command runs it with these options and its defaults for the rest (harness.study_kinds: an experiment
    as `harness run`, a matrix as `harness matrix`, a benchmark, abstention, lossless, expansion or
    language-pairs spec as its command, a sweep grid as `harness sweep EXPERIMENT --grid FILE`, a plugin's
    kind by its StudyKind.run).  `preset` applies to the kinds that take one (experiment, grid, matrix and
    benchmark files); `executor` ("local", "ray", "ray://HOST:PORT") likewise (matrix and grid files);
    `experiment` is the experiment a grid sweeps (required for a grid, refused otherwise)."""
    from harness.inputs.layout import project_path
    from harness.studies.plan import check_options
    from harness.studies.spec import kind_of_file, study_kind

    given = Path(path)
    kind = study_kind(kind_of_file(given))
    check_options(kind, project_path(given), preset=preset, executor=executor, experiment=experiment)
    return kind.run(given, out=_as_path(out), preset=preset, executor=executor, experiment=experiment)
