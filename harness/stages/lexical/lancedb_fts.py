"""LanceDB's full-text search as memory-lancedb-pro's store gets it (store.bm25Search), and the store's
substring fallback (lexicalFallbackSearch).

The store creates LanceDB's FTS index when it opens the table, on an empty table, and never updates it;
every entry written later is an unindexed row, which LanceDB (lance-index flat_bm25_search) scores in a
flat scan with statistics gathered as it goes (`statistics = "scan"`).  Row i of the scan, after adding
its own tokens to the running totals:

    N   = rows scanned so far (i + 1)
    n_t = occurrences of term t in those rows (every occurrence, not rows holding it)
    avg = floor(total tokens so far / N)               (integer division)
    len = how many of the row's tokens are query terms (not the row's length)
    score = sum over the query's terms, repeats included, of
            ln(1 + (N - n_t + 0.5) / (n_t + 0.5)) x f (k1 + 1) / (f + k1 (1 - b + b len / avg))

with k1 1.2, b 0.75, f the term's count in the row; rows scoring 0 or less (or NaN) are not returned.  So a
row's score depends on the rows before it: the scan follows the order rows were written, here the order
chunks are added (the pipeline adds them by chunk id).  `statistics = "index"` is the index rebuilt over
every row (the plugin's `reindex-fts`): N rows, n_t rows holding t, avg = mean row length, len = the row's
length, each distinct query term once.  Both formulas are LanceDB's, as its source gives them.

When the search returns nothing (no query term in any row, or a query without terms) the store runs its
substring fallback (`fallback = "substring"`): an entry whose lower-cased, trimmed text holds the lower-cased,
trimmed query scores min(0.95, 0.72 + 0.02 x the query's length in UTF-16 units); best first, then newest
(the memory/YYYY-MM-DD date of the chunk's path; an undated chunk counts as written now, so newest), then in
the order added.  Those hits are RankedHits: the raw score of each is its fallback score, and its ranking
score (what the lancedb fusions take as the BM25 score instead of sigmoid(raw/5)) the same.
"""
from __future__ import annotations

import math
from collections import Counter
from itertools import accumulate
from typing import Any, Literal, Sequence

from pydantic.json_schema import SkipJsonSchema

from harness.ranking import top_k
from harness.registry import stage
from harness.stages.chunkers import Chunk
from harness.stages.lexical.base import LEXICAL_BACKENDS, Hits, RankedHits
from harness.stages.memory_dates import memory_date
from harness.stages.tokenizers import Tokenizer

K1 = 1.2  # LanceDB's BM25 parameters (lance-index scorer.rs)
B = 0.75
FALLBACK_BASE = 0.72  # memory-lancedb-pro's scoreLexicalHit: min(0.95, 0.72 + 0.02 x query length)
FALLBACK_PER_UNIT = 0.02
FALLBACK_CAP = 0.95


def lancedb_idf(containing: int, rows: int) -> float:
    """LanceDB's IDF: ln(1 + (N - n + 0.5)/(n + 0.5)); negative when n > N + 0.5 (n counted as occurrences)."""
    return math.log((rows - containing + 0.5) / (containing + 0.5) + 1.0)


def term_weight(idf: float, freq: int, norm: float) -> float:
    return idf * (freq * (K1 + 1.0) / (freq + norm))


Postings = dict[str, list[tuple[int, int]]]  # term -> (row, occurrences in it), rows ascending


def postings_of(docs: Sequence[Sequence[str]]) -> tuple[Postings, list[int]]:
    """Rows' terms -> their postings and each row's length."""
    postings: Postings = {}
    for row, doc in enumerate(docs):
        for t, c in Counter(doc).items():
            postings.setdefault(t, []).append((row, c))
    return postings, [len(d) for d in docs]


def scan_hits(postings: Postings, totals: Sequence[int], query: Sequence[str]) -> dict[int, float]:
    """LanceDB's flat search over unindexed rows, in scan order, with running statistics (module docstring):
    row -> score for the rows holding a query term (`totals[i]`: the tokens of rows 0..i)."""
    counts: dict[int, dict[str, int]] = {}
    for t in set(query):
        for row, c in postings.get(t, ()):
            counts.setdefault(row, {})[t] = c
    seen: dict[str, int] = {}
    scores: dict[int, float] = {}
    for row in sorted(counts):
        here = counts[row]
        for t, c in here.items():
            seen[t] = seen.get(t, 0) + c
        n = row + 1
        avg = totals[row] // n
        hits = sum(here.values())
        # LanceDB divides by an integer average in float32: 0 gives an infinite norm, so a zero score
        norm = K1 * (1.0 - B + B * hits / avg) if avg else math.inf
        scores[row] = sum(term_weight(lancedb_idf(seen[t], n), here[t], norm) for t in query if t in here)
    return scores


def index_hits(postings: Postings, lengths: Sequence[int], query: Sequence[str]) -> dict[int, float]:
    """LanceDB's BM25 over an index of every row (module docstring): row -> score for the rows holding a term."""
    rows = len(lengths)
    if not rows:
        return {}
    avg = sum(lengths) / rows
    scores: dict[int, float] = {}
    for t in dict.fromkeys(query):
        found = postings.get(t, ())
        idf = lancedb_idf(len(found), rows)
        for row, freq in found:
            norm = K1 * (1.0 - B + B * lengths[row] / avg)
            scores[row] = scores.get(row, 0.0) + term_weight(idf, freq, norm)
    return scores


def scan_scores(docs: Sequence[Sequence[str]], query: Sequence[str]) -> list[float]:
    """scan_hits for every row of `docs` (0 for a row without a query term)."""
    postings, lengths = postings_of(docs)
    hits = scan_hits(postings, list(accumulate(lengths)), query)
    return [hits.get(row, 0.0) for row in range(len(docs))]


def index_scores(docs: Sequence[Sequence[str]], query: Sequence[str]) -> list[float]:
    """index_hits for every row of `docs` (0 for a row without a query term)."""
    postings, lengths = postings_of(docs)
    hits = index_hits(postings, lengths, query)
    return [hits.get(row, 0.0) for row in range(len(docs))]


def fallback_score(query: str) -> float:
    """memory-lancedb-pro's substring score of a query (its normalised length in UTF-16 units)."""
    units = len(query.strip().lower().encode("utf-16-le")) // 2
    return min(FALLBACK_CAP, FALLBACK_BASE + FALLBACK_PER_UNIT * units)


@LEXICAL_BACKENDS.register("lancedb-fts")
@stage
class LanceDBFtsIndex:
    """LanceDB's full-text search as memory-lancedb-pro's store runs it: an index made on the empty table,
    so a flat scan with running statistics (`statistics = "scan"`), or an index over every row ("index");
    then the store's substring fallback when it finds nothing.  Terms from the run's tokenizer (`analyze`;
    the `lancedb` tokenizer is LanceDB's own analyzer)."""

    tokenizer: SkipJsonSchema[Tokenizer]
    """the run's tokenizer (from the pipeline)"""
    statistics: Literal["scan", "index"] = "scan"
    """"scan": every row unindexed, scored with the statistics of the rows scanned before it (the plugin's
    store); "index": an index over every row (after the plugin's reindex-fts)"""
    fallback: Literal["substring", "none"] = "substring"
    """"substring": memory-lancedb-pro's lexicalFallbackSearch when the search finds nothing; "none\""""
    conn: SkipJsonSchema[Any] = None
    """the run's SQLite connection: unused, the index is in memory"""

    def __post_init__(self) -> None:
        self.ids: list[str] = []
        self.postings: Postings = {}
        self.lengths: list[int] = []
        self.totals: list[int] = []  # tokens of the rows up to each one: the scan's running total
        self.texts: list[str] = []
        self.stamps: list[float] = []

    def add(self, chunks: Sequence[Chunk]) -> None:
        for chunk in chunks:
            row = len(self.ids)
            terms = self.tokenizer.analyze(chunk.text)
            for t, c in Counter(terms).items():
                self.postings.setdefault(t, []).append((row, c))
            self.ids.append(chunk.id)
            self.lengths.append(len(terms))
            self.totals.append((self.totals[-1] if self.totals else 0) + len(terms))
            self.texts.append(chunk.text.strip().lower())
            written = memory_date(chunk.path)
            self.stamps.append(written.timestamp() if written else math.inf)

    def search(self, query: str, k: int) -> Hits:
        if k <= 0:
            return []
        terms = self.tokenizer.analyze_query(query)
        scores = (scan_hits(self.postings, self.totals, terms) if self.statistics == "scan"
                  else index_hits(self.postings, self.lengths, terms))
        found = [(self.ids[row], s) for row, s in scores.items() if s > 0]
        if found or self.fallback == "none":
            return top_k(found, k)
        return self.substring(query, k)

    def substring(self, query: str, k: int) -> Hits:
        needle = query.strip().lower()
        if not needle:
            return []
        value = fallback_score(query)
        held = [i for i, text in enumerate(self.texts) if needle in text]
        held.sort(key=lambda i: (-self.stamps[i], i))
        hits = [(self.ids[i], value) for i in held[:k]]
        order = {cid: n for n, (cid, _) in enumerate(hits)}
        return RankedHits(hits, {cid: value for cid, _ in hits}, order)
