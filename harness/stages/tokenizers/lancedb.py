"""LanceDB's default full-text analyzer (`Index.fts()` with no options), which memory-lancedb-pro's store
indexes its `text` column with: tantivy's simple tokenizer, then its filters in LanceDB's order

    simple          a token is a run of alphanumeric characters (a run of Chinese characters is ONE token)
    remove long     tokens of max_token_length (40) UTF-8 bytes or more are dropped (14+ Chinese characters)
    lower case
    stem            Snowball English (tantivy's rust-stemmers; here the snowballstemmer package)
    stop words      the 33 English words of Lucene's list, tantivy's English list, matched after stemming
    ascii folding   é -> e, ＡＰＩ -> API

(facts from lance-index's InvertedIndexParams defaults and tantivy's filters; no code of theirs is used.)
Approximations, each only for characters the king78 memories do not hold: Python's str.isalnum for Rust's
char::is_alphanumeric (they differ on combining marks that Unicode counts as alphabetic, e.g. Devanagari
vowel signs, and on circled letters); ASCII folding as NFKD without combining marks, plus a few letters
NFKD leaves alone (ß, æ, œ, ø, đ, ł, þ, ð), where tantivy uses Lucene's whole folding table.

The query is analysed the same way, every token kept (a repeated query word counts twice in LanceDB's flat
search).  For an FTS5 backend the tokens are stored space-separated and matched as quoted terms joined by
`join` (LanceDB's match query joins them with OR).
"""
from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import ClassVar, Literal

from pydantic import Field

from harness.registry import stage
from harness.stages.tokenizers.base import TOKENIZERS, Join, QueryTermsTokenizer

# tantivy's StopWordFilter for English: Lucene's EnglishAnalyzer list
ENGLISH_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with".split())
# letters NFKD does not decompose, folded as ASCII folding folds them
FOLD_EXTRA = {"ß": "ss", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D",
              "ł": "l", "Ł": "L", "þ": "th", "Þ": "TH", "ð": "d", "Ð": "D"}


@lru_cache(maxsize=1 << 16)
def fold_char(ch: str) -> str:
    if ch.isascii():
        return ch
    if ch in FOLD_EXTRA:
        return FOLD_EXTRA[ch]
    plain = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
    return plain if plain and plain.isascii() else ch


def ascii_fold(token: str) -> str:
    return token if token.isascii() else "".join(fold_char(ch) for ch in token)


def simple_tokens(text: str) -> list[str]:
    """tantivy's SimpleTokenizer: maximal runs of alphanumeric characters, in text order."""
    out: list[str] = []
    start = None
    for i, ch in enumerate(text):
        if ch.isalnum():
            if start is None:
                start = i
        elif start is not None:
            out.append(text[start:i])
            start = None
    if start is not None:
        out.append(text[start:])
    return out


@lru_cache(maxsize=1)
def english_stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@TOKENIZERS.register("lancedb")
@stage
class LanceDBAnalyzer(QueryTermsTokenizer):
    """LanceDB's default full-text analyzer (Index.fts(): tantivy simple tokenizer, tokens of 40+ bytes
    dropped, lower case, English stemming, English stop words, ASCII folding), what memory-lancedb-pro's
    table is indexed with.  For the lancedb-fts backend; on FTS5 the tokens are stored space-separated."""

    max_token_length: int = Field(40, ge=1)
    """tokens of this many UTF-8 bytes or more are dropped (LanceDB's default 40)"""
    lower_case: bool = True
    """lower-case every token"""
    stem: Literal["english", "none"] = "english"
    """Snowball stemmer: "english" (LanceDB's default language) or "none\""""
    remove_stop_words: bool = True
    """drop the English stop words (Lucene's 33), matched after stemming as tantivy does"""
    ascii_folding: bool = True
    """fold accented and full-width Latin letters to ASCII"""
    join: Join = "or"
    """how query terms combine on an FTS5 backend (LanceDB's match query: "or")"""

    name: ClassVar[str] = "lancedb"
    fts5_tokenize: ClassVar[str] = "unicode61 remove_diacritics 0"

    def __post_init__(self) -> None:
        self._cache: dict[str, str | None] = {}

    def _filtered(self, raw: str) -> str | None:
        """One simple token through the filters (None: dropped); cached, texts repeat their words."""
        if raw in self._cache:
            return self._cache[raw]
        token: str | None = raw
        if len(raw.encode("utf-8")) >= self.max_token_length:
            token = None
        else:
            if self.lower_case:
                token = token.lower()
            if self.stem == "english":
                token = english_stemmer().stemWord(token)
            if self.remove_stop_words and token in ENGLISH_STOP_WORDS:
                token = None
            elif self.ascii_folding:
                token = ascii_fold(token)
        if len(self._cache) < 1 << 18:
            self._cache[raw] = token
        return token

    def tokens(self, text: str) -> list[str]:
        """The terms LanceDB indexes for `text`, in order, repeats kept."""
        return [t for t in map(self._filtered, simple_tokens(text)) if t]

    def index_text(self, text: str) -> str:
        return " ".join(self.tokens(text))

    def query_terms(self, query: str) -> list[str]:
        return self.tokens(query)

    def analyze(self, text: str) -> list[str]:
        return self.tokens(text)

    def analyze_query(self, query: str) -> list[str]:
        return self.tokens(query)
