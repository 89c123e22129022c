"""CJK-aware tokenizers on a unicode61 table that cut CJK runs themselves: one token per character
(QMD, 2026-05) or overlapping character bigrams.  Other runs are left to unicode61."""
from __future__ import annotations

from typing import ClassVar

from harness.registry import stage
from harness.stages.cjk import is_cjk_char
from harness.stages.tokenizers.base import (
    NORMALIZERS,
    TOKENIZERS,
    UNICODE_QUERY_TOKEN,
    Join,
    Normalize,
    QueryTermsTokenizer,
)


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


def bigrams(run: str) -> list[str]:
    """Overlapping bigrams of a CJK run; a single character stays a unigram."""
    if len(run) < 2:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


@stage
class CjkTermsTokenizer(QueryTermsTokenizer):
    """Base of the tokenizers that cut CJK runs themselves (characters, bigrams) and leave the rest
    to unicode61; text and queries are NFKC-normalised first unless normalize = "none"."""

    join: Join = "and"
    """how query terms combine: "and" or "or\""""
    normalize: Normalize = "nfkc"
    """"nfkc" (full-width ＡＰＩ matches API) or "none\""""

    fts5_tokenize: ClassVar[str] = "unicode61"

    def __post_init__(self) -> None:
        self._norm = NORMALIZERS[self.normalize]


@TOKENIZERS.register("cjk-char")
@stage
class CjkChar(CjkTermsTokenizer):
    """Each Han/Kana/Hangul character is its own token; a query term with CJK becomes an ordered
    phrase of its characters (and its Latin/digit runs), so 检索配置 matches 混合检索配置说明 but
    海外开户 does not match 海外银行开户 (QMD, 2026-05)."""

    name: ClassVar[str] = "cjk-char"

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


@TOKENIZERS.register("cjk-bigram")
@stage
class CjkBigram(CjkTermsTokenizer):
    """Overlapping bigrams for CJK runs (混合检索 -> 混合 合检 检索), other runs unchanged.  Query bigrams
    are separate terms combined by `join`.  Limitation: a one-character query term matches only a
    one-character CJK run in the text, since longer runs are indexed as bigrams only."""

    name: ClassVar[str] = "cjk-bigram"

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
