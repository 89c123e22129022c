"""Runs and qrels as files: TREC and ranx JSON in, TREC and ranx JSON out.

    TREC run     `qid Q0 docid rank score tag`   one line per returned document (trec_eval reads the
                                                 score, not the rank: so do we)
    TREC qrels   `qid 0 docid grade`             one line per judged document
    ranx JSON    {"qid": {"docid": score}}       a Run or Qrels as ranx.Run / ranx.Qrels save them

`read_run` and `read_qrels` tell the formats apart by content (JSON starts with `{`; a TREC run has 6
columns, TREC qrels 4), so a run from any other system can be scored with the harness's metrics:

    >>> scores = score_run_files("qmd.run", "exported/chunk.qrels", ["mrr@6", "ndcg@6"])
    >>> scores["mean"]                  # {'mrr@6': ..., 'ndcg@6': ...}

`export_results` writes a results.json's runs and qrels (chunk and document level) in both formats.
Bad input raises harness.errors.DataError naming the file and the line (or the query and document).
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from harness.errors import DataError
from harness.evaluation.metrics import Measure, evaluate, mean_scores
from harness.evaluation.runs import (
    LEVELS,
    MAX_GRADE,
    JudgedRuns,
    Qrels,
    Run,
    checked_qrels,
    checked_run,
    ranked_ids,
)
from harness.inputs.layout import read_utf8
from harness.text_files import loads_json

TREC_RUN_COLUMNS = 6
TREC_QRELS_COLUMNS = 4
_WHITESPACE = re.compile(r"\s")


def detect_format(path: Path | str, text: str | None = None) -> str:
    """"json", "trec-run" or "trec-qrels", from the file's first non-blank content."""
    text = read_utf8(path) if text is None else text
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            return "json"
        columns = len(line.split())
        if columns == TREC_RUN_COLUMNS:
            return "trec-run"
        if columns == TREC_QRELS_COLUMNS:
            return "trec-qrels"
        raise DataError(path, number, None, f"{columns} columns: neither a TREC run (qid Q0 docid rank score tag), "
                        "nor TREC qrels (qid 0 docid grade), nor ranx JSON")
    raise DataError(path, None, None, "empty file: no run or qrels in it")


def _trec_lines(path: Path | str, text: str, columns: int, what: str) -> Iterable[tuple[int, list[str]]]:
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != columns:
            raise DataError(path, number, None, f"{len(fields)} columns; a {what} line has {columns}")
        yield number, fields


def _json(path: Path | str, text: str) -> Any:
    return loads_json(text, path, "JSON file")  # a key twice, nesting past any real file: named


def read_run(path: Path | str) -> Run:
    """A TREC run or ranx JSON run (detected by content) as a Run."""
    text = read_utf8(path)
    kind = detect_format(path, text)
    if kind == "json":
        return checked_run(_json(path, text), str(path))
    if kind == "trec-qrels":
        raise DataError(path, None, None, "this is TREC qrels (4 columns), not a run (qid Q0 docid rank score tag)")
    run: Run = {}
    for number, (qid, _, doc, rank, score, _tag) in _trec_lines(path, text, TREC_RUN_COLUMNS, "TREC run"):
        try:
            int(rank)
        except ValueError:
            raise DataError(path, number, "rank", f"not an integer: {rank!r}") from None
        try:
            value = float(score)
        except ValueError:
            raise DataError(path, number, "score", f"not a number: {score!r}") from None
        if not math.isfinite(value):
            raise DataError(path, number, "score", f"not a finite number: {score!r}")
        docs = run.setdefault(qid, {})
        if doc in docs:
            raise DataError(path, number, "docid", f"{doc!r} is listed twice for query {qid!r}")
        docs[doc] = value
    return run


def read_qrels(path: Path | str) -> Qrels:
    """TREC qrels or ranx JSON qrels (detected by content) as Qrels."""
    text = read_utf8(path)
    kind = detect_format(path, text)
    if kind == "json":
        return checked_qrels(_json(path, text), str(path))
    if kind == "trec-run":
        raise DataError(path, None, None, "this is a TREC run (6 columns), not qrels (qid 0 docid grade)")
    qrels: Qrels = {}
    for number, (qid, _, doc, grade) in _trec_lines(path, text, TREC_QRELS_COLUMNS, "TREC qrels"):
        try:
            value = int(grade)
        except ValueError:
            raise DataError(path, number, "grade", f"not an integer: {grade!r}") from None
        if not -MAX_GRADE <= value <= MAX_GRADE:
            raise DataError(path, number, "grade", f"{grade} is outside {-MAX_GRADE:,}..{MAX_GRADE:,} (trec_eval holds "
                                                   "a grade in a C int)")
        docs = qrels.setdefault(qid, {})
        if doc in docs:
            raise DataError(path, number, "docid", f"{doc!r} is judged twice for query {qid!r}")
        docs[doc] = value
    return qrels


def _trec_id(path: Path, value: str, what: str) -> str:
    if not value or _WHITESPACE.search(value):
        raise DataError(path, None, what, f"{value!r} is empty or holds whitespace, which a TREC file cannot hold")
    return value


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def write_trec_run(run: Run, path: Path | str, tag: str = "harness") -> Path:
    """`qid Q0 docid rank score tag` lines, each query's documents in (score desc, id) order; scores are
    written exactly (repr), so reading the file back gives the same run."""
    path = Path(path)
    tag = _WHITESPACE.sub("_", tag.strip()) or "harness"
    lines = []
    for qid, scores in run.items():
        _trec_id(path, qid, "qid")
        for rank, doc in enumerate(ranked_ids(scores), start=1):
            lines.append(f"{qid} Q0 {_trec_id(path, doc, 'docid')} {rank} {float(scores[doc])!r} {tag}")
    return _write(path, "".join(line + "\n" for line in lines))


def write_trec_qrels(qrels: Qrels, path: Path | str) -> Path:
    """`qid 0 docid grade` lines."""
    path = Path(path)
    lines = [f"{_trec_id(path, qid, 'qid')} 0 {_trec_id(path, doc, 'docid')} {int(grade)}"
             for qid, docs in qrels.items() for doc, grade in docs.items()]
    return _write(path, "".join(line + "\n" for line in lines))


def write_ranx_json(mapping: Run | Qrels, path: Path | str) -> Path:
    """A Run or Qrels as ranx JSON ({"qid": {"docid": value}}), readable by ranx.Run.from_file."""
    return _write(Path(path), json.dumps(mapping, ensure_ascii=False, indent=1) + "\n")


def load_results_runs(results: Path | str) -> tuple[dict[str, Any], JudgedRuns]:
    """A results.json and the runs and qrels stored in it."""
    doc = _json(results, read_utf8(results))
    if not isinstance(doc, dict):
        raise DataError(results, None, None, "not a results.json (expected a JSON object)")
    return doc, JudgedRuns.from_dict(doc, str(results))


@dataclass
class Export:
    """What export_results wrote, and what it could not (one sentence each, naming the file and why)."""

    folder: Path
    written: list[Path] = field(default_factory=list)
    not_written: list[str] = field(default_factory=list)


def export_results(results: Path | str, out_dir: Path | str | None = None, *, suite_only: bool = False,
                   levels: Sequence[str] | None = None, ranx: bool = True) -> Export:
    """Write a results.json's runs and qrels to `out_dir` (default: export/ beside it):

        chunk.run, document.run            TREC runs (tag: the experiment's name)
        chunk.qrels, document.qrels        TREC qrels
        chunk-run.json, chunk-qrels.json, document-run.json, document-qrels.json    ranx JSON

    `suite_only` keeps the round's suite queries, whose means are results.json's summary["suite"];
    `levels` (default both) the levels written; ranx=False writes the TREC files only (`make trec`: the
    headline runs' trec/ folders, which ir_measures and trec_eval read).
    On the document run, results.json's Recall@c (documents of the first c chunks) is `recall` (the
    whole run) when c is the number of results returned, and equals recall@c whenever those chunks
    overlap at most c documents (one record per file).  A TREC file cannot hold an id with whitespace (a
    file name with a space, a query id "q 1"): that file is not written and named in `not_written`, and
    the ranx JSON, which holds any id, is written all the same."""
    results = Path(results)
    doc, runs = load_results_runs(results)
    if suite_only:
        queries = doc.get("queries") or {}
        if not isinstance(queries, dict):
            raise DataError(results, None, "queries", "must be an object of query id -> row")
        runs = runs.only(qid for qid, row in queries.items() if isinstance(row, dict) and row.get("in_suite"))
    out = Path(out_dir) if out_dir is not None else results.parent / "export"
    tag = str(doc.get("name") or "harness")
    export = Export(out)
    for level in levels or LEVELS:
        if level not in LEVELS:
            raise DataError(results, None, "level", f"{level!r} is not one of {', '.join(LEVELS)}")
        if ranx:
            export.written += [write_ranx_json(runs.run(level), out / f"{level}-run.json"),
                               write_ranx_json(runs.qrels(level), out / f"{level}-qrels.json")]
        for name, write in ((f"{level}.run", lambda p: write_trec_run(runs.run(level), p, tag)),
                            (f"{level}.qrels", lambda p: write_trec_qrels(runs.qrels(level), p))):
            try:
                export.written.append(write(out / name))
            except DataError as exc:
                (out / name).unlink(missing_ok=True)  # an earlier export's file would describe other results
                export.not_written.append(f"{out / name}: {exc.field} {str(exc).split(': ', 2)[-1]} "
                                          f"(the same {'run' if name.endswith('.run') else 'qrels'} is in "
                                          f"{level}-{'run' if name.endswith('.run') else 'qrels'}.json)")
    export.written.sort(key=lambda p: p.name)
    return export


def score_run_files(run_path: Path | str, qrels_path: Path | str, measures: Sequence[str],
                    ties: str = "id_order") -> dict[str, Any]:
    """Score a run file against a qrels file (either TREC or ranx JSON) with `evaluate` (`ties`: its tie
    rule, "id_order" as trec_eval, or "expected" over the orders of tied documents).

    Returns {"run", "qrels", "measures", "ties", "queries" (judged: what the means are over), "mean",
    "per_query", "judged_without_results" (scored 0), "unjudged_in_run" (ignored)}."""
    names = [str(Measure.parse(m)) for m in measures]
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    per_query = evaluate(run, qrels, names, ties=ties)
    return {
        "run": str(run_path), "qrels": str(qrels_path), "measures": names, "ties": ties, "queries": len(per_query),
        "mean": mean_scores(per_query, names),
        "per_query": per_query,
        "judged_without_results": sorted(q for q in per_query if not run.get(q)),
        "unjudged_in_run": sorted(q for q in run if q not in per_query),
    }
