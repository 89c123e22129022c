"""What the gate reads from a file: its kind, its metrics, their per-query values, and each query's outcome.

Three kinds of file are gated, each only against a baseline of the same kind:

    results   a run's results.json (`harness run`): summary + per-query rows + returned hits
    ablation  an ablation.json (`harness ablation`): the same per round, names prefixed `round3.`
    eval      the --json output of `harness eval` (a run from another system): means + per-query scores

Metric names are the summaries' (`passed`, `mrr@6`, ...), and the derived ones are named by the cut-off
the run was configured with: `paraphrase_hit@5` at maxResults 5.  Every metric that is a sum or a mean
over queries also carries its per-query values, which the interval and paired rules resample.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.config import NEAR_TIE
from harness.errors import ConfigError
from harness.inputs.layout import read_json
from harness.text_files import shown

KINDS = {
    "results": "a run's results.json",
    "ablation": "an ablation.json",
    "eval": "harness eval --json scores",
}

@dataclass(frozen=True)
class QueryState:
    """One query of one file, as the gate's per-query checks see it.  `ok` is the query's own verdict:
    a suite query passed (top-1 relevant and above minScore), a paraphrase has its record among the
    results, a negative query returned nothing, a query of another system's run kept its value."""

    key: str  # the query id, prefixed `round3.` in an ablation
    text: str
    kind: str  # suite, paraphrase, negative; "eval" for a run of another system
    gated: bool  # a change of `ok` for the worse fails its test case (suite queries off the round: reported)
    ok: bool | None
    outcome: str  # the verdict in words: "passed", "failed (relevant at rank 2)", "returned 6"
    word: str = ""  # the verdict in one word, for "passed -> failed" lines
    margin: float | None = None  # suite: the relevant chunk's lead (+) or deficit (-) against the best other
    near_tie: float = 0.0  # margins below this decide nothing reliably
    flagged: bool | None = None  # the run's own near-tie verdict (relative to the query's score spread)
    value: float | None = None  # eval files: the query's value of the first measure
    measure: str = ""  # eval files: that measure's name

    @property
    def is_near_tie(self) -> bool:
        if self.kind != "suite":
            return False
        if self.flagged is not None:
            return self.flagged
        return self.margin is not None and abs(self.margin) < self.near_tie


@dataclass
class PerQuery:
    """A metric's per-query values and how the metric aggregates them."""

    values: dict[str, float]  # query key -> value
    aggregate: str  # "sum" or "mean"
    clusters: dict[str, str] | None = None  # query key -> its cluster (the data set's unit), None: independent
    unit: str = "query"

    def total(self, values: dict[str, float] | None = None) -> float:
        v = list((values if values is not None else self.values).values())
        if not v:
            return 0.0
        return float(sum(v)) if self.aggregate == "sum" else float(sum(v) / len(v))


@dataclass
class GateDocument:
    path: Path
    kind: str
    metrics: dict[str, float]
    per_query: dict[str, PerQuery] = field(default_factory=dict)  # metric -> its per-query values
    queries: dict[str, QueryState] = field(default_factory=dict)
    doc: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.path} ({KINDS[self.kind]})"


def file_kind(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("rounds"), dict):
        return "ablation"
    if isinstance(doc.get("summary"), dict):
        return "results"
    if isinstance(doc.get("mean"), dict) and isinstance(doc.get("per_query"), dict):
        return "eval"
    return None


def load_document(path: Path | str, what: str) -> GateDocument:
    """Read a file the gate compares; a file of no known kind is refused with what it looks like."""
    path = Path(path)
    _, doc = read_json(path, what)
    kind = file_kind(doc)
    if kind is None:
        keys = ", ".join(sorted(doc)[:8]) if isinstance(doc, dict) else type(doc).__name__
        raise ConfigError(f"{path}: the {what} is none of the files the gate compares ({'; '.join(KINDS.values())}); "
                          f"its top-level keys are: {keys}")
    check_document(doc, kind, path)
    if kind == "ablation":
        gd = GateDocument(path, kind, {}, doc=doc)
        for r, round_doc in doc["rounds"].items():
            part = run_part(round_doc, prefix=f"round{r}.")
            gd.metrics.update(part.metrics)
            gd.per_query.update(part.per_query)
            gd.queries.update(part.queries)
        return gd
    if kind == "results":
        part = run_part(doc, prefix="")
        return GateDocument(path, kind, part.metrics, part.per_query, part.queries, doc)
    return eval_document(path, doc)


NOT_METRICS = ("ci_method", "near_tie", "resampling", "near_ties_by_margin")  # summary.suite entries, not figures


def check_document(doc: dict[str, Any], kind: str, path: Path) -> None:
    """Refuse what the gate cannot judge rather than judge around it: a summary or suite of the wrong
    shape, a figure that is not a number, or one that is NaN or infinite (a NaN baseline would otherwise
    drop its check without a word).  Errors name the file and the key."""
    def bad(where: str, message: str) -> ConfigError:
        return ConfigError(f"{path}: {where}: {message}; is this a file `harness {'eval --json' if kind == 'eval' else 'run'}` "
                           "wrote?")

    def figures(table: Any, where: str, compared: bool = True) -> None:
        """compared=False: a block the gate reads only the counts of (paraphrase, negative), whose other
        figures may be NaN (the highest top-1 score of negatives when none returned anything)."""
        if not isinstance(table, dict):
            raise bad(where, f"must be an object, got {type(table).__name__}")
        for name, value in table.items():
            counts = name in ("passed", "queries", "returned_anything")  # always numbers, never null
            if not compared and not counts and isinstance(value, float) and math.isnan(value):
                continue
            if name in NOT_METRICS or name.endswith("_ci95") or (value is None or isinstance(value, (dict, list, str))) \
                    and not counts:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise bad(f"{where}.{name}", f"must be a number, got {type(value).__name__} {shown(value)}")
            if not math.isfinite(value):
                raise bad(f"{where}.{name}", f"is {value}, not a finite number; the gate compares finite figures "
                                             "only (rerun to write the file again)")

    def run_doc(d: Any, where: str) -> None:
        if not isinstance(d, dict):
            raise bad(where or "(top level)", "must be an object")
        summary = d.get("summary")
        if not isinstance(summary, dict):
            raise bad(f"{where}summary", "is missing or not an object")
        if "suite" not in summary:
            raise bad(f"{where}summary.suite", "is missing")
        figures(summary["suite"], f"{where}summary.suite")
        for block in ("paraphrase", "negative"):
            if summary.get(block) is not None:
                figures(summary[block], f"{where}summary.{block}", compared=False)
        queries = d.get("queries")
        if queries is not None and not (isinstance(queries, dict) and all(isinstance(r, dict) for r in queries.values())):
            raise bad(f"{where}queries", "must be an object of query id -> row")

    if kind == "results":
        run_doc(doc, "")
    elif kind == "ablation":
        for r, round_doc in doc["rounds"].items():
            run_doc(round_doc, f"rounds.{r}.")
    else:
        figures(doc["mean"], "mean")
        for qid, row in doc["per_query"].items():
            if not isinstance(row, dict):
                raise bad(f"per_query.{qid}", "must be an object of measure -> value")
            figures(row, f"per_query.{qid}")


def same_kind(current: GateDocument, baseline: GateDocument) -> None:
    """Refuse to compare files of different kinds: every metric would be 'missing' (an ablation's are
    named round3.passed, a run's passed), which reads as a total regression."""
    if current.kind != baseline.kind:
        raise ConfigError(f"cannot gate {current.describe()} against the baseline {baseline.describe()}: "
                          f"compare files of one kind (a results.json with a results.json, an ablation.json "
                          f"with an ablation.json, harness eval scores with harness eval scores)")


def _dataset_name(doc: dict[str, Any] | None) -> str | None:
    described = (doc or {}).get("dataset")
    name = described.get("dataset") if isinstance(described, dict) else None
    if not isinstance(name, str):
        recorded = (doc or {}).get("config")  # the experiment as the results file recorded it (JSON, not typed)
        table = recorded.get("dataset") if isinstance(recorded, dict) else None
        name = table.get("name") if isinstance(table, dict) else None
    return name if isinstance(name, str) and name else None


def same_queries(current: GateDocument, baseline: GateDocument) -> None:
    """Refuse to compare runs of different questions: the gate matches queries by id, so a baseline of another
    data set, or one whose question texts were edited since, would read as regressions that are none."""
    ours, theirs = _dataset_name(current.doc), _dataset_name(baseline.doc)
    if ours and theirs and ours != theirs:
        raise ConfigError(f"cannot gate {current.path} (data set {ours!r}) against the baseline {baseline.path} (data "
                          f"set {theirs!r}): a baseline is a run of the same data set; make one with this data set")
    shared = [k for k in current.queries if k in baseline.queries]
    if current.queries and baseline.queries and not shared:
        raise ConfigError(f"cannot gate {current.path} against the baseline {baseline.path}: no query id in common "
                          f"(its ids: {', '.join(list(current.queries)[:3])} ...; the baseline's: "
                          f"{', '.join(list(baseline.queries)[:3])} ...): the baseline is of other queries")
    edited = [k for k in shared if current.queries[k].text and baseline.queries[k].text
              and current.queries[k].text != baseline.queries[k].text]
    if edited:
        raise ConfigError(f"cannot gate {current.path} against the baseline {baseline.path}: {len(edited)} "
                          f"quer{'y has' if len(edited) == 1 else 'ies have'} the same id but another question text "
                          f"({', '.join(edited[:5])}{' ...' if len(edited) > 5 else ''}); the queries were edited "
                          "or the baseline is of another data set: make a new baseline from the current queries")


def cutoff_of(config: dict[str, Any] | None) -> int:
    """The run's result cut-off: [search] max_results (OpenClaw's maxResults), 6 when unrecorded."""
    search = (config or {}).get("search") or {}
    k = search.get("max_results", 6)
    return int(k) if isinstance(k, (int, float)) else 6


@dataclass
class RunPart:
    metrics: dict[str, float]
    per_query: dict[str, PerQuery]
    queries: dict[str, QueryState]


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def run_part(doc: dict[str, Any], prefix: str) -> RunPart:
    """Metrics, per-query values and query states of one run (a results.json or one round of an ablation)."""
    summary = doc.get("summary") or {}
    rows: dict[str, dict[str, Any]] = doc.get("queries") or {}
    k = cutoff_of(doc.get("config"))
    suite = summary.get("suite") or {}
    near_tie = _number(suite.get("near_tie")) or NEAR_TIE
    metrics = {name: float(v) for name, v in suite.items()
               if name not in ("queries", "near_tie") and _number(v) is not None}
    metrics["negative_returned"] = float((summary.get("negative") or {}).get("returned_anything", 0) or 0)
    latency = (summary.get("latency_ms") or {}).get("retrieval") or {}
    for p in ("p50", "p95", "p99"):
        if _number(latency.get(p)) is not None:
            metrics[f"latency_{p}_ms"] = float(latency[p])

    def counted(row: dict[str, Any]) -> bool:
        return row.get("kind", "suite") == "suite" and row.get("in_suite", True) is not False

    def near(row: dict[str, Any]) -> bool:
        if isinstance(row.get("near_tie"), bool):  # results that carry the relative rule's verdict
            return row["near_tie"]
        m = _number(row.get("relevant_margin"))
        return m is not None and abs(m) < near_tie

    suite_rows = {qid: r for qid, r in rows.items() if counted(r)}
    para_rows = {qid: r for qid, r in rows.items() if r.get("kind") == "paraphrase"}
    neg_rows = {qid: r for qid, r in rows.items() if r.get("kind") == "negative"}
    per_query: dict[str, PerQuery] = {}

    unit = (suite.get("resampling") or {}).get("unit", "query")
    clusters = {prefix + qid: prefix + str(r["cluster"]) for qid, r in rows.items()
                if r.get("cluster") is not None} if unit != "query" else {}

    def add(name: str, selected: dict[str, dict[str, Any]], get: Callable[[dict[str, Any]], float | None],
            aggregate: str) -> None:
        values = {prefix + qid: v for qid, r in selected.items() if (v := get(r)) is not None}
        if values or not selected:
            per_query[prefix + name] = PerQuery(values, aggregate, clusters or None, unit)

    for name in metrics:
        if name == "passed":
            add(name, suite_rows, lambda r: float(bool(r.get("passed"))), "sum")
        elif name == "top1_pure":
            add(name, suite_rows, lambda r: float(bool(r.get("top1_relevant")) and bool(r.get("top1_pure"))), "sum")
        elif name == "text_score_nonzero":
            add(name, suite_rows, lambda r: float(bool(r.get("text_score_nonzero"))), "sum")
        elif name == "near_ties":
            add(name, suite_rows, lambda r: float(near(r)), "sum")
        elif name == "negative_returned":
            add(name, neg_rows, lambda r: float((r.get("returned") or 0) > 0), "sum")
        elif "@" in name and suite_rows and any(name in r for r in suite_rows.values()):
            add(name, suite_rows, lambda r, n=name: _number(r.get(n)), "mean")
    if para_rows:  # paraphrases whose record is among the returned results, named by the configured cut-off
        name = f"paraphrase_hit@{k}"
        metrics[name] = float(sum(_paraphrase_hit(r, k) for r in para_rows.values()))
        add(name, para_rows, lambda r: float(_paraphrase_hit(r, k)), "sum")
    queries = {prefix + qid: _query_state(prefix + qid, r, counted(r), k, near_tie) for qid, r in rows.items()}
    return RunPart({prefix + n: v for n, v in metrics.items()}, per_query, queries)


def _query_state(key: str, row: dict[str, Any], counted: bool, k: int, near_tie: float) -> QueryState:
    kind = str(row.get("kind", "suite"))
    text = str(row.get("text", ""))
    rank = _number(row.get("rank"))
    if kind == "negative":
        n = int(row.get("returned") or 0)
        return QueryState(key, text, kind, True, n == 0, f"returned {n}" if n else "returned nothing",
                          "silent" if n == 0 else "answered")
    if kind == "paraphrase":
        hit = _paraphrase_hit(row, k)
        return QueryState(key, text, kind, True, hit, f"found at rank {rank:g}" if hit and rank else
                          ("found" if hit else f"not in the top {k}"), "found" if hit else f"not in the top {k}")
    passed = bool(row.get("passed"))
    why = "passed" if passed else ("failed (no relevant chunk returned)" if rank is None else
                                   f"failed (relevant at rank {rank:g})" if rank != 1 else "failed (below minScore)")
    return QueryState(key, text, kind, counted, passed, why, "passed" if passed else "failed",
                      _number(row.get("relevant_margin")), near_tie,
                      row["near_tie"] if isinstance(row.get("near_tie"), bool) else None)


def _paraphrase_hit(row: dict[str, Any], k: int) -> bool:
    """A relevant chunk among the first k returned (the rank column), else the stored hit@k column."""
    rank = _number(row.get("rank"))
    if rank is not None:
        return rank <= k
    return bool(row.get(f"hit@{k}"))


def eval_document(path: Path, doc: dict[str, Any]) -> GateDocument:
    measures = list(doc.get("measures") or doc["mean"].keys())
    metrics = {m: float(v) for m, v in doc["mean"].items() if _number(v) is not None}
    rows: dict[str, dict[str, Any]] = doc["per_query"]
    per_query = {m: PerQuery({qid: float(r[m]) for qid, r in rows.items() if _number(r.get(m)) is not None}, "mean")
                 for m in metrics}
    first = measures[0] if measures else None
    queries = {}
    for qid, r in rows.items():
        value = _number(r.get(first)) if first else None
        said = f"{value:.4f}" if value is not None else "none"
        queries[qid] = QueryState(qid, "", "eval", True, None, f"{first} {said}", said, value=value, measure=first or "")
    return GateDocument(path, "eval", metrics, per_query, queries, doc)
