"""The report of the statistics' own check (harness.studies.coverage measures it): reports/statistics/
statistics.json and statistics.md."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.reporting.documents import write_document


def _pm(block: dict[str, Any], key: str, percent: bool = False) -> str:
    """A simulated rate with its Monte Carlo standard error: `0.967 ± 0.004` (`4.2% ± 0.4`)."""
    rate, se = block[key], block.get(f"{key}_se")
    if percent:
        return f"{rate:.1%}" + (f" ± {se * 100:.1f}" if se is not None else "")
    return f"{rate:.3f}" + (f" ± {se:.3f}" if se is not None else "")


def markdown(doc: dict[str, Any]) -> str:
    b, rr, c, s, g = doc["binomial"], doc["reciprocal_rank"], doc["clustered"], doc["selection"], doc["gate"]
    lines = ["# Do the intervals and tests hold their level?\n",
             f"Simulated worlds whose truth is known (`make statistics`, size `{doc['size']}`: "
             + ", ".join(f"{k} {v:,}" for k, v in doc["sizes"].items()) + "); tests/test_coverage.py measures the "
             "smaller default size in `make test` and checks each figure here against it (exact figures equal, "
             "simulated rates within their Monte Carlo errors).\n",
             f"## Pass rates of {b['n']} queries\n",
             f"Coverage of the 95% interval, exact over every outcome ({b['method'].split(' over')[0]}), beside the "
             "plain percentile bootstrap the reports printed before (a sample of 12 passes collapses to [1, 1]).\n",
             "| true pass rate | coverage | percentile bootstrap |", "|---:|---:|---:|"]
    lines += [f"| {r['rate']:.2f} | {r['coverage']:.3f} | {r['percentile_bootstrap']:.3f} |" for r in b["rows"]]
    if "infimum" in b:
        lines += ["", f"Over every true rate (not only these {len(b['rows'])}), the coverage's exact infimum is "
                  f"**{b['infimum']:.4f}** (near p = {b['infimum_at']:.3f}; the table's minimum is "
                  f"{b['min_coverage']:.3f}): the interval is conservative, never below its 95% level."]
    lines += ["", "Every simulated rate below is a share of its worlds, printed ± its Monte Carlo standard error "
              "(sqrt(r (1 - r) / worlds)).\n"]
    lines += ["", f"## Mean reciprocal rank of {rr['n']} queries ({rr['reps']:,} samples each)\n",
              f"Method: {rr['method'].split(' over')[0]}.\n", "| true MRR | coverage |", "|---:|---:|"]
    lines += [f"| {r['true_mrr']:.3f} | {_pm(r, 'coverage')} |" for r in rr["rows"]]
    lines += ["", f"## LoCoMo-like clusters: {c['clusters']} conversations, {c['questions']:,} questions "
              f"({c['reps']:,} samples each)\n",
              "0/1 recall per question at its conversation's rate; ICC 0.008 is what LoCoMo's recall_any@10 shows "
              "(openclaw-2026.02). `coverage`: the harness's interval over conversations; `if independent`: "
              "the interval that treats the questions as independent draws.\n",
              "| ICC | true mean | coverage | if independent |", "|---:|---:|---:|---:|"]
    lines += [f"| {r['icc']:g} | {r['mean']:.2f} | {_pm(r, 'coverage')} | {_pm(r, 'coverage_if_independent')} |"
              for r in c["rows"]]
    n, e, gn = s["null"], s["effect"], s["grouped_null"]
    lines += ["", "## The sweep's selection\n",
              f"- {n['settings']:,} equally good settings, {n['queries']} queries, {n['reps']:,} worlds: the old "
              f"procedure (best on all queries, then an ordinary paired test) says p < 0.05 in "
              f"**{_pm(n, 'naive', True)}** of worlds; the max-statistic test in **{_pm(n, 'max_statistic', True)}**.",
              f"- One family of {e['settings_better']} settings truly better (+{e['true_mrr_gain']:.2f} MRR), "
              f"{e['reps']:,} worlds: power **{_pm(e, 'power')}**.",
              f"- Queries in groups of {gn['group']} (a T-query and its paraphrases), {gn['queries']} queries, "
              f"{gn['reps']:,} null worlds: with the groups as the unit, the max-statistic test rejects in "
              f"**{_pm(gn, 'max_statistic', True)}** and the cross-validated recommendation (grouped folds) in "
              f"**{_pm(gn, 'cross_validated', True)}**; treating the queries as independent, "
              f"{_pm(gn, 'max_statistic_ignoring_groups', True)} and {_pm(gn, 'cross_validated_ignoring_groups', True)}.", "",
              f"## The gate's statistical rules on runs that did not regress ({g['reps']:,} pairs of runs)\n",
              f"- `interval` (two-sample permutation test, alpha {g['alpha']:g}): 40 independent queries "
              f"**{_pm(g, 'interval_queries', True)}**; 10 LoCoMo-like conversations **{_pm(g, 'interval_clusters', True)}**.",
              f"- `paired` (sign flips, alpha {g['alpha']:g}): 40 queries, each re-drawn from its own distribution "
              f"**{_pm(g, 'paired_queries', True)}**.", "",
              f"Measured in {doc['seconds']:.0f} s.\n"]
    return "\n".join(lines)


def write_report(doc: dict[str, Any], out_dir: Path | str) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_document(out_dir / "statistics.json", "statistics", doc)
    tmp = out_dir / "statistics.md.tmp"
    tmp.write_text(markdown(doc), encoding="utf-8")
    os.replace(tmp, out_dir / "statistics.md")
    return out_dir / "statistics.md"
