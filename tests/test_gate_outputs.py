"""`harness gate --junit/--markdown`: JUnit XML that validates against the schema CI systems read, one
case per metric and per query; a Markdown table, also appended to $GITHUB_STEP_SUMMARY."""
import json
from pathlib import Path

from lxml import etree
from typer.testing import CliRunner

from harness.cli import app
from tests.conftest import ROOT
from tests.gate_docs import ablation, results, row, write

XSD = Path(__file__).parent / "data" / "junit-10.xsd"  # Jenkins xUnit's JUnit schema (tests/data/SOURCE.md)


def validate_junit(path: Path) -> etree._ElementTree:
    """Parse a JUnit file, validate it against the schema, and check that every count attribute equals
    what the file holds (the schema types them as strings)."""
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    doc = etree.parse(str(path))
    assert schema.validate(doc), schema.error_log
    root = doc.getroot()
    total = failures = 0
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        failed = [c for c in cases if c.find("failure") is not None]
        assert int(suite.get("tests")) == len(cases) and int(suite.get("failures")) == len(failed)
        total, failures = total + len(cases), failures + len(failed)
    assert int(root.get("tests")) == total and int(root.get("failures")) == failures
    return doc


def failing_names(doc: etree._ElementTree, suite: str) -> list[str]:
    return [c.get("name") for c in doc.getroot().find(f"testsuite[@name='{suite}']").findall("testcase")
            if c.find("failure") is not None]


def docs(tmp_path, base_ranks, now_ranks, margins=None):
    margins = margins or {}
    ids = [f"T{i}" for i in range(1, 7)]

    def make(ranks):
        rows = [row(q, rank=ranks.get(q, 1), text=f"查询 {q} 的文本 | with a pipe",
                    margin=margins.get(q, 0.05 if ranks.get(q, 1) == 1 else -0.05)) for q in ids]
        return results(rows + [row("N1", kind="negative", returned=0)])

    return write(tmp_path / "base.json", make(base_ranks)), write(tmp_path / "now.json", make(now_ranks))


def test_junit_has_a_case_per_metric_and_per_query_and_validates(tmp_path):
    base, now = docs(tmp_path, {}, {"T2": 3, "T4": None, "T5": 2}, {"T5": -0.0002})
    junit = tmp_path / "out" / "junit.xml"
    out = CliRunner().invoke(app, ["gate", str(now), "--baseline", str(base), "--junit", str(junit)])
    assert out.exit_code == 1, out.output
    doc = validate_junit(junit)
    suites = {s.get("name"): s for s in doc.getroot().findall("testsuite")}
    assert set(suites) == {"metrics", "queries"}
    assert len(suites["metrics"].findall("testcase")) == 5  # the checks the default rules make
    assert len(suites["queries"].findall("testcase")) == 7  # 6 suite queries and a negative one
    assert failing_names(doc, "queries") == ["T2: 查询 T2 的文本 | with a pipe", "T4: 查询 T4 的文本 | with a pipe"]
    assert set(failing_names(doc, "metrics")) == {"passed", "mrr@6", "ndcg@6", "recall@6"}
    t5 = suites["queries"].find("testcase[@name='T5: 查询 T5 的文本 | with a pipe']")
    assert t5.find("failure") is None and "a near tie) - reported, not counted" in t5.findtext("system-out")
    failure = suites["queries"].find("testcase[@name='T4: 查询 T4 的文本 | with a pipe']/failure")
    assert failure.get("message") == "T4: passed -> failed (margin now -0.0500)" and "baseline: passed" in failure.text


def test_junit_of_an_ablation_has_one_suite_per_round(tmp_path):
    def rnd(ranks):
        return results([row(q, rank=ranks.get(q, 1)) for q in ("T1", "T2", "T3")])

    base = write(tmp_path / "b.json", ablation({"3": rnd({}), "4": rnd({})}))
    now = write(tmp_path / "n.json", ablation({"3": rnd({"T2": 2}), "4": rnd({})}))
    junit = tmp_path / "j.xml"
    CliRunner().invoke(app, ["gate", str(now), "--baseline", str(base), "--junit", str(junit)])
    doc = validate_junit(junit)
    assert [s.get("name") for s in doc.getroot().findall("testsuite")] == ["metrics", "round3", "round4"]
    assert failing_names(doc, "round3") == ["T2: query T2"] and failing_names(doc, "round4") == []
    assert "round3.passed" in failing_names(doc, "metrics")


def test_markdown_table_and_the_github_step_summary(tmp_path, monkeypatch):
    base, now = docs(tmp_path, {}, {"T2": 3, "T5": 2}, {"T5": -0.0002})
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    md = tmp_path / "gate.md"
    out = CliRunner().invoke(app, ["gate", str(now), "--baseline", str(base), "--markdown", str(md),
                                   "--rule", "passed:drop=0", "--rule", "mrr@*:interval"])
    assert out.exit_code == 1, out.output
    text = md.read_text()
    assert text.startswith("### ❌ memory gate failed")
    assert "| metric | baseline | now | baseline 95% interval | rule | verdict |" in text
    lines = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    assert lines["| passed"].startswith("| passed | 6 | 4 (judged 5) | [") and lines["| passed"].endswith("| **FAIL** |")
    assert "may not get worse with two-sample p < 0.05" in lines["| mrr@6"]
    assert "| T2 | 查询 T2 的文本 \\| with a pipe | passed | failed | -0.0500 | no | **FAIL** |" in text
    assert "| T5 | 查询 T5 的文本 \\| with a pipe | passed | failed | -0.0002 | yes | reported, not counted |" in text
    assert summary.read_text() == "earlier step\n" + text + "\n"  # appended, as GitHub collects it


def test_no_flip_says_so_and_a_pass_exits_zero(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base, _ = docs(tmp_path, {}, {})
    md, junit = tmp_path / "g.md", tmp_path / "j.xml"
    out = CliRunner().invoke(app, ["gate", str(base), "--baseline", str(base), "--markdown", str(md), "--junit", str(junit)])
    assert out.exit_code == 0 and "gate: all 5 checks passed" in out.output
    assert "No query changed its verdict." in md.read_text() and md.read_text().startswith("### ✅ memory gate passed")
    assert failing_names(validate_junit(junit), "queries") == []


def test_the_committed_lancedb_round1_fails_against_round1_with_named_cases(tmp_path):
    """Real files: the lancedb-pro preset's round 1 against the study's preset's round 1 (their candidate pools
    differ, 20 vs 24: declared, as a user comparing two presets must)."""
    junit = tmp_path / "j.xml"
    out = CliRunner().invoke(app, ["gate", str(ROOT / "reports/lancedb-pro/round1/results.json"),
                                   "--baseline", str(ROOT / "reports/round1/results.json"), "--junit", str(junit),
                                   "--allow-confound", "candidate-pool"])
    assert out.exit_code == 1
    names = failing_names(validate_junit(junit), "queries")
    base = json.loads((ROOT / "reports/round1/results.json").read_text(encoding="utf-8"))["queries"]
    now = json.loads((ROOT / "reports/lancedb-pro/round1/results.json").read_text(encoding="utf-8"))["queries"]
    lost = [q for q, r in base.items() if r["kind"] == "suite" and r.get("in_suite", True) and r["passed"]
            and not now[q]["passed"]]  # (queries outside the round's suite: reported only)
    named = {n.split(":")[0] for n in names}
    near = {q for q in lost if now[q].get("near_tie")}
    assert lost and set(lost) - near <= named  # each query lost beyond a near tie is a failing case, named after it
    assert not near & named  # a near-tie flip is reported, not counted
