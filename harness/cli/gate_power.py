"""`python -m harness.cli.gate_power` (`make gate-power`): the gate's statistical rules on the same queries,
false alarms and power in simulation (harness.gate.power) -> reports/gate-power/."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Sequence

from harness.reporting.documents import write_document
from harness.gate.power import DROP, REPS, RULES, SEED, measure


def markdown(doc: dict[str, Any]) -> str:
    lines = ["# The gate's statistical rules on the same queries (`make gate-power`)\n",
             (f"{doc['reps']:,} simulated pairs of runs per world (seed {doc['seed']}; "
              f"{doc['permutations']:,} sign patterns or relabellings inside each test; {doc['seconds']:g} s), a "
              f"rule failing the second run at alpha {doc['alpha']} only when it is worse. `drop 0`: the second run "
              f"did not regress (the share failed is the false-alarm rate); `drop {doc['drop']:g}`: it lost "
              f"{doc['drop']:g} of the metric in expectation (the share failed is the power). Every rate is "
              "shown ± its Monte Carlo error, sqrt(rate (1 - rate) / reps). `interval` is the rule as the "
              "gate runs it on runs of the same queries (the paired one-sided sign-flip test); `interval, "
              "unpaired` is how it ran before (a one-sided two-sample permutation test, which ignores the "
              "pairing); `paired` is the two-sided sign-flip test failing when worse (an effective 2.5%). "
              "How the worlds are drawn: harness/gate/power.py.\n"),
             "| world | drop | mean observed drop | " + " | ".join(RULES) + " |",
             "|---|---|---|" + "---|" * len(RULES)]
    for w in doc["worlds"]:
        cells = [f"{w['rules'][r]['rate']:.1%} ± {w['rules'][r]['mc_error']:.1%}" for r in RULES]
        lines.append(f"| {w['description']} | {w['drop']:g} | {w['mean_observed_drop']:+.4f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the gate's statistical rules on the same queries: false alarms "
                                                 "and power in simulation")
    parser.add_argument("--out", default="reports/gate-power")
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--drop", type=float, default=DROP)
    args = parser.parse_args(argv)
    doc = measure(args.reps, args.seed, args.drop)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_document(out / "gate-power.json", "gate-power", doc)
    (out / "gate-power.md").write_text(markdown(doc), encoding="utf-8")
    print(f"wrote {out / 'gate-power.md'}")


if __name__ == "__main__":
    main()
