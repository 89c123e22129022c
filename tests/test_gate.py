"""The regression gate: today's ablation passes against the committed baseline; a worse config fails."""
import json
import re

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.reporting.markdown import write_ablation
from harness.studies.ablation import run_ablation
from harness.gate.run import Rule, gate_files
from tests.conftest import ROOT
from tests.test_gate_outputs import failing_names, validate_junit

BASELINE = ROOT / "reports" / "baseline" / "ablation.json"


@pytest.fixture(scope="module")
def embedder():
    from harness.stages.embedders import CachedEmbedder, E5SmallQ4, EmbeddingCache

    return CachedEmbedder(E5SmallQ4(), EmbeddingCache(), progress=False)


def ablation_file(tmp_path, embedder, **overrides):
    results = run_ablation(embedder=embedder, progress=False, overrides=overrides)
    write_ablation(results, tmp_path, {})
    return tmp_path / "ablation.json"


@pytest.mark.slow
def test_current_ablation_passes_the_committed_baseline(tmp_path, embedder):
    current = ablation_file(tmp_path, embedder)
    passed, report = gate_files(current, BASELINE)
    assert passed, report
    now = json.loads(current.read_text(encoding="utf-8"))["rounds"]["4"]["summary"]["suite"]["passed"]
    before = json.loads(BASELINE.read_text(encoding="utf-8"))["rounds"]["4"]["summary"]["suite"]["passed"]
    assert f"round4.passed: {before} -> {now}" in report


@pytest.mark.slow
def test_a_deliberately_worse_config_fails_and_names_the_metric(tmp_path, embedder):
    # text-only retrieval with unicode61: Chinese queries lose their vector leg
    worse = ablation_file(tmp_path, embedder, fusion={"vector_weight": 0.0, "text_weight": 1.0})
    junit = tmp_path / "junit.xml"
    result = CliRunner().invoke(app, ["gate", str(worse), "--baseline", str(BASELINE), "--junit", str(junit)])
    assert result.exit_code == 1, result.output
    assert "FAIL round4.passed: 12 ->" in result.output
    verdict = [line for line in result.output.splitlines() if line.startswith("gate: ")]
    assert verdict and "regressed" in verdict[0]
    # JUnit: one failing case per query that flipped, named after it, in its round's suite
    flipped = re.findall(r"^FAIL round(\d)\.(\w+): passed -> failed", result.output, flags=re.M)
    assert len(flipped) >= 5, result.output
    doc = validate_junit(junit)
    failing = {(suite[-1], name.split(":")[0]) for suite in ("round1", "round2", "round3", "round4")
               for name in failing_names(doc, suite)}
    assert set(flipped) <= failing


def test_rules_parse_and_latency_growth(tmp_path):
    base = {"summary": {"suite": {"queries": 3, "passed": 3, "mrr@6": 0.9},
                        "negative": {"returned_anything": 0}, "latency_ms": {"retrieval": {"p50": 1.0}}}}
    slower = json.loads(json.dumps(base))
    slower["summary"]["latency_ms"]["retrieval"]["p50"] = 1.6
    slower["summary"]["suite"]["mrr@6"] = 0.89
    (tmp_path / "b.json").write_text(json.dumps(base))
    (tmp_path / "c.json").write_text(json.dumps(slower))
    ok, report = gate_files(tmp_path / "c.json", tmp_path / "b.json", ["mrr@6:drop=0.02", "latency_p50_ms:growth=0.5"])
    assert not ok and "FAIL latency_p50_ms: 1 -> 1.6" in report and "ok   mrr@6" in report
    with pytest.raises(ValueError, match="bad gate rule"):
        Rule.parse("mrr@6>0.5")


def test_flipped_queries_are_listed_with_their_margin(tmp_path):
    def doc(t1_passed, t1_margin, t2_passed):
        summary = {"suite": {"queries": 2, "passed": int(t1_passed) + int(t2_passed), "near_tie": 0.001},
                   "negative": {"returned_anything": 0}}
        queries = {"T1": {"kind": "suite", "passed": t1_passed, "relevant_margin": t1_margin},
                   "T2": {"kind": "suite", "passed": t2_passed, "relevant_margin": -0.2 if not t2_passed else 0.1}}
        return {"rounds": {"3": {"summary": summary, "queries": queries}}}

    (tmp_path / "base.json").write_text(json.dumps(doc(True, 0.0004, True)))
    (tmp_path / "now.json").write_text(json.dumps(doc(False, -0.0003, False)))
    ok, report = gate_files(tmp_path / "now.json", tmp_path / "base.json")
    assert not ok
    assert "round3.T1: passed -> failed (margin now -0.0003, a near tie)" in report
    assert "round3.T2: passed -> failed (margin now -0.2000)\n" in report
    assert "near_tie" not in report.split("flipped queries:")[0]  # the threshold is not a metric
    ok, report = gate_files(tmp_path / "base.json", tmp_path / "base.json")
    assert ok and "flipped" not in report
