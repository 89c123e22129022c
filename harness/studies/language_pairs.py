"""What a language costs each system, question by question: the same conversations and questions in two
languages (LoCoMo's conv-26 and conv-30 in English and in their Chinese translation), every system run on
both, and the per-question difference (language a minus language b) with its interval.

A spec is a TOML file (experiments/paired-locomo-zh.toml):

    name = "paired"
    title = "What Chinese costs each system"  # the report's heading (default: the name)
    output = "reports/locomo-zh/paired"
    a = "English"                             # the two languages' names, a minus b
    b = "Chinese"
    metrics = ["recall_any@10", "recall_all@10", "recall_any@5"]     # the first is the headline
    [pairing]                                 # the two files, matched before anything is compared
    a = { path = "datasets/locomo/locomo10.json", conversations = ["conv-26", "conv-30"] }
    b = { path = "datasets/locomo_zh/medium_locomo_zh.json" }
    [[sources]]                               # runs already written by `harness benchmark` / `harness matrix`
    kind = "benchmark"                        # one system per preset: run label a against run label b
    file = "reports/locomo-zh/locomo-zh.json"
    spec = "experiments/benchmark-locomo-zh.toml"   # the study that writes it (optional: `harness embed`
    a = "en turns"                                  # and the error for a missing file name it)
    b = "zh turns"
    [[sources]]
    kind = "matrix"                           # one system per value and pair of run labels
    file = "reports/locomo-zh/tokenizers/tokenizers.json"
    pairs = [{ a = "en lexical", b = "zh lexical", label = "lexical-only, OR" }]

The pairing (pair_locomo) matches conversations by sample id, sessions by number and date, turns by
position (same dia_id, speaker and image caption) and questions by position (same evidence ids and
category); only questions that pair, and that both runs scored, are compared.  Per system and metric:
the paired BCa bootstrap interval of the mean difference and the sign-flip p (harness.evaluation.
statistics), Holm over each metric's table.  Per category: the difference and its interval (descriptive,
no test).  Which stage explains a loss, from the per-question leg diagnostics the runs keep
(per_query.leg_diagnostics): does the lexical leg find anything (lexical_candidates > 0), is an evidence
chunk among its first k candidates (lexical_rank <= k), and among the vector leg's first k
(vector_rank <= k), k the headline's cut-off; each question found in a and lost in b is put down to the
leg(s) that lost the evidence from their top k, or to neither (fusion, post-processing).

Resampling unit: LoCoMo's questions cluster by conversation (they share its memory).  With two
conversations no interval over conversations can be computed, so every interval here resamples
questions as if they were independent; the report says so, and no verdict is drawn from them: an exact
sign-flip over G conversations cannot give p below 2/2^G (0.5 with two), so the verdict at the data's unit
is "cannot decide with G conversations" (harness.evaluation.verdicts) and the question-level lists are
descriptive.

Output: <out>/<name>.json (pairing, every comparison, per category, stages), <name>.md, <name>.png
(harness.reporting.language_pairs); `--redraw` rewrites the Markdown and PNG from the JSON.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from harness.config import load_toml
from harness.errors import ConfigError, DataError
from harness.inputs.layout import project_path
from harness.inputs.locomo import Conversation, load_locomo, question_id
from harness.evaluation.comparison import column_pairs, comparison_rows
from harness.evaluation.statistics import bootstrap_difference
from harness.studies.spec import validated
from harness.evaluation.statistics import BOOTSTRAP_RESAMPLES, FLIPS, SEED

if TYPE_CHECKING:
    from harness.studies.spec.models import LanguagePairsStudy, PairsSource

LEGS = ("lexical", "vector")


# ---------------------------------------------------------------------------------------------
# Pairing the two files
# ---------------------------------------------------------------------------------------------


def _select(conversations: list[Conversation], wanted: Sequence[str] | None, path: Path) -> list[Conversation]:
    if wanted is None:
        return conversations
    known = {c.sample_id for c in conversations}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise DataError(path, None, "sample_id", f"pairing names unknown conversations {unknown}; known: {sorted(known)}")
    return [c for c in conversations if c.sample_id in wanted]


def pair_locomo(a_path: Path | str, b_path: Path | str, a_conversations: Sequence[str] | None = None,
                b_conversations: Sequence[str] | None = None) -> dict[str, Any]:
    """Match two LoCoMo-schema files (a translation and its original): per conversation the sessions,
    turns and questions that agree, and the questions that pair ({query id: category, evidence}).
    `mismatches` lists what disagrees (at most 20 lines; `mismatch_count` counts all)."""
    a_path, b_path = project_path(a_path), project_path(b_path)
    a = {c.sample_id: c for c in _select(load_locomo(a_path), a_conversations, a_path)}
    b = {c.sample_id: c for c in _select(load_locomo(b_path), b_conversations, b_path)}
    mismatches: list[str] = [f"conversation {sid} only in {side}" for side, x, y in (("a", a, b), ("b", b, a))
                             for sid in x if sid not in y]
    rows, paired = [], {}
    for sid in (s for s in a if s in b):
        ca, cb = a[sid], b[sid]
        if ca.speakers != cb.speakers:
            mismatches.append(f"{sid}: speakers {ca.speakers} vs {cb.speakers}")
        sa, sb = {s.number: s for s in ca.sessions}, {s.number: s for s in cb.sessions}
        sessions_matched = turns_matched = same_text = 0
        for number in sorted(sa.keys() | sb.keys()):
            x, y = sa.get(number), sb.get(number)
            if x is None or y is None:
                mismatches.append(f"{sid} session {number}: only in {'b' if x is None else 'a'}")
                continue
            if x.when == y.when and len(x.turns) == len(y.turns):
                sessions_matched += 1
            else:
                mismatches.append(f"{sid} session {number}: {x.when:%Y-%m-%d %H:%M}, {len(x.turns)} turns vs "
                                  f"{y.when:%Y-%m-%d %H:%M}, {len(y.turns)} turns")
            for i, (tx, ty) in enumerate(zip(x.turns, y.turns)):
                if (tx.dia_id, tx.speaker, tx.caption) == (ty.dia_id, ty.speaker, ty.caption):
                    turns_matched += 1
                    same_text += tx.text == ty.text
                else:
                    mismatches.append(f"{sid} session {number} turn {i}: {tx.dia_id} {tx.speaker} vs {ty.dia_id} "
                                      f"{ty.speaker} (or their image captions differ)")
        questions_paired = same_question = 0
        for i, (qa, qb) in enumerate(zip(ca.qa, cb.qa)):
            if [str(e) for e in qa["evidence"]] == [str(e) for e in qb["evidence"]] and qa["category"] == qb["category"]:
                questions_paired += 1
                same_question += qa["question"] == qb["question"]
                paired[question_id(sid, i)] = {"category": qa["category"], "evidence": list(qa["evidence"])}
            else:
                mismatches.append(f"{sid} question {i}: evidence {qa['evidence']} category {qa['category']} vs "
                                  f"{qb['evidence']} {qb['category']}")
        if len(ca.qa) != len(cb.qa):
            mismatches.append(f"{sid}: {len(ca.qa)} questions vs {len(cb.qa)}")
        rows.append({
            "conversation": sid, "sessions": [len(ca.sessions), len(cb.sessions)], "sessions_matched": sessions_matched,
            "turns": [sum(len(s.turns) for s in ca.sessions), sum(len(s.turns) for s in cb.sessions)],
            "turns_matched": turns_matched, "turns_with_the_same_text": same_text,
            "questions": [len(ca.qa), len(cb.qa)], "questions_paired": questions_paired,
            "questions_with_the_same_text": same_question})
    total = {key: sum(r[key] for r in rows) for key in ("sessions_matched", "turns_matched", "turns_with_the_same_text",
                                                        "questions_paired", "questions_with_the_same_text")}
    for key in ("sessions", "turns", "questions"):
        total[key] = [sum(r[key][0] for r in rows), sum(r[key][1] for r in rows)]
    return {"a": str(a_path), "b": str(b_path), "conversations": rows, "total": total, "paired": paired,
            "mismatch_count": len(mismatches), "mismatches": mismatches[:20]}


# ---------------------------------------------------------------------------------------------
# The systems: per-question rows of the same system in both languages
# ---------------------------------------------------------------------------------------------


@dataclass
class System:
    label: str
    group: str  # the source's name (presets, tokenizers, chunkers)
    a: dict[str, dict[str, Any]]  # query id -> {column: value}, the suite questions of language a
    b: dict[str, dict[str, Any]]
    legs: tuple[str, ...] = LEGS  # which legs the system has (vector-only: none lexical)
    detail: dict[str, Any] = field(default_factory=dict)  # where the two runs are
    columns: frozenset[str] = frozenset()  # the per-question columns both runs kept


def _legs(recorded: dict[str, Any]) -> tuple[str, ...]:
    fusion = (recorded.get("fusion") or {}).get("name")
    return {"lexical-only": ("lexical",), "vector-only": ("vector",)}.get(fusion, LEGS)


def _read_json(path: Path, what: str, source: PairsSource | None = None) -> dict[str, Any]:
    if not path.is_file():
        writer = f"`harness {source.kind} {source.spec} --out {Path(source.file).parent}`" if (
            source and source.spec) else "the study that writes it"
        raise ConfigError(f"{path}: no {what}; run {writer} first")
    return json.loads(path.read_text(encoding="utf-8"))


def benchmark_systems(source: PairsSource) -> list[System]:
    """One system per preset of a benchmark document: its run `a` against its run `b`."""
    path = project_path(source.file)
    doc = _read_json(path, "benchmark document", source)
    runs = {(r["label"], r["preset"]): r for r in doc["runs"]}
    out = []
    for preset in dict.fromkeys(r["preset"] for r in doc["runs"]):
        ra, rb = runs.get((source.a, preset)), runs.get((source.b, preset))
        if ra is None or rb is None:
            continue
        rows = []
        for run in (ra, rb):
            results = _read_json(path.parent / run["results"], "results.json")
            rows.append({qid: row for qid, row in results["queries"].items() if row.get("in_suite")})
        columns = frozenset.intersection(*(frozenset(k for row in r.values() for k in row) for r in rows))
        out.append(System(preset or "(no preset)", source.label or "presets", rows[0], rows[1],
                          _legs(ra["config"]), {"a": ra["results"], "b": rb["results"]}, columns))
    return out


def matrix_systems(source: PairsSource) -> list[System]:
    """One system per value and pair of run labels of a matrix document (its cells' per_query values)."""
    path = project_path(source.file)
    doc = _read_json(path, "matrix document", source)
    cells = {(c["run"], c["value"]): c for c in doc["cells"]}

    def rows(cell: dict[str, Any]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for column, values in cell["per_query"].items():
            for qid, value in values.items():
                out.setdefault(qid, {})[column] = value
        return out

    out = []
    for pair in source.pairs:
        values = [v for (run, v) in cells if run == pair["a"]]
        for value in values:
            ca, cb = cells.get((pair["a"], value)), cells.get((pair["b"], value))
            if ca is None or cb is None:
                continue
            label = f"{value} · {pair.get('label', pair['a'])}"
            out.append(System(label, source.label or doc["name"], rows(ca), rows(cb), _legs(ca["config"]),
                              {"a": f"{path.name}: {pair['a']} / {value}", "b": f"{path.name}: {pair['b']} / {value}"},
                              frozenset(ca["per_query"]) & frozenset(cb["per_query"])))
    return out


# ---------------------------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------------------------


def _cut(metric: str) -> int:
    match = re.search(r"@(\d+)$", metric)
    if not match:
        raise ConfigError(f"metric {metric!r} has no cut-off (@k)")
    return int(match[1])


def _value(row: dict[str, Any], column: str) -> float:
    value = row.get(column)
    return math.nan if value is None else float(value)


def _within(row: dict[str, Any], column: str, k: int) -> float:
    """1 when the leg's first evidence chunk ranks within k (a rank of None: not among its candidates)."""
    rank = row.get(column)
    return float(rank is not None and rank == rank and rank <= k)


def stage_columns(system: System, qids: list[str], k: int) -> dict[str, dict[str, np.ndarray]]:
    """Per language, per diagnostic, the per-question 0/1 values (diagnostics the system's legs have)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for side, rows in (("a", system.a), ("b", system.b)):
        cols: dict[str, np.ndarray] = {}
        if "lexical" in system.legs and "lexical_candidates" in system.columns:
            cols["lexical_hit"] = np.array([float((rows[q].get("lexical_candidates") or 0) > 0) for q in qids])
            cols[f"lexical_top{k}"] = np.array([_within(rows[q], "lexical_rank", k) for q in qids])
        if "vector" in system.legs and "vector_rank" in system.columns:
            cols[f"vector_top{k}"] = np.array([_within(rows[q], "vector_rank", k) for q in qids])
        out[side] = cols
    return out


def lost_by_stage(system: System, qids: list[str], metric: str) -> dict[str, Any]:
    """Questions found in a and lost in b (and the reverse), the lost ones put down to the legs that lost
    the evidence from their top k."""
    k = _cut(metric)
    if not {"lexical_rank", "vector_rank"} & system.columns:  # the runs kept no leg diagnostics
        return {"metric": metric, "lost": None, "gained": None, "lost_by_stage": {}}
    lost = [q for q in qids if _value(system.a[q], metric) > _value(system.b[q], metric)]
    gained = [q for q in qids if _value(system.a[q], metric) < _value(system.b[q], metric)]
    counts = {"vector only": 0, "lexical only": 0, "both legs": 0, "neither leg": 0}
    for q in lost:
        legs_lost = [leg for leg in system.legs if f"{leg}_rank" in system.columns
                     and _within(system.a[q], f"{leg}_rank", k) and not _within(system.b[q], f"{leg}_rank", k)]
        key = ("both legs" if len(legs_lost) == 2 else f"{legs_lost[0]} only" if legs_lost else "neither leg")
        counts[key] += 1
    return {"metric": metric, "lost": len(lost), "gained": len(gained), "lost_by_stage": counts}


def compare_systems(systems: list[System], paired: dict[str, dict[str, Any]], metrics: list[str]) -> dict[str, Any]:
    """Every comparison the report shows (see the module docstring)."""
    headline = metrics[0]
    k = _cut(headline)
    tables: dict[str, list[dict[str, Any]]] = {}
    for metric in metrics:
        family = []
        for s in systems:
            qids = [q for q in paired if q in s.a and q in s.b and _value(s.a[q], metric) == _value(s.a[q], metric)
                    and _value(s.b[q], metric) == _value(s.b[q], metric)]
            if not qids:
                continue
            ka, kb = f"{s.group}: {s.label} | a", f"{s.group}: {s.label} | b"
            columns = {ka: {q: _value(s.a[q], metric) for q in qids}, kb: {q: _value(s.b[q], metric) for q in qids}}
            family += column_pairs(columns, pairs=[(ka, kb)],
                                   tags={"group": s.group, "system": s.label, "metric": metric})
        tables[metric] = comparison_rows(family, family=" (this table)")  # one family per metric's table
    by_category, stages = [], []
    for s in systems:
        qids = [q for q in paired if q in s.a and q in s.b]
        for category in sorted({paired[q]["category"] for q in qids}):
            ids = [q for q in qids if paired[q]["category"] == category]
            x = np.array([_value(s.a[q], headline) for q in ids])
            y = np.array([_value(s.b[q], headline) for q in ids])
            interval = bootstrap_difference(x, y)
            by_category.append({"group": s.group, "system": s.label, "metric": headline, "category": category,
                                "queries": len(ids), "mean_a": float(x.mean()), "mean_b": float(y.mean()),
                                "difference": interval.as_dict()})
        diagnostics = stage_columns(s, qids, k)
        row: dict[str, Any] = {"group": s.group, "system": s.label, "legs": list(s.legs), "queries": len(qids),
                               **lost_by_stage(s, qids, headline), "diagnostics": {}}
        for name in diagnostics["a"]:
            if name not in diagnostics["b"]:
                continue
            x, y = diagnostics["a"][name], diagnostics["b"][name]
            row["diagnostics"][name] = {"mean_a": float(x.mean()), "mean_b": float(y.mean()),
                                        "difference": bootstrap_difference(x, y).as_dict()}
        stages.append(row)
    return {"tables": tables, "by_category": by_category, "stages": stages}


# ---------------------------------------------------------------------------------------------
# The study
# ---------------------------------------------------------------------------------------------


def load_pairs_spec(path: Path | str) -> LanguagePairsStudy:
    return validated("language-pairs", load_toml(path), path)


SYSTEMS_OF = {"benchmark": benchmark_systems, "matrix": matrix_systems}  # a source's kind -> its systems


def run_language_pairs(spec: LanguagePairsStudy) -> dict[str, Any]:
    """The pairing and every comparison, as the JSON document the report is drawn from."""
    pa, pb = spec.pairing.a, spec.pairing.b
    pairing = pair_locomo(pa.path, pb.path, pa.conversations, pb.conversations)
    systems: list[System] = []
    for source in spec.sources:
        systems += SYSTEMS_OF[source.kind](source)
    if not systems:
        raise ConfigError(f"{spec.source}: no system has runs in both languages")

    doc = {"name": spec.name, "a": spec.a, "b": spec.b, "metrics": list(spec.metrics),
           "pairing": pairing, "systems": [{"group": s.group, "system": s.label, "legs": list(s.legs), **s.detail,
                                            "questions": [len(s.a), len(s.b)]} for s in systems],
           "statistics": {"resampling_unit": "question", "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
                          "sign_flips": FLIPS, "seed": SEED,
                          "conversations": len(pairing["conversations"]),
                          # the smallest p an exact sign-flip over the conversations can give (verdicts.py):
                          # a decision at the data's unit needs it below the level
                          "conversation_floor": 2.0 / 2 ** len(pairing["conversations"])},
           **compare_systems(systems, pairing["paired"], list(spec.metrics))}
    return doc
