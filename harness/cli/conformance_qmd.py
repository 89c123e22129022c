"""`python -m harness.cli.conformance_qmd`: the qmd preset's lexical leg against the real QMD, alone
(harness.conformance.qmd compares; this writes --json)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from harness.reporting.documents import write_document
from harness.conformance import qmd
from harness.systems import real


def main(argv: Sequence[str] | None = None) -> int:
    """The qmd preset's lexical leg against the real QMD (harness.conformance.qmd)."""
    ap = argparse.ArgumentParser(prog="python -m harness.cli.conformance_qmd", description=qmd.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="keep the rendered workspaces here (default: a temporary folder)")
    ap.add_argument("--json", help="write the whole report (every query, both rankings) to this file")
    ap.add_argument("--rounds", type=int, nargs="*", default=[1, 2, 3, 4])
    ap.add_argument("--no-cmrc", action="store_true")
    args = ap.parse_args(argv)
    try:
        real.package_dir("qmd", qmd.QMD_VERSION, real.conformance_dir())
    except real.NotInstalled:
        code = real.install(quiet=True)
        if code == real.SKIP_EXIT_CODE:
            print("SKIP: npm registry unreachable, QMD cannot be installed", file=sys.stderr)
            return real.SKIP_EXIT_CODE
        if code != 0:
            print(f"install.sh failed (exit {code})", file=sys.stderr)
            return 2
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    report = qmd.run_qmd_conformance(rounds=args.rounds, cmrc=not args.no_cmrc, work_dir=out)
    if args.json:
        write_document(args.json, "conformance", report)
    print("\n".join(qmd.summary_lines(report)))
    ok = all(lay["identical"] == lay["queries"] for lay in report["layouts"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUTF8", "1")
    sys.exit(main())
