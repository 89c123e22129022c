"""What every command shares: the typer app, the `command` decorator that turns the harness's own
errors into one-line errors (anything else is a bug, with its traceback under --debug), and the options
several commands take."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from typer.core import TyperGroup, TyperOption
from typer.exceptions import TyperException

from harness import __version__
from harness.errors import HarnessError
from harness.profiles import PROFILES, apply_profile, get_profile
# at the top, not in fail(): the error path must import nothing (a run stopped by its memory cap has no memory
# left to load a module, and the MemoryError would replace the one-line error: tests/test_campaign.py)
from harness.redact import mask_secrets
from harness.run_folders import check_output  # noqa: F401  (the commands' check of --out, before any work)
from harness.text_files import os_problem

# The commands a newcomer reaches for, listed first (and in this order) in `harness --help`; the others follow
# under "More commands", in the order their modules define them.
COMMON_COMMANDS = ("init", "run", "sweep", "report", "gate", "judge", "diff", "study", "docs")


class _Commands(TyperGroup):
    """The app's command list: the common commands first, the rest in their own panel."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        first = [n for n in COMMON_COMMANDS if n in names]
        return first + [n for n in names if n not in first]

    def get_command(self, ctx: Any, name: str) -> Any:
        cmd = super().get_command(ctx, name)
        if cmd is not None and name not in COMMON_COMMANDS and getattr(cmd, "rich_help_panel", None) is None:
            cmd.rich_help_panel = "More commands"
        return cmd


def _flags_without_a_type() -> None:
    """typer (0.2x) shows a type beside every option, `<bool>` beside an on/off flag, which takes no value:
    the flags show none."""
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_harness", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> Any:
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    display_type_rich._harness = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_without_a_type()

# show_locals off: a traceback must never print local variables (an API key could be one of them)
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False, cls=_Commands,
                  help="Evaluate hybrid (vector + BM25) agent-memory retrieval of your own OpenClaw memory or "
                       "a shipped experiment: start with `harness init WORKSPACE` or `harness run EXPERIMENT`. "
                       "`harness docs` prints where the documentation is (the README travels with the package: "
                       "`harness docs readme`).")

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
