"""OpenClaw's keyword fallback (2026.8.1, manager-keyword-retrieval.ts and query-expansion.ts), the
lexical list both its FTS-only and its hybrid mode use.  Facts from harness/conformance/NOTES.md 4a.

    full = the strict query (its tokens quoted, AND-joined), every hit scored with the boosted score
    if full has >= limit hits: full
    terms = extractKeywords(query) minus the whole query, first 6; none -> full
    if full has hits and the terms make the same FTS query as the query: full
    else each term searched alone (its own bm25 as the FTS part of the boosted score), merged with full:
         one entry per chunk, text score = max, score = max; ranked by (score, text score, path, line)

boosted score = min(1, fts + 0.45 * overlap/|Q| + 0.2 * overlap/|T| + 0.18 * P + min(len/160, 0.18)),
Q = the query's lowercased [\\p{L}\\p{N}_] runs, T = the chunk's, overlap = |Q & T|, P = query runs inside
the chunk's path, len = the chunk's UTF-16 length.

Not reproduced: OpenClaw's path table (a hit on the file path alone, exact-path hits listed first).  On
king78 and CMRC no query matched a path (measured), and the harness's paths are ids and dates.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from typing import Callable, Sequence

from harness.stages.chunkers import Chunk
from harness.stages.chunkers.base import utf16_length
from harness.stages.lexical.base import bm25_rank_to_score
from harness.stages.lexical.openclaw_stopwords import (
    KO_TRAILING_PARTICLES,
    STOP_WORDS,
    STOP_WORDS_KO,
)

FALLBACK_TERM_LIMIT = 6  # KEYWORD_FALLBACK_SEARCH_TERM_LIMIT

# JavaScript's \s (ECMAScript WhiteSpace + LineTerminator)
_JS_SPACE = frozenset("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                      "\u2028\u2029\u202f\u205f\u3000\ufeff")
_QUERY_TOKEN = re.compile(r"\w+")  # [\p{L}\p{N}_]+ (Python's \w: letters, numbers, underscore)
_HAN = re.compile("[\u4e00-\u9fff]")
_KANA = re.compile("[\u3040-\u30ff]")
_HANGUL = re.compile("[\uac00-\ud7af\u3131-\u3163]")
_JAPANESE_PARTS = re.compile("[a-z0-9_]+|[\u30a0-\u30ff\u30fc]+|[\u4e00-\u9fff]+|[\u3040-\u309f]{2,}")
_HAN_RUN = re.compile("^[\u4e00-\u9fff]+$")
_ASCII_LETTERS = re.compile("^[a-zA-Z]+$")
_ASCII_DIGITS = re.compile("^[0-9]+$")


def _js_trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and text[start] in _JS_SPACE:
        start += 1
    while end > start and text[end - 1] in _JS_SPACE:
        end -= 1
    return text[start:end]


def _is_separator(ch: str) -> bool:
    return ch in _JS_SPACE or unicodedata.category(ch).startswith("P")


def _is_punct_or_symbol(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


def segments(text: str) -> list[str]:
    """Lowercased, trimmed text split on runs of whitespace and Unicode punctuation (symbols such as
    "+" do not separate); empty segments dropped."""
    out, current = [], []
    for ch in _js_trim(text).lower():
        if _is_separator(ch):
            if current:
                out.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        out.append("".join(current))
    return out


def _korean_stem(token: str) -> str | None:
    for particle in KO_TRAILING_PARTICLES:
        if len(token) > len(particle) and token.endswith(particle):
            return token[: -len(particle)]
    return None


def _useful_korean_stem(stem: str) -> bool:
    if re.search("[\uac00-\ud7af]", stem):
        return len(stem) >= 2
    return bool(re.fullmatch(r"[a-z0-9_]+", stem, re.IGNORECASE))


def keyword_tokens(text: str, trigram: bool = False) -> list[str]:
    """extractKeywords' tokenize: per segment, kana -> its Latin/katakana/Han/hiragana parts (a Han part
    also gives its adjacent pairs); Han -> the segment's Han characters only, each, then adjacent pairs
    of that filtered list (under trigram the joined Han block once instead); Hangul -> the segment and its
    stem without one trailing particle (unless stop words); otherwise the whole segment."""
    tokens: list[str] = []
    for segment in segments(text):
        if _KANA.search(segment):
            for part in _JAPANESE_PARTS.findall(segment):
                tokens.append(part)
                if _HAN_RUN.match(part) and not trigram:
                    tokens.extend(part[i:i + 2] for i in range(len(part) - 1))
        elif _HAN.search(segment):
            chars = [c for c in segment if _HAN.match(c)]
            if trigram:
                if chars:
                    tokens.append("".join(chars))
            else:
                tokens.extend(chars)
                tokens.extend(a + b for a, b in zip(chars, chars[1:]))
        elif _HANGUL.search(segment):
            stem = _korean_stem(segment)
            stem_is_stop = stem is not None and stem in STOP_WORDS_KO
            if segment not in STOP_WORDS_KO and not stem_is_stop:
                tokens.append(segment)
            if stem and stem not in STOP_WORDS_KO and _useful_korean_stem(stem):
                tokens.append(stem)
        else:
            tokens.append(segment)
    return tokens


def is_valid_keyword(token: str) -> bool:
    """Not: empty, ASCII letters shorter than 3, ASCII digits only, punctuation/symbols only."""
    if not token:
        return False
    if _ASCII_LETTERS.match(token) and len(token) < 3:
        return False
    if _ASCII_DIGITS.match(token):
        return False
    return not all(_is_punct_or_symbol(ch) for ch in token)


def extract_keywords(query: str, trigram: bool = False) -> list[str]:
    """OpenClaw's extractKeywords: keyword_tokens minus stop words (EN ES PT AR ZH KO JA), invalid
    keywords and repeats, in order.  `普通人逆袭` -> 普 通 人 逆 袭 普通 通人 人逆 逆袭; `VPS内存OOM` -> 内 存 内存."""
    out: list[str] = []
    seen: set[str] = set()
    for token in keyword_tokens(query, trigram):
        if token in STOP_WORDS or not is_valid_keyword(token) or token in seen:
            continue
        seen.add(token)
        out.append(token)
    return out


def fallback_terms(query: str, trigram: bool = False) -> list[str]:
    """resolveKeywordFallbackTerms: the keywords other than the whole (trimmed, lowercased) query, first 6."""
    whole = _js_trim(query).lower()
    return [t for t in extract_keywords(query, trigram) if t != whole][:FALLBACK_TERM_LIMIT]


def build_fts_query(text: str) -> str | None:
    """buildFtsQuery: the [\\p{L}\\p{N}_] runs, each double-quoted, joined by AND; None without one."""
    tokens = _QUERY_TOKEN.findall(text)
    return " AND ".join(f'"{t}"' for t in tokens) if tokens else None


def _lower_tokens(text: str) -> list[str]:
    return [t.lower() for t in _QUERY_TOKEN.findall(text)]


def boosted_score(query: str, path: str, text: str, fts_score: float) -> float:
    """scoreFallbackKeywordResult (module docstring), in OpenClaw's order of operations."""
    query_tokens = list(dict.fromkeys(_lower_tokens(query)))
    if not query_tokens:
        return fts_score
    text_tokens = set(_lower_tokens(text))
    path_lower = path.lower()
    overlap = sum(1 for t in query_tokens if t in text_tokens)
    unique_overlap = overlap / max(len(query_tokens), 1)
    density = overlap / max(len(text_tokens), 1)
    path_boost = 0.0
    for t in query_tokens:
        path_boost += 0.18 if t in path_lower else 0
    length_boost = min(utf16_length(text) / 160, 0.18)
    return min(1.0, fts_score + (unique_overlap * 0.45 + density * 0.2 + path_boost + length_boost))


def locale_key(text: str) -> tuple:
    """An approximation of JavaScript's String.prototype.localeCompare (ICU root collation) for the ASCII
    paths the harness renders: letters compare case-insensitively first (then lower before upper), and
    punctuation < digits < letters."""
    primary = tuple((0 if not ch.isalnum() else 1 if ch.isdigit() else 2, ch.lower()) for ch in text)
    tertiary = tuple(0 if ch.islower() else 1 for ch in text)
    return primary, tertiary


@dataclass
class KeywordHit:
    id: str
    raw: float  # the best -FTS5 rank among the searches that found it
    score: float  # the boosted score
    text_score: float  # bm25RankToScore of the best match

    def sort_key(self, chunk: Chunk) -> tuple:
        # compareKeywordSearchHits for body hits: score, text score, path, start line, OpenClaw's chunk id
        return (-self.score, *self.tie_key(chunk))

    def tie_key(self, chunk: Chunk) -> tuple:
        """The comparator after the score: what orders hits whose (decayed) scores are equal."""
        return (-self.text_score, locale_key(chunk.path), chunk.start_line, openclaw_chunk_id(chunk))


def tie_order(hits: Sequence[KeywordHit], chunk_of: Callable[[str], Chunk]) -> dict[str, int]:
    """Each hit's place in the comparator without the score (0 first): what OpenClaw's FTS-only ranking uses
    between equal scores after decay (rankKeywordOnlyResults), carried to the keyword-only fusion."""
    ordered = sorted(hits, key=lambda h: h.tie_key(chunk_of(h.id)))
    return {h.id: i for i, h in enumerate(ordered)}


def openclaw_chunk_id(chunk: Chunk, model: str = "fts-only") -> str:
    """OpenClaw 2026.8.1's stored chunk id, sha256("memory:path:start:end:sha256(text):model"); `model` is the
    embedding model's name in hybrid mode ("fts-only" without a provider).  The keyword comparator's last
    tie-break, which decides between two pieces of one over-long line."""
    key = f"memory:{chunk.path}:{chunk.start_line}:{chunk.end_line}:{chunk.hash}:{model}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


Search = Callable[[str, int], Sequence[tuple[str, float]]]


def keyword_search_with_fallback(query: str, limit: int, search: Search, chunk_of: Callable[[str], Chunk],
                                 trigram: bool = False) -> list[KeywordHit]:
    """searchKeywordWithFallback(query, limit): `search(expression_query, k)` is the lexical backend's own
    search of one query string (-> (chunk id, -FTS5 rank) pairs)."""
    query = _js_trim(query)

    def keyword_search(term: str) -> list[KeywordHit]:
        hits = []
        for cid, raw in search(term, limit):
            chunk = chunk_of(cid)
            text_score = bm25_rank_to_score(-raw)
            hits.append(KeywordHit(cid, raw, boosted_score(query, chunk.path, chunk.text, text_score), text_score))
        return ranked(hits, limit)

    def ranked(hits: list[KeywordHit], k: int) -> list[KeywordHit]:
        return sorted(hits, key=lambda h: h.sort_key(chunk_of(h.id)))[:k]

    full = keyword_search(query)
    if len(full) >= limit:
        return full
    terms = fallback_terms(query, trigram)
    if not terms:
        return full
    strict = build_fts_query(query)
    if full and (strict or "").lower() == (build_fts_query(" ".join(terms)) or "").lower():
        return full
    merged: dict[str, KeywordHit] = {h.id: h for h in full}
    for term in terms:
        for hit in keyword_search(term):
            seen = merged.get(hit.id)
            if seen is None:
                merged[hit.id] = hit
            else:
                merged[hit.id] = KeywordHit(hit.id, max(seen.raw, hit.raw), max(seen.score, hit.score),
                                            max(seen.text_score, hit.text_score))
    return ranked(list(merged.values()), limit)
