"""Turn a conformance study folder (real.py study --out DIR) into Markdown tables.

    python -m harness.conformance.summary DIR --workspace NAME=DIR ... [--queries NAME=FILE ...]

Relevance comes from each rendered workspace's provenance.json (the harness's renders) when present, else
from the queries' "relevant" ids mapped to memory/<id>.md (the CMRC sample). Standard library only.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Iterable

from harness.systems.real import cmrc_document_path, read_jsonl


def short(path: str) -> str:
    p = path[len("memory/"):] if path.startswith("memory/") else path
    return p[:-3] if p.endswith(".md") else p


def load_runs(out_dir: Path) -> dict[str, dict[str, dict[str, Any]]]:
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    for ws in sorted(p for p in out_dir.iterdir() if p.is_dir()):
        for f in sorted(ws.glob("*.json")):
            runs.setdefault(ws.name, {})[f.stem] = json.loads(f.read_text(encoding="utf-8"))
    return runs


class Relevance:
    def __init__(self, workspace: Path | None, queries: list[dict[str, Any]]):
        self.relevant = {str(q["id"]): set(q.get("relevant", [])) for q in queries}
        self.spans: list[tuple[str, int, int, str]] = []
        prov = workspace / "provenance.json" if workspace else None
        if prov and prov.is_file():
            self.spans = [tuple(s) for s in json.loads(prov.read_text(encoding="utf-8"))["spans"]]

    def docs(self, path: str, start: int | None = None, end: int | None = None) -> set[str]:
        if not self.spans:
            return {d for d in self._all_ids() if cmrc_document_path(d) == path}
        if start is None:  # a whole-document hit (QMD)
            return {d for (p, _s, _e, d) in self.spans if p == path}
        end = start if end is None else end
        return {d for (p, s, e, d) in self.spans if p == path and s <= end and start <= e}

    def _all_ids(self) -> Iterable[str]:
        for ids in self.relevant.values():
            yield from ids

    def is_hit(self, qid: str, path: str, start: int | None = None, end: int | None = None) -> bool:
        return bool(self.relevant.get(qid, set()) & self.docs(path, start, end))


def first_hit_rank(rel: Relevance, qid: str, hits: list[dict[str, Any]]) -> int | None:
    for i, h in enumerate(hits, 1):
        if rel.is_hit(qid, h["path"], h.get("startLine"), h.get("endLine")):
            return i
    return None


def fmt_hit(h: dict[str, Any], full: bool = True) -> str:
    lines = f":{h['startLine']}-{h['endLine']}" if "startLine" in h else ""
    score = repr(h["score"]) if full else f"{h['score']:.4f}"
    extra = ""
    if h.get("textScore") is not None and h.get("textScore") != h.get("score"):
        extra = f" t={h['textScore']!r}"
    if h.get("bm25") is not None:
        extra = f" bm25={h['bm25']!r}"
    return f"{short(h['path'])}{lines} {score}{extra}"


def per_query_table(name: str, key: str, run: dict[str, Any], rel: Relevance, top: int) -> list[str]:
    out = [f"#### {name} / {key}", ""]
    legacy = run.get("generation") == "legacy"
    if run.get("system") == "qmd":
        out += ["| q | query | match | hits | first relevant | top results (file score bm25) |", "|---|---|---|---|---|---|"]
    elif legacy:
        out += ["| q | query | hybrid lexical match | lexical hits | FTS-only-branch hits | top lexical (file:lines textScore) | top FTS-only branch |",
                "|---|---|---|---|---|---|---|"]
    else:
        out += ["| q | query | fallback terms | strict hits | keyword hits | results | first relevant | top results (file:lines score t=textScore) |",
                "|---|---|---|---|---|---|---|---|"]
    for q in run["queries"]:
        qid = str(q["id"])
        text = q["text"].replace("|", "\\|")
        if run.get("system") == "qmd":
            hits = q["results"]
            match = "; ".join(q["match"]).replace("|", "\\|")
            out.append(f"| {qid} | {text} | `{match}` | {len(hits)} | {first_hit_rank(rel, qid, hits) or '-'} | "
                       + "<br>".join(fmt_hit(h) for h in hits[:top]) + " |")
        elif legacy:
            lex = q["hybrid_lexical"]
            match = "; ".join(m["match"] for m in q["match"]).replace("|", "\\|")
            out.append(f"| {qid} | {text} | `{match}` | {len(lex)} | {len(q['results'])} | "
                       + "<br>".join(fmt_hit(h) for h in lex[:top]) + " | "
                       + "<br>".join(fmt_hit(h) for h in q["results"][:top]) + " |")
        else:
            hits = q["results"]
            terms = " ".join(q["fallback_terms"])
            out.append(f"| {qid} | {text} | {terms} | {len(q['strict'])} | {len(q['keyword'])} | {len(hits)} | "
                       f"{first_hit_rank(rel, qid, hits) or '-'} | " + "<br>".join(fmt_hit(h) for h in hits[:top]) + " |")
    return out + [""]


def chunk_key(c: dict[str, Any]) -> tuple:
    return (c["path"], c["startLine"], c["endLine"], c["hash"])


def agreement(runs: dict[str, dict[str, Any]], rels: dict[str, Relevance], suite: set[str]) -> list[str]:
    out = ["### Agreement and hit figures", ""]
    # hit@1 / hit@5 over the suite queries (T*, as present in the query file), user-visible lists
    out += ["| workspace | system | queries with results | hit@1 | hit@5 | suite hit@1 | suite hit@5 |",
            "|---|---|---|---|---|---|---|"]
    for ws, by in runs.items():
        for key, run in by.items():
            lists = {str(q["id"]): (q["hybrid_lexical"] if run.get("generation") == "legacy" else q["results"])
                     for q in run["queries"]}
            label = key + (" (hybrid lexical)" if run.get("generation") == "legacy" else "")
            n_res = sum(1 for v in lists.values() if v)
            ranks = {qid: first_hit_rank(rels[ws], qid, hits) for qid, hits in lists.items()}
            judged = [qid for qid in lists if rels[ws].relevant.get(qid)]
            s_judged = [qid for qid in judged if qid in suite] if suite else []
            def frac(ids, k):
                return f"{sum(1 for i in ids if ranks[i] and ranks[i] <= k)}/{len(ids)}"
            out.append(f"| {ws} | {label} | {n_res}/{len(lists)} | {frac(judged, 1)} | {frac(judged, 5)} | "
                       f"{frac(s_judged, 1) if s_judged else '-'} | {frac(s_judged, 5) if s_judged else '-'} |")
    out.append("")
    # chunks
    oc = lambda by: {k: v for k, v in by.items() if k.startswith("openclaw-")}
    out += ["| workspace | chunks per version | identical chunks (path, lines, sha256) |", "|---|---|---|"]
    for ws, by in runs.items():
        versions = oc(by)
        sets = {k: {chunk_key(c) for c in v.get("chunks", [])} for k, v in versions.items()}
        keys = sorted(sets)
        pairs = [f"{a[9:]} vs {b[9:]}: {len(sets[a] & sets[b])}" for i, a in enumerate(keys) for b in keys[i + 1:]]
        out.append(f"| {ws} | " + ", ".join(f"{k[9:]}: {len(s)}" for k, s in sets.items()) + " | " + "; ".join(pairs) + " |")
    out.append("")
    # strict AND lists: 2026.2.22 hybrid lexical vs 2026.8+ strict (same MATCH expression on chunk text)
    out += ["| workspace | same MATCH expression | same ordered files (strict list) | same top-1 file | same top-5 files (user lists, 8.1 vs 9.6) |",
            "|---|---|---|---|---|"]
    for ws, by in runs.items():
        a, b, c = by.get("openclaw-2026.2.22"), by.get("openclaw-2026.8.1"), by.get("openclaw-2026.9.6")
        if not (a and b):
            continue
        same_m = same_files = same_top = 0
        n = len(a["queries"])
        for qa, qb in zip(a["queries"], b["queries"]):
            ma = [m["match"] for m in qa["match"] if m["table"] == "chunks_fts"][:1]
            mb = [m["match"] for m in qb["strict_match"] if m["table"] == "memory_index_chunks_fts"][:1]
            same_m += ma == mb
            fa = dedupe(h["path"] for h in qa["hybrid_lexical"])
            fb = dedupe(h["path"] for h in qb["strict"])
            same_files += fa == fb
            same_top += fa[:1] == fb[:1]
        top5 = "-"
        if c:
            top5 = sum(dedupe(h["path"] for h in x["results"])[:5] == dedupe(h["path"] for h in y["results"])[:5]
                       for x, y in zip(b["queries"], c["queries"]))
            top5 = f"{top5}/{n}"
        out.append(f"| {ws} | {same_m}/{n} | {same_files}/{n} | {same_top}/{n} | {top5} |")
    return out + [""]


def dedupe(items: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for it in items:
        if it not in seen:
            seen.append(it)
    return seen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.conformance.summary")
    ap.add_argument("out_dir")
    ap.add_argument("--workspace", action="append", default=[], metavar="NAME=DIR")
    ap.add_argument("--queries", action="append", default=[], metavar="[NAME=]FILE")
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args(argv)
    runs = load_runs(Path(args.out_dir))
    wsdirs = {k: Path(v) for k, v in (w.split("=", 1) for w in args.workspace)}
    default_q = next((q for q in args.queries if "=" not in q), None)
    per = dict(q.split("=", 1) for q in args.queries if "=" in q)
    rels: dict[str, Relevance] = {}
    suite: set[str] = set()
    for ws in runs:
        qfile = per.get(ws, default_q)
        qs = read_jsonl(qfile) if qfile else []
        suite |= {str(q["id"]) for q in qs if q.get("kind") == "suite"}
        rels[ws] = Relevance(wsdirs.get(ws), qs)
    lines = agreement(runs, rels, suite)
    for ws, by in runs.items():
        lines += [f"### {ws}", ""]
        for key, run in by.items():
            lines += per_query_table(ws, key, run, rels[ws], args.top)
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
