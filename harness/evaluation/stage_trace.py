"""Why a query failed, by stage: its retrieval trace read stage by stage.

For a failed query (a suite query that did not pass, a paraphrase whose record was not returned), a
near tie, and a negative query that got an answer, the trace the pipeline recorded of its retrieval
(harness.trace.QueryTrace: the legs, the fusion's list, each post-processing stage's output) is read one
stage at a time, and the rank of its best relevant chunk is read after each: in each leg, after the fusion, after temporal decay, importance,
MMR, the minScore selection, and after the cut to maxResults.  The stage that lost it is the first one
after which it is no longer first (a suite query: passing needs the top-1) or no longer among the
results (a paraphrase: it needs the record returned):

    vector rank 1 (0.871), lexical rank 2 -> fused rank 1 (0.712) -> rank 7 after temporal_decay
    (memory/2026-02-20.md is 55 days old: x0.28 -> 0.199; MEMORY.md:3-5 now first, 0.52) -> not returned

`lost_at` names that stage: "retrieval" when neither leg found a relevant chunk among its candidates,
"legs" when neither leg put one first and the fusion did not either, "fusion", a post-processing stage
("temporal_decay", "importance", "mmr", "min_score", ...), or "cut" (after the last stage it ranked
below maxResults).  A negative query that returns something is lost at "min_score" (nothing silenced it).

    >>> trace = trace_query(traces[query.id], query, index)   # traces: pipeline.trace_queries
    >>> trace.lost_at, trace.why, trace.steps
    >>> stage_summary(frame)   # counts by stage, and the stage that costs these queries the most
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from harness.evaluation.metrics import leg_rank
from harness.inputs.layout import Query
from harness.trace import Hit, QueryTrace

# what a user can change about each stage that loses queries (the sweep links its findings to these)
STAGE_SETTINGS = {
    "retrieval": "candidateMultiplier, the tokenizer, the chunking budget",
    "legs": "the tokenizer, the embedding model, the chunking budget",
    "fusion": "the fusion's weights (vectorWeight / textWeight)",
    "temporal_decay": "temporal decay off, or a longer half-life (halfLifeDays)",
    "importance": "the <!-- importance: N --> annotations in MEMORY.md",
    "mmr": "MMR off, or a higher lambda (less diversity)",
    "min_score": "minScore",
    "cut": "maxResults",
}
STAGE_WORDS = {"retrieval": "not found by either leg", "legs": "neither leg ranks it first", "fusion": "fusion",
               "temporal_decay": "temporal decay", "importance": "importance", "mmr": "MMR",
               "min_score": "minScore", "cut": "the cut to maxResults"}


@dataclass
class Step:
    """The best relevant chunk after one stage."""

    stage: str
    rank: int | None  # 1-based, None: not in the list
    chunk: str | None
    score: float | None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "rank": self.rank, "chunk": self.chunk, "score": self.score,
                "detail": self.detail}


@dataclass
class Trace:
    lost_at: str | None
    why: str
    steps: list[Step] = field(default_factory=list)


def _first(hits: Sequence[Hit], relevant: set[str], docs_of: dict[str, frozenset[str]]) -> tuple[int | None, Hit | None]:
    for i, h in enumerate(hits, start=1):
        if docs_of.get(h.id, frozenset()) & relevant:
            return i, h
    return None, None


def _label(index: Any, cid: str) -> str:
    try:
        c = index.lookup(cid)
        return f"{c.path}:{c.start_line}-{c.end_line}"
    except (KeyError, AttributeError):
        return cid


def trace_query(trace: QueryTrace, query: Query, index: Any,
                docs_of: dict[str, frozenset[str]] | None = None) -> Trace:
    """Read one query's retrieval trace (harness.trace.QueryTrace, pipeline.trace_queries) stage by stage and
    say which stage lost its relevant chunk: `why` tells the ranks up to the stage that lost it (all of
    them when none did), `steps` holds every stage's rank and score."""
    docs_of = index.unit_docs if docs_of is None else docs_of
    relevant = set(query.relevant)
    provenance = index.provenance() if hasattr(index, "provenance") else docs_of
    steps: list[Step] = []
    for leg_name, leg in (("vector", trace.vector), ("lexical", trace.lexical)):
        rank, raw = leg_rank(list(leg), relevant, provenance) if relevant else (None, None)
        steps.append(Step(leg_name, rank, None, raw, f"{len(leg)} candidates"))
    hits = trace.fused
    rank, hit = _first(hits, relevant, docs_of)
    fused_detail = ""
    if hit is not None:
        vw, tw = trace.leg_weights
        fused_detail = f"vector {hit.vector_score:.3f} x{vw:g} + text {hit.text_score:.3f} x{tw:g}" \
            if trace.scales_weights else ""
    if hits and (rank is None or rank > 1):
        fused_detail += ("; " if fused_detail else "") + f"first: {_label(index, hits[0].id)} at {hits[0].score:.3f}"
    steps.append(Step("fusion", rank, hit.id if hit else None, hit.score if hit else None, fused_detail))
    for stage in trace.stages:
        before = steps[-1]
        hits = stage.hits
        rank, hit = _first(hits, relevant, docs_of)
        detail = stage.details.get(before.chunk, "") if before.chunk else ""
        if stage.min_score is not None and before.rank is not None and rank is None:
            detail = f"score {before.score:.3f} < minScore {stage.min_score:g}" if before.score is not None \
                and before.score < stage.min_score else f"rank {before.rank} is past maxResults {trace.max_results}"
        if hits and (rank is None or rank > 1) and (before.rank == 1 or rank != before.rank) \
                and stage.min_score is None:
            detail += ("; " if detail else "") + f"first: {_label(index, hits[0].id)} at {hits[0].score:.3f}"
        steps.append(Step(stage.stage, rank, hit.id if hit else None, hit.score if hit else None, detail))
    cut = trace.hits
    rank, hit = _first(cut, relevant, docs_of)
    steps.append(Step("cut", rank, hit.id if hit else None, hit.score if hit else None,
                      f"{len(cut)} returned (maxResults {trace.max_results})"))
    return _verdict(query, steps, cut, trace, index)


def _verdict(query: Query, steps: list[Step], returned: list[Hit], trace: QueryTrace, index: Any) -> Trace:
    legs, chain = steps[:2], steps[2:]
    if not query.relevant:  # a negative query: it should return nothing
        if not returned:
            return Trace(None, "nothing returned", steps)
        return Trace("min_score", f"{len(returned)} returned: top-1 {_label(index, returned[0].id)} scores "
                     f"{returned[0].score:.3f} >= minScore {trace.pass_threshold:g}", steps)
    if all(s.rank is None for s in legs) and chain[0].rank is None:
        return Trace("retrieval", f"no relevant chunk among the candidates ({legs[0].detail} by vector, "
                     f"{legs[1].detail} by lexical)", steps)
    limit = 1 if query.kind == "suite" else trace.max_results  # passing needs the top-1; a paraphrase, the record

    def inside(step: Step) -> bool:
        return step.rank is not None and step.rank <= limit

    text = [", ".join(f"{s.stage} rank {s.rank}" + (f" ({s.score:.3f})" if s.score is not None else "")
                      for s in legs if s.rank is not None) or "neither leg found it"]
    lost = None
    said = None  # how much of the text says it: up to the step that lost it
    previous: Step | None = None
    for s in chain:
        if previous is None or s.rank != previous.rank:
            where = "not returned" if s.rank is None else f"rank {s.rank}"
            label = f"fused {where}" if s.stage == "fusion" else f"{where} after the cut" if s.stage == "cut" \
                else f"{where} after {s.stage}"
            notes = ([f"{s.score:.3f}"] if s.score is not None and s.rank is not None else []) + \
                ([s.detail] if s.detail and s.stage != "cut" else [])
            text.append(label + (f" ({'; '.join(notes)})" if notes else ""))
        if lost is None and previous is not None and inside(previous) and not inside(s):
            lost = s.stage  # the first stage that moved it out of first place (or out of the results)
            said = len(text)
        previous = s
    final = chain[-1]
    if lost is None and not inside(final):  # never inside after the fusion
        lost = "fusion" if any(inside(s) for s in legs) else "legs"
        said = 2  # the legs and the fused rank say it
    if lost is None and query.kind == "suite" and final.score is not None and final.score < trace.pass_threshold:
        lost = "min_score"
        text.append(f"top-1 but {final.score:.3f} < minScore {trace.pass_threshold:g}")
    return Trace(lost, " -> ".join(text[:said]), steps)


def needs_trace(row: dict[str, Any]) -> bool:
    """Failed queries, near ties, and negative queries that were answered."""
    if not row.get("relevant"):
        return bool(row.get("returned"))
    return not row.get("passed") or bool(row.get("near_tie")) or (row.get("kind") != "suite" and row.get("rank") is None)


def stage_summary(frame: Any) -> dict[str, Any]:
    """Counts of lost_at by query kind over the queries that count (suite queries of the round,
    paraphrases with a relevant record, negatives), and the stage that costs the most of them."""
    if "lost_at" not in getattr(frame, "columns", []):
        return {}
    out: dict[str, Any] = {}
    total: Counter = Counter()
    for kind in ("suite", "paraphrase", "negative"):
        rows = frame[frame["kind"] == kind]
        if kind == "suite":
            rows = rows[rows["in_suite"].astype(bool)]
            failed = rows[~rows["passed"].astype(bool)]
        elif kind == "paraphrase":
            failed = rows[rows["rank"].isna()]
        else:
            failed = rows[rows["returned"] > 0]
        counts = Counter(str(s) for s in failed["lost_at"] if isinstance(s, str))
        out[kind] = {"queries": int(len(rows)), "failed": int(len(failed)), "by_stage": dict(counts.most_common())}
        total.update(counts)
    answerable = Counter({k: v for k, v in total.items()}) - Counter(out["negative"]["by_stage"])
    if answerable:
        most = max(answerable.values())
        order = list(STAGE_SETTINGS)
        tied = sorted((k for k, v in answerable.items() if v == most),
                      key=lambda k: order.index(k) if k in order else len(order))
        out["costliest"] = {"stage": tied[0], "queries": int(most), "tied": tied,
                            "settings": STAGE_SETTINGS.get(tied[0], "")}
    return out


def re_asked_attribution(frame: Any, replay: dict[str, Any]) -> dict[str, Any]:
    """Replay as asked: the questions that fail only because they are re-asked later (they pass as asked), with
    the stage that loses each of them at the one date, kept apart from the failures the attribution counts."""
    ids = set(replay.get("only_re_asked") or [])
    if not ids or "lost_at_one_date" not in getattr(frame, "columns", []):
        return {}
    rows = frame[frame["query_id"].isin(ids)]
    counts = Counter(str(s) for s in rows["lost_at_one_date"] if isinstance(s, str))
    return {"only_re_asked": {"queries": len(ids), "at": replay.get("one_date"), "by_stage": dict(counts.most_common()),
                              "ids": sorted(ids)}}


def stage_words(stage: str) -> str:
    """`temporal decay (temporal_decay)`: a stage in words, with its name when they differ."""
    words = STAGE_WORDS.get(stage, stage)
    return words if words == stage else f"{words} ({stage})"


def costliest_text(summary: dict[str, Any], words: str = "queries") -> str | None:
    """The summary line: which stage costs this memory the most failed queries, and what softens it."""
    stages = summary.get("stages") or {}
    top = stages.get("costliest")
    re_asked = stages.get("only_re_asked")
    later = ""
    if re_asked:  # replay as asked: failures of re-asking, named apart from the memory's own
        by = ", ".join(f"{stage_words(k)} {v}" for k, v in re_asked["by_stage"].items())
        one = {"queries": "query", "questions": "question"}.get(words, words)
        n = re_asked["queries"]
        later = (f"{n} more {one if n == 1 else words} {'fails' if n == 1 else 'fail'} only because "
                 f"{'it is' if n == 1 else 'they are'} re-asked at {re_asked['at']}, not when asked "
                 f"({by or 'lost at no one stage'}): not counted here")
    if not top:
        return later or None
    failed = sum(stages.get(k, {}).get("failed", 0) for k in ("suite", "paraphrase"))
    tied = top.get("tied") or [top["stage"]]
    later = f"; {later}" if later else ""
    if len(tied) > 1:
        names = [stage_words(t) for t in tied]
        return (f"no one stage costs this memory the most: {', '.join(names[:-1])} and {names[-1]} each lost "
                f"{top['queries']} of the {failed} failed {words}{later}")
    return (f"the stage that costs this memory the most is {stage_words(top['stage'])}: it lost {top['queries']} of the {failed} failed {words}; what turns it off or "
            f"softens it: {top['settings']}{later}")
