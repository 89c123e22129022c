"""The gate file: a plugin's regression rules in its own repository, as TOML (cf. letta-evals' suite file).

    [gate]
    flips = "fail"              # a query that got worse (beyond a near tie) fails its test case and the gate
    near_tie_flips = "report"   # a flip decided by less than the near-tie margin is listed, never failing
    level = 0.95                # interval rules: a two-sample permutation test at 1 - level
    alpha = 0.05                # paired rules: the sign-flip test's threshold

    [[rule]]                    # exact: a pass count on a small literal suite
    metric = "passed"
    op = ">="
    value = 12

    [[rule]]
    metric = "mrr@*"            # shell-style wildcards; `round3.mrr@6` names one round of an ablation
    drop = 0.02                 # or growth = 0.5 (a ratio), for latency

    [[rule]]                    # statistical: recall on LoCoMo's 1,536 questions
    metric = "recall@*"
    kind = "interval"           # fail only when a two-sample test says now is worse (p < 1 - level)

    [[rule]]
    metric = "ndcg@*"
    kind = "paired"             # fail only when a sign-flip test across queries says it got worse

Rules are read in order and, for each metric, the last rule that matches it decides (so a specific rule
after a wildcard one overrides it).  The file's rules replace the built-in ones unless `defaults = true`.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from harness.errors import ConfigError
from harness.registry import format_validation_error, stage
from harness.gate.rules import Rule


@stage
class GateSettings:
    """[gate]: how flips and statistical rules are treated."""

    flips: Literal["fail", "report"] = "fail"
    """a gated query that got worse beyond a near tie: "fail" (its JUnit case and the gate) or "report" """
    near_tie_flips: Literal["fail", "report"] = "report"
    """a flip decided by less than the near-tie margin: "report" (listed, not counted) or "fail" """
    level: float = Field(0.95, gt=0, lt=1)
    """interval rules: the one-sided two-sample permutation test fails at p < 1 - level (the baseline's
    interval shown in the reports is at this level too)"""
    alpha: float = Field(0.05, gt=0, lt=1)
    """paired rules: a regression fails when the sign-flip test's p-value is below this"""
    defaults: bool = False
    """true: the built-in rules apply first and the file's rules after them"""


@stage
class RuleTable:
    """[[rule]]: one metric pattern and what it may do."""

    metric: str = Field(min_length=1)
    """metric name; shell-style wildcards (`mrr@*`); `round3.` names one round of an ablation"""
    kind: Literal["drop", "growth", "compare", "interval", "paired"] | None = None
    """inferred from the keys when omitted: drop, growth, op + value (compare)"""
    drop: float | None = Field(None, ge=0)
    """fail when the metric falls by more than this (absolute)"""
    growth: float | None = Field(None, ge=0)
    """fail when the metric grows by more than this ratio (0.5 = +50%)"""
    op: Literal[">=", ">", "<=", "<", "=="] | None = None
    """compare the current value with `value`"""
    value: float | None = None
    """the bound `op` compares with"""
    better: Literal["higher", "lower"] | None = None
    """interval and paired rules: which direction is better (inferred from the metric's name)"""
    level: float | None = Field(None, gt=0, lt=1)
    """interval rules: this rule's level (its test fails at p < 1 - level; default [gate] level)"""
    alpha: float | None = Field(None, gt=0, lt=1)
    """paired rules: this rule's threshold (default [gate] alpha)"""


@dataclasses.dataclass
class GateConfig:
    settings: GateSettings
    rules: list[Rule]
    source: str


def _fields(model: type) -> list[str]:
    return [f.name for f in dataclasses.fields(model)]


def load_gate_file(path: Path | str) -> GateConfig:
    from harness.config import load_toml

    path = Path(path)
    doc = load_toml(path, "gate file")
    unknown = sorted(set(doc) - {"gate", "rule"})
    if unknown:
        raise ConfigError(f"{path}: unknown table(s) {unknown}; a gate file has [gate] and [[rule]]")
    table = doc.get("gate", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [gate] must be a table")
    try:
        settings = GateSettings(**table)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, f"{path} [gate]", "[gate]", _fields(GateSettings))) from None
    tables = doc.get("rule", [])
    if not isinstance(tables, list):
        raise ConfigError(f"{path}: rules are an array of tables: write [[rule]], not [rule]")
    rules = [rule_from_table(t, f"{path} [[rule]] #{i}", settings) for i, t in enumerate(tables, start=1)]
    if not rules and not settings.defaults:
        raise ConfigError(f"{path}: no [[rule]]; add rules or set defaults = true in [gate]")
    return GateConfig(settings, rules, str(path))


def rule_from_table(table: dict, where: str, settings: GateSettings) -> Rule:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table")
    try:
        t = RuleTable(**table)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, where, "[[rule]]", _fields(RuleTable))) from None
    given = [k for k in ("drop", "growth", "op") if getattr(t, k) is not None]
    kind = t.kind or (given[0] if len(given) == 1 else None)
    if kind == "op":
        kind = "compare"
    if kind is None:
        raise ConfigError(f"{where} (metric {t.metric!r}): say what the metric may do: one of drop = X, growth = R, "
                          f"op + value, or kind = \"interval\" / \"paired\"" + (f" (got {', '.join(given)})" if given else ""))
    if kind in ("drop", "growth") and getattr(t, kind) is None:
        raise ConfigError(f"{where} {kind}: kind = {kind!r} needs {kind} = <number>")
    if kind == "compare" and (t.op is None or t.value is None):
        raise ConfigError(f"{where}: a comparison needs both op and value")
    extra = [k for k in ("drop", "growth", "op") if getattr(t, k) is not None and k != {"compare": "op"}.get(kind, kind)]
    if extra:
        raise ConfigError(f"{where}: kind {kind!r} does not use {', '.join(extra)}")
    limit = {"drop": t.drop, "growth": t.growth, "compare": t.value}.get(kind)
    return Rule(t.metric, kind, float(limit) if limit is not None else 0.0, op=t.op, better=t.better,
                level=t.level or settings.level, alpha=t.alpha or settings.alpha, source=where)
