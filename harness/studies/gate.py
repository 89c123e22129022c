"""Regression gate: compare a results.json (or ablation.json) with a committed baseline.

    harness gate reports/round4/results.json --baseline reports/baseline/round4.json \
        --rule passed:drop=0 --rule mrr@6:drop=0.02 --rule latency_p50_ms:growth=0.5

A rule `metric:drop=X` fails when the metric falls by more than X (absolute); `metric:growth=R` fails
when it grows by more than the ratio R (0.5 = +50%).  Metrics are read from the files' summaries and
flattened to names like `passed`, `mrr@6`, `latency_p50_ms` (prefixed `round3.` in an ablation file).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.evaluation.metrics import NEAR_TIE
from harness.inputs.layout import read_json

# Quality must not regress; latency is left out by default because it depends on the machine.  recall@k,
# mrr@k and ndcg@k are record-level (MaxP documents) and pure_recall@k purity-aware; chunk_* figures
# depend on the chunker and are only gated on request.
DEFAULT_RULES = ("passed:drop=0", "recall@*:drop=0.02", "pure_recall@*:drop=0.02", "mrr@*:drop=0.02",
                 "ndcg@*:drop=0.02", "negative_returned:growth=0", "paraphrase_found:drop=0")


@dataclass(frozen=True)
class Rule:
    pattern: str  # metric name, shell-style wildcards allowed
    kind: str  # "drop" or "growth"
    limit: float

    @classmethod
    def parse(cls, text: str) -> "Rule":
        try:
            pattern, spec = text.rsplit(":", 1)
            kind, value = spec.split("=", 1)
            if kind not in ("drop", "growth"):
                raise ValueError
            return cls(pattern, kind, float(value))
        except ValueError:
            raise ConfigError(f"bad gate rule {text!r}; expected METRIC:drop=X or METRIC:growth=R") from None


@dataclass
class Check:
    metric: str
    baseline: float
    current: float | None
    rule: Rule

    @property
    def ok(self) -> bool:
        if self.current is None:
            return False
        if self.rule.kind == "drop":
            return self.baseline - self.current <= self.rule.limit + 1e-12
        allowed = self.baseline * (1 + self.rule.limit)
        return self.current <= allowed + 1e-12

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        if self.current is None:
            return f"{mark} {self.metric}: missing from the results (baseline {self.baseline:g})"
        delta = self.current - self.baseline
        limit = (f"may drop by {self.rule.limit:g}" if self.rule.kind == "drop"
                 else f"may grow by {self.rule.limit:.0%}")
        return f"{mark} {self.metric}: {self.baseline:g} -> {self.current:g} ({delta:+.4g}; {limit})"


def summary_metrics(summary: dict[str, Any], per_query: dict[str, Any] | None = None) -> dict[str, float]:
    suite = summary.get("suite", {})
    out = {k: float(v) for k, v in suite.items()
           if k not in ("queries", "near_tie") and isinstance(v, (int, float))}
    out["negative_returned"] = float(summary.get("negative", {}).get("returned_anything", 0))
    latency = summary.get("latency_ms", {}).get("retrieval", {})
    for p in ("p50", "p95", "p99"):
        if p in latency:
            out[f"latency_{p}_ms"] = float(latency[p])
    if per_query:
        para = [q for q in per_query.values() if q.get("kind") == "paraphrase"]
        if para:  # a relevant chunk among the returned ones (rank is None otherwise)
            out["paraphrase_found"] = float(sum(isinstance(q.get("rank"), (int, float)) and q["rank"] == q["rank"]
                                                for q in para))
    return out


def flatten(doc: dict[str, Any]) -> dict[str, float]:
    """Metrics of a results.json or an ablation.json, as {name: value}."""
    if "rounds" in doc:
        flat: dict[str, float] = {}
        for r, round_doc in doc["rounds"].items():
            for name, value in summary_metrics(round_doc["summary"], round_doc.get("queries")).items():
                flat[f"round{r}.{name}"] = value
        return flat
    return summary_metrics(doc["summary"], doc.get("queries"))


def compare(current: dict[str, Any], baseline: dict[str, Any], rules: list[Rule]) -> list[Check]:
    cur, base = flatten(current), flatten(baseline)
    checks = []
    for metric in sorted(base):
        short = metric.split(".", 1)[-1]
        rule = next((r for r in reversed(rules) if fnmatch.fnmatch(short, r.pattern)
                     or fnmatch.fnmatch(metric, r.pattern)), None)
        if rule is not None:
            checks.append(Check(metric, base[metric], cur.get(metric), rule))
    return checks


def gate_files(results: Path | str, baseline: Path | str, rules: list[str] | None = None) -> tuple[bool, str]:
    """Compare two files; returns (passed, readable diff)."""
    parsed = [Rule.parse(r) for r in (rules or DEFAULT_RULES)]
    _, current_doc = read_json(results, "results file")
    _, baseline_doc = read_json(baseline, "baseline file")
    checks = compare(current_doc, baseline_doc, parsed)
    if not checks:
        return False, "no metric of the baseline matched any rule: nothing was checked"
    failed = [c for c in checks if not c.ok]
    lines = [c.line() for c in checks] + flipped_queries(current_doc, baseline_doc)
    verdict = (f"gate: {len(failed)} of {len(checks)} checks regressed" if failed
               else f"gate: all {len(checks)} checks passed")
    return not failed, "\n".join(lines + [verdict])


def _per_query(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    if "rounds" in doc:
        return {f"round{r}.{qid}": q for r, rd in doc["rounds"].items() for qid, q in (rd.get("queries") or {}).items()}
    return {qid: q for qid, q in (doc.get("queries") or {}).items()}


def flipped_queries(current: dict[str, Any], baseline: dict[str, Any]) -> list[str]:
    """Queries whose pass/fail changed, each with its margin now, so a reader can tell a real regression
    from a near tie that another model version tipped the other way."""
    cur, base = _per_query(current), _per_query(baseline)
    lines = []
    for key in sorted(k for k in base if k in cur):
        was, now = bool(base[key].get("passed")), bool(cur[key].get("passed"))
        if was == now:
            continue
        margin = cur[key].get("relevant_margin")
        how = "" if margin is None else f" (margin now {margin:+.4f}{', a near tie' if abs(margin) < NEAR_TIE else ''})"
        lines.append(f"     {key}: {'passed -> failed' if was else 'failed -> passed'}{how}")
    return (["flipped queries:"] + lines) if lines else []
