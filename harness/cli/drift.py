"""`python -m harness.cli.drift` (`make drift`): the embedding's movement between inference thread counts,
the reproduction tolerance the ablation and sweep reports print (harness.studies.drift) -> reports/drift/."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Sequence

from harness.reporting.documents import write_document
from harness.studies.drift import EXPERIMENT, measure


def markdown(doc: dict[str, Any]) -> str:
    t1, t2 = doc["threads"]
    return "\n".join([
        "# Reproduction tolerance: the embedding across thread counts (`make drift`)\n",
        f"{doc['model_id']}, every chunk ({doc['passages']:,}) and query ({doc['queries']:,}) of "
        f"`{doc['experiment']}` embedded without the cache in a fresh process with {t1} and with {t2} inference "
        f"threads ({doc['cpu']}, {doc['cpu_count']} cores; {doc['seconds']:g} s). "
        f"{doc['identical_vectors']:,} of {doc['passages'] + doc['queries']:,} vectors came out bit-identical.\n",
        "| measure | value |", "|---|---|",
        f"| max \\|1 − cos\\| between a text's two vectors | {doc['max_cos_difference']:.2e} |",
        f"| max \\|score difference\\| over query × chunk pairs | {doc['max_score_difference']:.2e} |",
        f"| 99th percentile of the score differences | {doc['p99_score_difference']:.2e} |",
        f"| median score difference | {doc['median_score_difference']:.2e} |\n",
        f"**Tolerance: {doc['tolerance']:.2e}** (the largest score difference). A margin smaller than "
        f"{doc['noise_multiple']} x the tolerance ({doc['noise_multiple'] * doc['tolerance']:.2e}) is inside "
        "reproduction noise: another thread count or CPU can decide it the other way. The ablation and sweep "
        "reports print the tolerance and flag such margins. Other CPUs (other SIMD paths) are not measured "
        "here; run `make drift` there to measure them.\n"])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the embedding's movement between inference thread counts")
    parser.add_argument("--out", default="reports/drift")
    parser.add_argument("--experiment", default=EXPERIMENT)
    args = parser.parse_args(argv)
    doc = measure(args.experiment)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_document(out / "drift.json", "drift", doc)
    (out / "drift.md").write_text(markdown(doc), encoding="utf-8")
    print(f"wrote {out / 'drift.md'}: tolerance {doc['tolerance']:.2e}")


if __name__ == "__main__":
    main()
