"""The tokenizer interface: the Tokenizer protocol, the QueryPlan the FTS5 backend executes, the
shared base of the built-in tokenizers and the FTS5 helpers they use (quoting, SQLite's own
tokenizers called from Python)."""
from __future__ import annotations

import re
import threading
import unicodedata
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import apsw
import pydantic
from pydantic import ConfigDict

from harness.registry import Registry

TOKENIZERS = Registry("tokenizer", builtins="harness.stages.tokenizers")

Join = Literal["and", "or"]  # how query terms combine
Normalize = Literal["nfkc", "none"]  # Unicode normalisation of index and query text
FallbackWhen = Literal["never", "error", "empty"]

# OpenClaw's query tokens: runs of Unicode letters/digits/underscore (Python's \w is [\p{L}\p{N}_]).
UNICODE_QUERY_TOKEN = re.compile(r"\w+")
# Before 2026-02-15 the pattern was ASCII-only, so a Chinese query produced no FTS query at all.
ASCII_QUERY_TOKEN = re.compile(r"[A-Za-z0-9_]+")


# ---------------------------------------------------------------------------------------------
# The query plan: what the FTS5 backend executes for one query
# ---------------------------------------------------------------------------------------------


@pydantic.dataclasses.dataclass(frozen=True, config=ConfigDict(strict=True))
class QueryPlan:
    """How the FTS5 backend answers one query (executed by lexical.FTS5Index).

    Primary query: rows satisfying `MATCH match` combined by `join` with `text LIKE '%t%'` for each t in
    `like` (LIKE patterns are escaped; SQLite's LIKE folds ASCII case only).  A row found through MATCH
    scores its bm25; a row found only through LIKE has no bm25 and scores lexical.LIKE_ONLY_RAW_SCORE.

    Fallback (`fallback_like` joined by `fallback_join`, every row LIKE-only) runs when
      "error": the MATCH raised an SQLite error (OpenClaw's trigram as shipped);
      "empty": the MATCH raised or the primary query returned zero rows (the proposed trigram fix);
      "never": never; an SQLite error propagates (a broken plan must be loud, not a silent empty list).
    """

    match: str | None = None
    like: tuple[str, ...] = ()
    join: Join = "and"
    fallback_like: tuple[str, ...] = ()
    fallback_join: Join = "or"
    fallback_when: FallbackWhen = "never"

    @property
    def empty(self) -> bool:
        """Nothing to search for (no MATCH and no LIKE term): the backend returns no hits."""
        return self.match is None and not self.like


@runtime_checkable
class Tokenizer(Protocol):
    """What every lexical backend reads of a tokenizer: the FTS5 backend `fts5_tokenize`,
    `index_text` and `query_plan`; the bag-of-words backends `analyze`, `analyze_query` and `join`."""

    name: str
    fts5_tokenize: str  # the FTS5 `tokenize=` argument of the table
    join: Join

    def index_text(self, text: str) -> str:
        """The text as it is stored in the FTS5 table."""
        ...

    def match_expression(self, query: str) -> str | None:
        """The FTS5 MATCH expression of a query (None: nothing to match)."""
        ...

    def query_plan(self, query: str) -> QueryPlan:
        """How the FTS5 backend answers the query: its MATCH, LIKE terms and fallback."""
        ...

    def analyze(self, text: str) -> list[str]:
        """The terms FTS5 indexes for a document (what bag-of-words backends index)."""
        ...

    def analyze_query(self, query: str) -> list[str]:
        """The terms a bag-of-words backend scores for a query."""
        ...


def quote_fts5(term: str) -> str:
    """A term as an FTS5 string (phrase): double quotes inside are dropped, as OpenClaw does.
    NUL is dropped too: FTS5's parser ends a string there ("unterminated string")."""
    return '"' + term.replace('"', "").replace("\x00", "") + '"'


def join_terms(terms: list[str], join: Join) -> str | None:
    quoted = [quote_fts5(t) for t in terms if t.replace('"', "").replace("\x00", "")]
    if not quoted:
        return None
    return f" {join.upper()} ".join(quoted)


# ---------------------------------------------------------------------------------------------
# SQLite's own FTS5 tokenizers, called from Python (apsw), for analyze()
# ---------------------------------------------------------------------------------------------

_fts5_lock = threading.Lock()
_fts5_conn: apsw.Connection | None = None
_fts5_tokenizers: dict[str, Any] = {}


def fts5_terms(text: str, tokenize: str = "unicode61") -> list[str]:
    """The terms SQLite's FTS5 tokenizer `tokenize` (an FTS5 `tokenize=` string) produces for a document."""
    global _fts5_conn
    with _fts5_lock:
        tok = _fts5_tokenizers.get(tokenize)
        if tok is None:
            if _fts5_conn is None:
                _fts5_conn = apsw.Connection(":memory:")
            name, *args = tokenize.split()
            tok = _fts5_tokenizers[tokenize] = _fts5_conn.fts5_tokenizer(name, args)
    return tok(text.encode("utf-8"), apsw.FTS5_TOKENIZE_DOCUMENT, None,
               include_offsets=False, include_colocated=False)


def _is_unicode61_token_char(ch: str) -> bool:
    # FTS5 unicode61 default: letters, numbers and private-use characters are token characters;
    # everything else (punctuation, symbols, spaces, emoji, underscore) separates tokens.
    return unicodedata.category(ch)[0] in "LN" or unicodedata.category(ch) == "Co"


def has_token_char(text: str) -> bool:
    return any(_is_unicode61_token_char(ch) for ch in text)


def nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def unchanged(text: str) -> str:
    return text


NORMALIZERS = {"nfkc": nfkc, "none": unchanged}


# ---------------------------------------------------------------------------------------------
# The shared base of the built-in tokenizers
# ---------------------------------------------------------------------------------------------


class QueryTermsTokenizer:
    """Base of the built-in tokenizers: a subclass gives `query_terms` (and `index_text` when it rewrites
    text, e.g. into space-separated jieba words or CJK characters); the query plan, the MATCH expression
    and what bag-of-words backends index and score follow from them.

    Defaults: the MATCH expression is the query terms that hold a token character, quoted and combined
    by `join`; the plan is that MATCH alone; `analyze` runs SQLite's own FTS5 tokenizer over
    `index_text(text)` and `analyze_query` over each query term, so every backend ranks exactly the
    terms FTS5 indexes."""

    name: ClassVar[str]
    fts5_tokenize: ClassVar[str] = "unicode61"
    join: Join  # a field of every subclass

    def index_text(self, text: str) -> str:
        return text

    def query_terms(self, query: str) -> list[str]:
        raise NotImplementedError

    def match_expression(self, query: str) -> str | None:
        return join_terms([t for t in self.query_terms(query) if has_token_char(t)], self.join)

    def query_plan(self, query: str) -> QueryPlan:
        return QueryPlan(match=self.match_expression(query), join=self.join)

    def analyze(self, text: str) -> list[str]:
        return fts5_terms(self.index_text(text), self.fts5_tokenize)

    def analyze_query(self, query: str) -> list[str]:
        # what FTS5 makes of each quoted query term
        return [t for term in self.query_terms(query) for t in fts5_terms(term, self.fts5_tokenize)]
