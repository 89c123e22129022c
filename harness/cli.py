"""Command line: each command is a thin layer over a documented function of the library.

Errors: the harness's own errors (harness.errors.HarnessError: a wrong config, bad input data, a failed
embedding call, a broken memory cap) are printed as one line naming the file, line or key, exit code 2.
Anything else is a bug in the harness: it is reported as such (exit code 3), with its traceback under
`harness --debug ...`.
"""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from typer.exceptions import TyperException

from harness import __version__
from harness.config import list_presets, load_experiment, merge, parse_assignments
from harness.errors import ConfigError, HarnessError
from harness.inputs.king78 import validate_king78
from harness.inputs.layout import project_path
from harness.profiles import PROFILES, apply_profile, get_profile
from harness.run_folders import default_output_dir

# show_locals off: a traceback must never print local variables (an API key could be one of them)
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False,
                  help="Evaluate hybrid (vector + BM25) agent-memory retrieval. See README.md.")

DEFAULT_PRESET = "openclaw-2026.02"
_options = {"debug": False}


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"harness {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
        debug: bool = typer.Option(False, "--debug", help="show the full traceback of an unexpected error"),
        version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                     help="print the version and exit")) -> None:
    _options["debug"] = debug


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


def command(*args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`@app.command` whose HarnessError becomes a one-line error; any other exception is a bug."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def run(*a: Any, **k: Any) -> Any:
            try:
                return func(*a, **k)
            except HarnessError as exc:
                _fail(str(exc))
            except (typer.Exit, typer.Abort, TyperException):
                raise
            except Exception as exc:
                if _options["debug"]:
                    raise
                typer.secho(f"internal error: {type(exc).__name__}: {exc}\n"
                            "This is a bug in the harness, not in your input; rerun with --debug for the "
                            "traceback and report it.", fg=typer.colors.RED, err=True)
                raise typer.Exit(3) from None

        return app.command(*args, **kwargs)(run)

    return decorate


def _profile_overrides(profile: Optional[str]) -> dict:
    """Apply a --profile before numpy and the embedder start their thread pools."""
    if profile is None:
        return {}
    apply_profile(get_profile(profile))
    return {"profile": {"name": profile}}


SET_HELP = ("override one setting, TABLE.KEY=VALUE (repeatable), e.g. fusion.vector_weight=0.5 or "
            "embedder.name=openai-compatible; needs --out")


def _set_overrides(assignments: Optional[list[str]], out: Optional[Path]) -> dict:
    """--set values as nested overrides; a changed configuration must not overwrite the committed
    reports, so it needs its own output folder."""
    overrides = parse_assignments(assignments)
    if overrides and out is None:
        _fail("--set changes the configuration: give --out so that the unchanged experiment's results are not "
              "overwritten")
    return overrides


EXECUTOR_HELP = ("where the work runs: local (this process, the default), ray (the Ray cluster in RAY_ADDRESS, "
                 "else a new one on this machine) or ray://HOST:PORT (Ray Client); ray needs harness[ray]")

PROFILE_HELP = f"machine profile: {', '.join(f'{p.name} ({p.description})' for p in PROFILES.values())}"


@command()
def run(experiment: Path = typer.Argument(..., help="experiment TOML, e.g. experiments/round4.toml"),
        preset: Optional[str] = typer.Option(None, help="override the experiment's preset"),
        out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
        profile: Optional[str] = typer.Option(None, help=PROFILE_HELP),
        set_: Optional[list[str]] = typer.Option(None, "--set", help=SET_HELP)) -> None:
    """Run one experiment: writes results.json and report.md, prints the table beside the seed."""
    overrides = merge(_set_overrides(set_, out), _profile_overrides(profile))
    from harness.reporting.markdown import load_seed_scores, print_round, write_round
    from harness.studies.experiment import run_experiment

    config = load_experiment(project_path(experiment), preset=preset, **overrides)
    result = run_experiment(config)
    seed = load_seed_scores(project_path(config.get("dataset", {}).get("path", "datasets/king78")))
    out_dir = write_round(result, out or default_output_dir(result.name, Path(config["experiment_file"]),
                                                            config.get("preset")), seed)
    print_round(result, seed)
    for note in result.dataset.get("notes", []) + result.notes:
        typer.echo(f"note: {note}")
    typer.echo(f"wrote {out_dir / 'results.json'} and {out_dir / 'report.md'}")


@command()
def ablation(preset: str = typer.Option(DEFAULT_PRESET, help="preset for all four rounds"),
             out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/ablation-<preset>/)"),
             rounds_out: Optional[Path] = typer.Option(None, "--rounds-out",
                                                       help="folder of each round's results (default: OUT/roundN/)"),
             profile: Optional[str] = typer.Option(None, help=PROFILE_HELP),
             set_: Optional[list[str]] = typer.Option(None, "--set", help=SET_HELP),
             executor: str = typer.Option("local", help=EXECUTOR_HELP)) -> None:
    """Run rounds 1-4 and write ablation.json, ablation.md and ablation.png; each round's results go to
    OUT/roundN/ (or ROUNDS_OUT/roundN/)."""
    overrides = merge(_set_overrides(set_, out), _profile_overrides(profile))
    from harness.reporting.markdown import (
        load_seed_scores,
        print_round,
        write_ablation,
        write_round,
    )
    from harness.studies.ablation import run_ablation

    seed = load_seed_scores(project_path("datasets/king78"))
    out_dir = Path(out or default_output_dir(f"ablation-{preset}"))

    def keep(round_no, result):  # written as soon as it finishes: kept if a later round fails
        write_round(result, Path(rounds_out or out_dir) / result.name, seed)
        print_round(result, seed)

    if executor == "local":
        results = run_ablation(preset, overrides=overrides, on_round=keep)
    else:
        from harness.studies.distributed import run_ablation_on
        from harness.studies.executor import make_executor

        with make_executor(executor) as ex:
            results = run_ablation_on(ex, preset, overrides=overrides, on_round=keep)
    doc = write_ablation(results, out_dir, seed)
    for line in doc["differences_from_seed"]:
        typer.echo(f"differs from seed: {line}")
    typer.echo(f"wrote {out_dir}/ablation.json, ablation.md, ablation.png")


@command()
def sweep(experiment: Path = typer.Argument(..., help="experiment TOML (king78 round, CMRC, your workspace)"),
          grid: Path = typer.Option(Path("experiments/sweep.toml"), help="grid TOML ([grid] table)"),
          preset: Optional[str] = typer.Option(None, help="override the experiment's preset"),
          out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/sweep-<name>-<hash>/)"),
          set_: Optional[list[str]] = typer.Option(None, "--set", help=SET_HELP),
          holdout: Optional[Path] = typer.Option(None, help="experiment TOML of held-out queries (e.g. "
                                                 "experiments/cmrc2018-trial.toml): score the recommendation there"),
          folds: int = typer.Option(5, min=2, help="cross-validation folds (leave-one-out when the suite has <= 20 "
                                    "queries)"),
          objective: str = typer.Option("pass", help="what the selection maximises: pass (suite passes, "
                                        "paraphrase hits, silent negatives) or abstention (the abstention "
                                        "utility, harness.evaluation.abstention; pair it with "
                                        "--grid experiments/sweep-abstention.toml)"),
          abstention_weight: float = typer.Option(0.5, min=0.0, max=1.0, help="--objective abstention: weight "
                                                  "of silence on unanswerable queries (1 - it: answered correctly)"),
          executor: str = typer.Option("local", help=EXECUTOR_HELP)) -> None:
    """Sweep vectorWeight x fusion x tokenizer x minScore; cross-validate the choice over queries and print
    the openclaw.json snippet only for a setting whose held-out gain is significant."""
    from harness.studies.sweep import load_grid, run_sweep
    from harness.studies.sweep_report import label, write_sweep

    overrides = _set_overrides(set_, out)
    config = load_experiment(project_path(experiment), preset=preset, **overrides)
    held_out = load_experiment(project_path(holdout), preset=preset) if holdout is not None else None
    if executor == "local":
        result = run_sweep(config, load_grid(project_path(grid)), folds=folds, holdout=held_out,
                           objective=objective, abstention_weight=abstention_weight)
    else:
        from harness.studies.executor import make_executor

        with make_executor(executor) as ex:
            result = run_sweep(config, load_grid(project_path(grid)), folds=folds, holdout=held_out, executor=ex,
                               objective=objective, abstention_weight=abstention_weight)
    suffix = "" if objective == "pass" else f"-{objective}"  # an abstention sweep never shares a pass sweep's folder
    out_dir = Path(out or default_output_dir(f"sweep-{config['name']}{suffix}", Path(config["experiment_file"]),
                                             config.get("preset"), project_path(grid).resolve()))
    doc = write_sweep(result, out_dir, config)
    d, b, cv = result.default, result.best, result.cv
    typer.echo(f"{len(result.settings)} settings in {result.timings['total_s']:.1f} s "
               f"(fused and scored in {result.timings['fuse_and_score_s']:.2f} s)")
    typer.echo(f"objective: {result.objective.description}")
    typer.echo(f"configured:     {label(d)}: objective {d['objective']:.3f}, passed {d['passed']}/{d['suite_queries']}")
    typer.echo(f"in-sample best: {label(b)}: objective {b['objective']:.3f}, passed {b['passed']}/{b['suite_queries']} "
               f"(max-statistic p = {result.selection.p_value:.3g} vs configured, selection accounted for)")
    typer.echo(f"cross-validated ({doc['cv']['scheme']}): held-out {cv.held_out_mean:.3f} vs configured "
               f"{cv.configured_mean:.3f}, gain {cv.gain.estimate:+.3f} [{cv.gain.low:+.3f}, {cv.gain.high:+.3f}], "
               f"p = {cv.p_value:.3g}")
    if result.recommended is not None:
        typer.echo(f"recommended: {label(result.recommended)} ({cv.reason})")
        typer.echo("openclaw.json snippet:\n" + doc["openclaw_snippet"])
        for item in doc["not_expressible_in_openclaw_json"]:
            typer.echo(f"not expressible in openclaw.json: {item}")
    else:
        typer.echo(f"{cv.reason[0].upper() + cv.reason[1:]}; no snippet.")
    if result.holdout:
        h = result.holdout
        typer.echo(f"held out ({h['experiment']}, {h['queries']} queries): {h['which']} objective "
                   f"{h['configured_mean']:.3f} -> {h['chosen_mean']:.3f}, gain {h['gain']['estimate']:+.3f} "
                   f"{[round(x, 3) for x in h['gain']['ci95']]}, p = {h['p_value']:.3g}")
    typer.echo(f"wrote {out_dir}/sweep.json, sweep.md, sweep.png")


@command()
def matrix(spec: Path = typer.Argument(..., help="matrix TOML, e.g. experiments/tokenizers.toml"),
           preset: Optional[str] = typer.Option(None, help="override every run's preset"),
           run: Optional[list[str]] = typer.Option(None, help="only these run labels (repeatable)"),
           out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
           redraw: bool = typer.Option(False, help="only redraw .md and .png from the existing .json"),
           executor: str = typer.Option("local", help=EXECUTOR_HELP)) -> None:
    """Vary one stage over several runs (tokenizer x round, chunker x data set) and report the matrix."""
    from harness.studies.matrix import (
        load_matrix,
        run_matrix,
        write_matrix,
        write_matrix_report,
    )

    matrix_spec = load_matrix(project_path(spec))
    out_dir = Path(out or default_output_dir(matrix_spec["name"], project_path(spec).resolve()))
    metrics = matrix_spec.get("metrics", ["passed", "mrr@6", "ndcg@10", "recall@1", "recall@5", "recall@10",
                                          "mrr@10", "text_score_nonzero_share", "index_ms_without_embedding",
                                          "lexical_p50_ms", "retrieval_p50_ms"])
    if redraw:
        doc = json.loads((out_dir / f"{matrix_spec['name']}.json").read_text(encoding="utf-8"))
        write_matrix_report(matrix_spec, doc, out_dir, metrics)
        typer.echo(f"redrew {out_dir}/{matrix_spec['name']}.md, .png")
        return
    if executor == "local":
        cells = run_matrix(matrix_spec, preset=preset, only_runs=run or None)
    else:  # embeds every cell's texts across the cluster first, then runs the cells there
        from harness.studies.distributed import run_matrix_on
        from harness.studies.executor import make_executor

        with make_executor(executor) as ex:
            cells = run_matrix_on(ex, matrix_spec, preset=preset, only_runs=run or None)
    write_matrix(matrix_spec, cells, out_dir, metrics)
    typer.echo(f"wrote {out_dir}/{matrix_spec['name']}.json, .md, .png ({len(cells)} cells)")


@command()
def abstention(spec: Path = typer.Argument(Path("experiments/abstention.toml"), help="abstention spec TOML"),
               out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
               redraw: bool = typer.Option(False, help="only redraw the Markdown and plot from the existing JSON")
               ) -> None:
    """Top-1 score distributions, AUROC of "nothing relevant" and the cross-validated minScore per preset."""
    from harness.reporting.abstention import write_abstention_report
    from harness.studies.abstention import (
        load_abstention_spec,
        run_abstention,
        write_abstention,
    )

    spec_file = spec
    spec = load_abstention_spec(project_path(spec_file))
    out_dir = Path(out or default_output_dir(spec["name"], project_path(spec_file).resolve()))
    if redraw:
        doc = json.loads((out_dir / f"{spec['name']}.json").read_text(encoding="utf-8"))
        doc.update(description=spec.get("description", ""), notes=spec.get("notes", ""))  # the spec's text
        typer.echo(f"redrew {write_abstention_report(doc, out_dir)}")
        return
    doc = write_abstention(spec, run_abstention(spec), out_dir)
    for run in doc["runs"]:
        auroc = run["auroc"]
        typer.echo(f"{run['label']} / {run['preset']}: AUROC {auroc['estimate']:.3f} "
                   f"[{auroc['ci95'][0]:.3f}, {auroc['ci95'][1]:.3f}], best minScore {run['best_threshold']:.4g} "
                   f"(U {run['best']['utility']:.3f}), recommended "
                   f"{'none' if run['recommended_threshold'] is None else format(run['recommended_threshold'], '.4g')}")
    typer.echo(f"wrote {out_dir}/{spec['name']}.json, .md, .png")


@command()
def benchmark(spec: Path = typer.Argument(..., help="benchmark TOML, e.g. experiments/benchmark-locomo.toml"),
              preset: Optional[list[str]] = typer.Option(None, help="these presets instead of the spec's (repeatable)"),
              run: Optional[list[str]] = typer.Option(None, help="only these run labels (repeatable)"),
              out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
              redraw: bool = typer.Option(False, help="only redraw the Markdown from the existing JSON")) -> None:
    """A public data set with one or more presets, per query group, beside the figures peers publish."""
    from harness.reporting.benchmark import write_benchmark_report
    from harness.studies.benchmark import load_benchmark, run_benchmark, write_benchmark

    bench = load_benchmark(project_path(spec))
    out_dir = Path(out or default_output_dir(bench["name"], project_path(spec).resolve()))
    if redraw:
        doc = json.loads((out_dir / f"{bench['name']}.json").read_text(encoding="utf-8"))
        typer.echo(f"redrew {write_benchmark_report(bench, doc, out_dir)}")
        return
    if (preset or run) and out is None:
        _fail("--preset/--run change what is run: give --out so that the whole benchmark's results are not "
              "overwritten")
    results = run_benchmark(bench, presets=preset or None, only_runs=run or None)
    doc = write_benchmark(bench, results, out_dir)
    for r in doc["runs"]:
        for note in r["dataset"].get("notes", []):
            typer.echo(f"note ({r['slug']}): {note}")
        typer.echo(f"{r['slug']}: {r['summary']['suite'].get('queries', 0)} suite queries in "
                   f"{r['timings']['total_s']:.1f} s (embeddings computed {r['timings']['embedding_cache'].get('computed', 0)})")
    typer.echo(f"wrote {out_dir}/{bench['name']}.json, {bench['name']}.md and one results.json per run")


@command()
def lossless(spec: Path = typer.Argument(..., help="lossless spec TOML, e.g. experiments/lossless-locomo.toml"),
             out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
             redraw: bool = typer.Option(False, help="only redraw the Markdown from the existing JSON")) -> None:
    """lossless-claw on LoCoMo: lcm_grep recall, the assembled context as the budget shrinks, the DAG's
    shape, beside the Markdown-memory presets; offline with the extractive summaries."""
    from harness.reporting.lossless import write_lossless_report
    from harness.studies.lossless import load_lossless, run_lossless, write_lossless

    loaded = load_lossless(project_path(spec))
    out_dir = Path(out or default_output_dir(loaded["name"], project_path(spec).resolve()))
    if redraw:
        doc = json.loads((out_dir / "lossless.json").read_text(encoding="utf-8"))
        typer.echo(f"redrew {write_lossless_report(loaded, doc, out_dir)}")
        return
    doc = run_lossless(loaded)
    typer.echo(f"wrote {write_lossless(loaded, doc, out_dir)} and lossless.json "
               f"({', '.join(f'{k} {v:.0f} s' for k, v in doc['timings_s'].items())})")


@command()
def expansion(spec: Path = typer.Argument(..., help="expansion spec TOML, e.g. experiments/expansion.toml"),
              out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
              redraw: bool = typer.Option(False, help="only redraw the Markdown from the existing JSON")) -> None:
    """QMD's query side: expansion variants of a preset with intervals and paired differences."""
    from harness.studies.expansion import (
        load_expansion_spec,
        run_expansion_study,
        write_expansion_study,
    )

    loaded = load_expansion_spec(project_path(spec))
    out_dir = Path(out or default_output_dir(loaded["name"], project_path(spec).resolve()))
    doc = (json.loads((out_dir / "expansion.json").read_text(encoding="utf-8")) if redraw
           else run_expansion_study(loaded))
    typer.echo(f"wrote {write_expansion_study(loaded, doc, out_dir)} and expansion.json")


@command()
def embed(experiments: list[Path] = typer.Argument(..., help="any TOML(s) of experiments/ (experiment, matrix, "
                                                   "benchmark, abstention, lossless...), e.g. experiments/chunkers.toml"),
          executor: str = typer.Option("local", help=EXECUTOR_HELP),
          batch_size: int = typer.Option(32, min=1, help="texts per task (and per cache transaction)"),
          preset: Optional[str] = typer.Option(None, help="override the experiment's preset (or the study's presets)"),
          set_: Optional[list[str]] = typer.Option(None, "--set", help="override one setting, TABLE.KEY=VALUE "
                                                   "(repeatable), e.g. embedder.name=openai-compatible")) -> None:
    """Fill the embedding cache with every chunk and query of the experiments not yet in it, in batches
    (on a Ray cluster with --executor ray); a run afterwards only reads the cache.  Interrupted, it
    keeps every finished batch: run it again to embed the rest."""
    from harness.progress import progress_bar
    from harness.studies.embed import fill_cache
    from harness.studies.executor import make_executor
    from harness.studies.matrix import configs_of

    overrides = parse_assignments(set_)  # nothing is written but the cache, so no --out is needed
    configs = [c for e in experiments for c in configs_of(project_path(e), preset=preset, **overrides)]
    with make_executor(executor) as ex, progress_bar(f"embedding batches ({ex.name}, {ex.workers} workers)") as bar:
        report = fill_cache(configs, executor=ex, batch_size=batch_size,
                            on_batch=lambda r, n: bar.update(completed=r.batches, total=n))
    typer.echo(f"{report.texts} texts ({', '.join(report.models)}): {report.cached} were cached, "
               f"{report.computed} embedded in {report.batches} batches, {report.seconds:.1f} s "
               f"({report.executor}, {report.workers} workers)")


@command(name="cache-key")
def cache_key(experiments: list[Path] = typer.Argument(..., help="experiment TOML(s) whose embeddings the cache holds"),
              preset: Optional[str] = typer.Option(None, help="override the experiment's preset (a name or a .toml path)"),
              set_: Optional[list[str]] = typer.Option(None, "--set", help="override one setting, TABLE.KEY=VALUE"),
              prefix: bool = typer.Option(False, "--prefix", help="print only the restore prefix (same model, any corpus)")
              ) -> None:
    """Print a CI cache key for the embedding cache: the model id and a hash of every text the experiments
    embed (`harness-embeddings-<model>-<corpus hash>`).  Nothing is embedded."""
    from harness.studies.embed import cache_key as compute_key
    from harness.studies.matrix import configs_of

    overrides = parse_assignments(set_)
    configs = [c for e in experiments for c in configs_of(project_path(e), preset=preset, **overrides)]
    key, restore = compute_key(configs)
    typer.echo(restore if prefix else key)


@command()
def diff(base: Path = typer.Argument(..., help="baseline results.json (or ablation.json)"),
         now: Path = typer.Argument(..., help="results.json (or ablation.json) to compare with it"),
         hits: int = typer.Option(3, min=1, help="returned chunks shown per side in the console and Markdown"),
         limit: Optional[int] = typer.Option(None, min=1, help="only the N queries that moved most (console)"),
         markdown: Optional[Path] = typer.Option(None, help="also write the diff as Markdown here"),
         html: Optional[Path] = typer.Option(None, help="also write a self-contained HTML page here")) -> None:
    """Queries whose rank, pass or top-1 changed between two runs, side by side with what each returned,
    ordered by how much they moved."""
    from harness.reporting.query_diff import (
        diff_html,
        diff_markdown,
        print_diff,
        write_text,
    )
    from harness.studies.query_diff import diff_files

    result = diff_files(base, now)
    print_diff(result, hits=hits, limit=limit)
    if markdown is not None:
        typer.echo(f"wrote {write_text(markdown, diff_markdown(result, hits=hits))}")
    if html is not None:
        typer.echo(f"wrote {write_text(html, diff_html(result))}")


@command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def scale(ctx: typer.Context) -> None:
    """How cost grows with corpus size (1k-100k chunks) against the memory-bandwidth limit; options as
    `python -m harness.studies.scale --help` (--quick, --sizes, --out, --queries ...)."""
    from harness.studies.scale import main as scale_main

    raise typer.Exit(scale_main(ctx.args))


@command()
def gate(results: Path = typer.Argument(..., help="results.json, ablation.json or `harness eval --json` scores to check"),
         baseline: Path = typer.Option(..., help="the committed baseline file (of the same kind) to compare with"),
         rule: Optional[list[str]] = typer.Option(None, help="METRIC:drop=X, METRIC:growth=R, METRIC:interval[=LEVEL] "
                                                   "or METRIC:paired[=ALPHA] (repeatable; after the gate file's "
                                                   "rules); default: quality may not regress"),
         gate_file: Optional[Path] = typer.Option(None, "--gate-file", help="TOML file of [gate] settings and "
                                                  "[[rule]] tables (see harness/studies/gate_file.py)"),
         junit: Optional[Path] = typer.Option(None, help="write JUnit XML here: a test case per metric and per query"),
         markdown: Optional[Path] = typer.Option(None, help="write a Markdown summary here (it is also appended "
                                                 "to $GITHUB_STEP_SUMMARY when that is set)")) -> None:
    """Regression gate: exit 1 and print the diff when a metric regressed beyond its rule or a query got
    worse beyond a near tie."""
    from harness.reporting.gate_report import write_junit, write_markdown
    from harness.studies.gate import run_gate

    result = run_gate(results, baseline, rule or None, gate_file)
    typer.echo(result.text())
    if junit is not None:
        typer.echo(f"wrote {write_junit(result, junit)}")
    for path in write_markdown(result, markdown):
        typer.echo(f"wrote {path}")
    raise typer.Exit(0 if result.passed else 1)


@command()
def export(results: Path = typer.Argument(..., help="results.json of a run"),
           out: Optional[Path] = typer.Option(None, help="output folder (default: export/ beside results.json)"),
           suite_only: bool = typer.Option(False, "--suite-only",
                                           help="only the round's suite queries (whose means the summary reports)")
           ) -> None:
    """Write the run's runs and qrels, chunk and document level, as TREC files and ranx JSON."""
    from harness.evaluation.run_files import export_results

    paths = export_results(results, out, suite_only=suite_only)
    typer.echo(f"wrote {len(paths)} files to {paths[0].parent}: " + ", ".join(p.name for p in paths))


DEFAULT_EVAL_METRICS = ["mrr@6", "ndcg@6", "recall@6"]  # the reports' cut-off: OpenClaw's maxResults


@command(name="eval")
def eval_(run: Path = typer.Option(..., help="run file: TREC (qid Q0 docid rank score tag) or ranx JSON"),
          qrels: Path = typer.Option(..., help="qrels file: TREC (qid 0 docid grade) or ranx JSON"),
          metric: Optional[list[str]] = typer.Option(None, help="mrr, ndcg, recall, precision, hit_rate, map with "
                                                     "@k, repeatable (default mrr@6 ndcg@6 recall@6)"),
          json_out: Optional[Path] = typer.Option(None, "--json", help="also write the scores (means and per "
                                                  "query) to this JSON file")) -> None:
    """Score a run from any system against qrels with the harness's metrics (means over judged queries)."""
    from rich.console import Console
    from rich.table import Table

    from harness.evaluation.run_files import score_run_files

    scores = score_run_files(run, qrels, metric or DEFAULT_EVAL_METRICS)
    typer.echo(f"{run} against {qrels}: mean over {scores['queries']} judged queries")
    table = Table()
    table.add_column("metric")
    table.add_column("mean", justify="right")
    for name, value in scores["mean"].items():
        table.add_row(name, f"{value:.4f}")
    Console().print(table)
    if scores["judged_without_results"]:
        typer.echo(f"{len(scores['judged_without_results'])} judged queries have no results in the run (scored 0)")
    if scores["unjudged_in_run"]:
        typer.echo(f"{len(scores['unjudged_in_run'])} queries of the run are not in the qrels (ignored)")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(scores, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        typer.echo(f"wrote {json_out}")


@command()
def init(workspace: Path = typer.Argument(..., help="OpenClaw workspace (holds MEMORY.md, memory/)"),
         out: Optional[Path] = typer.Option(None, help="folder for experiment.toml + queries.yaml "
                                                      "(default evals/<workspace name>/)"),
         config: Optional[Path] = typer.Option(None, help="openclaw.json (default: in the workspace, else beside it)"),
         queries: Optional[Path] = typer.Option(None, help="use this queries file instead of writing a template"),
         preset: str = typer.Option("openclaw-2026.08", help="preset that openclaw.json values override"),
         agent: Optional[str] = typer.Option(None, help="apply the agents.list[] overrides of this agent id"),
         force: bool = typer.Option(False, help="overwrite existing files"),
         now: Optional[str] = typer.Option(None, help="YYYY-MM-DD: the day temporal decay ages dated memory "
                                                      "files from (default: today)")) -> None:
    """Write an experiment TOML and a queries template for your own OpenClaw workspace."""
    from datetime import date

    from harness.inputs.workspace_init import init_workspace, workspace_slug

    try:
        day = date.fromisoformat(now) if now else None
    except ValueError:
        raise ConfigError(f"--now: expected a date YYYY-MM-DD, got {now!r}") from None
    r = init_workspace(workspace, out or Path("evals") / workspace_slug(workspace.resolve().name),
                       config=config, queries=queries, preset=preset, agent=agent, force=force, now=day)
    typer.echo(f"{r.files} files will be indexed; openclaw.json: {r.config or 'none (preset defaults)'}")
    for note in r.notes:
        typer.echo(f"note: {note}")
    typer.echo(f"wrote {r.experiment}" + ("" if queries else f" and {r.queries}"))
    if queries:  # the user's own queries file, checked against the workspace: nothing to edit first
        typer.echo(f"queries: {r.queries}\nnext: harness run {r.experiment}")
    else:
        typer.echo(f"next: edit {r.queries}, then: harness run {r.experiment}")


@command()
def report(results: Path = typer.Argument(..., help="results.json of a run, or an ablation.json"),
           out: Optional[Path] = typer.Option(None, help="HTML file (default: report.html beside results.json, "
                                                        "ablation.html beside ablation.json)"),
           ablation: Optional[Path] = typer.Option(None, help="ablation.json whose rounds are added to the page")) -> None:
    """Write one self-contained HTML page (tables, snippets, embedded charts; no network needed)."""
    from harness.reporting.html import write_report

    path = write_report(results, out, ablation)
    typer.echo(f"wrote {path}")


@command()
def validate(path: Path = typer.Argument(Path("datasets/king78"))) -> None:
    """Validate a king78-style data set (records, daily logs, queries)."""
    counts = validate_king78(project_path(path))
    typer.echo(json.dumps(counts, ensure_ascii=False, indent=1))


@command()
def render(experiment: Path, out: Path = typer.Option(..., help="new or empty folder to render into")) -> None:
    """Render the workspace an experiment indexes (for inspection) with its provenance.json."""
    from harness.pipeline import dataset_parts, load_dataset

    config = load_experiment(project_path(experiment))
    for scope, part in dataset_parts(load_dataset(config)):
        dest = out if scope is None else out / scope  # a scoped data set: one workspace per scope
        layout = part.render(dest=dest, **config.get("layout", {}))
        typer.echo(f"rendered {len(layout.files)} files and {len(layout.spans)} provenance spans into {dest}")


@command()
def presets() -> None:
    """List the presets (experiments/presets/*.toml)."""
    for name, first_line in list_presets().items():
        typer.echo(f"{name:24s} {first_line}")


@command()
def stages(table: Optional[str] = typer.Argument(None, help="only this table: dataset, chunker, tokenizer, "
                                                               "lexical, embedder, vector, fusion, postprocess"),
           as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """List every registered stage (plugins included) with its parameters, types, defaults and documentation."""
    from dataclasses import asdict

    from harness.catalog import describe, registries

    if table is not None and table not in registries():
        _fail(f"unknown table {table!r}; one of {', '.join(registries())}")
    items = describe(table)
    if as_json:
        typer.echo(json.dumps([asdict(i) for i in items], ensure_ascii=False, indent=1, default=repr))
        return
    for item in items:
        typer.echo(f"[{item.table}] {item.name}  ({item.module})\n    {item.doc}")
        for p in item.parameters:
            default = "required" if p.required else f"default {p.default!r}"
            typer.echo(f"    {p.name}: {p.type} = {default}" + (f"  # {p.doc}" if p.doc else ""))


@command()
def schema(out: Optional[Path] = typer.Option(None, help="write the JSON schema here instead of printing it")) -> None:
    """JSON schema of experiment and preset files, for editors (e.g. the Even Better TOML extension)."""
    from harness.catalog import experiment_schema

    text = json.dumps(experiment_schema(), ensure_ascii=False, indent=1)
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text + "\n", encoding="utf-8")
        typer.echo(f"wrote {out}")


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
