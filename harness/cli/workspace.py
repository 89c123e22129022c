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
from harness.config import list_presets, load_experiment
from harness.errors import ConfigError
from harness.inputs.king78 import validate_king78
from harness.inputs.layout import project_path


@command()
def init(workspace: Path = typer.Argument(..., help="OpenClaw workspace (holds MEMORY.md, memory/)"),
         out: Optional[Path] = typer.Option(None, help="folder for experiment.toml + queries.yaml "
                                                      "(default evals/<workspace name>/)"),
         config: Optional[Path] = typer.Option(None, help="openclaw.json (default: in the workspace, else beside it)"),
         queries: Optional[Path] = typer.Option(None, help="use this queries file instead of writing a template"),
         preset: str = typer.Option("openclaw-2026.08", help="preset that openclaw.json values override"),
         agent: Optional[str] = typer.Option(None, help="apply the agents.list[] overrides of this agent id"),
         force: bool = typer.Option(False, help="replace an existing experiment.toml (kept as experiment.toml.bak); "
                                                "a queries file is never replaced"),
         now: Optional[str] = typer.Option(None, help="YYYY-MM-DD: the day temporal decay ages dated memory "
                                                      "files from (default: today)")) -> None:
    """Write an experiment TOML and a queries template for your own OpenClaw workspace."""
    from datetime import date

    from harness.inputs.workspace_init import init_workspace, workspace_slug

    try:
        day = date.fromisoformat(now) if now is not None else None
    except ValueError:
        raise ConfigError(f"--now: expected a date YYYY-MM-DD, got {now!r}") from None
    out = out or Path("evals") / workspace_slug(workspace.resolve().name)
    check_output(out, folder=True)
    r = init_workspace(workspace, out,
                       config=config, queries=queries, preset=preset, agent=agent, force=force, now=day)
    typer.echo(f"{r.files} files will be indexed; openclaw.json: {r.config or 'none (preset defaults)'}")
    for note in r.notes:
        typer.echo(f"note: {note}")
    for line in r.kept:
        typer.echo(f"kept: {line}")
    wrote_queries = not queries and not any(str(r.queries) in line for line in r.kept)
    typer.echo(f"wrote {r.experiment}" + (f" and {r.queries}" if wrote_queries else ""))
    if queries:  # the user's own queries file, checked against the workspace: nothing to edit first
        typer.echo(f"queries: {r.queries}\nnext: harness run {r.experiment}")
    else:
        typer.echo(f"next: edit {r.queries}, then: harness run {r.experiment}")


@command()
def validate(path: Path = typer.Argument(Path("datasets/king78"))) -> None:
    """Validate a king78-style data set (records, daily logs, queries)."""
    counts = validate_king78(project_path(path))
    typer.echo(json.dumps(counts, ensure_ascii=False, indent=1))


@command()
def render(experiment: Path, out: Path = typer.Option(..., help="new or empty folder to render into")) -> None:
    """Render the workspace an experiment indexes (for inspection) with its provenance.json."""
    from harness.pipeline import dataset_parts, load_dataset, render_layout

    check_output(out, folder=True)
    config = load_experiment(project_path(experiment))
    for scope, part in dataset_parts(load_dataset(config)):
        dest = out if scope is None else out / scope  # a scoped data set: one workspace per scope
        layout = render_layout(part, config, dest)
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
def schema(out: Optional[Path] = typer.Option(None, help="write the JSON schema here instead of printing it")) -> None:
    """JSON schema of experiment and preset files, for editors (e.g. the Even Better TOML extension)."""
    from harness.catalog import experiment_schema

    check_output(out, folder=False)
    text = json.dumps(experiment_schema(), ensure_ascii=False, indent=1)
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text + "\n", encoding="utf-8")
        typer.echo(f"wrote {out}")
