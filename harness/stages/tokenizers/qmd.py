"""QMD's lexical text handling (tobi/qmd 2.8.3, src/store.ts): `porter unicode61` with every CJK run spaced
into single characters (normalizeCjkForFTS), and its query builder (buildFTS5Query) with the order of
its branches, which makes a CJK term holding '-' or '.' match nothing (harness/conformance/NOTES.md
section 3; measured on the real QMD)."""
from __future__ import annotations

import re
from typing import ClassVar

from harness.registry import stage
from harness.stages.cjk import QMD_CJK_CHAR, QMD_CJK_RUN
from harness.stages.tokenizers.base import (
    TOKENIZERS,
    Join,
    QueryPlan,
    QueryTermsTokenizer,
    fts5_terms,
)

# JavaScript's \s (and what String.prototype.trim strips): Python's str.isspace differs on U+FEFF and
# on the C0 separators U+001C-U+001F and U+0085.
JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
           "\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_SPACE_RUN = re.compile(f"[{JS_SPACE}]+")
_LETTER_OR_DIGIT = r"[^\W_]"  # \p{L} | \p{N}
_HYPHENATED = re.compile(rf"{_LETTER_OR_DIGIT}(?:{_LETTER_OR_DIGIT}|['-])*-{_LETTER_OR_DIGIT}(?:{_LETTER_OR_DIGIT}|['-])*")
_WORD = re.compile(r"\w+")  # [\p{L}\p{N}_]+
_NOT_TERM_CHAR = re.compile(r"[^\w']")  # sanitizeFTS5Term keeps \p{L}, \p{N}, ' and _


def js_trim(text: str) -> str:
    return text.strip(JS_SPACE)


def normalize_cjk_for_fts(text: str) -> str:
    """normalizeCjkForFTS: every Han/Kana/Hangul run -> ' c1 c2 ... cn ' (one token per character)."""
    return QMD_CJK_RUN.sub(lambda m: " " + " ".join(m.group(0)) + " ", text)


def contains_cjk(text: str) -> bool:
    return QMD_CJK_CHAR.search(text) is not None


def sanitize_term(term: str) -> str:
    """sanitizeFTS5Term: keep letters, digits, ' and _, lowercase."""
    return _NOT_TERM_CHAR.sub("", term).lower()


def is_hyphenated(token: str) -> bool:
    return _HYPHENATED.fullmatch(token) is not None


def is_dotted(token: str) -> bool:
    parts = token.split(".")
    return len(parts) >= 2 and all(_WORD.fullmatch(p) for p in parts)


def sanitize_phrase(phrase: str) -> str:
    """sanitizeFTS5Phrase: CJK-spaced, split on whitespace, dotted pieces split at the dots, each piece
    sanitised, empty ones dropped, joined by spaces (one phrase, no prefix)."""
    out: list[str] = []
    for piece in _JS_SPACE_RUN.split(normalize_cjk_for_fts(phrase)):
        if is_dotted(piece):
            out.extend(p for p in (sanitize_term(x) for x in piece.split(".")) if p)
        elif sanitized := sanitize_term(piece):
            out.append(sanitized)
    return " ".join(out)


def qmd_query_parts(query: str, *, hyphen_dot_first: bool = True) -> tuple[list[str], list[str]]:
    """buildFTS5Query's positive and negative parts, each an FTS5 expression: `"phrase"`, `"term"*`, or
    (negated dotted terms) `("a"* AND "b"*)`.

    hyphen_dot_first=True is QMD as shipped: a plain term is tested for hyphens, then dots, then CJK, so
    a CJK term with '-' or '.' is sanitised without CJK spacing and matches nothing (德意志-奥地利共和国 ->
    "德意志 奥地利共和国"; 364.6公里 -> "364"* AND "6公里"*).  False tests CJK first (the fix): such a
    term becomes a character phrase that finds the text."""
    positive: list[str] = []
    negative: list[str] = []
    s = js_trim(query)
    i, n = 0, len(s)
    while i < n:
        while i < n and s[i] in JS_SPACE:
            i += 1
        if i >= n:
            break
        negated = s[i] == "-"
        if negated:
            i += 1
        target = negative if negated else positive
        if i < n and s[i] == '"':
            start = i + 1
            i += 1
            while i < n and s[i] != '"':
                i += 1
            phrase = js_trim(s[start:i])
            i += 1  # the closing quote
            if phrase and (sanitized := sanitize_phrase(phrase)):
                target.append(f'"{sanitized}"')
            continue
        start = i
        while i < n and s[i] not in JS_SPACE and s[i] != '"':
            i += 1
        term = s[start:i]
        cjk = contains_cjk(term)
        if cjk and not hyphen_dot_first:
            if sanitized := sanitize_phrase(term):
                target.append(f'"{sanitized}"')
        elif is_hyphenated(term):
            sanitized = " ".join(p for p in (sanitize_term(x) for x in term.split("-")) if p)
            if sanitized:
                target.append(f'"{sanitized}"')
        elif is_dotted(term):
            parts = [f'"{p}"*' for p in (sanitize_term(x) for x in term.split(".")) if p]
            if parts:
                if negated:
                    negative.append(f"({' AND '.join(parts)})")
                else:
                    positive.extend(parts)
        elif cjk:
            if sanitized := sanitize_phrase(term):
                target.append(f'"{sanitized}"')
        elif sanitized := sanitize_term(term):
            target.append(f'"{sanitized}"*')
    return positive, negative


@TOKENIZERS.register("qmd")
@stage
class QmdTokenizer(QueryTermsTokenizer):
    """QMD 2.8.3: `porter unicode61` over text whose CJK runs are spaced into characters; queries through
    QMD's builder: quoted phrases, -negation, hyphenated terms as phrases, dotted terms as prefix parts,
    CJK terms as character phrases, other terms as prefixes ("term"*), all ANDed (NOT for negations).

    qmd_query_bug = true (QMD as shipped) tests hyphens and dots before CJK, so a CJK term holding '-' or
    '.' (德意志-奥地利共和国, 364.6公里) matches nothing; false tests CJK first."""

    join: Join = "and"
    """"and" (QMD) or "or" (positive parts ORed; not a QMD setting)"""
    qmd_query_bug: bool = True
    """reproduce QMD's branch order: a CJK term with '-' or '.' matches nothing"""

    name: ClassVar[str] = "qmd"
    fts5_tokenize: ClassVar[str] = "porter unicode61"

    def index_text(self, text: str) -> str:
        return normalize_cjk_for_fts(text)

    def parts(self, query: str) -> tuple[list[str], list[str]]:
        return qmd_query_parts(query, hyphen_dot_first=self.qmd_query_bug)

    def match_expression(self, query: str) -> str | None:
        positive, negative = self.parts(query)
        if not positive:  # FTS5's NOT is binary: negations alone search nothing
            return None
        expression = f" {self.join.upper()} ".join(positive)
        if negative and self.join == "or":
            expression = f"({expression})"
        for part in negative:
            expression += f" NOT {part}"
        return expression

    def query_plan(self, query: str) -> QueryPlan:
        return QueryPlan(match=self.match_expression(query), join=self.join)

    def query_terms(self, query: str) -> list[str]:
        """The positive parts' text (what a bag-of-words backend scores; no prefixes, no phrases)."""
        positive, _ = self.parts(query)
        return [t for part in positive for t in re.findall(r'"([^"]*)"', part)]

    def analyze_query(self, query: str) -> list[str]:
        return [t for term in self.query_terms(query) for t in fts5_terms(term, self.fts5_tokenize)]
