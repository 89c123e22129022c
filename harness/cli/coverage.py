"""`python -m harness.cli.coverage` (`make statistics`): measure the statistics' coverage and error rates
(harness.studies.coverage) and write reports/statistics/ (harness.reporting.coverage)."""
from __future__ import annotations

import argparse
from typing import Sequence

from harness.reporting.coverage import write_report
from harness.studies.coverage import SIZES, measure


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="coverage and error rates of the harness's statistics")
    parser.add_argument("--out", default="reports/statistics")
    parser.add_argument("--size", choices=sorted(SIZES), default="published")
    args = parser.parse_args(argv)
    path = write_report(measure(args.size), args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
