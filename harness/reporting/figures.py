"""Figures at their printed precision, and the rows of a report they are read from: the helpers the docs
templates (harness.reporting.docs) and a study's notes (harness.reporting.notes) format measurements with,
so that a figure is printed the same way wherever it is quoted.

    f(x) f(x, 2) sf(d)          0.849, 0.85, +0.014 (signed)
    ci(block, "recall_any@10")  0.849 [0.830, 0.866]
    pct(share) pct(share, 1)    84%, 84.1%
    p(row) pv(p, floor, mc)     a p-value with its floor (formatting.p_text)
    n(count) frac(a, b) dur(s)  1,536  6/7  2 min 24 s
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from harness.evaluation.formatting import interval_text, missing, p_cell, p_text


def f(x: Any, digits: int = 3) -> str:
    """0.849 (a value at `digits` decimals); "—" for no value."""
    return "—" if missing(x) else f"{float(x):.{digits}f}"


def sf(x: Any, digits: int = 3) -> str:
    """+0.014 / -0.192: a difference, always signed."""
    return "—" if missing(x) else f"{float(x):+.{digits}f}"


def interval(value: Any, bounds: Any, digits: int = 3, sign: str = "") -> str:
    """0.849 [0.830, 0.866] as the reports print it (formatting.interval_text): "(n too small)" when the
    sample has no interval, the value alone when the report gives none; "—" for no value."""
    return "—" if missing(value) else interval_text(float(value), bounds, digits, sign)


def ci(block: Mapping[str, Any], name: str, digits: int = 3) -> str:
    """A summary block's mean with its 95% interval: block[name] and block[name + "_ci95"]."""
    return interval(block[name], block.get(f"{name}_ci95"), digits)


def dci(difference: Mapping[str, Any], digits: int = 3) -> str:
    """A paired difference {estimate, ci95}: +0.014 [-0.015, +0.044]."""
    return interval(difference["estimate"], difference.get("ci95"), digits, sign="+")


def pct(x: Any, digits: int = 0) -> str:
    """A share as a percentage: 0.8412 -> 84% (digits=1: 84.1%)."""
    return "—" if missing(x) else f"{100 * float(x):.{digits}f}%"


def pv(p: Any, floor: Any = 0.0, monte_carlo: bool = False) -> str:
    """A p-value with its floor (harness.evaluation.formatting.p_text)."""
    return "—" if missing(p) else p_text(float(p), float(floor or 0.0), bool(monte_carlo))


def p(row: Mapping[str, Any], key: str = "p_value") -> str:
    """A comparison row's p-value (`p_value`, or key="p_holm") with the row's floor, as the reports print it."""
    return p_cell(row, key)


def n(x: Any, digits: int = 0) -> str:
    """A count (or a rounded quantity) with thousands separators: 1,536."""
    return "—" if missing(x) else f"{float(x):,.{digits}f}"


def frac(a: Any, b: Any) -> str:
    return f"{int(a)}/{int(b)}"


def dur(seconds: Any) -> str:
    """A duration as a reader says it: 0.33 s, 13 s, 2 min 24 s, 1 h 05 min."""
    if missing(seconds):
        return "—"
    s = float(seconds)
    if s < 10:
        return f"{s:.2g} s" if s < 1 else f"{s:.1f} s"
    if s < 60:
        return f"{s:.0f} s"
    minutes, rest = divmod(round(s), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def finite(xs: Iterable[Any]) -> list[float]:
    """The values of a list that are numbers (no None, no NaN): `scores|finite|min`."""
    return [x for x in xs if not missing(x)]


def literal(text: Any) -> str:
    """A number that is not a measurement (a setting, a version, a published claim), marked as such."""
    return str(text)


def find(rows: Iterable[Mapping[str, Any]], **where: Any) -> Mapping[str, Any]:
    """The one row whose fields equal `where` (a cell of a matrix, a run of a benchmark, a comparison)."""
    found = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
    if len(found) != 1:
        raise LookupError(f"{len(found)} rows match {where}")
    return found[0]


def select(rows: Iterable[Mapping[str, Any]], **where: Any) -> list[Mapping[str, Any]]:
    return [r for r in rows if all(r.get(k) == v for k, v in where.items())]


def cell(matrix: Mapping[str, Any], run: str, value: str) -> Mapping[str, Any]:
    """The row of a matrix report (`harness matrix`: tokenizers.json, chunkers.json) for one run and value."""
    return find([c["row"] for c in matrix["cells"]], run=run, value=value)


def values(matrix: Mapping[str, Any], run: str) -> list[str]:
    """The values a matrix report varied for one run, in the report's order."""
    return [c["row"]["value"] for c in matrix["cells"] if c["row"]["run"] == run]
