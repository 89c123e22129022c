"""How figures of the statistics are written (no scipy: the gate and the CLI import this cheaply)."""
from __future__ import annotations


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
