"""Which outcomes a regeneration on another machine can flip: the deciding margin of each query and the
gains that lie within the flips such margins allow.

A query's outcome (top-1 relevant and >= minScore, its record kept in the list, a negative left silent) is
decided by the margins evaluation.per_query.near_tie_columns counts: the relevant chunk against the best
other (relevant_margin), the top-1 against minScore (min_score_margin, not counted when the top-1 is not
relevant: it fails on rank) and the relevant chunk against the cut of the list (cut_margin).  The smallest
of them is the query's deciding margin: when it is below `limit` (a few times the reproduction tolerance)
the embedding's drift on another machine can decide the query the other way.

A gain of one setting over another (mean per-query objective) is inside reproduction noise when the
queries that can flip in either setting could move it by at least as much: each flip moves the mean by at
most `span` / n (span: the largest per-query objective difference, 1 for pass/fail).
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from harness.evaluation.per_query import counted_margins


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def deciding_margin(row: Mapping[str, Any]) -> float | None:
    """The smallest |margin| that decides the row's outcome (None: no margin could be measured)."""
    names = counted_margins(bool(row.get("relevant")), (row.get("returned") or 0) > 0, bool(row.get("top1_relevant")))
    values = [abs(v) for v in (_finite(row.get(f"{name}_margin")) for name in names) if v is not None]
    return min(values) if values else None


def deciding_margins(frame: Any) -> dict[str, float | None]:
    """query id -> deciding margin, for every row of a per-query frame (evaluate_queries' columns)."""
    return {str(row["query_id"]): deciding_margin(row) for row in frame.to_dict(orient="records")}


def within(margins: Mapping[str, float | None], limit: float, queries: Iterable[str] | None = None) -> list[str]:
    """The queries (of `queries`, default all) whose deciding margin is below `limit`."""
    keep = set(margins) if queries is None else set(queries)
    return sorted(q for q, m in margins.items() if q in keep and m is not None and m < limit)


def gain_noise(gain: float, n: int, span: float, *margin_sets: Mapping[str, float | None], limit: float,
               queries: Iterable[str] | None = None) -> dict[str, Any]:
    """Whether a gain (difference of two mean objectives over `n` queries) is inside reproduction noise:
    the queries whose deciding margin is under `limit` in any of `margin_sets` (the two settings compared)
    could each move the difference by `span` / n."""
    chosen = list(queries) if queries is not None else None
    flippable = sorted(set().union(*(within(m, limit, chosen) for m in margin_sets))) if margin_sets else []
    bound = span * len(flippable) / n if n else 0.0
    inside = limit > 0 and bool(flippable) and abs(gain) <= bound + 1e-12
    return {"gain": gain, "limit": limit, "flippable": flippable, "bound": bound, "inside_noise": inside}
