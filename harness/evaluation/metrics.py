"""Metrics: every figure is computed from a Run and Qrels (harness.evaluation.runs) by `evaluate`, plus
per-query diagnostics on the returned hits (rank and score of the best relevant chunk, pass, purity,
margins, where each leg put it).

`evaluate(run, qrels, ["mrr@6", "ndcg@10", "recall@6"])` uses trec_eval's definitions (pytrec_eval)
after each query's list is put in (score desc, id) order, cut at k and given strictly decreasing
scores, so no library's own tie rule can change a number.  Judged queries (in the qrels) that the run
does not answer score 0, as `trec_eval -c` scores them; queries the qrels do not judge are ignored.

The reports' figures (standard_metrics), from the runs of one evaluation, for each cut-off c:
  recall@c, mrr@c, ndcg@c   the headline: on documents (records), from the MaxP document run (a
                            document scores its best returned chunk, so the documents of one chunk tie),
                            cut at c documents, with the data set's grades as gains; by default the
                            expectation over the orders of tied documents (harness.evaluation.ties),
                            `[evaluation] ties = "id_order"` for trec_eval's rule;
  pure_recall@c             recall@c where a relevant document counts 1/m when the chunk that brought
                            it in overlaps m documents (a chunk holding three records hands the reader
                            one answer and two others): coarse chunkers no longer get full credit;
  chunk_recall@c            the share of relevant documents that one of the first c chunks overlaps
                            (every document a mixed chunk touches counts: the pre-document-level Recall);
  chunk_mrr@c, chunk_ndcg@c on the chunk run (a chunk overlapping a relevant document is relevant with
                            that document's grade): they depend on how many chunks a record spans, so
                            compare them only between runs of one chunker.
A cut-off above the run's max_results is an error (checked_cutoffs): the returned list has only
max_results chunks, so "@10" of a 6-result run would silently be "@6".
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import pytrec_eval

from harness.errors import ConfigError
from harness.evaluation.runs import (
    JudgedRuns,
    Qrels,
    Run,
    cut,
    max_passage_run,
    ranked_ids,
)
from harness.evaluation.ties import (
    EXPECTED_MEASURES,
    NEAR_TIE,  # noqa: F401  (re-exported: reports and the gate read it here)
    TIE_RULES,
    expected_in_top,
    id_order,
    query_tie_metrics,
    tie_aware_metrics,
    tie_groups,
)
from harness.trace import Hit

# Our measure name (ranx's spelling) -> the trec_eval measure at cut-off k and the key it reports under.
TREC_MEASURES = {
    "mrr": ("recip_rank", "recip_rank"),  # on the run cut at k
    "ndcg": ("ndcg_cut.{k}", "ndcg_cut_{k}"),
    "recall": ("recall.{k}", "recall_{k}"),
    "precision": ("P.{k}", "P_{k}"),
    "hit_rate": ("success.{k}", "success_{k}"),  # 1 when a relevant document is in the first k
    "map": ("map_cut.{k}", "map_cut_{k}"),
}
ALIASES = {"rr": "mrr", "p": "precision", "success": "hit_rate", "hit": "hit_rate", "ap": "map"}
NEEDS_CUTOFF = {"precision"}  # precision of "the whole run" would depend on the longest list
NO_RESULT = "__no_result__"  # stands in for an empty list: trec_eval skips queries it does not see
_MEASURE = re.compile(r"^([a-z_]+)(?:@(\d+))?$")


@dataclass(frozen=True)
class Measure:
    """A metric and its cut-off: `mrr@10`; k None is the whole run (`mrr`: reciprocal rank of all)."""

    name: str
    k: int | None = None

    @classmethod
    def parse(cls, text: str) -> "Measure":
        match = _MEASURE.match(text.strip().lower())
        name = ALIASES.get(match.group(1), match.group(1)) if match else None
        if name not in TREC_MEASURES:
            raise ConfigError(f"unknown metric {text!r}; known: {', '.join(TREC_MEASURES)} "
                              "(with @k for a cut-off, e.g. mrr@10)")
        k = int(match.group(2)) if match.group(2) else None
        if k == 0:
            raise ConfigError(f"metric {text!r}: the cut-off must be at least 1")
        if k is not None and k > MAX_CUTOFF:
            raise ConfigError(f"metric {text!r}: the cut-off must be at most {MAX_CUTOFF:,}")
        if k is None and name in NEEDS_CUTOFF:
            raise ConfigError(f"metric {text!r} needs a cut-off, e.g. {name}@10")
        return cls(name, k)

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"


MAX_CUTOFF = 1_000_000  # a cut-off past any run's length; trec_eval holds it in a C int


def strict_run(ranked: Mapping[str, Sequence[str]]) -> Run:
    """Ranked id lists -> a run whose scores strictly decrease with rank (n, n-1, ..., 1)."""
    return {qid: {doc: float(len(ids) - i) for i, doc in enumerate(ids)} for qid, ids in ranked.items()}


class Evaluator:
    """`evaluate` against fixed qrels: trec_eval's evaluators are built once per cut-off and reused, so a
    sweep scores a thousand runs against one set of judgments without rebuilding them."""

    def __init__(self, qrels: Qrels):
        self.judged = {q: rel for q, rel in qrels.items() if rel}
        self._trec: dict[tuple[int, frozenset[str]], Any] = {}

    def __call__(self, run: Run, measures: Iterable[str | Measure]) -> dict[str, dict[str, float]]:
        parsed = [m if isinstance(m, Measure) else Measure.parse(m) for m in measures]
        if not self.judged or not parsed:
            return {}
        ranked = {q: ranked_ids(run.get(q, {})) for q in self.judged}
        longest = max([len(ids) for ids in ranked.values()] + [1])
        by_cutoff: dict[int, list[Measure]] = {}
        for m in parsed:
            by_cutoff.setdefault(m.k if m.k is not None else longest, []).append(m)
        out: dict[str, dict[str, float]] = {q: {} for q in self.judged}
        for k, group in by_cutoff.items():
            strict = strict_run({q: ids[:k] for q, ids in ranked.items()})
            for q in self.judged:  # an empty result must score 0, not vanish
                strict[q] = strict[q] or {NO_RESULT: 0.0}
            trec = {m: (TREC_MEASURES[m.name][0].format(k=k), TREC_MEASURES[m.name][1].format(k=k)) for m in group}
            for q, vals in self._evaluator(k, frozenset(name for name, _ in trec.values())).evaluate(strict).items():
                out[q].update({str(m): vals[key] for m, (_, key) in trec.items()})
        return out

    def _evaluator(self, k: int, names: frozenset[str]) -> Any:
        if (k, names) not in self._trec:
            self._trec[k, names] = pytrec_eval.RelevanceEvaluator(self.judged, set(names))
        return self._trec[k, names]


def evaluate(run: Run, qrels: Qrels, measures: Iterable[str | Measure], ties: str = "id_order"
             ) -> dict[str, dict[str, float]]:
    """Per judged query (a query with qrels), each measure by its name in canonical form (`"mrr@6"`,
    `"ndcg@10"`, `"recall"`); see the module docstring for the rules.  ties = "id_order" (default):
    trec_eval's rule, equal scores in id order; "expected": recall, mrr, ndcg, precision and hit_rate as
    their expectation over the orders of tied documents (harness.evaluation.ties; map keeps the id
    order).  Many runs against the same qrels: Evaluator(qrels)(run, measures)."""
    if ties not in TIE_RULES:
        raise ConfigError(f"ties = {ties!r}: one of {', '.join(TIE_RULES)}")
    parsed = [m if isinstance(m, Measure) else Measure.parse(m) for m in measures]
    if ties == "id_order":
        return Evaluator(qrels)(run, parsed)
    by_order = [m for m in parsed if m.name not in EXPECTED_MEASURES]
    out = Evaluator(qrels)(run, by_order) if by_order else {q: {} for q, rel in qrels.items() if rel}
    judged = {q: grades for q, grades in qrels.items() if grades}
    for m in parsed:
        if m.name not in EXPECTED_MEASURES:
            continue
        for qid, grades in judged.items():
            scores = run.get(qid, {})
            k = m.k if m.k is not None else max(len(scores), 1)
            if not any(g > 0 for g in grades.values()):
                out.setdefault(qid, {})[str(m)] = 0.0  # trec_eval scores a query without relevant documents 0
                continue
            out.setdefault(qid, {})[str(m)] = query_tie_metrics(scores, grades, [k], (m.name,))[f"{m.name}@{k}"][0]
    return out


def mean_scores(per_query: Mapping[str, Mapping[str, float]], measures: Iterable[str | Measure],
                query_ids: Iterable[str] | None = None) -> dict[str, float]:
    """The mean of each measure over `query_ids` (default: every query of `per_query`)."""
    ids = list(per_query) if query_ids is None else list(query_ids)
    names = [str(m if isinstance(m, Measure) else Measure.parse(m)) for m in measures]
    return {name: (sum(per_query[q][name] for q in ids) / len(ids) if ids else 0.0) for name in names}


def recall_of_first_chunks(chunk_run: Run, chunk_documents: Mapping[str, Iterable[str]],
                           document_qrels: Qrels | Evaluator, c: int) -> dict[str, float]:
    """Per judged query, the share of its relevant documents that one of its first c chunks overlaps:
    recall of the MaxP document run of the first c chunks, counted to its end."""
    documents = document_qrels if isinstance(document_qrels, Evaluator) else Evaluator(document_qrels)
    docs = max_passage_run(cut({q: chunk_run.get(q, {}) for q in documents.judged}, c), chunk_documents)
    depth = max([len(d) for d in docs.values()] + [c])  # every document of the first c chunks counts
    name = f"recall@{depth}"
    return {q: vals[name] for q, vals in documents(docs, [name]).items()}


def pure_recall(chunk_run: Run, chunk_documents: Mapping[str, Iterable[str]], document_qrels: Qrels,
                c: int, ties: str = "expected") -> dict[str, float]:
    """Per judged query: recall@c of the MaxP document run where each relevant document among the first
    c counts 1/m, m the number of documents its best chunk (the one that ranks it) overlaps.  Documents
    that tie share their positions (ties = "expected": each counts by its chance of being in the first c;
    "id_order": ids in natural order decide)."""
    out = {}
    for qid, grades in document_qrels.items():
        relevant = {d for d, g in grades.items() if g > 0}
        if not relevant:
            continue
        scores = chunk_run.get(qid, {})
        best: dict[str, float] = {}  # document -> its best chunk's score (MaxP)
        purity: dict[str, float] = {}
        for chunk in ranked_ids(scores):  # best first: a document's first chunk is its best
            docs = list(chunk_documents.get(chunk, ()))
            for doc in docs:
                if doc not in best:
                    best[doc], purity[doc] = scores[chunk], 1.0 / len(docs)
        if ties == "id_order":
            shown = {d: 1.0 for d in id_order(best)[:c]}
        else:
            shown = expected_in_top(tie_groups(best), c)
        out[qid] = sum(purity[d] * share for d, share in shown.items() if d in relevant) / len(relevant)
    return out


def standard_metrics(runs: JudgedRuns, cutoffs: Sequence[int],
                     evaluators: tuple[Evaluator, Evaluator] | None = None, ties: str = "expected",
                     tie_ranges: dict[str, dict[str, list[float]]] | None = None) -> dict[str, dict[str, float]]:
    """The reports' figures per judged query for every cut-off c (see the module docstring): recall@c,
    mrr@c, ndcg@c and pure_recall@c on documents; chunk_recall@c, chunk_mrr@c and chunk_ndcg@c on
    chunks.  Document-level figures follow the tie rule (harness.evaluation.ties): "expected" over the
    orders of tied documents (a query where ties decide gets {metric: [worst, best]} in `tie_ranges`,
    when given), or "id_order" (trec_eval's rule, ids in natural order).  `evaluators` (of
    runs.chunk_qrels and runs.document_qrels) let callers reuse them."""
    if ties not in TIE_RULES:
        raise ConfigError(f"[evaluation] ties = {ties!r}: one of {', '.join(TIE_RULES)}")
    chunks, documents = evaluators or (Evaluator(runs.chunk_qrels), Evaluator(runs.document_qrels))
    out: dict[str, dict[str, float]] = {q: {} for q in documents.judged}
    judged = {q: runs.document_qrels[q] for q in documents.judged}
    document_run = runs.document_run
    if ties == "expected":
        values, ranges = tie_aware_metrics(document_run, judged, cutoffs)
        for qid, vals in values.items():
            out[qid].update(vals)
        if tie_ranges is not None:
            tie_ranges.update(ranges)
    else:
        ordered = {q: {doc: float(len(ids) - i) for i, doc in enumerate(ids)}
                   for q, ids in ((q, id_order(document_run.get(q, {}))) for q in documents.judged)}
    for c in cutoffs:
        if ties != "expected":
            for qid, vals in documents(ordered, [f"recall@{c}", f"mrr@{c}", f"ndcg@{c}"]).items():
                out[qid].update(vals)
        for qid, value in pure_recall(runs.chunk_run, runs.chunk_documents, judged, c, ties).items():
            out[qid][f"pure_recall@{c}"] = value
        for qid, vals in chunks(runs.chunk_run, [f"mrr@{c}", f"ndcg@{c}"]).items():
            out[qid].update({f"chunk_{name}": value for name, value in vals.items()})
        for qid, value in recall_of_first_chunks(runs.chunk_run, runs.chunk_documents, documents, c).items():
            out[qid][f"chunk_recall@{c}"] = value
    return out


def checked_cutoffs(cutoffs: Sequence[int] | None, max_results: int, *, source: str = "<experiment>",
                    key: str = "cutoffs") -> list[int]:
    """The cut-offs of a run, sorted (default [max_results]).  A cut-off above max_results is a
    ConfigError naming both values: the run returns at most max_results chunks, so the figure would
    silently be the one at max_results."""
    values = sorted(set(cutoffs or [max_results]))
    above = [c for c in values if c > max_results]
    if above:
        raise ConfigError(f"{source} [evaluation] {key}: cut-off {above[0]} is above [search] max_results = "
                          f"{max_results}; a query returns at most {max_results} chunks, so '@{above[0]}' would be "
                          f"the figure at {max_results} (lower the cut-off or raise max_results)")
    return values


@dataclass
class QueryOutcome:
    rank: int | None  # 1-based rank of the best relevant chunk among the returned hits
    score: float | None  # its fused score
    top1_relevant: bool
    top1_pure: bool
    top1_docs: list[str]
    passed: bool
    returned: int


def query_outcome(hits: list[Hit], relevant: Iterable[str], docs_of: dict[str, frozenset[str]],
                  pass_threshold: float) -> QueryOutcome:
    """Where the best relevant chunk is among the returned hits, and whether the query passes: its top-1
    chunk is relevant and reaches `pass_threshold` (Stages.pass_threshold, OpenClaw's minScore).  Rank
    metrics of the same hits come from their run: evaluate."""
    relevant = set(relevant)
    rank = score = None
    for i, hit in enumerate(hits, start=1):
        if docs_of.get(hit.id, frozenset()) & relevant:
            rank, score = i, hit.score
            break
    top_docs = sorted(docs_of.get(hits[0].id, frozenset())) if hits else []
    top1_relevant = bool(hits) and bool(set(top_docs) & relevant)
    return QueryOutcome(
        rank=rank,
        score=score,
        top1_relevant=top1_relevant,
        top1_pure=bool(hits) and len(top_docs) == 1,
        top1_docs=top_docs,
        passed=top1_relevant and hits[0].score >= pass_threshold,
        returned=len(hits),
    )


def leg_rank(candidates: list[tuple[str, float]], relevant: Iterable[str],
             docs_of: dict[str, frozenset[str]]) -> tuple[int | None, float | None]:
    """Where one leg (vector or lexical, best first) put the first chunk of a relevant document:
    (1-based rank, the leg's raw score), or (None, None) when it is not among the candidates.
    Answers "which leg found it, and how far from the cut?" for a failed query."""
    relevant = set(relevant)
    for i, (cid, raw) in enumerate(candidates, start=1):
        if docs_of.get(cid, frozenset()) & relevant:
            return i, raw
    return None, None





def relevant_margin(hits: list[Hit], relevant: Iterable[str], docs_of: dict[str, frozenset[str]]) -> float | None:
    """How far the best relevant chunk is ahead of (+) or behind (-) the best other chunk among the
    returned hits; None when either is missing.  A pass or a failure by less than a few thousandths is
    a near tie: another embedding model, or a small change to the corpus, can flip it.  The margin is in
    the units of the final score, so it means little after a rank transform (QMD's 1/rank)."""
    relevant = set(relevant)
    best_relevant = best_other = None
    for hit in hits:
        is_relevant = bool(docs_of.get(hit.id, frozenset()) & relevant)
        if is_relevant and best_relevant is None:
            best_relevant = hit.score
        elif not is_relevant and best_other is None:
            best_other = hit.score
    if best_relevant is None or best_other is None:
        return None
    return best_relevant - best_other


def cut_margin(hits: list[Hit], candidates: list[Hit], relevant: Iterable[str],
               docs_of: dict[str, frozenset[str]]) -> float | None:
    """How far the best relevant chunk is from the cut of the returned list.  Returned: its score minus
    the best candidate that was not returned (the first chunk below the cut; positive).  Not returned
    but a candidate of the fusion: its score minus the last returned hit's (negative: it missed the
    list by that much).  None when no relevant chunk is a candidate or nothing is on the other side.
    `candidates` is the fusion's ranked list before post-processing and the cut."""
    relevant = set(relevant)
    is_relevant = lambda h: bool(docs_of.get(h.id, frozenset()) & relevant)  # noqa: E731
    returned = next((h for h in hits if is_relevant(h)), None)
    if returned is not None:
        kept = {h.id for h in hits}
        below = next((h for h in candidates if h.id not in kept), None)
        return None if below is None else returned.score - below.score
    missed = next((h for h in candidates if is_relevant(h)), None)
    return None if missed is None or not hits else missed.score - hits[-1].score


def min_score_margin(hits: list[Hit], candidates: list[Hit], pass_threshold: float) -> float | None:
    """The top-1 score minus the pass threshold (minScore): a pass at 0.3502 against 0.35 is a near tie.
    When nothing was returned, the best fused candidate's score (how far the query was from returning
    anything).  None without a threshold or without any candidate."""
    if pass_threshold <= 0:
        return None
    top = hits[0].score if hits else (candidates[0].score if candidates else None)
    return None if top is None else top - pass_threshold
