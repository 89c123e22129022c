"""Commands on one run and its results: run, ablation, report, diff, gate, export, eval."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import (
    DEFAULT_PRESET,
    EXECUTOR_HELP,
    PROFILE_HELP,
    SET_HELP,
    check_output,
    command,
    echo_study,
    profile_overrides,
    set_overrides,
)


@command()
def run(experiment: Path = typer.Argument(..., help="experiment TOML, e.g. experiments/round4.toml"),
        preset: Optional[str] = typer.Option(None, help="override the experiment's preset"),
        out: Optional[Path] = typer.Option(None, help="output folder (default ./harness-results/<name>-<hash>/)"),
        profile: Optional[str] = typer.Option(None, help=PROFILE_HELP),
        set_: Optional[list[str]] = typer.Option(None, "--set", help=SET_HELP),
        system: Optional[str] = typer.Option(None, help="run a real system instead of the preset, e.g. "
                                             "openclaw@2026.9.6 (installed from npm on first use; the "
                                             "experiment's embedder is its provider)"),
        redact: bool = typer.Option(False, "--redact", help="mask numbers, e-mail addresses, URLs and key-like strings "
                                    "of the queries and chunks in the console table, report.md and the pages (as "
                                    "\\[evaluation] redact = true)")) -> None:
    """Run one experiment: writes results.json and report.md, prints the table beside the seed."""
    from harness.config import merge

    overrides = merge(set_overrides(set_, out), profile_overrides(profile))
    if redact:
        overrides = merge(overrides, {"evaluation": {"redact": True}})
    from harness.study import run_experiment_file

    echo_study(run_experiment_file(experiment, preset=preset, out=out, overrides=overrides, system=system))


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
    from harness.config import merge

    overrides = merge(set_overrides(set_, out), profile_overrides(profile))
    from harness.reporting.markdown import print_round
    from harness.study import run_ablation_study

    echo_study(run_ablation_study(preset, out=out, rounds_out=rounds_out, overrides=overrides, executor=executor,
                                  on_round=print_round))


@command()
def diff(base: Path = typer.Argument(..., help="baseline results.json (or ablation.json)"),
         now: Path = typer.Argument(..., help="results.json (or ablation.json) to compare with it"),
         hits: int = typer.Option(3, min=1, help="returned chunks shown per side in the console and Markdown"),
         limit: Optional[int] = typer.Option(None, min=1, help="only the N queries that moved most (console)"),
         markdown: Optional[Path] = typer.Option(None, help="also write the diff as Markdown here"),
         html: Optional[Path] = typer.Option(None, help="also write a self-contained HTML page here"),
         allow_confound: Optional[list[str]] = typer.Option(
             None, "--allow-confound", help="embedder, result-count, candidate-pool, corpus or all: the runs may "
             "differ in it because that is the point (repeatable; otherwise such runs are refused)")) -> None:
    """Queries whose rank, pass or top-1 changed between two runs, side by side with what each returned,
    ordered by how much they moved."""
    from harness.reporting.query_diff import (
        diff_html,
        diff_markdown,
        print_diff,
        write_text,
    )
    from harness.studies.query_diff import diff_files

    check_output(markdown, folder=False, option="--markdown")
    check_output(html, folder=False, option="--html")
    result = diff_files(base, now, allow_confound or ())
    print_diff(result, hits=hits, limit=limit)
    if markdown is not None:
        typer.echo(f"wrote {write_text(markdown, diff_markdown(result, hits=hits))}")
    if html is not None:
        typer.echo(f"wrote {write_text(html, diff_html(result))}")


@command()
def gate(results: Path = typer.Argument(..., help="results.json, ablation.json or `harness eval --json` scores to check"),
         baseline: Path = typer.Option(..., help="the committed baseline file (of the same kind) to compare with"),
         rule: Optional[list[str]] = typer.Option(None, help="METRIC:drop=X, METRIC:growth=R, METRIC:interval[=LEVEL] "
                                                   "or METRIC:paired[=ALPHA] (repeatable; after the gate file's "
                                                   "rules); default: quality may not regress"),
         gate_file: Optional[Path] = typer.Option(None, "--gate-file", help="TOML file of \\[gate] settings and "
                                                  "\\[\\[rule]] tables (see harness/gate/file.py)"),
         junit: Optional[Path] = typer.Option(None, help="write JUnit XML here: a test case per metric and per query"),
         markdown: Optional[Path] = typer.Option(None, help="write a Markdown summary here (it is also appended "
                                                 "to $GITHUB_STEP_SUMMARY when that is set)"),
         allow_confound: Optional[list[str]] = typer.Option(
             None, "--allow-confound", help="embedder, result-count, candidate-pool, corpus or all: the files' runs "
             "may differ in it because that is the point (repeatable; otherwise such files are refused)")) -> None:
    """Regression gate: exit 1 and print the diff when a metric regressed beyond its rule or a query got
    worse beyond a near tie."""
    from harness.reporting.gate_report import write_junit, write_markdown
    from harness.gate.run import run_gate

    check_output(junit, folder=False, option="--junit")
    check_output(markdown, folder=False, option="--markdown")
    result = run_gate(results, baseline, rule or None, gate_file, allow_confound or ())
    written = [write_junit(result, junit)] if junit is not None else []
    written += write_markdown(result, markdown)  # the outputs first: a verdict is printed only once they exist
    typer.echo(result.text())
    for path in written:
        typer.echo(f"wrote {path}")
    raise typer.Exit(0 if result.passed else 1)


@command()
def export(results: Path = typer.Argument(..., help="results.json of a run"),
           out: Optional[Path] = typer.Option(None, help="output folder (default: export/ beside results.json)"),
           suite_only: bool = typer.Option(False, "--suite-only",
                                           help="only the round's suite queries (whose means the summary reports)"),
           level: Optional[list[str]] = typer.Option(None, help="chunk or document, repeatable (default both)"),
           trec_only: bool = typer.Option(False, "--trec-only", help="only the TREC files, no ranx JSON"),
           ) -> None:
    """Write the run's runs and qrels, chunk and document level, as TREC files and ranx JSON."""
    from harness.evaluation.run_files import export_results

    check_output(out, folder=True)
    export = export_results(results, out, suite_only=suite_only, levels=level or None, ranx=not trec_only)
    typer.echo(f"wrote {len(export.written)} files to {export.folder}: " + ", ".join(p.name for p in export.written))
    for line in export.not_written:
        typer.echo(f"not written: {line}")


DEFAULT_EVAL_METRICS = ["mrr@6", "ndcg@6", "recall@6"]  # the reports' cut-off: OpenClaw's maxResults


@command(name="eval")
def eval_(run: Path = typer.Option(..., help="run file: TREC (qid Q0 docid rank score tag) or ranx JSON"),
          qrels: Path = typer.Option(..., help="qrels file: TREC (qid 0 docid grade) or ranx JSON"),
          metric: Optional[list[str]] = typer.Option(None, help="mrr, ndcg, recall, precision, hit_rate, map with "
                                                     "@k, repeatable (default mrr@6 ndcg@6 recall@6)"),
          json_out: Optional[Path] = typer.Option(None, "--json", help="also write the scores (means and per "
                                                  "query) to this JSON file"),
          ties: str = typer.Option("id_order", help="equal scores: 'id_order' (trec_eval: by document id) or "
                                   "'expected' (the mean over every order of the tied documents, as the "
                                   "harness's record-level figures)")) -> None:
    """Score a run from any system against qrels with the harness's metrics (means over judged queries)."""
    from rich.console import Console
    from rich.table import Table

    from harness.evaluation.run_files import score_run_files

    check_output(json_out, folder=False, option="--json")
    scores = score_run_files(run, qrels, metric or DEFAULT_EVAL_METRICS, ties=ties)
    typer.echo(f"{run} against {qrels}: mean over {scores['queries']} judged queries (ties: {ties})")
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
        from harness.reporting.documents import write_document

        write_document(json_out, "eval", scores)
        typer.echo(f"wrote {json_out}")


@command()
def report(results: Path = typer.Argument(..., help="results.json of a run, or an ablation.json"),
           out: Optional[Path] = typer.Option(None, help="HTML file (default: report.html beside results.json, "
                                                        "ablation.html beside ablation.json)"),
           ablation: Optional[Path] = typer.Option(None, help="ablation.json whose rounds are added to the page")) -> None:
    """Write one self-contained HTML page (tables, snippets, embedded charts; no network needed)."""
    from harness.reporting.html import write_report

    check_output(out, folder=False)
    path = write_report(results, out, ablation)
    typer.echo(f"wrote {path}")
