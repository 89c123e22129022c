"""Commands that drive many runs: sweep, matrix, abstention, benchmark, language-pairs, lossless, expansion,
scale, and the embedding cache they share (embed, cache-key)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import (
    EXECUTOR_HELP,
    SET_HELP,
    command,
    echo_study,
    set_overrides,
)
from harness.inputs.layout import project_path


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
          executor: str = typer.Option("local", help=EXECUTOR_HELP),
          redraw: bool = typer.Option(False, help="only redraw sweep.md and sweep.png from the existing sweep.json")
          ) -> None:
    """Sweep vectorWeight x fusion x tokenizer x minScore; cross-validate the choice over queries and print
    the openclaw.json snippet only for a setting whose held-out gain is significant."""
    from harness.study import redraw_sweep_file, run_sweep_file

    if redraw:  # the run's folder found from the same options (--grid, --preset, --set, --objective)
        echo_study(redraw_sweep_file(experiment, grid=grid, preset=preset, out=out,
                                     overrides=set_overrides(set_, out), objective=objective))
        return
    echo_study(run_sweep_file(experiment, grid=grid, preset=preset, out=out, overrides=set_overrides(set_, out),
                              holdout=holdout, folds=folds, objective=objective,
                              abstention_weight=abstention_weight, executor=executor))


YES_HELP = ("go on past the size bound (harness.studies.announce: more than 1,000 cells, or HARNESS_CONFIRM_ABOVE) "
            "after the count and estimate are printed")


@command()
def matrix(spec: Path = typer.Argument(..., help="matrix TOML, e.g. experiments/tokenizers.toml"),
           preset: Optional[str] = typer.Option(None, help="override every run's preset"),
           run: Optional[list[str]] = typer.Option(None, help="only these run labels (repeatable)"),
           out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
           redraw: bool = typer.Option(False, help="only redraw .md and .png from the existing .json"),
           executor: str = typer.Option("local", help=EXECUTOR_HELP),
           yes: bool = typer.Option(False, "--yes", help=YES_HELP)) -> None:
    """Vary one stage over several runs (tokenizer x round, chunker x data set) and report the matrix."""
    from harness.studies.announce import confirmed
    from harness.study import redraw_matrix_file, run_matrix_file

    with confirmed(yes):
        echo_study(redraw_matrix_file(spec, out=out) if redraw
                   else run_matrix_file(spec, preset=preset, runs=run, out=out, executor=executor))


@command()
def abstention(spec: Path = typer.Argument(Path("experiments/abstention.toml"), help="abstention spec TOML"),
               out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
               redraw: bool = typer.Option(False, help="only redraw the Markdown and plot from the existing JSON"),
               recalibrate: bool = typer.Option(False, help="calibrate anew from the per-query scores the existing "
                                                "JSON stores (no search)"),
               yes: bool = typer.Option(False, "--yes", help=YES_HELP)) -> None:
    """Top-1 score distributions, AUROC of "nothing relevant" and the cross-validated minScore per preset."""
    from harness.studies.announce import confirmed
    from harness.study import (
        recalibrate_abstention_file,
        redraw_abstention_file,
        run_abstention_file,
    )

    with confirmed(yes):
        echo_study(recalibrate_abstention_file(spec, out=out) if recalibrate else
                   redraw_abstention_file(spec, out=out) if redraw else run_abstention_file(spec, out=out))


@command()
def benchmark(spec: Path = typer.Argument(..., help="benchmark TOML, e.g. experiments/benchmark-locomo.toml"),
              preset: Optional[list[str]] = typer.Option(None, help="these presets instead of the spec's (repeatable)"),
              run: Optional[list[str]] = typer.Option(None, help="only these run labels (repeatable)"),
              out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
              redraw: bool = typer.Option(False, help="only redraw the Markdown from the existing JSON"),
              yes: bool = typer.Option(False, "--yes", help=YES_HELP)) -> None:
    """A public data set with one or more presets, per query group, beside the figures peers publish."""
    from harness.studies.announce import confirmed
    from harness.study import redraw_benchmark_file, run_benchmark_file

    with confirmed(yes):
        echo_study(redraw_benchmark_file(spec, out=out) if redraw
                   else run_benchmark_file(spec, presets=preset, runs=run, out=out))


@command("language-pairs")
def language_pairs(spec: Path = typer.Argument(..., help="language-pairs TOML, e.g. experiments/paired-locomo-zh.toml"),
                   out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
                   redraw: bool = typer.Option(False, help="only redraw the Markdown and PNG from the existing JSON")
                   ) -> None:
    """The same questions in two languages (Chinese LoCoMo and its English originals): pair them, then per
    system (from benchmark and matrix runs already written) the per-question difference with intervals,
    per category, and which stage lost the evidence."""
    from harness.study import redraw_language_pairs_file, run_language_pairs_file

    echo_study(redraw_language_pairs_file(spec, out=out) if redraw else run_language_pairs_file(spec, out=out))


@command()
def lossless(spec: Path = typer.Argument(..., help="lossless spec TOML, e.g. experiments/lossless-locomo.toml"),
             out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
             redraw: bool = typer.Option(False, help="only redraw the Markdown from the existing JSON")) -> None:
    """lossless-claw on LoCoMo: lcm_grep recall, the assembled context as the budget shrinks, the DAG's
    shape, beside the Markdown-memory presets; offline with the extractive summaries."""
    from harness.study import redraw_lossless_file, run_lossless_file

    echo_study(redraw_lossless_file(spec, out=out) if redraw else run_lossless_file(spec, out=out))


@command()
def expansion(spec: Path = typer.Argument(..., help="expansion spec TOML, e.g. experiments/expansion.toml"),
              out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
              redraw: bool = typer.Option(False, help="only redraw the Markdown from the existing JSON"),
              yes: bool = typer.Option(False, "--yes", help=YES_HELP)) -> None:
    """QMD's query side: expansion variants of a preset with intervals and paired differences."""
    from harness.studies.announce import confirmed
    from harness.study import redraw_expansion_file, run_expansion_file

    with confirmed(yes):
        echo_study(redraw_expansion_file(spec, out=out) if redraw else run_expansion_file(spec, out=out))


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
    from harness.studies.plan import configs_of

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
    from harness.studies.plan import configs_of

    overrides = parse_assignments(set_)
    configs = [c for e in experiments for c in configs_of(project_path(e), preset=preset, **overrides)]
    key, restore = compute_key(configs)
    typer.echo(restore if prefix else key)


@command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def scale(ctx: typer.Context) -> None:
    """How cost grows with corpus size (1k-100k chunks) against the memory-bandwidth limit; its options
    (--quick, --sizes, --out, --queries ...): `harness scale -h`."""
    from harness.cli.scale import main as scale_main

    raise typer.Exit(scale_main(ctx.args))
