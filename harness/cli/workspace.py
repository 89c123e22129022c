"""Commands on inputs and the catalogue: init (an OpenClaw workspace), validate, render, presets, stages,
schema."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import (
    check_output,
    command,
    fail,
)
from harness.errors import ConfigError
from harness.inputs.layout import project_path


@command()
def init(workspace: Optional[Path] = typer.Argument(None, help="OpenClaw workspace (holds MEMORY.md, memory/); "
                                                               "without it (or with --openclaw-home) the installation "
                                                               "in ~/.openclaw is read"),
         openclaw_home: Optional[Path] = typer.Option(None, "--openclaw-home",
                                                      help="an OpenClaw installation (its state folder, default "
                                                           "~/.openclaw): the agent's sessions become the queries"),
         out: Optional[Path] = typer.Option(None, help="folder for experiment.toml + queries.yaml "
                                                      "(default evals/<workspace name>/)"),
         config: Optional[Path] = typer.Option(None, help="openclaw.json (default: in the workspace, else beside it)"),
         queries: Optional[Path] = typer.Option(None, help="use this queries file instead of writing a template"),
         preset: str = typer.Option("openclaw-2026.08", help="preset that openclaw.json values override"),
         agent: Optional[str] = typer.Option(None, help="the agent (its agents.entries.<id> or agents.list[] overrides)"),
         force: bool = typer.Option(False, help="replace an existing experiment.toml (kept as experiment.toml.bak); "
                                                "a queries file is never replaced"),
         now: Optional[str] = typer.Option(None, help="YYYY-MM-DD or today: the day temporal decay ages dated "
                                                      "memory files from (default: the day after the newest "
                                                      "daily log, when that is before today)"),
         tuning_share: float = typer.Option(0.7, help="--openclaw-home: the earliest share of the queries (whole "
                                                      "sessions) for tuning, the later ones held out"),
         redact: bool = typer.Option(False, help="--openclaw-home: mask numbers, e-mail addresses, URLs and key-like "
                                                 "strings in every report and page"),
         index_vectors: bool = typer.Option(True, help="--openclaw-home: use the vectors the agent's index holds (off: "
                                                       "the preset's own embedding model)"),
         reembed: bool = typer.Option(False, help="--openclaw-home: embed the corpus and the queries with the model "
                                                  "openclaw.json configures (its OpenAI-compatible endpoint), not the "
                                                  "index's vectors: for an index built with another model")) -> None:
    """Write an experiment for your own OpenClaw workspace (a queries template), or, with --openclaw-home, for
    an installation: the agent's own questions from its sessions, judged by what it read."""
    from datetime import date

    from harness.inputs.workspace_init import init_workspace, workspace_slug

    if workspace is not None and openclaw_home is not None:
        raise ConfigError("give a workspace or --openclaw-home, not both (an installation names its own workspace)")
    if workspace is None:
        if queries is not None or config is not None or now is not None:
            raise ConfigError("--queries, --config and --now are for a workspace; --openclaw-home reads them from the "
                              "installation (openclaw.json, the sessions, the last session's day)")
        _init_home(openclaw_home or Path("~/.openclaw"), out, agent, None if preset == "openclaw-2026.08" else preset,
                   tuning_share, redact, index_vectors, force, reembed)
        return

    try:
        day = date.today() if now == "today" else date.fromisoformat(now) if now is not None else None
    except ValueError:
        raise ConfigError(f"--now: expected a date YYYY-MM-DD or today, got {now!r}") from None
    out = out or Path("evals") / workspace_slug(workspace.resolve().name)
    check_output(out, folder=True)
    # relative paths as every command reads them: `datasets/example-workspace` is the bundled copy outside a clone
    r = init_workspace(project_path(workspace), out, config=project_path(config) if config else None,
                       queries=project_path(queries) if queries else None, preset=preset, agent=agent, force=force,
                       now=day)
    typer.echo(f"{r.files} files will be indexed; openclaw.json: {r.config or 'none (preset defaults)'}")
    for note in r.notes:
        typer.echo(f"note: {note}")
    if now is None:
        typer.echo(f"evaluated as of {r.now}: {r.now_reason}")
    for line in r.kept:
        typer.echo(f"kept: {line}")
    wrote_queries = not queries and not any(str(r.queries) in line for line in r.kept)
    typer.echo(f"wrote {r.experiment}" + (f" and {r.queries}" if wrote_queries else ""))
    if queries:  # the user's own queries file, checked against the workspace: nothing to edit first
        typer.echo(f"queries: {r.queries}\nnext: harness run {r.experiment}")
    else:
        typer.echo(f"next: edit {r.queries}, then: harness run {r.experiment}")


def _init_home(home: Path, out: Optional[Path], agent: Optional[str], preset: Optional[str], tuning_share: float,
               redact: bool, index_vectors: bool, force: bool, reembed: bool = False) -> None:
    from harness.inputs.home_init import init_openclaw_home
    from harness.reporting.home_report import shown, write_init

    if not 0 < tuning_share <= 1:
        raise ConfigError(f"--tuning-share: must be in (0, 1], got {tuning_share}")
    folder = out or Path("evals") / f"openclaw-{agent or 'main'}"
    r = init_openclaw_home(home, folder, agent=agent, preset=preset, tuning_share=tuning_share, redact=redact,
                           index_vectors=index_vectors, force=force, reembed=reembed)
    write_init(r, redact=redact)
    m, inst = r.mining, r.installation
    typer.echo(f"agent {inst.agent!r} of {shown(inst.home)}: workspace {shown(inst.workspace)}")
    if inst.index_path:
        typer.echo(f"memory index {shown(inst.index_path)}: the OpenClaw {r.release} format; preset {r.preset}")
    formats = ", ".join(f"{n} in the {f} format" for f, n in m.formats.items())
    typer.echo(f"sessions: {m.sessions} read ({formats}), {m.sessions_with_searches} with a memory search")
    languages = ", ".join(f"{lang} {n}" for lang, n in m.by_language().items())
    dropped = ", ".join(f"{n} {why}" for why, n in m.dropped.items()) or "none"
    typer.echo(f"queries: {m.calls} memory_search calls -> {len(m.queries)} distinct ({languages}); "
               f"{m.duplicates} repeats counted once; dropped: {dropped}")
    typer.echo(f"split by time: {len(m.split('tuning'))} tuning" + (f" (before {m.cut.astimezone(r.tz).date()})" if m.cut else "")
               + f", {len(m.split('held-out'))} held out (later)")
    positives = sum(j.grade > 0 for q in m.queries for j in q.implicit)
    zeros = sum(j.grade == 0 for q in m.queries for j in q.implicit)
    with_positive = sum(any(j.grade > 0 for j in q.implicit) for q in m.queries)
    typer.echo(f"implicit judgments: {positives} chunks read or cited, {zeros} passed over before a reformulation; "
               f"{with_positive} queries have one (labelled implicit)")
    if r.imported is not None:
        typer.echo(f"vectors: {r.imported.imported} chunk vectors of {r.imported.model_id} imported into the embedding "
                   f"cache in {r.imported.seconds:.2f} s: runs use the index's own vectors, no corpus embedding")
    for finding in (r.report.findings() if r.report else []):
        typer.echo(f"index: {finding}")
    for note in r.notes + m.stats.notes():
        typer.echo(f"note: {note}")
    written = [r.files[k] for k in ("experiment.toml", "holdout.toml", "queries.yaml", "holdout.yaml", "pool.toml",
                                    "init.md") if k in r.files]
    typer.echo("wrote " + ", ".join(shown(p) for p in written))
    typer.echo(f"next: harness run {shown(r.files['experiment.toml'])}  (then: harness judge "
               f"{shown(r.files['experiment.toml'])})")


@command()
def validate(path: Path = typer.Argument(Path("datasets/king78"))) -> None:
    """Validate a king78-style data set (records, daily logs, queries)."""
    from harness.inputs.king78 import validate_king78

    counts = validate_king78(project_path(path))
    typer.echo(json.dumps(counts, ensure_ascii=False, indent=1))


@command()
def render(experiment: Path, out: Path = typer.Option(..., help="new or empty folder to render into")) -> None:
    """Render the workspace an experiment indexes (for inspection) with its provenance.json."""
    from harness.config import load_experiment
    from harness.pipeline import dataset_parts, load_dataset, render_layout

    check_output(out, folder=True)
    config = load_experiment(project_path(experiment))
    for scope, part in dataset_parts(load_dataset(config)):
        dest = out if scope is None else out / scope  # a scoped data set: one workspace per scope
        layout = render_layout(part, config, dest)
        typer.echo(f"rendered {len(layout.files)} files and {len(layout.spans)} provenance spans into {dest}")


@command()
def presets() -> None:
    """List the presets the harness ships (`--preset NAME` in run, init and the studies)."""
    from harness.config import list_presets

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
        fail(f"unknown table {table!r}; one of {', '.join(registries())}")
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
def schema(out: Optional[Path] = typer.Option(None, help="write the JSON schema here instead of printing it"),
           kind: str = typer.Option("experiment", help="the kind of study file: experiment (and preset), matrix, "
                                    "benchmark, abstention, lossless, expansion, language-pairs or grid")) -> None:
    """JSON schema of one kind of study file (default: experiment and preset files), for editors (e.g. the
    Even Better TOML extension)."""
    from harness.studies.spec import study_schema

    check_output(out, folder=False)
    text = json.dumps(study_schema(kind), ensure_ascii=False, indent=1)
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text + "\n", encoding="utf-8")
        typer.echo(f"wrote {out}")
