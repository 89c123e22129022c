"""The qmd preset's lexical leg against the real QMD 2.8.3 `qmd search` (searchLex), query by query.

For each workspace (king78 rounds 1-4, the CMRC 2018 sample) the real QMD indexes the folder and answers
every query (drivers/qmd.ts under bun, through real.run_real); the same files go into the preset's own
tokenizer and lexical backend (experiments/presets/qmd.toml: `qmd` + `qmd-documents`, the collection
name set to the driver's), and the two ranked file lists, their bm25 scores and the MATCH expressions are
compared.  Agreement = the same files in the same order (files whose real scores tie exactly may come in
either order: QMD leaves ties to SQLite) and every score within `SCORE_TOLERANCE`.

    >>> from harness.conformance.qmd import run_qmd_conformance
    >>> report = run_qmd_conformance()          # renders, runs the real QMD, compares
    >>> report["layouts"]["round1"]["identical"], report["layouts"]["round1"]["queries"]

Command line (exit 0: every query identical; 1: differences; 3: QMD not installable, skipped):
    python -m harness.cli.conformance_qmd [--out DIR] [--json FILE] [--rounds 1 2 3 4] [--no-cmrc]
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from harness.config import load_experiment, resolve
from harness.conformance.base import Check, Difference, short
from harness.inputs.layout import project_path
from harness.pipeline import load_dataset
from harness.stages.chunkers import Chunk
from harness.stages.lexical import LEXICAL_BACKENDS
from harness.stages.tokenizers import TOKENIZERS
from harness.systems import real

QMD_VERSION = "2.8.3"
PRESET = "qmd"
COLLECTION = "ws"  # drivers/qmd.ts --collection default: part of every filepath row
SCORE_TOLERANCE = 1e-6  # on raw bm25; measured differences are ~1e-12 (same SQLite FTS5 arithmetic)
CMRC_QUESTIONS = 20
_IGNORED_DIRS = {"node_modules", ".git", ".cache", "vendor", "dist", "build"}

# --- the workspaces -----------------------------------------------------------------------------------


def king78_queries() -> list[dict[str, str]]:
    return real.read_jsonl(project_path("datasets/king78/queries.jsonl"))  # a clone's, or the wheel's copy


def render_round(round_no: int, dest: Path) -> Path:
    """king78 round N rendered as `harness render experiments/roundN.toml --out DEST` renders it."""

    config = load_experiment(project_path(f"experiments/round{round_no}.toml"))
    load_dataset(config).render(dest, **config.layout)
    return dest


def cmrc_queries_with_answers(squad_json: Path, questions: int) -> list[dict[str, Any]]:
    """The first `questions` CMRC questions, then each one's first answer text as a query of its own, then
    every distinct article title (answers are short spans copied from a paragraph and titles head their
    files, so they exercise QMD's phrase, prefix and title-column rules where whole questions match
    nothing)."""
    root = json.loads(Path(squad_json).read_text(encoding="utf-8"))
    qs: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    titles = list(dict.fromkeys(a.get("title", "").strip() for a in root["data"] if a.get("title", "").strip()))
    for article in root["data"]:
        for para in article["paragraphs"]:
            for qa in para["qas"]:
                if len(qs) >= questions:
                    break
                qs.append({"id": qa["id"], "text": qa["question"]})
                texts = [a["text"] for a in qa.get("answers", []) if a.get("text", "").strip()]
                if texts:
                    answers.append({"id": qa["id"] + "_ANSWER", "text": texts[0]})
    return qs + answers + [{"id": f"TITLE_{i}", "text": t} for i, t in enumerate(titles)]


def workspace_documents(workspace: Path) -> list[tuple[str, str]]:
    """The files QMD's reindexCollection takes under `**/*.md`: no hidden path segment, none under
    node_modules/.git/.cache/vendor/dist/build, read as UTF-8 without newline translation."""
    out = []
    for path in sorted(workspace.rglob("*.md")):
        rel = path.relative_to(workspace).as_posix()
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts) or _IGNORED_DIRS & set(parts[:-1]) or not path.is_file():
            continue
        out.append((rel, path.read_bytes().decode("utf-8", "replace")))
    return out


# --- the preset's side --------------------------------------------------------------------------------


def preset_lexical(preset: str = PRESET, collection: str = COLLECTION) -> tuple[Any, Any]:
    """(tokenizer, a fresh lexical index) as the preset configures them, the collection set to the driver's."""

    config = resolve({"preset": preset})
    tokenizer = TOKENIZERS.create(config.tokenizer.name, dict(config.tokenizer.params))
    lex_table = dict(config.lexical.params)
    if "collection" in {p.name for p in LEXICAL_BACKENDS.parameters(config.lexical.name)}:
        lex_table["collection"] = collection
    return tokenizer, lambda: LEXICAL_BACKENDS.create(config.lexical.name, lex_table, tokenizer=tokenizer)


def our_results(workspace: Path, queries: Sequence[Mapping[str, Any]], preset: str = PRESET) -> dict[str, Any]:
    tokenizer, new_index = preset_lexical(preset)
    index = new_index()
    documents = workspace_documents(workspace)
    by_document = getattr(index, "unit", "chunk") == "document"
    if by_document:
        index.add_documents(documents)
    else:  # a chunk-level preset: each whole file as one row, so that the comparison is by file

        index.add([Chunk(p, 1, max(1, t.count("\n")), t) for p, t in documents])
    out = {}
    for q in queries:
        hits = index.search(q["text"], 100_000)
        files = [(ident if by_document else ident.rsplit(":", 1)[0], -raw) for ident, raw in hits]
        out[str(q["id"])] = {"match": tokenizer.match_expression(q["text"]), "results": files}
    return out


# --- the comparison -----------------------------------------------------------------------------------


def _tie_groups(ranked: Sequence[tuple[str, float]]) -> list[frozenset[str]]:
    """Consecutive files with exactly equal scores, as sets (their order is SQLite's, not a rule)."""
    groups: list[tuple[float, set[str]]] = []
    for path, score in ranked:
        if groups and groups[-1][0] == score:
            groups[-1][1].add(path)
        else:
            groups.append((score, {path}))
    return [frozenset(g) for _, g in groups]


def compare_query(real_hits: Sequence[tuple[str, float]], ours: Sequence[tuple[str, float]],
                  real_match: str | None, our_match: str | None) -> dict[str, Any]:
    """One query's agreement: identical when the files agree in order (up to exact real ties) and every
    bm25 within SCORE_TOLERANCE; `difference` says what differs first."""
    ours_by = dict(ours)
    real_by = dict(real_hits)
    diffs = [abs(real_by[p] - ours_by[p]) for p in real_by if p in ours_by]
    max_diff = max(diffs) if diffs else None
    same_files = set(real_by) == set(ours_by)
    # group ours by the real tie groups: the same sequence of sets means the same ranking
    real_groups = _tie_groups(real_hits)
    position = {p: i for i, g in enumerate(real_groups) for p in g}
    ours_groups = [position.get(p, -1) for p, _ in ours]
    same_order = same_files and ours_groups == sorted(ours_groups)
    identical = same_order and (max_diff is None or max_diff <= SCORE_TOLERANCE)
    difference = None
    if not same_files:
        only_real = sorted(set(real_by) - set(ours_by))
        only_ours = sorted(set(ours_by) - set(real_by))
        difference = f"files only in QMD: {only_real[:5]}; only in the preset: {only_ours[:5]}"
    elif not same_order:
        difference = "same files, different order"
    elif not identical:
        difference = f"bm25 differs by {max_diff:.3g}"
    if difference and real_match != our_match:
        difference += f" (QMD MATCH {real_match!r}, preset {our_match!r})"
    return {"real": [[p, s] for p, s in real_hits], "ours": [[p, s] for p, s in ours],
            "real_match": real_match, "our_match": our_match, "same_match": real_match == our_match,
            "identical": identical, "max_score_diff": max_diff, "difference": difference}


def compare_layout(name: str, real_doc: Mapping[str, Any], ours: Mapping[str, Any]) -> dict[str, Any]:
    """Per-layout agreement in the conformance runner's shape: counts, then one row per query."""
    rows = []
    for q in real_doc["queries"]:
        qid = str(q["id"])
        real_hits = [(r["path"], float(r["bm25"])) for r in q["results"]]
        mine = ours[qid]
        row = compare_query(real_hits, [(p, float(s)) for p, s in mine["results"]],
                            q["match"][0] if q.get("match") else None, mine["match"])
        rows.append({"layout": name, "query_id": qid, "query": q["text"], **row})
    diffs = [r["max_score_diff"] for r in rows if r["max_score_diff"] is not None]
    return {"layout": name, "system": f"qmd-{real_doc.get('version', QMD_VERSION)}", "preset": PRESET,
            "documents": len(real_doc.get("documents", [])), "queries": len(rows),
            "identical": sum(r["identical"] for r in rows), "same_match": sum(r["same_match"] for r in rows),
            "with_results": sum(bool(r["real"]) for r in rows), "max_score_diff": max(diffs) if diffs else None,
            "differences": [r for r in rows if not r["identical"]], "rows": rows}


def run_qmd_conformance(workspaces: Mapping[str, Path] | None = None,
                        queries_of: Mapping[str, Sequence[Mapping[str, Any]]] | None = None, *,
                        rounds: Iterable[int] = (1, 2, 3, 4), cmrc: bool = True, work_dir: Path | None = None,
                        preset: str = PRESET) -> dict[str, Any]:
    """Render the workspaces (unless given), run the real QMD and the preset's lexical leg on each, and
    compare.  Returns {"system", "version", "preset", "layouts": {name: compare_layout(...)}}.
    Raises real.NotInstalled when QMD is not in the conformance cache (run install.sh)."""
    with tempfile.TemporaryDirectory(prefix="qmd-conformance-") as tmp:
        root = Path(work_dir or tmp)
        if workspaces is None:
            workspaces, queries_of = {}, {}
            for r in rounds:
                workspaces[f"round{r}"] = render_round(r, root / f"round{r}")
                queries_of[f"round{r}"] = king78_queries()
            if cmrc:

                data = project_path("datasets/cmrc2018/cmrc2018_dev.json")  # in a clone only
                real.render_cmrc_sample(data, root / "cmrc", questions=CMRC_QUESTIONS)
                workspaces["cmrc"] = root / "cmrc"
                queries_of["cmrc"] = cmrc_queries_with_answers(data, CMRC_QUESTIONS)
        layouts = {}
        for name, ws in workspaces.items():
            queries = list((queries_of or {})[name])
            real_doc = real.run_real("qmd", QMD_VERSION, ws, queries)
            layouts[name] = compare_layout(name, real_doc, our_results(Path(ws), queries, preset))
    return {"system": "qmd", "version": QMD_VERSION, "preset": preset, "score_tolerance": SCORE_TOLERANCE,
            "layouts": layouts}


# --- as a module of `make conformance` (runner.MODULES, base.py) --------------------------------------

WORKSPACES = ("round1", "round2", "round3", "round4", "cmrc20")  # model-free: king78 and CMRC
NAME = "qmd"
SYSTEMS = [("qmd", QMD_VERSION)]
NOTES = """\
- The lexical leg is compared file by file: QMD's `qmd search` (the SDK's searchLex, full-precision bm25)
  against the preset's tokenizer and lexical backend over the same files. Files whose real scores tie
  exactly may come in either order (QMD leaves ties to SQLite); scores agree within 1e-6 on the raw bm25.
- The CMRC workspace is asked its 20 questions, each one's first answer and every article title (whole
  questions match nothing in QMD's AND query; answers and titles exercise its phrase, prefix and title rules).
"""


def _files(ranked: Sequence[Sequence[Any]], top: int = 5) -> str:
    shown = [f"{short(str(p))} {float(s):.4f}" for p, s in ranked[:top]]
    more = f" (+{len(ranked) - top})" if len(ranked) > top else ""
    return ", ".join(shown) + more if shown else "(none)"


def compare(workspaces: Sequence[Any], runs: Any) -> list[Any]:
    """The runner's entry point: one gated check per workspace (identical file rankings and bm25), and the
    MATCH expressions as information."""

    checks = []
    for ws in workspaces:
        if ws.name.startswith("cmrc"):
            data = project_path("datasets/cmrc2018/cmrc2018_dev.json")
            queries = cmrc_queries_with_answers(data, len(ws.queries))
        else:
            queries = ws.query_rows()
        doc = runs.get("qmd", QMD_VERSION, ws, max_results=0, queries=queries)
        lay = compare_layout(ws.name, doc, our_results(ws.layout.root, queries))
        release = f"qmd {QMD_VERSION}"
        diffs = [Difference(r["query_id"], r["query"], _files(r["ours"]), _files(r["real"]), r["difference"])
                 for r in lay["differences"]]
        checks.append(Check(NAME, PRESET, release, "lexical leg (qmd search): ranked files and bm25", ws.name,
                            lay["identical"], lay["queries"], True, diffs))
        checks.append(Check(NAME, PRESET, release, "MATCH expression", ws.name, lay["same_match"], lay["queries"],
                            False, []))
    return checks


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    lines = ["| layout | documents | queries | with results in QMD | identical rankings | same MATCH | max bm25 diff |",
             "|---|---|---|---|---|---|---|"]
    for name, lay in report["layouts"].items():
        diff = "-" if lay["max_score_diff"] is None else f"{lay['max_score_diff']:.1e}"
        lines.append(f"| {name} | {lay['documents']} | {lay['queries']} | {lay['with_results']} | "
                     f"{lay['identical']}/{lay['queries']} | {lay['same_match']}/{lay['queries']} | {diff} |")
    for lay in report["layouts"].values():
        for row in lay["differences"]:
            lines.append(f"- {row['layout']} {row['query_id']} {row['query']}: {row['difference']}")
    return lines


if __name__ == "__main__":  # the command line, which also writes --json, is harness.cli.conformance_qmd
    raise SystemExit("run `python -m harness.cli.conformance_qmd`: this module only compares")
