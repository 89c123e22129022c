"""`python -m harness.cli.openclaw_home_report` (`make openclaw-home`): the own-agent walkthrough on the example
installation (harness.studies.openclaw_home_report's docstring), driving the harness's commands end to end
(init, run, judge, sweep) and writing reports/openclaw-home/."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.reporting.documents import write_document
from harness.reporting.judge import write_judge_report
from harness.reporting.sweep import write_sweep
from harness.studies import openclaw_home_report
from harness.studies.openclaw_home_report import (
    EXAMPLE,
    GRADES,
    PROVIDER_PORT,
    apply_grades,
    summary_figures,
    validate_snippet,
)


def _scrub(path: Path, evals: Path, shown: str = "evals/openclaw-main") -> None:
    """A copied report without the temporary folder it was made in: its paths as a user's default --out."""
    path.write_text(path.read_text(encoding="utf-8").replace(str(evals), shown), encoding="utf-8")


def make_report(out: Path, *, home: Path = EXAMPLE, grades: Path = GRADES, port: int = PROVIDER_PORT) -> dict[str, Any]:
    """The walkthrough (harness.studies.openclaw_home_report's docstring) run end to end; writes `out`."""
    from harness.config import load_experiment
    from harness.inputs.home_init import init_openclaw_home
    from harness.studies.experiment import run_experiment
    from harness.judging.run import finish, prepare
    from harness.systems.openclaw_agent import start_embedding_server
    from harness.studies.sweep import run_sweep
    from harness.studies.sweep_grid import load_grid

    out.mkdir(parents=True, exist_ok=True)
    server, _, _ = start_embedding_server(port)

    doc: dict[str, Any] = {"installation": str(home), "grades": str(grades), "cpu_count": os.cpu_count()}
    try:
        with tempfile.TemporaryDirectory(prefix="openclaw-home-report-") as tmp:
            evals = Path(tmp) / "evals"
            t0 = time.perf_counter()
            init_openclaw_home(home, evals)
            doc["init_seconds"] = time.perf_counter() - t0
            init_doc = json.loads((evals / "init.json").read_text(encoding="utf-8"))
            for key in ("sessions", "queries", "implicit", "vectors", "index_findings", "release", "preset"):
                doc[key] = init_doc[key]
            shutil.copyfile(evals / "init.md", out / "init.md")
            _scrub(out / "init.md", evals)
            exp, holdout = evals / "experiment.toml", evals / "holdout.toml"

            t0 = time.perf_counter()
            implicit_experiment = load_experiment(exp)
            implicit = run_experiment(implicit_experiment, progress=False)
            doc["run_seconds"] = time.perf_counter() - t0
            k = int(implicit_experiment.search.max_results)
            doc["k"] = k
            doc["implicit_run"] = {**summary_figures(implicit.summary, k), "notes": implicit.notes,
                                   "embedding_cache": implicit.timings.get("embedding_cache")}

            t0 = time.perf_counter()
            session = prepare([exp, holdout], log=lambda s: None, progress=False)
            doc["pool_seconds"] = time.perf_counter() - t0
            doc["grading"] = apply_grades(session.pool, session.store, grades)
            judge_doc = write_judge_report(finish(session), session.judge_dir, session.redact)
            doc["pool"] = {k2: judge_doc[k2] for k2 in ("depth", "configurations", "queries", "items", "graded",
                                                        "queries_fully_graded", "grades")}
            doc["agreement"] = judge_doc["agreement"]
            shutil.copyfile(session.judge_dir / "judge.md", out / "judge.md")
            _scrub(out / "judge.md", evals)

            judged_exp, judged_holdout = evals / "experiment.judged.toml", evals / "holdout.judged.toml"
            judged = run_experiment(load_experiment(judged_exp), progress=False)
            doc["judged_run"] = {**summary_figures(judged.summary, k), "notes": judged.notes}
            held = run_experiment(load_experiment(judged_holdout), progress=False)
            doc["judged_holdout_run"] = summary_figures(held.summary, k)

            config = load_experiment(judged_exp)
            from harness.studies.sweep_grid import default_grid

            t0 = time.perf_counter()
            result = run_sweep(config, load_grid(default_grid(config)), progress=False,
                               holdout=load_experiment(judged_holdout))
            doc["sweep_seconds"] = time.perf_counter() - t0
            sweep_dir = Path(tmp) / "sweep"
            sweep_doc = write_sweep(result, sweep_dir, config.as_written())
            shutil.copyfile(sweep_dir / "sweep.md", out / "sweep.md")
            _scrub(out / "sweep.md", sweep_dir, "SWEEP_OUT")
            _scrub(out / "sweep.md", evals)
            column = next((c for c in result.settings.columns if str(c).startswith("judged@")), None)
            doc["sweep"] = {
                "settings": len(result.settings), "recommended": result.recommended is not None,
                "reason": result.cv.reason.replace(str(sweep_dir), "SWEEP_OUT"),
                "configured_objective": float(result.settings.loc[result.default_index, "objective"]),
                "best_objective": float(result.settings.loc[result.best_index, "objective"]),
                "judged_column": column,
                "judged_configured": float(result.settings.loc[result.default_index, column]) if column else None,
                "judged_best": float(result.settings.loc[result.best_index, column]) if column else None,
                "unjudged_refusal": result.unjudged is not None,
                # judged@k of the configured setting is 1 by construction (its own top k is in the judging pool);
                # the settings outside it show how complete the judgments are for anything else
                "judged_others": judged_outside_pool(result.settings, column, result.default_index) if column else None,
                "holdout": {key: result.holdout[key] for key in ("which", "setting", "configured", "queries",
                                                                "configured_mean", "chosen_mean", "gain", "p_value",
                                                                "p_floor", "unit", "units")} if result.holdout else None,
                "snippet": sweep_doc.get("openclaw_snippet"),
                "not_expressible": sweep_doc.get("not_expressible_in_openclaw_json"),
            }
            from harness.inputs.openclaw_config import snippet_block
            from harness.inputs.openclaw_releases import layout_for
            from harness.studies.sweep_grid import grid_tables

            chosen = result.cv.recommended if result.cv.recommended is not None else result.best_index
            tables = grid_tables(result.grid[chosen], config, result.tokenizer_tables)
            block, cannot = snippet_block(tables, preset=config.preset, complete_postprocess=True)
            layout = layout_for(config.preset)
            doc["snippet_checked"] = {"setting": "recommended" if result.cv.recommended is not None else
                                      "in-sample best (not recommended)", "block": layout.block if layout else None,
                                      "keys": block, "cannot": cannot}
            if layout is not None and block:
                doc["snippet_checked"]["real_release"] = validate_snippet(layout.release, home / "openclaw.json",
                                                                          block, layout.block)
    finally:
        server.terminate()
        server.wait(timeout=10)
    write_document(out / "report.json", "openclaw-home", doc)
    return doc


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=openclaw_home_report.__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports/openclaw-home"))
    args = parser.parse_args()
    doc = make_report(args.out)
    print(f"wrote {args.out}/report.json: {doc['queries']['distinct']} queries, pool of {doc['pool']['items']} chunks, "
          f"sweep recommended: {doc['sweep']['recommended']}")
    return 0


def judged_outside_pool(settings: Any, column: str, configured: int) -> dict[str, Any] | None:
    """judged@k over the sweep's settings other than the configured one: min, median, max, and how many of
    them have an unjudged chunk in their top k."""
    values = settings[column].drop(index=configured).astype(float)
    values = values[values == values]
    if values.empty:
        return None
    return {"settings": int(len(values)), "min": float(values.min()), "median": float(values.median()),
            "max": float(values.max()), "below_one": int((values < 1 - 1e-12).sum())}


if __name__ == "__main__":
    raise SystemExit(main())
