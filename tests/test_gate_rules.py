"""Gate rules on small documents whose figures follow from their rows: kinds of file, cut-off names,
exact and statistical rules, near-tie flips, the gate file."""
import json

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import ConfigError
from harness.gate.run import DEFAULT_RULES, Rule, gate_files, run_gate
from harness.gate.file import load_gate_file
from tests.gate_docs import ablation, results, row, write

SUITE = [f"T{i}" for i in range(1, 13)]


def suite(ranks: dict[str, int | None] | None = None, margins: dict[str, float] | None = None, **kw):
    ranks, margins = ranks or {}, margins or {}
    rows = [row(q, rank=ranks.get(q, 1), margin=margins.get(q, 0.05 if ranks.get(q, 1) == 1 else -0.05))
            for q in SUITE]
    rows += [row("P1", kind="paraphrase", rank=kw.pop("p1_rank", 2)), row("N1", kind="negative", returned=kw.pop("n1", 0))]
    return results(rows, **kw)


def test_mismatched_file_kinds_are_refused_with_both_kinds_named(tmp_path):
    run = write(tmp_path / "results.json", suite())
    abl = write(tmp_path / "ablation.json", ablation({"3": suite(), "4": suite()}))
    with pytest.raises(ConfigError, match=r"results.json \(a run's results.json\) against the baseline .*ablation.json "
                                          r"\(an ablation.json\): compare files of one kind"):
        run_gate(run, abl)
    out = CliRunner().invoke(app, ["gate", str(abl), "--baseline", str(run)])
    assert out.exit_code == 2 and "compare files of one kind" in out.output and "regressed" not in out.output
    other = write(tmp_path / "sweep.json", {"settings": [], "best": {}})
    out = CliRunner().invoke(app, ["gate", str(other), "--baseline", str(run)])
    assert out.exit_code == 2 and "none of the files the gate compares" in out.output and "best, settings" in out.output


def test_paraphrase_metric_is_named_by_the_configured_cutoff(tmp_path):
    base = write(tmp_path / "b.json", suite(max_results=5))
    now = write(tmp_path / "n.json", suite(max_results=5, p1_rank=None))
    ok, report = gate_files(now, base)
    assert "paraphrase_hit@5: 1 -> 0" in report and "@6" not in report
    assert "mrr@5" in report and not ok
    assert "FAIL P1: found -> not in the top 5 (paraphrase)" in report


def test_default_rules_are_exact_rules_and_each_one_can_fail(tmp_path):
    """Every default rule is an exact rule (drop or growth), and for each, a document that breaks it by the
    smallest step fails the gate on that metric (so none of them is inert)."""
    assert all(Rule.parse(r).kind in ("drop", "growth") for r in DEFAULT_RULES)
    base = write(tmp_path / "b.json", suite())
    worse = {"passed": suite({"T1": 2}), "paraphrase_hit@6": suite(p1_rank=None), "negative_returned": suite(n1=6),
             "mrr@6": suite({"T2": 2})}
    for metric, doc in worse.items():
        result = run_gate(write(tmp_path / f"{metric}.json", doc), base)
        assert metric in [c.metric for c in result.failed_checks], (metric, result.text())


def test_a_swap_of_passes_fails_on_the_query_that_got_worse(tmp_path):
    base = write(tmp_path / "b.json", suite({"T5": 2}))
    now = write(tmp_path / "n.json", suite({"T6": 2}))  # T5 now passes, T6 fails: the count is unchanged
    result = run_gate(now, base)
    assert not result.failed_checks and [c.key for c in result.failed_cases] == ["T6"]
    assert not result.passed and result.verdict() == "gate: 0 of 6 checks regressed; 1 query regressed"
    assert "FAIL T6: passed -> failed (margin now -0.0500)" in result.text()
    assert "ok   T5: failed -> passed" in result.text()


def test_a_near_tie_flip_is_reported_and_set_aside_from_the_metrics(tmp_path):
    base = write(tmp_path / "b.json", suite())
    now = write(tmp_path / "n.json", suite({"T3": 2}, {"T3": -0.0004}))
    result = run_gate(now, base)
    assert result.passed, result.text()
    text = result.text()
    assert "warn T3: passed -> failed (margin now -0.0004, a near tie) - reported, not counted" in text
    assert "ok   passed: 12 -> 11 (-1; may drop by 0; judged as 12: 1 near-tie flip not counted)" in text
    assert "ok   mrr@6: 1 -> 0.958333" in text  # judged with T3's baseline value
    gate = tmp_path / "strict.toml"
    gate.write_text('[gate]\nnear_tie_flips = "fail"\ndefaults = true\n')
    strict = run_gate(now, base, gate_file=gate)
    assert not strict.passed and "FAIL passed: 12 -> 11 (-1; may drop by 0)" in strict.text()
    assert [c.key for c in strict.failed_cases] == ["T3"]


def test_flips_report_mode_keeps_the_gate_on_the_metrics(tmp_path):
    base = write(tmp_path / "b.json", suite({"T5": 2}))
    now = write(tmp_path / "n.json", suite({"T6": 2}))
    gate = tmp_path / "g.toml"
    gate.write_text('[gate]\nflips = "report"\n[[rule]]\nmetric = "passed"\ndrop = 0\n')
    result = run_gate(now, base, gate_file=gate)
    assert result.passed and "warn T6: passed -> failed (margin now -0.0500) - reported, not counted" in result.text()


def test_interval_rule_is_a_one_sided_two_sample_test_on_different_queries(tmp_path):
    # 40 queries, 30 at rank 1 and 10 at rank 2: MRR 0.875; the runs being compared also scored a query
    # the baseline has not (X00, at rank 1), so the query sets differ and the rule is the two-sample
    # permutation test of the 41 values against the 40
    def doc(second: int, extra: bool = True) -> dict:
        return results([row(f"Q{i:02d}", rank=2 if i < second else 1) for i in range(40)]
                       + ([row("X00", rank=1)] if extra else []))

    def permutation_p(second_now: int, second_base: int) -> float:
        """Independently of the harness: scipy's two-sample permutation test of the same values."""
        now = np.array([0.5] * second_now + [1.0] * (41 - second_now))
        base = np.array([0.5] * second_base + [1.0] * (40 - second_base))
        return stats.permutation_test((now, base), lambda a, b, axis: a.mean(axis=axis) - b.mean(axis=axis),
                                      alternative="less", n_resamples=20_000, vectorized=True,
                                      rng=np.random.default_rng(1)).pvalue

    base = write(tmp_path / "b.json", doc(10, extra=False))
    small = write(tmp_path / "small.json", doc(13))  # MRR 0.8375: a drop chance explains
    large = write(tmp_path / "large.json", doc(22))  # MRR 0.725: it does not
    rules = ["mrr@6:interval"]
    gate = tmp_path / "g.toml"
    gate.write_text('[gate]\nflips = "report"\n[[rule]]\nmetric = "mrr@*"\nkind = "interval"\n')
    ok = run_gate(small, base, gate_file=gate)
    assert ok.passed, ok.text()
    check = ok.checks[0]
    assert check.test.p_value == pytest.approx(permutation_p(13, 10), abs=0.02) and check.test.p_value > 0.05
    assert check.interval.low < 0.875 < check.interval.high  # the baseline's interval, shown in the reports
    bad = run_gate(large, base, rules)
    assert [c.metric for c in bad.failed_checks] == ["mrr@6"]
    p_large = bad.checks[0].test.p_value
    assert p_large == pytest.approx(permutation_p(22, 10), abs=0.005) and p_large < 0.05
    assert "two-sample permutation p = " in bad.text() and "may not get worse with two-sample p < 0.05" in bad.text()
    assert not run_gate(base, large, rules).failed_checks  # an improvement never fails it
    exact = run_gate(small, base, ["mrr@6:drop=0.02"])  # the exact rule flaps where the test does not
    assert [c.metric for c in exact.failed_checks] == ["mrr@6"]


def test_interval_rule_pairs_the_queries_both_runs_share(tmp_path):
    """On the same queries (the gate's usual case) `interval` is the paired one-sided sign-flip test
    (issue 37: the unpaired test there alarmed 0-3.5% of the time at 5% and missed most real drops)."""
    many = [f"Q{i:02d}" for i in range(40)]
    base_ranks = [2 if i < 10 else 1 for i in range(40)]
    now_ranks = [1 if i < 1 else 2 if i < 19 else 1 for i in range(40)]  # 1 gains, 9 lose: MRR 0.875 -> 0.775
    base = write(tmp_path / "b.json", results([row(q, rank=r) for q, r in zip(many, base_ranks)]))
    now = write(tmp_path / "n.json", results([row(q, rank=r) for q, r in zip(many, now_ranks)]))
    gate = run_gate(now, base, ["mrr@6:interval"])
    check = gate.checks[0]
    d = np.array([1 / n - 1 / b for n, b in zip(now_ranks, base_ranks)])
    independent = stats.permutation_test((d,), np.mean, permutation_type="samples", alternative="less",
                                         n_resamples=20_000, rng=np.random.default_rng(1)).pvalue
    assert check.extra.get("paired") and check.test.p_value == pytest.approx(independent, abs=0.01)
    assert check.test.p_value < 0.05 and [c.metric for c in gate.failed_checks] == ["mrr@6"]
    assert "paired one-sided sign-flip p = " in gate.text()
    assert not run_gate(base, now, ["mrr@6:interval"]).failed_checks  # the other way it is an improvement


def test_interval_of_a_count_is_on_the_counts_scale(tmp_path):
    base = write(tmp_path / "b.json", suite({"T1": 2, "T2": 2, "T3": 2}))
    result = run_gate(base, base, ["passed:interval"])
    interval = result.checks[0].interval
    assert interval.estimate == 9 and 5 <= interval.low < 9 < interval.high <= 12


def test_paired_rule_uses_a_sign_flip_test_across_queries(tmp_path):
    many = [f"Q{i:02d}" for i in range(30)]
    base = write(tmp_path / "b.json", results([row(q) for q in many]))
    one = write(tmp_path / "one.json", results([row(q, rank=2 if q == "Q00" else 1) for q in many]))
    ten = write(tmp_path / "ten.json", results([row(q, rank=2 if i < 10 else 1) for i, q in enumerate(many)]))
    r1 = run_gate(one, base, ["mrr@6:paired"])
    assert not r1.failed_checks and r1.checks[0].test.p_value == 1.0
    r10 = run_gate(ten, base, ["mrr@6:paired=0.01"])
    check = r10.checks[0]
    assert not check.ok and check.test.p_value == pytest.approx(2 / 2 ** 10)
    assert f"paired sign-flip p = {2 / 2 ** 10:.3g} (floor {2 / 2 ** 10:.3g}) over 30 queries" in check.line()
    better = run_gate(base, ten, ["mrr@6:paired"])  # an improvement never fails a paired rule
    assert not better.failed_checks


def test_statistical_rules_refuse_metrics_without_per_query_values(tmp_path):
    base = write(tmp_path / "b.json", suite())
    with pytest.raises(ConfigError, match="latency_p50_ms has none .* gate it with growth=R"):
        run_gate(base, base, ["latency_p50_ms:interval"])


def test_compare_rules_from_the_gate_file(tmp_path):
    base = write(tmp_path / "b.json", suite())
    now = write(tmp_path / "n.json", suite({"T1": 2}))
    gate = tmp_path / "g.toml"
    gate.write_text('[gate]\nflips = "report"\n[[rule]]\nmetric = "passed"\nop = ">="\nvalue = 12\n'
                    '[[rule]]\nmetric = "mrr@*"\nop = ">"\nvalue = 0.95\n')
    result = run_gate(now, base, gate_file=gate)
    assert [c.line()[:4] for c in result.checks] == ["ok  ", "FAIL"], result.text()
    assert "mrr@6: 1 -> 0.958333 (-0.04167; must be > 0.95)" in result.text()
    assert "FAIL passed: 12 -> 11 (-1; must be >= 12)" in result.text()
    # --rule strings come after the file's rules and win
    assert run_gate(now, base, ["mrr@6:drop=0.01"], gate_file=gate).checks[0].rule.kind == "drop"


@pytest.mark.parametrize("text, message", [
    ('[[rule]]\nmetric = "passed"\n', r"g.toml \[\[rule\]\] #1 \(metric 'passed'\): say what the metric may do"),
    ('[[rule]]\nmetric = "passed"\ndrop = -1\n', r"\[\[rule\]\] #1 drop: Input should be greater than or equal to 0"),
    ('[[rule]]\nmetric = "passed"\nkind = "interval"\nlevel = 2\n', r"#1 level: Input should be less than 1"),
    ('[[rule]]\nmetric = "passed"\nop = ">="\n', r"#1: a comparison needs both op and value"),
    ('[[rule]]\nmetric = "passed"\ndrop = 0\ngrowth = 1\n', r"say what the metric may do.*got drop, growth"),
    ('[[rule]]\nmetric = "passed"\nkind = "interval"\ndrop = 1\n', r"kind 'interval' does not use drop"),
    ('[[rule]]\nmetric = "passed"\ndorp = 0\n', r"#1 dorp: unknown key for \[\[rule\]\]; known: metric, kind"),
    ('[gate]\nflips = "maybe"\n[[rule]]\nmetric = "x"\ndrop = 0\n', r"\[gate\] flips: Input should be 'fail' or 'report'"),
    ('[rule]\nmetric = "x"\n', r"write \[\[rule\]\], not \[rule\]"),
    ('[gate]\n', r"no \[\[rule\]\]; add rules or set defaults = true"),
    ('[gates]\n', r"unknown table\(s\) \['gates'\]"),
    ('[[rule]\n', r"invalid TOML"),
])
def test_gate_file_errors_name_the_file_the_rule_and_the_key(tmp_path, text, message):
    path = tmp_path / "g.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_gate_file(path)


def test_rule_strings_keep_their_old_forms_and_gain_statistical_ones():
    assert Rule.parse("mrr@6:drop=0.02") == Rule("mrr@6", "drop", 0.02, source="--rule 'mrr@6:drop=0.02'")
    assert Rule.parse("latency_p50_ms:growth=0.5").kind == "growth"
    assert Rule.parse("recall@*:interval").level == 0.95
    assert Rule.parse("recall@*:interval=0.9").level == 0.9
    assert Rule.parse("ndcg@*:paired=0.01").alpha == 0.01
    for bad in ("mrr@6>0.5", "mrr@6:paired=2", ":drop=1", "mrr@6:drop=x"):
        with pytest.raises(ConfigError, match="bad gate rule"):
            Rule.parse(bad)


def test_eval_scores_are_gated_against_eval_scores(tmp_path):
    def scores(rr):
        per = {f"q{i}": {"mrr@6": v} for i, v in enumerate(rr)}
        return {"run": "run.trec", "qrels": "q.tsv", "measures": ["mrr@6"], "queries": len(rr),
                "mean": {"mrr@6": sum(rr) / len(rr)}, "per_query": per}

    base = write(tmp_path / "b.json", scores([1, 1, 0.5, 1]))
    now = write(tmp_path / "n.json", scores([1, 0.5, 0.5, 1]))
    result = run_gate(now, base)
    assert [c.metric for c in result.failed_checks] == ["mrr@6"]
    assert [c.key for c in result.failed_cases] == ["q1"]
    assert "FAIL q1: 1.0000 -> 0.5000 (mrr@6)" in result.text()
    results_file = write(tmp_path / "r.json", suite())
    with pytest.raises(ConfigError, match="harness eval --json scores"):
        run_gate(now, results_file)


def test_ablation_metrics_carry_the_round_and_a_missing_query_fails(tmp_path):
    base = write(tmp_path / "b.json", ablation({"3": suite(), "4": suite()}))
    fewer = suite()
    del fewer["queries"]["T12"]
    now = write(tmp_path / "n.json", ablation({"3": suite(), "4": fewer}))
    result = run_gate(now, base)
    assert [c.key for c in result.failed_cases] == ["round4.T12"]
    assert "FAIL round4.T12: missing from the results (the baseline has it)" in result.text()
    assert json.loads(base.read_text())["rounds"]["3"]["summary"]["suite"]["passed"] == 12


def test_gate_lines_say_the_suites_own_query_count(tmp_path):
    """A 10-query suite: the two-sample line said "over 20 queries" (both samples pooled); on the same queries the
    interval rule is paired (issue 37) and, like the paired rule, says how many queries it paired; the
    two-sample form (runs of other queries) says how many each side has."""
    ten = [f"Q{i}" for i in range(10)]
    base = write(tmp_path / "b.json", results([row(q, rank=1) for q in ten]))
    now = write(tmp_path / "n.json", results([row(q, rank=2 if i < 3 else 1) for i, q in enumerate(ten)]))
    text = run_gate(now, base, ["mrr@6:interval", "passed:paired"]).text()
    n = len(ten)
    assert "paired one-sided sign-flip p = " in text and f"over {n} queries (the same in both files)" in text
    assert f"over {n} queries;" in text and f"over {2 * n} queries" not in text
