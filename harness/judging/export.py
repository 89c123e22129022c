"""What `harness judge` hands on: qrels in TREC format and the harness's own queries file, an experiment that
reads them, and the agreement between the kinds of judgment.

    <queries>.judged.yaml     each query with every judgment: the implicit ones it had (`by: implicit`), a
                              person's (`by: explicit`) and an LLM's (`by: llm`, evidence = model and prompt)
    <experiment>.judged.toml  the experiment over it, judgments = "explicit" (`harness run`, `sweep`, `gate`,
                              `diff` read it like any experiment)
    judge/qrels.trec          explicit grades, TREC format (query 0 doc grade; doc = path#Lstart-Lend); and
    judge/qrels.llm.trec, judge/qrels.implicit.trec   the other kinds, never merged into it
    judge/judge.json, judge.md   the pool (configurations, depth), progress, and the agreement tables with
                              Cohen's kappa and its interval (implicit vs explicit, LLM vs explicit):
                              harness.reporting.judge writes them from the document `export` returns
"""
from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from harness.config import load_experiment, load_toml
from harness.evaluation.agreement import Agreement, agreement
from harness.inputs.anchors import anchor_of
from harness.inputs.query_files import QuerySpec, load_query_specs
from harness.inputs.workspace_init import toml_value, write_keeping
from harness.judging.pool import Pool
from harness.judging.store import LabelStore, item_key


def _yaml(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def judged_entries(spec: QuerySpec, store_grades: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """A query's judgments: its implicit ones as they were, then the store's explicit and llm grades."""
    out = [{"path": j.path, "lines": [j.start, j.end], "grade": j.grade, "by": j.by, "evidence": j.evidence,
            "anchor": j.anchor} for j in spec.judged or [] if j.by == "implicit"]
    for by in ("explicit", "llm"):
        for key, g in sorted(store_grades.get(by, {}).get(spec.id, {}).items()):
            entry = {"path": g["path"], "lines": [g["start"], g["end"]], "grade": g["grade"], "by": by,
                     "anchor": g.get("anchor")}
            if by == "llm":
                entry["evidence"] = f"{g['judge']} prompt {g['prompt']}"
            out.append(entry)
    return out


def anchor_grades(grades: dict[str, dict[str, dict[str, dict[str, Any]]]], pool: Pool) -> int:
    """Each grade gets the anchor of the text it was given on (the pooled item's text); a grade of an item that
    no longer holds (the file changed after it was graded) is left out of the export.  Returns how many."""

    dropped = 0
    for by_query in grades.values():
        for qid, items in by_query.items():
            q = pool.queries.get(qid)
            texts = {i.key: i.text for i in q.items} if q else {}
            stale = {i.key for i in q.stale} if q else set()
            for key in list(items):
                if key in stale:
                    del items[key]
                    dropped += 1
                elif key in texts:
                    items[key]["anchor"] = anchor_of(texts[key])
    return dropped


def _store_grades(store: LabelStore) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for g in store.grades():
        out.setdefault(g.by, {}).setdefault(g.query_id, {})[g.key] = {
            "path": g.path, "start": g.start, "end": g.end, "grade": g.grade, "judge": g.judge, "prompt": g.prompt}
    return out


def judged_queries_yaml(specs: list[QuerySpec], grades: dict[str, Any], source: Path) -> str:
    lines = [f"# {source.name} with the judgments of `harness judge` (by: explicit = a person in the page, by: llm =",
             "# the LLM judge, by: implicit = mined from what the agent read). Labels live in judge/labels.sqlite;",
             "# this file is rewritten from them (edit grades in the page, not here).", ""]
    for s in specs:
        lines += [f"- id: {s.id}", f"  text: {_yaml(s.text)}"]
        if s.kind != "suite":
            lines.append(f"  kind: {s.kind}")
        if s.cluster:
            lines.append(f"  cluster: {_yaml(s.cluster)}")
        if s.note:
            lines.append(f"  note: {_yaml(s.note)}")
        if s.kind == "negative":
            continue
        if s.judged is None and (s.path or s.contains):  # a hand-written target: kept as it is
            if s.path:
                lines.append(f"  path: {_yaml(s.path)}")
            if s.lines:
                lines.append(f"  lines: [{s.lines[0]}, {s.lines[1]}]")
            if s.contains:
                lines.append(f"  contains: {_yaml(s.contains)}")
            continue
        entries = judged_entries(s, grades)
        if not entries:
            lines.append("  judged: []")
            continue
        lines.append("  judged:")
        for e in entries:
            extra = f", evidence: {_yaml(e['evidence'])}" if e.get("evidence") else ""
            extra += f", anchor: {_yaml(e['anchor'])}" if e.get("anchor") else ""
            lines.append(f"    - {{path: {_yaml(e['path'])}, lines: [{e['lines'][0]}, {e['lines'][1]}], "
                         f"grade: {e['grade']}, by: {e['by']}{extra}}}")
    return "\n".join(lines) + "\n"


def _toml_inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_inline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return "[" + ", ".join(_toml_inline(v) for v in value) + "]"
    return toml_value(value)


def dump_toml(doc: dict[str, Any]) -> str:
    """An experiment document as TOML: top-level keys, then one [table] (or [[array of tables]]) per mapping."""
    lines = [f"{k} = {_toml_inline(v)}" for k, v in doc.items() if not isinstance(v, dict)
             and not (isinstance(v, list) and v and all(isinstance(x, dict) for x in v))]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]", *(f"{kk} = {_toml_inline(vv)}" for kk, vv in v.items())]
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for item in v:
                lines += ["", f"[[{k}]]", *(f"{kk} = {_toml_inline(vv)}" for kk, vv in item.items())]
    return "\n".join(lines) + "\n"


def judged_experiment(experiment: Path, queries: Path) -> str:
    doc = load_toml(experiment)
    doc = {**doc, "name": f"{doc.get('name', experiment.stem)}-judged",
           "description": f"{doc.get('description', '')} Judged: explicit grades from `harness judge`.".strip()}
    doc["dataset"] = {**doc.get("dataset", {}), "queries": str(queries), "judgments": "explicit"}
    text = "# Written by `harness judge`: the experiment over the pooled queries with a person's grades.\n" + dump_toml(doc)
    tomllib.loads(text)  # what we write must read back
    return text


def trec_lines(pool: Pool, by_query: dict[str, dict[str, int]]) -> list[str]:
    return [f"{qid} 0 {key} {grade}" for qid in pool.queries for key, grade in sorted(by_query.get(qid, {}).items())]


def export(pool: Pool, store: LabelStore, judge_dir: Path, *, redact: bool = False,
           llm: dict[str, Any] | None = None) -> dict[str, Any]:
    grades = _store_grades(store)
    stale_grades = anchor_grades(grades, pool)
    explicit = {q: {k: g["grade"] for k, g in items.items()} for q, items in grades.get("explicit", {}).items()}
    llm_grades = {q: {k: g["grade"] for k, g in items.items()} for q, items in grades.get("llm", {}).items()}
    written: dict[str, str] = {}
    implicit: dict[str, dict[str, int]] = {}
    clusters: dict[str, str] = {}
    for experiment in pool.experiments:
        path = Path(experiment)
        config = load_experiment(path)
        queries_file = Path(config.dataset.params["queries"])
        specs = load_query_specs(queries_file)
        for s in specs:
            clusters[s.id] = s.cluster or s.id
            for j in s.judged or []:
                if j.by == "implicit":
                    implicit.setdefault(s.id, {})[item_key(j.path, j.start, j.end)] = j.grade
        judged_yaml = queries_file.with_name(queries_file.stem + ".judged.yaml")
        write_keeping(judged_yaml, judged_queries_yaml(specs, grades, queries_file))
        judged_toml = path.with_name(path.stem + ".judged.toml")
        write_keeping(judged_toml, judged_experiment(path, judged_yaml))
        written[path.stem] = str(judged_toml)
        written[f"{path.stem} queries"] = str(judged_yaml)
    for name, by_query in (("qrels.trec", explicit), ("qrels.llm.trec", llm_grades), ("qrels.implicit.trec", implicit)):
        lines = trec_lines(pool, by_query)
        if lines or name == "qrels.trec":
            (judge_dir / name).write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
            written[name] = str(judge_dir / name)
    agreements = agreements_of(explicit, implicit, llm_grades, clusters)
    total = pool.items
    graded = sum(1 for qid, q in pool.queries.items() for i in q.items if i.key in explicit.get(qid, {}))
    doc = {"experiments": pool.experiments, "depth": pool.depth, "configurations": pool.configurations,
           "queries": len(pool.queries), "items": total, "graded": graded,
           "queries_fully_graded": sum(all(i.key in explicit.get(qid, {}) for i in q.items) and bool(q.items)
                                       for qid, q in pool.queries.items()),
           "grades": {str(g): sum(1 for v in explicit.values() for x in v.values() if x == g) for g in range(4)},
           "llm": llm, "agreement": [a.as_dict() for a in agreements], "files": written,
           "stale_grades": stale_grades, "stale_items": sum(len(q.stale) for q in pool.queries.values())}
    return doc


def agreements_of(explicit: dict[str, dict[str, int]], implicit: dict[str, dict[str, int]],
                  llm: dict[str, dict[str, int]], clusters: dict[str, str]) -> list[Agreement]:
    out = []
    pairs, groups = [], []
    for qid, items in implicit.items():
        for key, grade in items.items():
            if key in explicit.get(qid, {}):
                pairs.append((int(grade > 0), int(explicit[qid][key] > 0)))
                groups.append(clusters.get(qid, qid))
    if pairs:
        out.append(agreement("implicit vs explicit (relevant = explicit grade >= 1)", pairs, groups, [0, 1],
                             ("implicit", "explicit")))
    pairs, groups = [], []
    for qid, items in llm.items():
        for key, grade in items.items():
            if key in explicit.get(qid, {}):
                pairs.append((grade, explicit[qid][key]))
                groups.append(clusters.get(qid, qid))
    if pairs:
        out.append(agreement("LLM vs explicit (grades 0-3, quadratic weights)", pairs, groups, [0, 1, 2, 3],
                             ("llm", "explicit"), weighted="quadratic"))
        out.append(agreement("LLM vs explicit (relevant = grade >= 1)", [(int(a > 0), int(b > 0)) for a, b in pairs],
                             groups, [0, 1], ("llm", "explicit")))
    return out
