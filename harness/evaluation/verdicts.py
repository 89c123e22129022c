"""One decision rule for every "recommended" / "change" verdict (issue 37).

A paired comparison at the data's resampling unit (a query, or a cluster such as a LoCoMo conversation)
gives an interval and a sign-flip test.  It decides only when

1. the test can reach the level at all: its floor, the smallest p it can give on these units (2/2^m for
   an exact sign-flip over m informative units, 1/(B+1) for B random patterns), lies below 1 - level;
   with 2 conversations that differ the floor is 0.5 and no data could decide, so the verdict is
   "cannot decide with 2 of 10 conversations" whatever the interval says;
2. the interval excludes zero and the test agrees (p < 1 - level).

    >>> d = decide(interval, test)          # Decision(outcome, direction, text)
    >>> d.outcome                           # "better", "worse", "no difference shown" or "cannot decide"
    >>> d.text                              # "cannot decide with 2 of 10 conversations (smallest attainable p = 0.5)"
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.evaluation.formatting import plural
from harness.evaluation.statistics import LEVEL, Interval, PairedTest

Outcome = Literal["better", "worse", "no difference shown", "cannot decide"]
CANNOT_DECIDE: Outcome = "cannot decide"


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    text: str  # one phrase for a verdict column

    @property
    def decided(self) -> bool:
        return self.outcome in ("better", "worse")

    @property
    def better(self) -> bool:
        return self.outcome == "better"


def units_text(test: PairedTest) -> str:
    """"2 of 10 conversations" (informative of all units), or "10 conversations" when every unit differs."""
    units = test.units if test.units is not None else test.queries
    what = plural(test.unit, units)
    return what if test.informative == units else f"{test.informative} of {what}"


def reachable(test: PairedTest, level: float = LEVEL) -> bool:
    """Can this test give p below the level on these units at all?"""
    return test.floor < 1.0 - level


def decide(interval: Interval, test: PairedTest, level: float | None = None) -> Decision:
    """The verdict of one paired comparison (module docstring): "cannot decide" when the units cannot
    reach the level or no interval exists at them, "better"/"worse" when the interval excludes zero and
    the test agrees, else "no difference shown"."""
    level = interval.level if level is None else level
    alpha = 1.0 - level
    if not reachable(test, level):
        return Decision(CANNOT_DECIDE, f"cannot decide with {units_text(test)} (smallest attainable p = "
                                       f"{test.floor:.3g}, level {alpha:g})")
    if not interval.defined:
        return Decision(CANNOT_DECIDE, f"cannot decide with {units_text(test)} ({interval.method})")
    if interval.excludes(0.0) and test.p_value < alpha:
        return Decision("better" if interval.low > 0 else "worse",
                        f"{'gain' if interval.low > 0 else 'loss'} {interval.estimate:+.4f} "
                        f"[{interval.low:+.4f}, {interval.high:+.4f}], p = {test.p_text()}")
    return Decision("no difference shown", f"{interval.estimate:+.4f} [{interval.low:+.4f}, {interval.high:+.4f}], "
                                           f"p = {test.p_text()}")
