"""Regression gate: compare a results.json (or ablation.json, or `harness eval --json` scores) with a
committed baseline of the same kind.

    harness gate reports/round4/results.json --baseline ci/baseline.json \
        --rule passed:drop=0 --rule mrr@6:drop=0.02 --rule latency_p50_ms:growth=0.5
    harness gate out/results.json --baseline ci/baseline.json --gate-file ci/memory-gate.toml \
        --junit out/junit.xml --markdown out/gate.md

Metrics are read from the files' summaries and flattened to names like `passed`, `mrr@6`,
`latency_p50_ms`, `paraphrase_hit@6` (named by the run's maxResults; prefixed `round3.` in an ablation
file).  Rules (rules.py) are exact (`drop`, `growth`, `op` + `value`) or statistical (`interval`,
`paired`); a gate file (file.py) holds them.  Every query is a check too: one that got worse (a
suite query that stopped passing, a paraphrase that left the results, a negative query that started to
answer) fails unless its outcome was a near tie, which is reported and, with its queries' values taken
from the baseline, kept out of the metrics the rules judge.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from harness.errors import ConfigError
from harness.gate.documents import (
    GateDocument,
    PerQuery,
    QueryState,
    load_document,
    same_kind,
    same_queries,
)
from harness.gate.file import GateConfig, GateSettings, load_gate_file
from harness.gate.rules import Check, Rule, rule_for

if TYPE_CHECKING:
    from harness.evaluation.statistics import Interval

__all__ = ["DEFAULT_RULES", "Rule", "Check", "Flip", "QueryCase", "GateResult", "run_gate", "gate_files",
           "default_rules", "flatten", "summary_intervals", "metric_interval", "check_metric", "query_cases"]

# Quality must not regress; latency is left out by default because it depends on the machine.  recall@k,
# mrr@k and ndcg@k are record-level (MaxP documents) and pure_recall@k purity-aware; chunk_* figures
# depend on the chunker and are only gated on request.
DEFAULT_RULES = ("passed:drop=0", "recall@*:drop=0.02", "pure_recall@*:drop=0.02", "mrr@*:drop=0.02",
                 "ndcg@*:drop=0.02", "negative_returned:growth=0", "paraphrase_hit@*:drop=0")


def default_rules() -> list[Rule]:
    return [Rule.parse(text, source="default rule") for text in DEFAULT_RULES]


@dataclass(frozen=True)
class Flip:
    """A query whose own verdict changed between the baseline and now."""

    key: str
    text: str
    kind: str
    before: str
    after: str
    worse: bool
    margin: float | None  # suite queries: the margin now
    near_tie: bool
    fails: bool  # counts against the gate (and fails its JUnit case)
    gated: bool = True  # False: a suite query not yet in this round's suite (reported only)
    what: str = ""  # eval files: the measure the values are of

    def line(self) -> str:
        mark = "FAIL" if self.fails else ("warn" if self.worse else "ok  ")
        how = ""
        if self.margin is not None:
            how = f" (margin now {self.margin:+.4f}{', a near tie' if self.near_tie else ''})"
        elif self.kind != "suite":
            how = f" ({self.what or self.kind})"
        tail = ""
        if self.worse and not self.fails:
            tail = " - reported, not counted" + ("" if self.gated else " (not in this round's suite)")
        return f"{mark} {self.key}: {self.before} -> {self.after}{how}{tail}"


@dataclass(frozen=True)
class QueryCase:
    """One query as a test case: its outcome now and in the baseline, and its flip if it changed."""

    key: str
    text: str
    kind: str
    now: QueryState | None
    base: QueryState | None
    flip: Flip | None

    @property
    def fails(self) -> bool:
        if self.now is None:  # the baseline has it, the results do not
            return self.base is not None and self.base.gated
        return self.flip is not None and self.flip.fails

    def message(self) -> str:
        if self.now is None:
            return "missing from the results (the baseline has it)"
        if self.flip is not None:
            return self.flip.line()[5:]
        if self.base is None:
            return f"{self.now.outcome} (not in the baseline)"
        return self.now.outcome if self.now.outcome == self.base.outcome else \
            f"{self.now.outcome} (baseline: {self.base.outcome})"


@dataclass
class GateResult:
    current: GateDocument
    baseline: GateDocument
    checks: list[Check]
    cases: list[QueryCase]
    settings: GateSettings
    rule_source: str  # "default rules", "--rule", "ci/gate.toml", ...
    confounds: list[str] = field(default_factory=list)  # allowed differences in embedder, results, pool, corpus

    @property
    def flips(self) -> list[Flip]:
        return [c.flip for c in self.cases if c.flip is not None]

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    @property
    def failed_cases(self) -> list[QueryCase]:
        return [c for c in self.cases if c.fails]

    @property
    def passed(self) -> bool:
        return bool(self.checks) and not self.failed_checks and not self.failed_cases

    def verdict(self) -> str:
        if not self.checks:
            return "gate: no metric of the baseline matched any rule: nothing was checked"
        checks, cases = self.failed_checks, self.failed_cases
        if not checks and not cases:
            return f"gate: all {len(self.checks)} checks passed"
        parts = [f"{len(checks)} of {len(self.checks)} checks regressed"]
        if cases:
            parts.append(f"{len(cases)} quer{'y' if len(cases) == 1 else 'ies'} regressed")
        return "gate: " + "; ".join(parts)

    def text(self) -> str:
        lines = [f"NOTE {line}" for line in self.confounds] + [c.line() for c in self.checks]
        flips = sorted(self.flips, key=lambda f: (not f.fails, not f.worse, f.key))
        missing = [c for c in self.cases if c.now is None and c.fails]
        if flips or missing:
            lines.append("flipped queries:")
            lines += [f.line() for f in flips] + [f"FAIL {c.key}: {c.message()}" for c in missing]
        return "\n".join(lines + [self.verdict()])


def run_gate(results: Path | str, baseline: Path | str, rules: Sequence[str] | None = None,
             gate_file: Path | str | None = None, allow_confounds: Sequence[str] = ()) -> GateResult:
    """Compare two files of one kind under the gate file's rules (if any), then the --rule strings (which
    win, being last); with neither, the default rules.  Files whose runs differ in embedder, result count,
    candidate pool or corpus are refused unless `allow_confounds` names the difference
    (harness.evaluation.confounds)."""
    current_doc = load_document(results, "results file")
    baseline_doc = load_document(baseline, "baseline file")
    same_kind(current_doc, baseline_doc)
    same_queries(current_doc, baseline_doc)
    confounds = _confounds(current_doc, baseline_doc, allow_confounds)
    config = load_gate_file(gate_file) if gate_file is not None else None
    settings = config.settings if config else GateSettings()
    parsed, source = _rules(config, rules, settings)
    for rule in parsed:  # a --rule that matches nothing is a typo, not a gate that passes
        if rule.source.startswith("--rule") and not any(rule.matches(m) for m in baseline_doc.metrics):
            some = ", ".join(sorted(baseline_doc.metrics)[:8])
            raise ConfigError(f"{rule.source}: matches no metric of the baseline {baseline_doc.path} (its metrics: "
                              f"{some}{', ...' if len(baseline_doc.metrics) > 8 else ''})")
    cases = query_cases(current_doc, baseline_doc, settings)
    set_aside = {c.key for c in cases if c.flip is not None and c.flip.near_tie and c.kind == "suite"
                 and settings.near_tie_flips == "report"}
    checks = [check_metric(metric, current_doc, baseline_doc, rule, set_aside)
              for metric in sorted(baseline_doc.metrics) if (rule := rule_for(metric, parsed)) is not None]
    return GateResult(current_doc, baseline_doc, checks, cases, settings, source, confounds)


def _confounds(current: GateDocument, baseline: GateDocument, allow: Sequence[str]) -> list[str]:
    """The allowed differences in embedder, result count, candidate pool or corpus between the files' runs
    (results: the run; ablation: each round; eval scores carry no configuration); one not allowed is refused."""
    from harness.evaluation.confounds import allowed_confounds, check_confounds

    def configs(doc: GateDocument) -> dict[str, dict]:
        if doc.kind == "results":
            return {"": doc.doc.get("config") or {}}
        if doc.kind == "ablation":
            return {f"round{r}": (rd or {}).get("config") or {} for r, rd in (doc.doc.get("rounds") or {}).items()}
        return {}

    base, now = configs(baseline), configs(current)
    return check_confounds({k: (base[k], now[k]) for k in base if k in now}, allowed_confounds(allow),
                           f"harness gate {current.path} --baseline {baseline.path}")


def gate_files(results: Path | str, baseline: Path | str, rules: Sequence[str] | None = None,
               gate_file: Path | str | None = None) -> tuple[bool, str]:
    """Compare two files; returns (passed, readable diff)."""
    result = run_gate(results, baseline, rules, gate_file)
    return result.passed, result.text()


def _rules(config: GateConfig | None, rules: Sequence[str] | None,
           settings: GateSettings) -> tuple[list[Rule], str]:
    cli = [Rule.parse(r, level=settings.level, alpha=settings.alpha) for r in rules or ()]
    if config is None:
        return (cli, "--rule") if cli else (default_rules(), "default rules")
    base = default_rules() if settings.defaults else []
    return base + config.rules + cli, config.source + (" and --rule" if cli else "")


# --- queries ------------------------------------------------------------------------------------------

_VALUE_EPS = 1e-9


def query_cases(current: GateDocument, baseline: GateDocument, settings: GateSettings) -> list[QueryCase]:
    """Every query of the results (then those only the baseline has), with its flip if its verdict
    changed."""
    keys = list(current.queries) + [k for k in baseline.queries if k not in current.queries]
    cases = []
    for key in keys:
        now, base = current.queries.get(key), baseline.queries.get(key)
        ref = now or base
        assert ref is not None
        flip = _flip(now, base, settings) if now is not None and base is not None else None
        cases.append(QueryCase(key, ref.text, ref.kind, now, base, flip))
    return cases


def _flip(now: QueryState, base: QueryState, settings: GateSettings) -> Flip | None:
    if now.kind == "eval":
        if now.value is None or base.value is None or abs(now.value - base.value) <= _VALUE_EPS:
            return None
        worse = now.value < base.value
    else:
        if now.ok is None or base.ok is None or now.ok == base.ok:
            return None
        worse = base.ok and not now.ok
    near = now.is_near_tie
    fails = worse and now.gated and settings.flips == "fail" and (not near or settings.near_tie_flips == "fail")
    margin = now.margin if now.kind == "suite" else None
    return Flip(now.key, now.text, now.kind, base.word, now.word, worse, margin, near, fails, now.gated, now.measure)


# --- metrics ------------------------------------------------------------------------------------------

def check_metric(metric: str, current: GateDocument, baseline: GateDocument, rule: Rule,
                 set_aside: set[str]) -> Check:
    check = Check(metric, baseline.metrics[metric], current.metrics.get(metric), rule)
    if check.current is None:
        return check
    now_pq, base_pq = current.per_query.get(metric), baseline.per_query.get(metric)
    now_values = now_pq.values if now_pq else {}
    if now_pq and base_pq and set_aside:  # near-tie flips count with their baseline values
        moved = [k for k in set_aside if k in now_pq.values and k in base_pq.values
                 and now_pq.values[k] != base_pq.values[k]]
        if moved:
            now_values = {**now_pq.values, **{k: base_pq.values[k] for k in moved}}
            check.effective = check.current + now_pq.total(now_values) - now_pq.total()
            check.set_aside = len(moved)
    if rule.kind in ("interval", "paired") and (base_pq is None or now_pq is None):
        raise ConfigError(f"{rule.source or 'a rule'}: a {rule.kind} rule needs per-query values, and "
                          f"{metric} has none in {(baseline if base_pq is None else current).path} (latency is a "
                          f"percentile: gate it with growth=R)")
    if rule.kind == "interval":
        assert base_pq is not None and now_pq is not None
        check.interval = metric_interval(base_pq, rule.level)
        if not base_pq.values or not now_values:
            check.problem = f"no per-query values of {metric} to compare"
        else:
            from harness.evaluation.statistics import (
                two_sample_test,  # scipy: imported only when needed
            )

            keys_now, keys_base = sorted(now_values), sorted(base_pq.values)
            clusters = {**(base_pq.clusters or {}), **(now_pq.clusters or {})}
            alternative = "less" if rule.higher_is_better(metric) else "greater"
            if keys_now == keys_base:  # the same queries: pair them (issue 37), one-sided as the rule asks
                from harness.evaluation.statistics import sign_flip_test

                check.extra["paired"] = True
                check.test = sign_flip_test([now_values[k] for k in keys_now], [base_pq.values[k] for k in keys_now],
                                            clusters=[clusters.get(k, k) for k in keys_now] if clusters else None,
                                            unit=base_pq.unit, alternative=alternative)
                return check
            check.test = two_sample_test(
                [now_values[k] for k in keys_now], [base_pq.values[k] for k in keys_base],
                clusters_now=[clusters.get(k, k) for k in keys_now] if clusters else None,
                clusters_baseline=[clusters.get(k, k) for k in keys_base] if clusters else None,
                unit=base_pq.unit, alternative="less" if rule.higher_is_better(metric) else "greater")
    elif rule.kind == "paired":
        assert base_pq is not None
        common = sorted(now_values.keys() & base_pq.values.keys())
        if not common:
            check.problem = "no query in common with the baseline: nothing to pair"
        else:
            from harness.evaluation.statistics import (
                sign_flip_test,  # scipy: imported only when needed
            )

            clusters = base_pq.clusters or {}
            check.test = sign_flip_test([now_values[k] for k in common], [base_pq.values[k] for k in common],
                                        clusters=[clusters.get(k, k) for k in common] if clusters else None,
                                        unit=base_pq.unit)
    return check


def metric_interval(per_query: PerQuery, level: float) -> Interval:
    """The bootstrap interval of a metric from its per-query values, on the metric's own scale (a count
    is n times the mean)."""
    from harness.evaluation.statistics import (  # scipy: imported only when needed
        Interval,
        bootstrap_mean,
    )

    keys = list(per_query.values)
    values = [per_query.values[k] for k in keys]
    clusters = [per_query.clusters.get(k, k) for k in keys] if per_query.clusters else None
    interval = bootstrap_mean(values, level=level, clusters=clusters, unit=per_query.unit)
    if per_query.aggregate == "sum":
        n = len(values)
        return Interval(interval.estimate * n, interval.low * n, interval.high * n, level, interval.method,
                        interval.units, interval.unit)
    return interval


def summary_intervals(result: GateResult) -> dict[str, Interval]:
    """The baseline's interval of every checked metric that has per-query values (for the reports)."""
    out: dict[str, Interval] = {}
    for check in result.checks:
        if check.interval is not None:
            out[check.metric] = check.interval
        elif (pq := result.baseline.per_query.get(check.metric)) is not None and pq.values:
            out[check.metric] = metric_interval(pq, check.rule.level if check.rule.kind == "interval"
                                                else result.settings.level)
    return out


def flatten(doc: dict[str, Any]) -> dict[str, float]:
    """Metrics of a results.json or an ablation.json, as {name: value} (kept for callers of the old API)."""
    from harness.gate.documents import eval_document, file_kind, run_part

    kind = file_kind(doc)
    if kind == "ablation":
        flat: dict[str, float] = {}
        for r, round_doc in doc["rounds"].items():
            flat.update(run_part(round_doc, prefix=f"round{r}.").metrics)
        return flat
    if kind == "results":
        return run_part(doc, prefix="").metrics
    if kind == "eval":
        return eval_document(Path("<eval>"), doc).metrics
    return {}

