"""Any make target, then `make test`, is green on any machine (issue 35): README.md and docs/ are renderings of
reports/, so every target that writes a report re-renders them as its last step, and a regenerated report (this
machine's timings, cache counts, embedding drift) never leaves a page that differs from its rendering."""
import os
import re
import subprocess

from tests.conftest import ROOT

# Targets that read reports/ (or only name it) and write none of it.
READERS = {"gate", "compare-reports", "docs", "bench", "clean"}


def recipes() -> dict[str, tuple[str, list[str]]]:
    """target -> (its help text, its recipe lines), from the Makefile."""
    out: dict[str, tuple[str, list[str]]] = {}
    current = None
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([a-zA-Z0-9_-]+):[^=]*?(?:## (.*))?$", line)
        if m and not line.startswith("\t"):
            current = m.group(1)
            out[current] = (m.group(2) or "", [])
        elif line.startswith("\t") and current:
            out[current][1].append(line.strip())
        elif line.strip() and not line.startswith("#"):
            current = None
    return out


def writes_reports(help_text: str, lines: list[str]) -> bool:
    text = " ".join(lines)
    return bool(re.search(r"--out\s+(reports|\$\((ROUNDS|ABLATION)_DIR\))|--benchmark-save|reports/", text + " " + help_text)
                or "harness.cli.conformance" in text)


def test_every_target_that_writes_reports_re_renders_the_docs_last():
    found = {t: lines for t, (help_text, lines) in recipes().items()
             if t not in READERS and writes_reports(help_text, lines)}
    assert {"round4", "ablation", "conformance", "sweep", "presets"} <= set(found)
    missing = [t for t, lines in found.items() if not lines or lines[-1] != "$(DOCS)"]
    assert missing == [], f"targets that write reports/ but do not end with $(DOCS): {missing}"


def test_the_main_job_then_the_suite_renders_the_docs_after_the_report():
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}  # under `make test`
    dry = subprocess.run(["make", "-n", "--no-print-directory", "round4"], cwd=ROOT, capture_output=True, text=True,
                         check=True, env=env).stdout
    commands = [c for c in dry.splitlines() if c.strip()]
    run = next(i for i, c in enumerate(commands) if " run experiments/round4.toml" in c)
    assert "harness.reporting.docs" in commands[-1] and run < len(commands) - 1


def test_ci_runs_the_readmes_two_commands_in_the_readmes_order():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    order = [c for c in re.findall(r"^make (\w+)", ci, re.M)]
    assert readme.index("make round4") < readme.index("make test")
    assert order[:2] == ["round4", "test"], order
