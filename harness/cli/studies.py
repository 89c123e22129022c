"""Commands that drive many runs: sweep, matrix, abstention, benchmark, language-pairs, lossless, expansion,
scale, and the embedding cache they share (embed, cache-key)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import (
    EXECUTOR_HELP,
    SET_HELP,
    check_output,
    command,
    fail,
    read_written_study,
    set_overrides,
)
from harness.inputs.layout import project_path
from harness.run_folders import default_output_dir


@command()
def sweep(experiment: Path = typer.Argument(..., help="experiment TOML (king78 round, CMRC, your workspace)"),
          grid: Optional[Path] = typer.Option(None, help="grid TOML (\\[grid] table); default experiments/sweep.toml, "
                                              "and experiments/sweep-openclaw.toml (every setting openclaw.json "
                                              "has a key for) for an OpenClaw workspace"),
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
    from harness.config import load_experiment
    from harness.evaluation.cross_validation import kind_sentence
    from harness.reporting.markdown import difference_text, interval_text, p_cell
    from harness.reporting.sweep import (
        label,
        other_releases,
        stage_link_lines,
        write_sweep,
    )
    from harness.studies.sweep import default_grid, load_grid, run_sweep

    overrides = set_overrides(set_, out)
    config = load_experiment(project_path(experiment), preset=preset, **overrides)
    held_out = load_experiment(project_path(holdout), preset=preset) if holdout is not None else None
    grid = grid if grid is not None else default_grid(config)
    suffix = "" if objective == "pass" else f"-{objective}"  # an abstention sweep never shares a pass sweep's folder
    out_dir = Path(out or default_output_dir(f"sweep-{config.name}{suffix}", Path(config.experiment_file),
                                             config.preset, project_path(grid).resolve()))
    check_output(out_dir, folder=True)
    if executor == "local":
        result = run_sweep(config, load_grid(project_path(grid)), folds=folds, holdout=held_out,
                           objective=objective, abstention_weight=abstention_weight)
    else:
        from harness.studies.executor import make_executor

        with make_executor(executor) as ex:
            result = run_sweep(config, load_grid(project_path(grid)), folds=folds, holdout=held_out, executor=ex,
                               objective=objective, abstention_weight=abstention_weight)
    from harness.run_folders import published

    with published(out_dir, "sweep.json") as folder:  # a killed sweep never leaves it looking complete
        doc = write_sweep(result, folder, config.as_written())
    d, b, cv = result.default, result.best, result.cv
    typer.echo(f"{len(result.settings)} settings in {result.timings['total_s']:.1f} s "
               f"(fused and scored in {result.timings['fuse_and_score_s']:.2f} s)")
    typer.echo(f"objective: {result.objective.description}")
    typer.echo(f"configured:     {label(d)}: objective {d['objective']:.3f}, passed {d['passed']}/{d['suite_queries']}")
    typer.echo(f"in-sample best: {label(b)}: objective {b['objective']:.3f}, passed {b['passed']}/{b['suite_queries']} "
               f"(max-statistic p = {result.selection.p_text()} vs configured, selection accounted for)")
    typer.echo(f"cross-validated ({doc['cv']['scheme']}): held-out {cv.held_out_mean:.3f} vs configured "
               f"{cv.configured_mean:.3f}, gain {interval_text(cv.gain.estimate, [cv.gain.low, cv.gain.high], sign='+')}, "
               f"p = {cv.p_text}")
    if cv.carried_by:
        typer.echo(f"the gain rests on the {cv.carried_by}: {kind_sentence(cv.by_kind)}")
    if result.recommended is not None:
        typer.echo(f"recommended: {label(result.recommended)} ({cv.reason})")
        if doc["openclaw_snippet"] is not None:
            partial = "; what it cannot set follows" if doc["not_expressible_in_openclaw_json"] else ""
            typer.echo(f"openclaw.json snippet (the settings that change{partial}):\n" + doc["openclaw_snippet"])
        else:
            typer.echo("none of the change can be written in this release's openclaw.json")
        for item in doc["not_expressible_in_openclaw_json"]:
            typer.echo(f"not expressible in openclaw.json: {item}{other_releases(item)}")
    else:
        typer.echo(f"{cv.reason[0].upper() + cv.reason[1:]}; no snippet.")
    for line in stage_link_lines(doc):
        typer.echo(line)
    if result.holdout:
        h = result.holdout
        typer.echo(f"held out ({h['experiment']}, {h['queries']} queries): {h['which']} objective "
                   f"{h['configured_mean']:.3f} -> {h['chosen_mean']:.3f}, gain {difference_text(h['gain'])}, "
                   f"p = {p_cell(h)}")
    typer.echo(f"wrote {out_dir}/sweep.json, sweep.md, sweep.png")


@command()
def matrix(spec: Path = typer.Argument(..., help="matrix TOML, e.g. experiments/tokenizers.toml"),
           preset: Optional[str] = typer.Option(None, help="override every run's preset"),
           run: Optional[list[str]] = typer.Option(None, help="only these run labels (repeatable)"),
           out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
           redraw: bool = typer.Option(False, help="only redraw .md and .png from the existing .json"),
           executor: str = typer.Option("local", help=EXECUTOR_HELP)) -> None:
    """Vary one stage over several runs (tokenizer x round, chunker x data set) and report the matrix."""
    from harness.reporting.matrix import write_matrix, write_matrix_report
    from harness.studies.matrix import load_matrix, run_matrix

    matrix_spec = load_matrix(project_path(spec))
    out_dir = Path(out or default_output_dir(matrix_spec["name"], project_path(spec).resolve()))
    check_output(out_dir, folder=True)
    metrics = matrix_spec.get("metrics", ["passed", "mrr@6", "ndcg@10", "recall@1", "recall@5", "recall@10",
                                          "mrr@10", "text_score_nonzero_share", "index_ms_without_embedding",
                                          "lexical_p50_ms", "retrieval_p50_ms"])
    if redraw:
        doc = read_written_study(out_dir / f"{matrix_spec['name']}.json")
        write_matrix_report(matrix_spec, doc, out_dir, metrics)
        typer.echo(f"redrew {out_dir}/{matrix_spec['name']}.md, .png")
        return
    if executor == "local":
        cells = run_matrix(matrix_spec, preset=preset, only_runs=run or None)
    else:  # embeds every cell's texts across the cluster first, then runs the cells there
        from harness.studies.executor import make_executor

        with make_executor(executor) as ex:
            cells = run_matrix(matrix_spec, preset=preset, only_runs=run or None, executor=ex)
    from harness.run_folders import published

    with published(out_dir, f"{matrix_spec['name']}.json") as folder:
        write_matrix(matrix_spec, cells, folder, metrics)
    typer.echo(f"wrote {out_dir}/{matrix_spec['name']}.json, .md, .png ({len(cells)} cells)")


@command()
def abstention(spec: Path = typer.Argument(Path("experiments/abstention.toml"), help="abstention spec TOML"),
               out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
               redraw: bool = typer.Option(False, help="only redraw the Markdown and plot from the existing JSON")
               ) -> None:
    """Top-1 score distributions, AUROC of "nothing relevant" and the cross-validated minScore per preset."""
    from harness.reporting.abstention import redraw_abstention, write_abstention
    from harness.studies.abstention import load_abstention_spec, run_abstention

    spec_file = spec
    spec = load_abstention_spec(project_path(spec_file))
    out_dir = Path(out or default_output_dir(spec["name"], project_path(spec_file).resolve()))
    check_output(out_dir, folder=True)
    if redraw:
        doc = read_written_study(out_dir / f"{spec['name']}.json")
        typer.echo(f"redrew {redraw_abstention(spec, doc, out_dir)} with the spec's text")
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
    from harness.reporting.benchmark import write_benchmark, write_benchmark_report
    from harness.studies.benchmark import load_benchmark, run_benchmark

    bench = load_benchmark(project_path(spec))
    out_dir = Path(out or default_output_dir(bench["name"], project_path(spec).resolve()))
    check_output(out_dir, folder=True)
    if redraw:
        doc = read_written_study(out_dir / f"{bench['name']}.json")
        typer.echo(f"redrew {write_benchmark_report(bench, doc, out_dir)}")
        return
    if (preset or run) and out is None:
        fail("--preset/--run change what is run: give --out so that the whole benchmark's results are not "
              "overwritten")
    results = run_benchmark(bench, presets=preset or None, only_runs=run or None)
    doc = write_benchmark(bench, results, out_dir)
    for r in doc["runs"]:
        for note in r["dataset"].get("notes", []):
            typer.echo(f"note ({r['slug']}): {note}")
        typer.echo(f"{r['slug']}: {r['summary']['suite'].get('queries', 0)} suite queries in "
                   f"{r['timings']['total_s']:.1f} s (embeddings computed {r['timings']['embedding_cache'].get('computed', 0)})")
    typer.echo(f"wrote {out_dir}/{bench['name']}.json, {bench['name']}.md and one results.json per run")


@command("language-pairs")
def language_pairs(spec: Path = typer.Argument(..., help="language-pairs TOML, e.g. experiments/paired-locomo-zh.toml"),
                   out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
                   redraw: bool = typer.Option(False, help="only redraw the Markdown and PNG from the existing JSON")
                   ) -> None:
    """The same questions in two languages (Chinese LoCoMo and its English originals): pair them, then per
    system (from benchmark and matrix runs already written) the per-question difference with intervals,
    per category, and which stage lost the evidence."""
    from harness.reporting.language_pairs import (
        write_language_pairs,
        write_language_pairs_report,
    )
    from harness.studies.language_pairs import load_pairs_spec, run_language_pairs

    loaded = load_pairs_spec(project_path(spec))
    out_dir = Path(out or default_output_dir(loaded["name"], project_path(spec).resolve()))
    if redraw:
        doc = read_written_study(out_dir / f"{loaded['name']}.json")
        typer.echo(f"redrew {write_language_pairs_report(loaded, doc, out_dir)}")
        return
    doc = run_language_pairs(loaded)
    total = doc["pairing"]["total"]
    typer.echo(f"paired {total['questions_paired']} of {total['questions'][1]} questions "
               f"({doc['pairing']['mismatch_count']} mismatches); {len(doc['systems'])} systems compared")
    typer.echo(f"wrote {write_language_pairs(loaded, doc, out_dir)}, {loaded['name']}.md and {loaded['name']}.png")


@command()
def lossless(spec: Path = typer.Argument(..., help="lossless spec TOML, e.g. experiments/lossless-locomo.toml"),
             out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
             redraw: bool = typer.Option(False, help="only redraw the Markdown from the existing JSON")) -> None:
    """lossless-claw on LoCoMo: lcm_grep recall, the assembled context as the budget shrinks, the DAG's
    shape, beside the Markdown-memory presets; offline with the extractive summaries."""
    from harness.reporting.lossless import write_lossless, write_lossless_report
    from harness.studies.lossless import load_lossless, run_lossless

    loaded = load_lossless(project_path(spec))
    out_dir = Path(out or default_output_dir(loaded["name"], project_path(spec).resolve()))
    check_output(out_dir, folder=True)
    if redraw:
        doc = read_written_study(out_dir / "lossless.json")
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
    from harness.reporting.expansion import write_expansion_study
    from harness.studies.expansion import load_expansion_spec, run_expansion_study

    loaded = load_expansion_spec(project_path(spec))
    out_dir = Path(out or default_output_dir(loaded["name"], project_path(spec).resolve()))
    check_output(out_dir, folder=True)
    doc = (read_written_study(out_dir / "expansion.json") if redraw
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
    from harness.config import parse_assignments
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
    from harness.config import parse_assignments
    from harness.studies.embed import cache_key as compute_key
    from harness.studies.matrix import configs_of

    overrides = parse_assignments(set_)
    configs = [c for e in experiments for c in configs_of(project_path(e), preset=preset, **overrides)]
    key, restore = compute_key(configs)
    typer.echo(restore if prefix else key)


@command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def scale(ctx: typer.Context) -> None:
    """How cost grows with corpus size (1k-100k chunks) against the memory-bandwidth limit; options as
    `python -m harness.studies.scale --help` (--quick, --sizes, --out, --queries ...)."""
    from harness.cli.scale import main as scale_main

    raise typer.Exit(scale_main(ctx.args))
