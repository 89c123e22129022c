"""Gate rules and the checks they make.

Exact rules compare two numbers:
    METRIC:drop=X      fail when the metric falls by more than X (absolute)
    METRIC:growth=R    fail when it grows by more than the ratio R (0.5 = +50%): latency
    op + value         (gate file only) fail unless `now OP value`, e.g. passed >= 12: a floor
Statistical rules read the per-query values of the files (harness.evaluation.statistics), at the data
set's unit (whole clusters where the results have them: a LoCoMo conversation's questions move together):
    METRIC:interval    fail only when `now` is worse at p < 1 - LEVEL (0.05 at the default 0.95), one-sided:
                       when both files scored the same queries (the gate's usual case) by the paired
                       one-sided sign-flip test across them; when they scored different queries by a
                       two-sample permutation test of now's per-query values against the baseline's
                       (unpaired).  Its false alarms and power on the same queries: reports/statistics
                       (make statistics, the "gate" section)
    METRIC:paired      fail only when `now` is worse and a paired sign-flip test across the queries both
                       files have gives p < alpha (0.05 by default): the stronger test on the same queries
Exact rules suit a small literal suite, where every pass is a decision someone made; statistical ones a
large sample such as LoCoMo's, where a few questions move with any change of model or chunking.
"""
from __future__ import annotations

import fnmatch
import math
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.errors import ConfigError
from harness.evaluation.formatting import plural

if TYPE_CHECKING:  # scipy takes seconds to import: only rules that resample need it
    from harness.evaluation.statistics import Interval, PairedTest

KINDS = ("drop", "growth", "compare", "interval", "paired")
OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq}
_EPS = 1e-12
LOWER_IS_BETTER = ("negative_returned", "near_ties", "latency_*")


def lower_is_better(metric: str) -> bool:
    short = metric.split(".", 1)[-1] if metric.startswith("round") else metric
    return any(fnmatch.fnmatch(short, p) for p in LOWER_IS_BETTER)


@dataclass(frozen=True)
class Rule:
    pattern: str  # metric name, shell-style wildcards allowed
    kind: str  # one of KINDS
    limit: float = 0.0  # drop: absolute; growth: ratio; compare: the value
    op: str | None = None  # compare only
    better: str | None = None  # "higher" / "lower"; None: from the metric's name
    level: float = 0.95  # interval
    alpha: float = 0.05  # paired
    source: str = ""  # where the rule was written (for messages)

    @classmethod
    def parse(cls, text: str, *, level: float = 0.95, alpha: float = 0.05, source: str = "--rule") -> "Rule":
        """`METRIC:drop=X`, `METRIC:growth=R`, `METRIC:interval[=LEVEL]` or `METRIC:paired[=ALPHA]`."""
        where = f"{source} {text!r}"
        try:
            pattern, spec = text.rsplit(":", 1)
            kind, _, value = spec.partition("=")
            if not pattern or kind not in ("drop", "growth", "interval", "paired"):
                raise ValueError
            if kind in ("drop", "growth"):
                limit = float(value)
                if not math.isfinite(limit) or limit < 0:
                    raise ConfigError(f"{source} {text!r}: {kind} must be a finite number >= 0 (a metric may "
                                      f"{kind} by at most this much), got {value}")
                return cls(pattern, kind, limit, source=where)
            number = float(value) if value else (level if kind == "interval" else alpha)
            if not 0 < number < 1:
                raise ValueError
            return cls(pattern, kind, level=number if kind == "interval" else level,
                       alpha=number if kind == "paired" else alpha, source=where)
        except ConfigError:
            raise
        except ValueError:
            raise ConfigError(f"{source}: bad gate rule {text!r}; expected METRIC:drop=X, METRIC:growth=R, "
                              "METRIC:interval[=LEVEL] or METRIC:paired[=ALPHA]") from None

    def matches(self, metric: str) -> bool:
        short = metric.split(".", 1)[-1]
        return fnmatch.fnmatch(short, self.pattern) or fnmatch.fnmatch(metric, self.pattern)

    def higher_is_better(self, metric: str) -> bool:
        if self.better is not None:
            return self.better == "higher"
        return not lower_is_better(metric)

    def describe(self) -> str:
        if self.kind == "drop":
            return f"may drop by {self.limit:g}"
        if self.kind == "growth":
            return f"may grow by {self.limit:.0%}"
        if self.kind == "compare":
            return f"must be {self.op} {self.limit:g}"
        if self.kind == "interval":
            return f"may not get worse with two-sample p < {1 - self.level:.2g}"
        return f"may not get worse with paired p < {self.alpha:g}"


@dataclass
class Check:
    """One metric against its rule.  `effective` is the value the rule judges: `current`, unless near-tie
    flips were set aside (then their queries count with their baseline values)."""

    metric: str
    baseline: float
    current: float | None
    rule: Rule
    effective: float | None = None
    set_aside: int = 0  # near-tie flips whose queries count with their baseline values
    interval: Interval | None = None  # the baseline's interval, on the metric's scale
    test: PairedTest | None = None
    problem: str = ""  # why the rule could not be judged (then the check fails)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def judged(self) -> float | None:
        return self.effective if self.effective is not None else self.current

    @property
    def ok(self) -> bool:
        now, r = self.judged, self.rule
        if now is None or self.problem:
            return False
        if r.kind == "drop":
            return self.baseline - now <= r.limit + _EPS
        if r.kind == "growth":
            return now <= self.baseline * (1 + r.limit) + _EPS
        if r.kind == "compare":
            op = r.op or ">="
            close = abs(now - r.limit) <= _EPS  # float rounding is not a difference
            return close if op == "==" else (OPS[op](now, r.limit) or (close and op in (">=", "<=")))
        higher = r.higher_is_better(self.metric)
        if self.test is None:
            return False
        worse = self.test.statistic < 0 if higher else self.test.statistic > 0
        alpha = 1 - r.level if r.kind == "interval" else r.alpha
        return not (worse and self.test.p_value < alpha - _EPS)

    @property
    def verdict(self) -> str:
        return "ok" if self.ok else "FAIL"

    def detail(self) -> str:
        """What the rule saw, after the values: the delta, the limit, the interval or the test."""
        if self.current is None:
            return f"missing from the results (baseline {self.baseline:g})"
        if self.problem:
            return self.problem
        r = self.rule
        parts = [f"{self.current - self.baseline:+.4g}"]
        if r.kind == "interval" and self.test is not None and self.extra.get("paired"):
            parts.append(f"paired one-sided sign-flip p = {self.test.p_text()} over {self.test.queries} queries "
                         "(the same in both files)"
                         + (f" in {plural(self.test.unit, self.test.units)}" if self.test.unit != "query" else "")
                         + f"; may not get worse with paired p < {1 - r.level:.2g}")
        elif r.kind == "interval" and self.test is not None:
            parts.append(f"two-sample permutation p = {self.test.p_text()} over {self._samples()}; {r.describe()}")
        elif r.kind == "paired" and self.test is not None:
            parts.append(f"paired sign-flip p = {self.test.p_text()} over {self.test.queries} queries"
                         + (f" in {plural(self.test.unit, self.test.units)}" if self.test.unit != "query" else "")
                         + f"; {r.describe()}")
        else:
            parts.append(r.describe())
        if self.set_aside:
            parts.append(f"judged as {self.judged:g}: {self.set_aside} near-tie flip"
                         f"{'s' if self.set_aside > 1 else ''} not counted")
        return "; ".join(parts)

    def _samples(self) -> str:
        """The two samples' sizes: '10 queries now and 10 in the baseline' (not the 20 units they pool)."""
        t = self.test
        assert t is not None
        if t.first_units is None or t.units is None:
            return plural(t.unit, t.units)
        return f"{plural(t.unit, t.first_units)} now and {t.units - t.first_units:,} in the baseline"

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        if self.current is None:
            return f"{mark} {self.metric}: {self.detail()}"
        return f"{mark} {self.metric}: {self.baseline:g} -> {self.current:g} ({self.detail()})"


def rule_for(metric: str, rules: list[Rule]) -> Rule | None:
    """The last rule that matches the metric (a later, more specific rule overrides a wildcard)."""
    return next((r for r in reversed(rules) if r.matches(metric)), None)
