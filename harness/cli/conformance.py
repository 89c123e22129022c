"""`make conformance` (`python -m harness.cli.conformance`): the presets against the real systems
(harness.conformance.runner measures and gates), then the report (harness.reporting.conformance)
and, after a complete run that passed, the comparison modules' own report folders."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from harness.errors import HarnessError
from harness.reporting.conformance import write_report
from harness.reporting.real_ablation import write_outputs as write_real_ablation
from harness.conformance import runner
from harness.conformance.runner import DEFAULT_OUT, MODULES, SIZES, measure_conformance


def real_ablation_outputs(out: Path) -> list[Path]:
    """reports/real-ablation/ (beside OUT): the real runs' ablation analysed (harness.studies.ablation_analysis),
    then written (harness.reporting.real_ablation); nothing after a partial run."""
    from harness.studies.ablation_analysis import ablation_document, load_seed_scores, reproduction_tolerance
    from harness.conformance.real_ablation import RESULTS, ROUNDS

    real = RESULTS.get("real", {})
    if set(real) != set(ROUNDS):
        return []
    from harness.inputs.layout import project_path

    seed = load_seed_scores(project_path("datasets/king78"))
    return write_real_ablation(out.parent, ablation_document(real, seed, reproduction_tolerance()))


def lancedb_pro_recording(out: Path) -> list[Path]:
    """OUT/lancedb-pro/recorded.json: the plugin's outputs of this run, which the default size replays."""
    from harness.reporting.lancedb_pro_recording import write_recording

    return write_recording(out)


# a comparison module -> the writer of its own outputs (given the report folder, reports/conformance/)
MODULE_OUTPUTS = {"harness.conformance.real_ablation": real_ablation_outputs,
                  "harness.conformance.lancedb_pro": lancedb_pro_recording}


def run_conformance(out_dir: Path | str = DEFAULT_OUT, *, accept: bool = False, refresh: bool = False,
                    modules: Sequence[str] = MODULES, workspaces: Sequence[str] | None = None,
                    size: str = "full") -> int:
    """The whole run (harness.conformance.runner's docstring); returns the process exit code."""
    run = measure_conformance(out_dir, accept=accept, refresh=refresh, modules=modules, workspaces=workspaces,
                              size=size)
    if isinstance(run, int):
        return run
    out, checks, loaded, failures = run.out, run.checks, run.modules, run.failures
    # only a full run that measured every committed row replaces the committed report (or --accept); a
    # smaller size, or a module that skipped, writes beside it and loses none of its rows
    if run.partial or failures:
        suffix = ".partial" if run.partial else ".new"
    elif run.size != "full":
        suffix = f".{run.size}"
    else:
        suffix = ".incomplete" if run.unmeasured and not accept else ""
    paths = write_report(out, checks, loaded, run.workspaces, suffix=suffix)
    if run.unmeasured:
        print(f"conformance: {run.unmeasured} gated rows of the committed report were not measured by this run "
              f"(size {run.size}; the full size, `make conformance CONFORMANCE_SIZE=full`, measures them, unless a "
              "module said above why it skipped)")
    if not suffix:  # a module's own outputs (reports/real-ablation/, reports/conformance/lancedb-pro/)
        for module in loaded:
            write_outputs = MODULE_OUTPUTS.get(module.__name__)
            if write_outputs is not None:
                paths += write_outputs(out)
    gated = [c for c in checks if c.gated]
    agreed, total = sum(c.agreed for c in gated), sum(c.total for c in gated)
    print(f"conformance: {agreed}/{total} gated items agree; wrote {', '.join(str(p) for p in paths)}")
    if failures:
        print("conformance: FAILED, agreement dropped below the committed report:\n  " + "\n  ".join(failures),
              file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.cli.conformance", description=runner.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=SIZES, default="default",
                    help="default: what CI runs (no LoCoMo hybrid runs, no full-size module), gated against the "
                         "committed report, written as conformance.default.*; full: everything, rewrites the "
                         "committed report")
    ap.add_argument("--out", default=DEFAULT_OUT, help="report folder (default reports/conformance)")
    ap.add_argument("--accept", action="store_true", help="write the figures even if some agreement dropped")
    ap.add_argument("--refresh", action="store_true", help="rerun the real systems instead of using cached runs")
    ap.add_argument("--workspace", action="append",
                    help="only these workspaces, e.g. round3 (no gate; written as conformance.partial.*)")
    ap.add_argument("--module", action="append",
                    help="only these comparison modules, by dotted name: harness.conformance.qmd, or a module of "
                         "your own installed package (NAME, SYSTEMS, compare; harness.conformance.base)")
    args = ap.parse_args(argv)
    try:
        return run_conformance(args.out, accept=args.accept, refresh=args.refresh, workspaces=args.workspace,
                               size=args.size, modules=args.module or MODULES)
    except HarnessError as exc:
        print(f"conformance: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
