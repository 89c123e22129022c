"""The gate's verdict in the forms CI systems read: JUnit XML and a Markdown summary.

JUnit (`harness gate --junit FILE`): one <testsuite> "metrics" with a test case per checked metric, and
one <testsuite> per round (one "queries" for a run) with a test case per query, named `ID: text`, so
GitHub, GitLab and Jenkins list which queries flipped.  A case fails when its metric regressed or its
query got worse beyond a near tie; a near-tie flip passes and says so in its <system-out>.  The file
follows the JUnit schema Jenkins validates against (tests/data/junit-10.xsd), which GitLab and the
GitHub test-report actions read too.

Markdown (`--markdown FILE`, and appended to $GITHUB_STEP_SUMMARY when that is set): the verdict, a
table of metric, baseline, now, the baseline's interval and the verdict, then the flipped queries with
their margins and whether each is a near tie.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from harness.gate.run import Check, GateResult, QueryCase, summary_intervals

if TYPE_CHECKING:
    from harness.evaluation.statistics import Interval

SNIPPET = 70  # characters of a query's text in a test case name


def _suite_of(case: QueryCase) -> str:
    return case.key.split(".", 1)[0] if case.key.startswith("round") and "." in case.key else "queries"


def case_name(case: QueryCase) -> str:
    qid = case.key.split(".", 1)[1] if _suite_of(case) != "queries" else case.key
    text = " ".join(case.text.split())
    return f"{qid}: {text[:SNIPPET]}{'…' if len(text) > SNIPPET else ''}" if text else qid


def junit_xml(result: GateResult) -> ET.ElementTree:
    stamp = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    root = ET.Element("testsuites", name="harness gate")
    metrics = ET.SubElement(root, "testsuite", name="metrics", timestamp=stamp)
    ET.SubElement(ET.SubElement(metrics, "properties"), "property", name="rules", value=result.rule_source)
    for check in result.checks:
        case = ET.SubElement(metrics, "testcase", name=check.metric, classname="harness.gate.metrics", time="0")
        if not check.ok:
            _failure(case, check.line()[5:], _check_body(check))
    suites: dict[str, ET.Element] = {}
    for qcase in result.cases:
        name = _suite_of(qcase)
        if name not in suites:
            suites[name] = ET.SubElement(root, "testsuite", name=name, timestamp=stamp)
        case = ET.SubElement(suites[name], "testcase", name=case_name(qcase),
                             classname=f"harness.gate.{name}", time="0")
        if qcase.fails:
            _failure(case, qcase.message(), _query_body(qcase))
        else:
            ET.SubElement(case, "system-out").text = _query_body(qcase)
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        failures = sum(c.find("failure") is not None for c in cases)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("skipped", "0")
        suite.set("time", "0")
    suites_all = root.findall("testsuite")
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in suites_all)))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in suites_all)))
    root.set("errors", "0")
    root.set("time", "0")
    ET.indent(root)
    return ET.ElementTree(root)


def _failure(case: ET.Element, message: str, body: str) -> None:
    failure = ET.SubElement(case, "failure", message=message, type="regression")
    failure.text = body


def _check_body(check: Check) -> str:
    return f"{check.line()}\nfrom {check.rule.source or check.rule.pattern} ({check.rule.kind})"


def _query_body(case: QueryCase) -> str:
    lines = [f"query {case.key} ({case.kind}): {case.text}".rstrip(": ")]
    if case.base is not None:
        lines.append(f"baseline: {case.base.outcome}")
    if case.now is not None:
        lines.append(f"now: {case.now.outcome}" + (f" (margin {case.now.margin:+.4f})"
                                                   if case.now.margin is not None else ""))
    if case.flip is not None:
        lines.append(case.flip.line())
    return "\n".join(lines)


def write_junit(result: GateResult, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    junit_xml(result).write(path, encoding="utf-8", xml_declaration=True)
    return path


# --- Markdown -----------------------------------------------------------------------------------------

def _num(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.4g}"


def _interval(interval: Interval | None) -> str:
    if interval is None:
        return ""
    if not interval.defined:
        return "n too small"
    where = f" ({interval.units} {interval.unit}s)" if interval.unit != "query" and interval.units else ""
    return f"[{_num(interval.low)}, {_num(interval.high)}]{where}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def gate_markdown(result: GateResult) -> str:
    ok = result.passed
    head = "✅ memory gate passed" if ok else "❌ memory gate failed"
    lines = [f"### {head}", "",
             f"`{result.current.path}` against the baseline `{result.baseline.path}` "
             f"({result.current.kind}; rules: {_cell(result.rule_source)}). {result.verdict()}.", ""]
    intervals = summary_intervals(result)
    level = next((i.level for i in intervals.values()), result.settings.level)
    lines += [f"| metric | baseline | now | baseline {level:.0%} interval | rule | verdict |",
              "|---|---:|---:|---|---|---|"]
    for check in sorted(result.checks, key=lambda c: (c.ok, c.metric)):
        now = _num(check.current)
        if check.set_aside:
            now += f" (judged {_num(check.judged)})"
        verdict = "ok" if check.ok else "**FAIL**"
        if check.test is not None:
            verdict += f" (p = {check.test.p_text()})"
        if check.problem:
            verdict += f": {_cell(check.problem)}"
        lines.append(f"| {check.metric} | {_num(check.baseline)} | {now} | {_interval(intervals.get(check.metric))} "
                     f"| {_cell(check.rule.describe())} | {verdict} |")
    flips = sorted(result.flips, key=lambda f: (not f.fails, not f.worse, f.key))
    missing = [c for c in result.cases if c.now is None]
    if flips or missing:
        lines += ["", f"**Flipped queries** ({len(flips)}; a near tie is an outcome decided by a margin below "
                  "the run's near-tie threshold, which another model version can tip either way):", "",
                  "| query | text | baseline | now | margin now | near tie | verdict |", "|---|---|---|---|---:|---|---|"]
        for f in flips:
            verdict = "**FAIL**" if f.fails else ("reported, not counted" if f.worse else "improved")
            margin = f"{f.margin:+.4f}" if f.margin is not None else "—"
            lines.append(f"| {f.key} | {_cell(f.text)} | {f.before} | {f.after} | {margin} | "
                         f"{'yes' if f.near_tie else 'no'} | {verdict} |")
        for c in missing:
            lines.append(f"| {c.key} | {_cell(c.text)} | {c.base.word if c.base else ''} | missing | — | — | "
                         f"{'**FAIL**' if c.fails else 'reported'} |")
    else:
        lines += ["", "No query changed its verdict."]
    return "\n".join(lines) + "\n"


def write_markdown(result: GateResult, path: Path | str | None = None) -> list[Path]:
    """Write the summary to `path` (if given) and append it to $GITHUB_STEP_SUMMARY (if set)."""
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if path is None and not step_summary:
        return []  # nothing to write: its intervals (bootstrap resamples, scipy) are not computed
    text = gate_markdown(result)
    written = []
    if path is not None:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        written.append(out)
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:  # GitHub collects what each step appends
            fh.write(text + "\n")
        written.append(Path(step_summary))
    return written
