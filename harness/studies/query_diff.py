"""`harness diff BASE.json NOW.json`: the queries whose outcome moved between two runs, with what each
returned, ordered by how much they moved.

First what the two runs were configured to do differently (config_differences: every stage table,
[search] and [evaluation], the post-processing stages, and what a workspace's openclaw.json said).  Then
a query is listed when the rank of its first relevant chunk, its pass or the record(s) of its top-1 chunk
changed (records, not chunk ids: two chunkers cut the same record into different chunks).  How
much it moved is the change of its reciprocal rank (1/rank, 0 when no relevant chunk was returned: rank
1 -> 2 is 0.5, 3 -> 4 is 0.08, found -> lost at rank 1 is 1.0); a pass that flipped without a rank change
(minScore) or a new top-1 ranks next, then the change of the top-1 score.  Everything is read from the
per-query rows and the returned hits that every results.json has (older files lack the runs/qrels keys;
they are not needed): a hit is relevant when one of the records it overlaps is one of the query's.

    >>> d = diff_files("reports/round3/results.json", "reports/lancedb-pro/round3/results.json")
    >>> [q.key for q in d.moved][:3]
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config import NEAR_TIE
from harness.errors import ConfigError
from harness.inputs.layout import read_json
from harness.gate.documents import KINDS, file_kind
from harness.evaluation.confounds import allowed_confounds, check_confounds


@dataclass(frozen=True)
class HitView:
    rank: int
    chunk: str  # path:start-end
    score: float | None
    relevant: bool
    snippet: str


@dataclass(frozen=True)
class Side:
    """One query in one of the two runs."""

    rank: int | None  # first relevant chunk among the returned, None: not returned
    passed: bool
    top1: str | None  # the top-1 chunk
    top1_records: tuple[str, ...]  # the records it overlaps: what "the top-1 changed" compares (chunk ids
    # differ between chunkers even when the same record comes first)
    top1_score: float | None
    margin: float | None
    near_tie: bool
    hits: list[HitView]

    @property
    def reciprocal_rank(self) -> float:
        return 1.0 / self.rank if self.rank else 0.0

    def rank_text(self) -> str:
        return f"rank {self.rank}" if self.rank else "not returned"


@dataclass(frozen=True)
class QueryDiff:
    key: str  # query id, `round3.` prefixed in an ablation
    text: str
    kind: str
    base: Side
    now: Side
    changes: list[str]

    @property
    def moved(self) -> float:
        """|change of the reciprocal rank of the first relevant chunk|."""
        return abs(self.now.reciprocal_rank - self.base.reciprocal_rank)

    @property
    def pass_flipped(self) -> bool:
        return self.base.passed != self.now.passed

    def order(self) -> tuple:
        top1 = self.base.top1_records != self.now.top1_records
        score = abs((self.now.top1_score or 0.0) - (self.base.top1_score or 0.0))
        return (-round(self.moved, 12), not self.pass_flipped, not top1, -score, self.key)


@dataclass
class DiffResult:
    base_path: Path
    now_path: Path
    base_label: str
    now_label: str
    kind: str
    moved: list[QueryDiff]
    compared: int  # queries both runs have
    only_base: list[str] = field(default_factory=list)
    only_now: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    config_changes: list[str] = field(default_factory=list)  # what the two runs were configured to do differently


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _label(doc: dict[str, Any], path: Path) -> str:
    recorded = doc.get("config") or {}
    name = doc.get("name") or recorded.get("name")
    preset = recorded.get("preset") or doc.get("preset")
    return " / ".join(str(x) for x in (preset, name) if x) or path.name


def _side(row: dict[str, Any], hits: list[dict[str, Any]], near_tie: float) -> Side:
    relevant = set(row.get("relevant") or [])
    views = [HitView(int(h.get("rank", i)), f"{h.get('path', '?')}:{h.get('start_line', '?')}-{h.get('end_line', '?')}",
                     _number(h.get("score")), bool(relevant & set(h.get("docs") or [])), str(h.get("snippet") or ""))
             for i, h in enumerate(hits, start=1)]
    rank = _number(row.get("rank"))
    if rank is None and hits:  # rows without a rank column: from the hits
        rank = next((float(v.rank) for v in views if v.relevant), None)
    margin = _number(row.get("relevant_margin"))
    top1 = row.get("top1_chunk") or (hits[0].get("chunk") if hits else None)
    records = row.get("top1_docs") if row.get("top1_docs") is not None else (hits[0].get("docs") if hits else None)
    top1_records = tuple(sorted(records)) if records else ((top1,) if top1 else ())
    return Side(int(rank) if rank is not None else None, bool(row.get("passed")), top1, top1_records,
                _number(row.get("top1_score")) if row.get("top1_score") is not None else (views[0].score if views else None),
                margin, margin is not None and abs(margin) < near_tie, views)


def _changes(base: Side, now: Side) -> list[str]:
    out = []
    if base.rank != now.rank:
        out.append(f"{base.rank_text()} -> {now.rank_text()}")
    if base.passed != now.passed:
        out.append("passed -> failed" if base.passed else "failed -> passed")
    if base.top1_records != now.top1_records:
        out.append("another record at top-1")
    return out


# the parts of a run's configuration that decide its results (names, descriptions and file paths do not)
CONFIG_TABLES = ("preset", "dataset", "layout", "chunker", "tokenizer", "lexical", "embedder", "vector", "fusion",
                 "search", "postprocess", "expansion", "reranker", "evaluation")
_NOT_COMPARED = {"preset_description", "description", "experiment_file", "name", "openclaw_json"}


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flat(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _stages(postprocess: Any) -> dict[str, dict[str, Any]]:
    """postprocess stages by name (a repeated name numbered: mmr, mmr#2)."""
    out: dict[str, dict[str, Any]] = {}
    for stage in postprocess if isinstance(postprocess, list) else []:
        if isinstance(stage, dict):
            name, n = str(stage.get("name")), 2
            key = name
            while key in out:
                key, n = f"{name}#{n}", n + 1
            out[key] = {k: v for k, v in stage.items() if k != "name"}
    return out


def _text(value: Any) -> str:
    if value is _ABSENT:
        return "(not set)"
    return json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else value


_ABSENT = object()


def config_differences(base: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What two runs' configurations set differently, one line per setting: `[fusion] vector_weight: 0.7 ->
    0.5`, `[[postprocess]] temporal_decay: removed`, and what the workspace's openclaw.json said when a
    workspace run followed it."""
    out: list[str] = []
    for table in CONFIG_TABLES:
        if table == "postprocess":
            b, n = _stages(base.get(table)), _stages(now.get(table))
            for name in [k for k in b if k not in n]:
                out.append(f"[[postprocess]] {name}: removed")
            for name in [k for k in n if k not in b]:
                params = ", ".join(f"{k} = {_text(v)}" for k, v in n[name].items())
                out.append(f"[[postprocess]] {name}: added" + (f" ({params})" if params else ""))
            for name in [k for k in b if k in n]:
                for key in sorted(b[name].keys() | n[name].keys()):
                    bv, nv = b[name].get(key, _ABSENT), n[name].get(key, _ABSENT)
                    if bv != nv:
                        out.append(f"[[postprocess]] {name} {key}: {_text(bv)} -> {_text(nv)}")
            if list(b) != list(n) and set(b) == set(n):
                out.append(f"[[postprocess]] order: {', '.join(b)} -> {', '.join(n)}")
            continue
        if table == "preset":
            if base.get("preset") != now.get("preset"):
                out.append(f"preset: {_text(base.get('preset', _ABSENT))} -> {_text(now.get('preset', _ABSENT))}")
            continue
        b, n = _flat(base.get(table, {}), ""), _flat(now.get(table, {}), "")
        for key in sorted(b.keys() | n.keys()):
            if key in _NOT_COMPARED:
                continue
            bv, nv = b.get(key, _ABSENT), n.get(key, _ABSENT)
            if bv != nv:
                out.append(f"[{table}] {key}: {_text(bv)} -> {_text(nv)}")
    for side, doc in (("baseline", base), ("now", now)):
        record = doc.get("openclaw_json") or {}
        for e in record.get("overridden", []):
            out.append(f"{side}: the experiment's {e['table']} won over openclaw.json's {e['field']} = "
                       f"{_text(e['openclaw_json'])}")
    b_oc = {e["field"]: e["openclaw_json"] for e in (base.get("openclaw_json") or {}).get("followed", [])}
    n_oc = {e["field"]: e["openclaw_json"] for e in (now.get("openclaw_json") or {}).get("followed", [])}
    for field_path in sorted(b_oc.keys() | n_oc.keys()):
        if b_oc.get(field_path, _ABSENT) != n_oc.get(field_path, _ABSENT):
            out.append(f"openclaw.json {field_path}: {_text(b_oc.get(field_path, _ABSENT))} -> "
                       f"{_text(n_oc.get(field_path, _ABSENT))}")
    return out


def _runs(doc: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """{key prefix: one run's document} (one per round of an ablation)."""
    if kind == "ablation":
        return {f"round{r}.": rd for r, rd in doc["rounds"].items()}
    return {"": doc}


def _check_shape(doc: dict[str, Any], kind: str, path: Path) -> None:
    """What the diff reads, of the shape harness run writes: `queries` an object of rows, `hits` an object
    of lists of hits; anything else is named with the file and key."""
    for prefix, run in _runs(doc, kind).items():
        if not isinstance(run, dict):
            raise ConfigError(f"{path}: {prefix.rstrip('.') or '(top level)'}: must be an object")
        queries, hits = run.get("queries") or {}, run.get("hits") or {}
        if not isinstance(queries, dict) or not all(isinstance(r, dict) for r in queries.values()):
            raise ConfigError(f"{path}: {prefix}queries: must be an object of query id -> row, as harness run writes")
        if not isinstance(hits, dict) or not all(isinstance(h, list) and all(isinstance(x, dict) for x in h)
                                                 for h in hits.values()):
            raise ConfigError(f"{path}: {prefix}hits: must be an object of query id -> list of hits, as harness "
                              "run writes")


def diff_files(base: Path | str, now: Path | str, allow_confounds: Any = ()) -> DiffResult:
    """The queries that moved between two runs.  Runs that differ in embedder, result count, candidate pool
    or corpus (harness.evaluation.confounds) are refused unless `allow_confounds` names the difference."""
    base, now = Path(base), Path(now)
    _, base_doc = read_json(base, "baseline file")
    _, now_doc = read_json(now, "results file")
    kinds = file_kind(base_doc), file_kind(now_doc)
    for path, kind in zip((base, now), kinds):
        if kind not in ("results", "ablation"):
            what = KINDS.get(kind or "", "none of the files harness writes")
            raise ConfigError(f"{path}: harness diff reads a results.json or an ablation.json (it needs the returned "
                              f"hits); this file is {what}")
    if kinds[0] != kinds[1]:
        raise ConfigError(f"cannot diff {base} ({KINDS[kinds[0]]}) with {now} ({KINDS[kinds[1]]}): "
                          "give two files of one kind")
    _check_shape(base_doc, kinds[0], base)
    _check_shape(now_doc, kinds[1], now)
    result = DiffResult(base, now, _label(base_doc, base), _label(now_doc, now), kinds[0], [], 0)
    base_runs, now_runs = _runs(base_doc, kinds[0]), _runs(now_doc, kinds[0])
    result.notes += check_confounds({prefix.rstrip("."): (base_runs[prefix].get("config") or {},
                                                          now_runs[prefix].get("config") or {})
                                     for prefix in base_runs if prefix in now_runs},
                                    allowed_confounds(allow_confounds), f"harness diff {base} {now}")
    for prefix in [p for p in base_runs if p in now_runs]:
        changes = config_differences(base_runs[prefix].get("config") or {}, now_runs[prefix].get("config") or {})
        result.config_changes += [f"{prefix.rstrip('.')}: {c}" if prefix else c for c in changes]
    for prefix in base_runs.keys() - now_runs.keys():
        result.notes.append(f"{prefix.rstrip('.')} is only in {base}")
    for prefix in now_runs.keys() - base_runs.keys():
        result.notes.append(f"{prefix.rstrip('.')} is only in {now}")
    for prefix in [p for p in base_runs if p in now_runs]:
        b, n = base_runs[prefix], now_runs[prefix]
        b_rows, n_rows = b.get("queries") or {}, n.get("queries") or {}
        b_tie = _number(((b.get("summary") or {}).get("suite") or {}).get("near_tie")) or NEAR_TIE
        n_tie = _number(((n.get("summary") or {}).get("suite") or {}).get("near_tie")) or NEAR_TIE
        result.only_base += [prefix + q for q in b_rows if q not in n_rows]
        result.only_now += [prefix + q for q in n_rows if q not in b_rows]
        for qid in [q for q in b_rows if q in n_rows]:
            result.compared += 1
            bs = _side(b_rows[qid], (b.get("hits") or {}).get(qid, []), b_tie)
            ns = _side(n_rows[qid], (n.get("hits") or {}).get(qid, []), n_tie)
            changes = _changes(bs, ns)
            if changes:
                row = n_rows[qid]
                result.moved.append(QueryDiff(prefix + qid, str(row.get("text", "")), str(row.get("kind", "")),
                                              bs, ns, changes))
    result.moved.sort(key=QueryDiff.order)
    return result
