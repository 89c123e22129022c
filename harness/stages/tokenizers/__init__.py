"""Tokenizers: how text is cut into terms at index time and how a query becomes a search.

A tokenizer stage is shared by every lexical backend:

* the FTS5 backend creates its table with `fts5_tokenize`, stores `index_text(text)` and answers a query
  by executing `query_plan(query)` (see `QueryPlan`; `match_expression(query)` is its MATCH part);
* the bag-of-words backends (rank-bm25, bm25s) index `analyze(text)` and score `analyze_query(query)`.
  `analyze` runs SQLite's own FTS5 tokenizer over `index_text(text)`, so every backend ranks exactly the
  terms FTS5 indexes (same folding, same Unicode tables, same document lengths).

Registered tokenizers (all take `join = "and" | "or"`: how query terms combine; multi-term Chinese
queries joined with AND return nothing, OpenClaw issue #83384):

  unicode61      SQLite's default; a run of Chinese characters is ONE token (the CJK failure).
  trigram        FTS5 trigram (case_sensitive 0) as OpenClaw ships it: a CJK token under 3 characters
                 goes to LIKE, longer ones are quoted trigram phrases; LIKE fallback only if MATCH raises.
  trigram-fixed  as proposed upstream (#92164/#92341): every CJK token goes to LIKE, and an OR-joined
                 LIKE fallback over all query tokens runs when the query returns zero rows.
  jieba          jieba segmentation at index and query time, words stored space-separated in a unicode61
                 table (seed 002); mode "precise" or "search"; optional user dictionary.
  cjk-char       every Han/Kana/Hangul character its own token; CJK query terms become ordered character
                 phrases (QMD, 2026-05).
  cjk-bigram     overlapping character bigrams for CJK runs (a lone CJK character stays a unigram).

jieba, cjk-char and cjk-bigram NFKC-normalise index and query text by default (`normalize = "nfkc"`),
so full-width ＡＰＩ matches API; unicode61 and the trigram variants reproduce SQLite/OpenClaw as they are
and do not normalise.
"""
from __future__ import annotations

import logging
import re
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol

import apsw

from harness.registry import Registry

TOKENIZERS = Registry("tokenizer", builtins="harness.stages.tokenizers")

JOINS = ("and", "or")
NORMALIZATIONS = ("nfkc", "none")

# OpenClaw's query tokens: runs of Unicode letters/digits/underscore (Python's \w is [\p{L}\p{N}_]).
UNICODE_QUERY_TOKEN = re.compile(r"\w+")
# Before 2026-02-15 the pattern was ASCII-only, so a Chinese query produced no FTS query at all.
ASCII_QUERY_TOKEN = re.compile(r"[A-Za-z0-9_]+")


# ---------------------------------------------------------------------------------------------
# The query plan: what the FTS5 backend executes for one query
# ---------------------------------------------------------------------------------------------

FALLBACK_POLICIES = ("never", "error", "empty")


@dataclass(frozen=True)
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
    join: str = "and"
    fallback_like: tuple[str, ...] = ()
    fallback_join: str = "or"
    fallback_when: str = "never"

    def __post_init__(self) -> None:
        if self.join not in JOINS or self.fallback_join not in JOINS:
            raise ValueError(f"QueryPlan joins must be one of {JOINS}")
        if self.fallback_when not in FALLBACK_POLICIES:
            raise ValueError(f"QueryPlan.fallback_when must be one of {FALLBACK_POLICIES}")

    @property
    def empty(self) -> bool:
        """Nothing to search for (no MATCH and no LIKE term): the backend returns no hits."""
        return self.match is None and not self.like


class Tokenizer(Protocol):
    name: str
    fts5_tokenize: str  # the FTS5 `tokenize=` argument of the table
    join: str  # "and" | "or"

    def index_text(self, text: str) -> str: ...
    def match_expression(self, query: str) -> str | None: ...
    def query_plan(self, query: str) -> QueryPlan: ...
    def analyze(self, text: str) -> list[str]: ...
    def analyze_query(self, query: str) -> list[str]: ...


def plan_query(tokenizer: Any, query: str) -> QueryPlan:
    """The tokenizer's plan; a tokenizer with only `match_expression` gets a MATCH-only plan."""
    if hasattr(tokenizer, "query_plan"):
        return tokenizer.query_plan(query)
    return QueryPlan(match=tokenizer.match_expression(query), join=getattr(tokenizer, "join", "and"))


def query_terms_for_bag_of_words(tokenizer: Any, query: str) -> list[str]:
    """The terms a bag-of-words backend scores for a query."""
    if hasattr(tokenizer, "analyze_query"):
        return tokenizer.analyze_query(query)
    return tokenizer.analyze(query)


def check_join(join: str) -> str:
    if join not in JOINS:
        raise ValueError(f"tokenizer.join must be 'and' or 'or', got {join!r}")
    return join


def check_normalize(normalize: str) -> str:
    if normalize not in NORMALIZATIONS:
        raise ValueError(f"tokenizer.normalize must be one of {NORMALIZATIONS}, got {normalize!r}")
    return normalize


def quote_fts5(term: str) -> str:
    """A term as an FTS5 string (phrase): double quotes inside are dropped, as OpenClaw does.
    NUL is dropped too: FTS5's parser ends a string there ("unterminated string")."""
    return '"' + term.replace('"', "").replace("\x00", "") + '"'


def join_terms(terms: list[str], join: str) -> str | None:
    check_join(join)
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


def unicode61_terms(text: str) -> list[str]:
    """A pure-Python approximation of FTS5's unicode61 (remove_diacritics 1).  Python's Unicode tables
    are newer than SQLite's, so rare characters may differ; `fts5_terms` is exact."""
    terms, current = [], []
    for ch in text:
        if _is_unicode61_token_char(ch):
            current.append(ch)
        elif current:
            terms.append("".join(current))
            current = []
    if current:
        terms.append("".join(current))
    return [_fold(t) for t in terms]


def _fold(term: str) -> str:
    decomposed = unicodedata.normalize("NFD", term.lower())
    stripped = "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")
    return unicodedata.normalize("NFC", stripped)  # recompose: NFD splits a Hangul syllable into jamo


# ---------------------------------------------------------------------------------------------
# unicode61
# ---------------------------------------------------------------------------------------------


class SpacedTermsTokenizer:
    """Shared by the tokenizers that rewrite text into terms a unicode61 table indexes as they are
    (jieba words, CJK characters or bigrams): subclasses give index_text, query_terms and join."""

    join: str
    fts5_tokenize: str

    def match_expression(self, query: str) -> str | None:
        return join_terms([t for t in self.query_terms(query) if has_token_char(t)], self.join)

    def query_plan(self, query: str) -> QueryPlan:
        return QueryPlan(match=self.match_expression(query), join=self.join)

    def analyze(self, text: str) -> list[str]:
        return fts5_terms(self.index_text(text), self.fts5_tokenize)

    def analyze_query(self, query: str) -> list[str]:
        # what FTS5 makes of each quoted query term
        return [t for term in self.query_terms(query) for t in fts5_terms(term, self.fts5_tokenize)]


@dataclass
class Unicode61(SpacedTermsTokenizer):
    """SQLite's default tokenizer.  A run of Chinese characters is ONE token, so 检索配置 never
    matches 混合检索配置说明 - the CJK failure this harness measures.

    query_tokens: "unicode" (OpenClaw since 2026-02-15) or "ascii" (before: Chinese queries -> no FTS query)
    join: "and" (OpenClaw) or "or"
    """

    query_tokens: str = "unicode"
    join: str = "and"
    name: str = "unicode61"
    fts5_tokenize: str = "unicode61"

    def __post_init__(self) -> None:
        if self.query_tokens not in ("unicode", "ascii"):
            raise ValueError(f"tokenizer.query_tokens must be 'unicode' or 'ascii', got {self.query_tokens!r}")
        self._pattern = UNICODE_QUERY_TOKEN if self.query_tokens == "unicode" else ASCII_QUERY_TOKEN

    def index_text(self, text: str) -> str:
        return text

    def query_terms(self, query: str) -> list[str]:
        return self._pattern.findall(query)

    def match_expression(self, query: str) -> str | None:
        return join_terms(self.query_terms(query), self.join)


@TOKENIZERS.register("unicode61")
def _unicode61(query_tokens: str = "unicode", join: str = "and") -> Unicode61:
    return Unicode61(query_tokens=query_tokens, join=join)


# ---------------------------------------------------------------------------------------------
# trigram, as shipped and as proposed
# ---------------------------------------------------------------------------------------------

# The characters OpenClaw's planner treats as CJK on the trigram path: Kana, CJK Ext-A + Unified
# Ideographs, Hangul syllables and compatibility jamo (SHORT_CJK_TRIGRAM_RE).
_TRIGRAM_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u3131-\u3163]")


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


@dataclass
class Trigram:
    """FTS5 `trigram case_sensitive 0` with OpenClaw's query planner (SPEC.md section 2).

    fixed=False (as shipped): a CJK token of fewer than 3 characters cannot match a trigram index, so
      it goes to LIKE (AND-ed with the MATCH); every other token is a quoted phrase that must occur
      contiguously; the LIKE fallback over all tokens runs only when MATCH raises, not on zero rows.
    fixed=True (#92164/#92341): every token containing CJK goes to LIKE; when the query returns zero
      rows an OR-joined LIKE fallback over all query tokens runs.
    `join` combines the MATCH terms and the LIKE terms ("and" is OpenClaw's); the shipped error
    fallback uses it too, the fixed empty-result fallback is always OR.
    """

    fixed: bool = False
    join: str = "and"
    fts5_tokenize: str = "trigram case_sensitive 0"

    def __post_init__(self) -> None:
        check_join(self.join)

    @property
    def name(self) -> str:
        return "trigram-fixed" if self.fixed else "trigram"

    def index_text(self, text: str) -> str:
        return text

    def query_terms(self, query: str) -> list[str]:
        return UNICODE_QUERY_TOKEN.findall(query)

    def _goes_to_like(self, token: str) -> bool:
        if not _TRIGRAM_CJK.search(token):
            return False
        return self.fixed or len(token) < 3

    def query_plan(self, query: str) -> QueryPlan:
        tokens = self.query_terms(query)
        like = _unique(t for t in tokens if self._goes_to_like(t))
        match_terms = [t for t in tokens if not self._goes_to_like(t)]
        if self.fixed:
            return QueryPlan(join_terms(match_terms, self.join), like, self.join,
                             fallback_like=_unique(tokens), fallback_join="or", fallback_when="empty")
        return QueryPlan(join_terms(match_terms, self.join), like, self.join,
                         fallback_like=_unique([*tokens, *like]), fallback_join=self.join, fallback_when="error")

    def match_expression(self, query: str) -> str | None:
        return self.query_plan(query).match

    def analyze(self, text: str) -> list[str]:
        return fts5_terms(text, self.fts5_tokenize)

    def analyze_query(self, query: str) -> list[str]:
        # the trigrams of each query token; a bag-of-words backend has no LIKE path, so a token under
        # 3 characters contributes nothing, as in a trigram index
        return [t for term in self.query_terms(query) for t in self.analyze(term)]


@TOKENIZERS.register("trigram")
def _trigram(join: str = "and") -> Trigram:
    return Trigram(fixed=False, join=join)


@TOKENIZERS.register("trigram-fixed")
def _trigram_fixed(join: str = "and") -> Trigram:
    return Trigram(fixed=True, join=join)


# ---------------------------------------------------------------------------------------------
# CJK-aware tokenizers on a unicode61 table: jieba, per character, bigrams
# ---------------------------------------------------------------------------------------------

# Han (radicals, CJK symbols' ideographic letters, Ext-A, Unified, compatibility, Ext-B..H),
# Kana (incl. phonetic extensions, half-width katakana) and Hangul (jamo, compatibility jamo, syllables).
_CJK_LETTER_RANGES = (
    (0x1100, 0x11FF), (0x2E80, 0x2FDF), (0x3005, 0x3007), (0x3021, 0x3029), (0x3038, 0x303C),
    (0x3040, 0x30FF), (0x3130, 0x318F), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
    (0xA960, 0xA97F), (0xAC00, 0xD7FF), (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x20000, 0x323AF),
)


def is_cjk_char(ch: str) -> bool:
    """A Han, Kana or Hangul letter (punctuation in those blocks, e.g. 。 or ・, is not)."""
    cp = ord(ch)
    if not any(lo <= cp <= hi for lo, hi in _CJK_LETTER_RANGES):
        return False
    return unicodedata.category(ch)[0] in "LN"


def cjk_segments(token: str) -> list[tuple[bool, str]]:
    """A token cut into maximal runs of CJK and of other characters: [(is_cjk, run), ...]."""
    segments: list[tuple[bool, str]] = []
    for ch in token:
        cjk = is_cjk_char(ch)
        if segments and segments[-1][0] == cjk:
            segments[-1] = (cjk, segments[-1][1] + ch)
        else:
            segments.append((cjk, ch))
    return segments


def _normalizer(normalize: str):
    if check_normalize(normalize) == "nfkc":
        return lambda s: unicodedata.normalize("NFKC", s)
    return lambda s: s


@dataclass
class CjkTermsTokenizer(SpacedTermsTokenizer):
    """Base of the tokenizers that cut CJK runs themselves (characters, bigrams) and leave the rest
    to unicode61; text and queries are NFKC-normalised first unless normalize="none"."""

    join: str = "and"
    normalize: str = "nfkc"
    fts5_tokenize: str = "unicode61"

    def __post_init__(self) -> None:
        check_join(self.join)
        self._norm = _normalizer(self.normalize)


@dataclass
class CjkChar(CjkTermsTokenizer):
    """Each Han/Kana/Hangul character is its own token; a query term with CJK becomes an ordered
    phrase of its characters (and its Latin/digit runs), so 检索配置 matches 混合检索配置说明 but
    海外开户 does not match 海外银行开户 (QMD, 2026-05)."""

    name: str = "cjk-char"

    def index_text(self, text: str) -> str:
        text = self._norm(text)
        return "".join(f" {ch} " if is_cjk_char(ch) else ch for ch in text)

    def query_terms(self, query: str) -> list[str]:
        """Each query token as the space-separated sequence FTS5 should find in order."""
        terms = []
        for token in UNICODE_QUERY_TOKEN.findall(self._norm(query)):
            pieces: list[str] = []
            for cjk, run in cjk_segments(token):
                if cjk:
                    pieces.extend(run)  # one token per character
                else:
                    pieces.append(run)
            terms.append(" ".join(pieces))
        return terms


@TOKENIZERS.register("cjk-char")
def _cjk_char(join: str = "and", normalize: str = "nfkc") -> CjkChar:
    return CjkChar(join=join, normalize=normalize)


def bigrams(run: str) -> list[str]:
    """Overlapping bigrams of a CJK run; a single character stays a unigram."""
    if len(run) < 2:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


@dataclass
class CjkBigram(CjkTermsTokenizer):
    """Overlapping bigrams for CJK runs (混合检索 -> 混合 合检 检索), other runs unchanged.  Query bigrams
    are separate terms combined by `join`.  Limitation: a one-character query term matches only a
    one-character CJK run in the text, since longer runs are indexed as bigrams only."""

    name: str = "cjk-bigram"

    def _cut(self, text: str) -> list[str]:
        out: list[str] = []
        for cjk, run in cjk_segments(text):
            if cjk:
                out.append(" " + " ".join(bigrams(run)) + " ")
            else:
                out.append(run)
        return out

    def index_text(self, text: str) -> str:
        return "".join(self._cut(self._norm(text)))

    def query_terms(self, query: str) -> list[str]:
        terms: list[str] = []
        for token in UNICODE_QUERY_TOKEN.findall(self._norm(query)):
            for cjk, run in cjk_segments(token):
                terms.extend(bigrams(run) if cjk else [run])
        return terms


@TOKENIZERS.register("cjk-bigram")
def _cjk_bigram(join: str = "and", normalize: str = "nfkc") -> CjkBigram:
    return CjkBigram(join=join, normalize=normalize)


# --- jieba --------------------------------------------------------------------------------------

JIEBA_MODES = ("precise", "search")
_jieba_lock = threading.Lock()
_jieba_instances: dict[tuple[str | None, float | None], Any] = {}


def _jieba_tokenizer(user_dict: Path | None):
    """One jieba.Tokenizer per user dictionary (and its mtime), never jieba's global one, so a user
    dictionary of one run cannot leak into another.  Loading the main dictionary takes ~1 s once."""
    import jieba

    jieba.setLogLevel(logging.WARNING)  # no "Building prefix dict..." chatter on stderr
    key = (str(user_dict), user_dict.stat().st_mtime) if user_dict else (None, None)
    with _jieba_lock:
        tok = _jieba_instances.get(key)
        if tok is None:
            tok = jieba.Tokenizer()
            tok.initialize()
            if user_dict is not None:
                try:
                    tok.load_userdict(str(user_dict))
                except (ValueError, UnicodeDecodeError) as exc:
                    from harness.errors import DataError

                    raise DataError(user_dict, None, "user_dict", f"not a jieba user dictionary: {exc}") from None
            _jieba_instances[key] = tok
    return tok


@dataclass
class Jieba(SpacedTermsTokenizer):
    """jieba words written space-separated into a unicode61 table; the query is segmented the same way
    and its words quoted and joined (seed 002).

    mode: "precise" (jieba.cut) or "search" (cut_for_search: long words also emit their sub-words, so
      内存不足 is indexed as 内存 不足 内存不足); the same mode is used at index and at query time.
    user_dict: a jieba user dictionary ("word [freq] [tag]" per line), e.g. to make 美国手机号 one word.
    hmm: jieba's HMM for unknown words.
    """

    mode: str = "precise"
    user_dict: str | None = None
    hmm: bool = True
    join: str = "and"
    normalize: str = "nfkc"
    name: str = "jieba"
    fts5_tokenize: str = "unicode61"
    _jieba: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in JIEBA_MODES:
            raise ValueError(f"tokenizer.mode must be one of {JIEBA_MODES}, got {self.mode!r}")
        check_join(self.join)
        self._norm = _normalizer(self.normalize)
        path = None
        if self.user_dict is not None:
            from harness.inputs.layout import project_path

            path = project_path(self.user_dict)
            if not path.is_file():
                raise FileNotFoundError(f"tokenizer.user_dict: no such file: {self.user_dict}")
        self._jieba = _jieba_tokenizer(path)

    def words(self, text: str) -> list[str]:
        text = self._norm(text)
        if self.mode == "search":
            return list(self._jieba.cut_for_search(text, HMM=self.hmm))
        return list(self._jieba.cut(text, HMM=self.hmm))

    def index_text(self, text: str) -> str:
        return " ".join(self.words(text))

    def query_terms(self, query: str) -> list[str]:
        # punctuation, spaces and emoji come back from jieba as words of their own; FTS5 indexes none of them
        return [w for w in self.words(query) if has_token_char(w)]


@TOKENIZERS.register("jieba")
def _jieba_factory(mode: str = "precise", user_dict: str | None = None, hmm: bool = True, join: str = "and",
                   normalize: str = "nfkc") -> Jieba:
    return Jieba(mode=mode, user_dict=user_dict, hmm=hmm, join=join, normalize=normalize)
