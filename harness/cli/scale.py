"""`harness scale` and `python -m harness.studies.scale`: the scale experiment's command line (argparse, so
that `python -m` works without the typer app); it runs harness.studies.scale and writes the report with
harness.reporting.scale."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from harness.reporting.scale import write_scale_report
from harness.run_folders import default_output_dir
from harness.studies.scale.corpus import DEFAULT_MEAN_CHARS
from harness.studies.scale.run import DEFAULT_SIZES, QUICK_SIZES, headline_lines, run_scale


def _summary() -> str:
    """The first paragraph of the package's docstring: what the experiment is."""
    from harness.studies import scale

    return scale.__doc__.split("\n\n")[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="harness scale", description=_summary())
    parser.add_argument("--quick", action="store_true", help="sizes 1k and 10k only")
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=None,
                        help="comma-separated corpus sizes (default 1000,10000,100000)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default ./harness-results/scale/)")
    parser.add_argument("--queries", type=int, default=50, help="timed queries per backend and size")
    parser.add_argument("--chars", type=int, default=DEFAULT_MEAN_CHARS, help="mean chunk length in characters")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bag-tokenizer", default="jieba", help="tokenizer for rank-bm25/bm25s")
    parser.add_argument("--vector", default=None, help="comma-separated vector backends (default all)")
    parser.add_argument("--tokenizers", default=None, help="comma-separated FTS5 tokenizers (default all)")
    parser.add_argument("--lexical", default=None, help="comma-separated lexical backends (default all)")
    parser.add_argument("--budget", type=float, default=240.0, help="seconds per backend and size, predicted")
    args = parser.parse_args(argv)
    split = lambda s: None if s is None else [x.strip() for x in s.split(",") if x.strip()]  # noqa: E731
    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    out = args.out or default_output_dir("scale-quick" if args.quick else "scale")
    result = run_scale(sizes, seed=args.seed, queries=args.queries, mean_chars=args.chars,
                       bag_tokenizer=args.bag_tokenizer, vector=split(args.vector),
                       tokenizers=split(args.tokenizers), lexical=split(args.lexical),
                       backend_budget_s=args.budget)
    write_scale_report(result, out)
    for line in headline_lines(result):
        print(line)
    print(f"wrote {out}/scale.json, scale.md, scale.png")
    return 0
