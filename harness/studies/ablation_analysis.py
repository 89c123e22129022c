"""The ablation's analysis (harness ablation): what its four rounds' results say, as the Document its
renderer (harness.reporting.ablation) lays out.  Everything computed is here: each round against the one
before (paired tests, one Holm family), the cells where ours differs from the seed's pass/fail and the
margin that decided them, the paraphrases no leg brought into the top k, and which outcomes lie inside
the reproduction tolerance (reports/drift, `make drift`)."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pandas as pd

from harness.studies.document import Document
from harness.studies.experiment import RunResult
from harness.inputs.layout import project_path
from harness.studies.drift import CROSS_MACHINE, NOISE_MULTIPLE
from harness.evaluation.comparison import column_pairs, comparison_rows

SEED_FILE = "seed_scores.csv"


def load_seed_scores(dataset_dir: Path | str) -> dict[tuple[str, int], dict[str, str]]:
    """(query id, round) -> {seed_score, seed_status, seed_note} from datasets/<name>/seed_scores.csv."""
    path = Path(dataset_dir) / SEED_FILE
    if not path.exists():
        return {}
    with open(path, encoding="utf-8", newline="") as fh:
        return {(row["query_id"], int(row["round"])): row for row in csv.DictReader(fh)}


def reproduction_tolerance() -> dict[str, Any] | None:
    """The reproduction tolerance the ablation and sweep reports print: reports/drift/drift.json (`make drift`:
    how far a score moves between inference thread counts, measured on this machine) together with the
    cross-machine regeneration harness.studies.drift.CROSS_MACHINE records; `tolerance` is the larger of the
    two.  None when the drift has not been measured."""
    import json

    path = project_path("reports/drift/drift.json")
    if not path.is_file():
        return None
    drift = json.loads(path.read_text(encoding="utf-8"))
    return with_cross_machine(drift, CROSS_MACHINE, NOISE_MULTIPLE)


def with_cross_machine(drift: dict[str, Any], cross: dict[str, Any] | None, multiple: int) -> dict[str, Any]:
    """`drift` (the thread-count measurement, and the engine builds' when it holds them) with the cross-machine
    score change: `threads_tolerance` is the measured thread drift, `builds_tolerance` the measured build drift
    (None: not measured), `tolerance` the largest of them and the cross-machine change."""
    threads = float(drift["tolerance"])
    builds = (drift.get("builds") or {}).get("tolerance")
    across = float(cross["score_change"]) if cross else 0.0
    return {**drift, "threads_tolerance": threads, "builds_tolerance": builds, "cross_machine": cross,
            "tolerance": max(threads, float(builds or 0.0), across),
            "noise_multiple": int(drift.get("noise_multiple") or multiple)}


def noise_limit(drift: dict[str, Any] | None) -> float:
    """The margin below which an outcome is "inside reproduction noise": noise_multiple x the tolerance
    (0 when the tolerance is not measured: nothing is flagged)."""
    return 0.0 if drift is None else drift["noise_multiple"] * drift["tolerance"]


def noise_margins(row: Any, drift: dict[str, Any] | None) -> list[str]:
    """The deciding margins of a row (the relevant chunk against the best other, the top-1 against minScore)
    that lie within noise_multiple x the reproduction tolerance."""
    limit = noise_limit(drift)
    out = []
    wrong_top1 = row.get("top1_relevant") is not None and not bool(row.get("top1_relevant"))
    for column, what in (("relevant_margin", "vs best other"), ("min_score_margin", "vs minScore")):
        if column == "min_score_margin" and wrong_top1:
            continue  # it fails on rank, whatever its score against minScore
        value = row.get(column)
        if value is not None and value == value and abs(float(value)) < limit:
            out.append(f"{what} {float(value):+.4f}")
    return out


def _margin_note(q: Any) -> str:
    margin = q.get("relevant_margin")
    if margin is None or margin != margin:
        return "no other chunk to compare with"
    side = "ahead of" if margin >= 0 else "behind"
    threshold = q.get("near_tie_threshold")
    if "relevant" in str(q.get("near_tie_on") or "").split(","):
        tie = f" (a near tie, under {threshold:.2g}: another embedding can flip it)"
    elif threshold is not None and threshold == threshold and threshold > 0:
        tie = f" ({abs(margin) / threshold:.0f}x the near-tie threshold {threshold:.2g})"
    else:
        tie = ""
    return f"{side} the best other chunk by {abs(margin):.4f}{tie}"


def differences(results: dict[int, RunResult], seed: dict[tuple[str, int], dict[str, str]]) -> list[str]:
    """Cells where our pass/fail differs from the seed's, with the margin that decided them and where
    each leg put the relevant chunk."""
    notes = []
    for r, res in results.items():
        frame = res.per_query.set_index("query_id")
        hits = res.hits
        for qid, q in frame[frame["in_suite"]].iterrows():
            s = seed.get((qid, r))
            if not s or s["seed_status"] == "not_in_suite":
                continue
            seed_pass = s["seed_status"] in ("pass", "pass_no_figure")
            if seed_pass == bool(q["passed"]):
                continue
            top = hits[qid][0] if hits[qid] else None
            returned = q["rank"] == q["rank"] and q["rank"]
            if q["passed"]:
                head = f"seed ✗, ours passes — top-1 is relevant at {top['score']:.3f}, "
            elif returned:
                head = (f"seed passes, ours fails — top-1 {top['chunk']} ({top['score']:.3f}); relevant rank "
                        f"{int(q['rank'])} at {q['score']:.3f}, ")
            else:
                head = "seed passes, ours fails — relevant not returned; "
            margin = _margin_note(q) + "; " if returned else ""
            notes.append(f"round {r} {qid} {q['text']}: {head}{margin}{legs_note(q)}")
    return notes


def _leg_note(q: Any, leg: str) -> str:
    rank = q.get(f"{leg}_rank")
    if rank is None or rank != rank:  # None or NaN: not among the leg's candidates
        if q.get(f"{leg}_candidates") == 0:
            return f"{leg}: no hit at all"
        return f"{leg}: not among its {int(q[f'{leg}_candidates'])} candidates"
    note = f"{leg} rank {int(rank)} (raw {q[f'{leg}_raw']:.3f}"
    at_cut = q.get(f"{leg}_raw_at_cut")
    if at_cut is not None and at_cut == at_cut:
        note += f"; the cut-off candidate {at_cut:.3f}"
    return note + ")"


def legs_note(q: Any) -> str:
    """Where the vector and lexical legs put a query's first relevant chunk (a results row or dict)."""
    if not q.get("relevant_indexed", True):
        return "its record is not in this round's layout"
    return "; ".join(_leg_note(q, leg) for leg in ("vector", "lexical"))


def max_results_of(result: Any) -> int:
    return int((getattr(result, "config", None) or {}).get("search", {}).get("max_results", 6))


def paraphrase_misses(results: dict[int, RunResult]) -> list[str]:
    """Paraphrase queries whose record is not among the returned chunks (the top max_results), with
    where each leg put it: tells a model's judgement (record found by the vector leg just below the
    cut) from a record that no leg can reach."""
    notes = []
    for r, res in results.items():
        frame = res.per_query
        k = max_results_of(res)
        found = pd.to_numeric(frame["rank"], errors="coerce").notna()
        for _, q in frame[(frame["kind"] == "paraphrase") & ~found].iterrows():
            note = legs_note(q)
            leg_ranks = [q.get(f"{leg}_rank") for leg in ("vector", "lexical")]
            if any(rank is not None and rank == rank and rank <= k for rank in leg_ranks):
                note += f" — within a leg's top {k}, so fusion or post-processing pushed it out"
            notes.append(f"round {r} {q['query_id']} {q['text']}: " + note)
    return notes


def per_query_values(res: RunResult, column: str, kind_filter: str = "suite") -> dict[str, float]:
    """{query id: value} of one per-query column over the run's suite queries (passes as 0/1)."""
    frame = res.per_query[res.per_query["in_suite"]] if kind_filter == "suite" else res.per_query
    values = pd.to_numeric(frame[column].astype(float) if frame[column].dtype == bool else frame[column],
                           errors="coerce")
    return {qid: float(v) for qid, v in zip(frame["query_id"], values) if v == v}


def round_comparisons(results: dict[int, RunResult]) -> list[dict[str, Any]]:
    """Each round against the one before, on the suite queries both have: per-query pass and the
    headline MRR (documents), a paired sign-flip test and bootstrap interval for each, Holm-corrected
    over the whole table (harness.evaluation.comparison)."""
    rounds = list(results)
    k = max_results_of(results[rounds[0]])
    out = []
    clusters = {}
    for r in rounds:  # a query keeps its cluster (the record it targets) in every round
        clusters.update(results[r].clusters() or {})
    unit = results[rounds[0]].unit
    for metric in ("passed", f"mrr@{k}"):
        columns = {f"round {r}": per_query_values(results[r], metric) for r in rounds}
        pairs = [(f"round {b}", f"round {a}") for a, b in zip(rounds, rounds[1:])]
        out += column_pairs(columns, pairs=pairs, clusters=clusters or None, unit=unit, tags={"metric": metric})
    return comparison_rows(out)  # both metrics: one family


def cells_inside_noise(results: dict[int, RunResult], drift: dict[str, Any] | None) -> int:
    """How many per-query cells of the ablation's table (a suite query in a round that returned its relevant
    chunk) were decided by a margin inside the reproduction noise (noise_margins)."""
    first = next(iter(results.values())).per_query
    suite_ids = first[first["kind"] == "suite"]["query_id"].tolist()  # the table's rows, as the renderer draws them
    count = 0
    for res in results.values():
        frame = res.per_query.set_index("query_id")
        for qid in suite_ids:
            q = frame.loc[qid]
            if q["in_suite"] and q["rank"] is not None and not pd.isna(q["rank"]) and noise_margins(q, drift):
                count += 1
    return count


def ablation_document(results: dict[int, RunResult], seed: dict[tuple[str, int], dict[str, str]],
                      drift: dict[str, Any] | None) -> Document:
    """The ablation's Document: each round's config, summary, timings and per-query rows; the differences
    from the seed; the paraphrase misses; the rounds' paired comparisons; the reproduction tolerance and
    how many cells lie inside it.  `drift`: reproduction_tolerance() (None: not measured)."""
    first_result = next(iter(results.values()))
    doc = {
        "preset": first_result.config.get("preset"),
        "environment": first_result.environment,
        "rounds": {str(r): {"config": res.config, "summary": res.summary, "timings": res.timings,
                            "queries": res.to_dict()["queries"]} for r, res in results.items()},
        "differences_from_seed": differences(results, seed),
        "paraphrase_misses": paraphrase_misses(results),
        "round_comparisons": round_comparisons(results) if len(results) > 1 else [],
        "reproduction": {"tolerance": None if drift is None else drift["tolerance"],
                         "threads_tolerance": None if drift is None else drift["threads_tolerance"],
                         "cross_machine": None if drift is None else drift["cross_machine"],
                         "noise_multiple": None if drift is None else drift["noise_multiple"],
                         "noise_limit": noise_limit(drift),
                         "cells_inside_noise": cells_inside_noise(results, drift)},
    }
    return Document("ablation", doc, {"preset": doc["preset"], "seed": seed, "drift": drift})
