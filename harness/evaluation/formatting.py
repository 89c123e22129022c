"""How numbers, intervals and p-values are written: the one module every renderer uses (harness.reporting
and the CLI).  Plain Python, no pandas or scipy: the gate and the CLI import it cheaply.

    interval_text(0.95, [0.85, 1.0])          -> "0.950 [0.850, 1.000]"
    figure(summary_block, "mrr@6")            -> the block's mean with its 95% interval
    difference_text(row["difference"])       -> "+0.012 [-0.003, +0.030]"
    p_text(0.0001, floor=1e-4, monte_carlo=True) -> "< 0.0001"
"""
from __future__ import annotations

from typing import Any, Mapping

LEVEL = 0.95
"""The confidence level of every interval (harness.evaluation.statistics computes at it, the pages say it)."""


def plural(unit: str, n: int | None) -> str:
    """'1 conversation', '10 conversations', '12 queries'."""
    word = unit if n == 1 else ("queries" if unit == "query" else unit + "s")
    return f"{n:,} {word}" if n is not None else word


def p_text(p: float, floor: float = 0.0, monte_carlo: bool = False, digits: int = 3) -> str:
    """A p-value as reports print it: at the floor of a Monte Carlo test "< floor" (the test cannot
    say more), else the value; with its floor beside it when the floor is not negligible."""
    if p != p:
        return "n/a"
    if monte_carlo and floor > 0 and p <= floor * (1 + 1e-9):
        return f"< {floor:.{digits}g}"
    text = f"{p:.{digits}g}"
    if floor >= 1e-4 and p < 0.2:
        text += f" (floor {floor:.{digits}g})"
    return text


def missing(value: Any) -> bool:
    """None or NaN: a figure that was not computed."""
    return value is None or (isinstance(value, float) and value != value)


def number_text(value: Any, digits: int = 3) -> str:
    """A number to `digits` decimals; "" when it was not computed."""
    return "" if missing(value) else f"{value:.{digits}f}"


def interval_text(value: float, interval: Any, digits: int = 3, sign: str = "") -> str:
    """`0.950 [0.850, 1.000]`; `0.950 (n too small)` when the sample has no interval (NaN bounds); the
    value alone without an interval.  sign="+": differences (`+0.012 [-0.003, +0.030]`)."""
    text = f"{value:{sign}.{digits}f}"
    if not interval:
        return text
    low, high = interval
    if low is None or high is None or low != low or high != high:
        return text + " (n too small)"
    return f"{text} [{low:{sign}.{digits}f}, {high:{sign}.{digits}f}]"


def estimate_text(block: Mapping[str, Any], digits: int = 3, sign: str = "") -> str:
    """An estimate with its interval ({"estimate", "ci95"}: Interval.as_dict()); "" when not computed."""
    if missing(block["estimate"]):
        return ""
    return interval_text(block["estimate"], block["ci95"], digits, sign)


def mean_text(stat: Mapping[str, Any] | None, digits: int = 3) -> str:
    """`mean [low, high]` of a mean block ({"mean", "ci"}); "" when there is none."""
    if not stat or stat.get("mean") is None:
        return ""
    return interval_text(stat["mean"], stat.get("ci"), digits)


def figure(block: Mapping[str, Any], name: str, digits: int = 3) -> str:
    """`0.950 [0.850, 1.000]`: a block's mean with its 95% interval (just the mean when it has none); a
    record-level figure that the order of tied records decides gets its range over those orders:
    `0.533 [0.137, 0.899] (tied records: 0.290-0.886)`."""
    value = block.get(name)
    if value is None or value != value:
        return "—"
    text = interval_text(value, block.get(f"{name}_ci95"), digits)
    tied = (block.get("tie_ranges") or {}).get(name)
    if tied:
        text += f" (tied records: {tied[0]:.{digits}f}-{tied[1]:.{digits}f})"
    return text


def difference_text(d: Mapping[str, Any]) -> str:
    """A paired difference (Interval.as_dict()) as "+0.012 [-0.003, +0.030]"; "—" without common queries."""
    if d["estimate"] != d["estimate"]:
        return "—"
    return interval_text(d["estimate"], d.get("ci95"), sign="+")


def _field(row: Any, key: str) -> Any:
    """A field of a comparison row: a mapping's key, a Comparison's attribute (or tag)."""
    if isinstance(row, Mapping):
        return row.get(key)
    if hasattr(row, key):
        return getattr(row, key)
    return row.tags.get(key)


def p_cell(row: Any, key: str = "p_value") -> str:
    """A comparison row's p-value with its floor (p_text): "< 0.0001" at a random test's floor."""
    p = _field(row, key)
    if p is None or p != p:
        return "—"
    return p_text(p, _field(row, "p_floor") or 0.0, bool(_field(row, "monte_carlo")))


def units_cell(row: Any) -> str:
    """On how many of what a comparison rests: "10 conversations", "34 queries"."""
    units = _field(row, "units")
    return plural(_field(row, "unit") or "query", units if units is not None else _field(row, "queries"))
