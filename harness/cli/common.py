"""What every command shares: the typer app, the `command` decorator that turns the harness's own
errors into one-line errors (anything else is a bug, with its traceback under --debug), and the options
several commands take."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from typer.exceptions import TyperException

from harness import __version__
from harness.errors import HarnessError
from harness.profiles import PROFILES, apply_profile, get_profile
from harness.run_folders import check_output  # noqa: F401  (the commands' check of --out, before any work)
from harness.text_files import os_problem

# show_locals off: a traceback must never print local variables (an API key could be one of them)
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False,
                  help="Evaluate hybrid (vector + BM25) agent-memory retrieval. See README.md and docs/.")

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


def fail(message: str) -> None:
    # one line, whatever the message held (a parser's multi-line report)
    message = "; ".join(line.strip() for line in str(message).splitlines() if line.strip())
    from harness.redact import mask_secrets

    message = mask_secrets(message)  # whatever a message's writer echoed, no key reaches the terminal
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


def _internal(exc: BaseException) -> None:
    """Anything but the harness's own errors (and a path's OSError) is a bug: said so, exit 3."""
    if _options["debug"]:
        raise exc
    typer.secho(f"internal error: {type(exc).__name__}: {exc}\n"
                "This is a bug in the harness, not in your input; rerun with --debug for the traceback and report it.",
                fg=typer.colors.RED, err=True)
    raise typer.Exit(3) from None


def command(*args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`@app.command` whose HarnessError becomes a one-line error; any other exception is a bug."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def run(*a: Any, **k: Any) -> Any:
            try:
                return func(*a, **k)
            except HarnessError as exc:
                fail(str(exc))
            except (typer.Exit, typer.Abort, TyperException):
                raise
            except OSError as exc:
                if exc.filename is None or _options["debug"]:
                    _internal(exc)
                # a path the user gave, or the machine it runs on (a full disk, a read-only folder): theirs
                # to fix, named with what to do
                fail(f"{exc.filename}: {os_problem(exc)}")
            except Exception as exc:
                _internal(exc)

        return app.command(*args, **kwargs)(run)

    return decorate


def profile_overrides(profile: Optional[str]) -> dict:
    """Apply a --profile before numpy and the embedder start their thread pools."""
    if profile is None:
        return {}
    apply_profile(get_profile(profile))
    return {"profile": {"name": profile}}


SET_HELP = ("override one setting, TABLE.KEY=VALUE (repeatable), e.g. fusion.vector_weight=0.5 or "
            "embedder.name=openai-compatible; needs --out")


def set_overrides(assignments: Optional[list[str]], out: Optional[Path]) -> dict:
    """--set values as nested overrides; a changed configuration must not overwrite the committed
    reports, so it needs its own output folder."""
    from harness.config import parse_assignments

    overrides = parse_assignments(assignments)
    if overrides and out is None:
        fail("--set changes the configuration: give --out so that the unchanged experiment's results are not "
              "overwritten")
    return overrides


EXECUTOR_HELP = ("where the work runs: local (this process, the default), ray (the Ray cluster in RAY_ADDRESS, "
                 "else a new one on this machine) or ray://HOST:PORT (Ray Client); ray needs harness\\[ray]")

PROFILE_HELP = f"machine profile: {', '.join(f'{p.name} ({p.description})' for p in PROFILES.values())}"


def echo_study(done: Any) -> None:
    """Print what a study function of harness.study returned (a StudyRun): an experiment's table, then
    the lines the command prints."""
    if done.round_table is not None:
        from harness.reporting.markdown import print_round

        print_round(*done.round_table)
    for line in done.lines:
        typer.echo(line)
