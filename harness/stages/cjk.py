"""CJK character classes, one per upstream rule the stages mirror.  The systems disagree on what
"CJK" means, and each stage must use its own system's class, so every table lives here once, named
after the code it reproduces (SPEC.md sections 2-4), instead of inside the stage that reads it.
"""
from __future__ import annotations

import re
import unicodedata


def ranges_regex(ranges: tuple[tuple[int, int], ...]) -> str:
    """A regex character class matching any code point in the (low, high) ranges."""
    return "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in ranges) + "]"


# OpenClaw chunkMarkdown's CJK weighting (later versions): each of these counts as one token (4 chars).
OPENCLAW_CHUNK_ESTIMATE_RANGES = (
    (0x2E80, 0x9FFF), (0xA000, 0xA4FF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF),
    (0xFF01, 0xFF60), (0xFFE0, 0xFFE6), (0x20000, 0x2FA1F),
)
OPENCLAW_CHUNK_ESTIMATE = re.compile(ranges_regex(OPENCLAW_CHUNK_ESTIMATE_RANGES))

# OpenClaw 2026.8.1's size estimate (packages/normalization-core cjk-chars.ts, estimateStringChars): on top
# of the UTF-16 length, common Han / CJK punctuation / full-width forms cost 3 more (4 in all), rare BMP CJK
# 11 more, "two-token" forms 7 more, counting-rod numerals 10 more, supplementary CJK 14 more (so an Ext-B
# character, 2 UTF-16 units, costs 16).  The classes are disjoint, so the estimate is a per-character sum.
OPENCLAW_2026_08_EXTRA_COST = (
    (3, re.compile("[\u00B7\u3000-\u319F\u4E00-\u9FA5\uAC00-\uD7AF\uFF01-\uFF60]")),
    (11, re.compile("[\u1100-\u11FF\u2E80-\u2FFF\u31A0-\u4DFF\u9FA6-\u9FFF\uA000-\uA4FF\uA700-\uA707"
                    "\uA960-\uA97F\uD7B0-\uD7FF\uF900-\uFAFF]")),
    (7, re.compile("[\u02C7\u02C9-\u02CB\u02D9\u02EA-\u02EB\uFE10-\uFE4F\uFF61-\uFFDC\uFFE0-\uFFE6"
                   "\u0305\u0323]")),
    (10, re.compile("[\U0001D360-\U0001D371]")),
    (14, re.compile("[\U00016FE0-\U00016FFF\U0001AFF0-\U0001AFFF\U0001B000-\U0001B16F\U0001F200-\U0001F2FF"
                    "\U00020000-\U0002FA1F\U00030000-\U0003347F]")),
)

# OpenClaw's MMR tokenizer (mmr.ts): kana, CJK Extension A + Unified Ideographs, Hangul syllables and jamo;
# a run of these gives its characters and adjacent pairs as tokens.
OPENCLAW_MMR_CJK_RUN = re.compile(r"[\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u1100-\u11ff]+")

# The characters OpenClaw's query planner treats as CJK on the trigram path: Kana, CJK Ext-A + Unified
# Ideographs, Hangul syllables and compatibility jamo (SHORT_CJK_TRIGRAM_RE).
OPENCLAW_TRIGRAM_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u3131-\u3163]")

# The harness's own CJK letter class (cjk-char, cjk-bigram; QMD indexes Han/Kana/Hangul per character):
# Han (radicals, ideographic letters among CJK symbols, Ext-A, Unified, compatibility, Ext-B..H), Kana
# (incl. phonetic extensions, half-width katakana) and Hangul (jamo, compatibility jamo, syllables).
CJK_LETTER_RANGES = (
    (0x1100, 0x11FF), (0x2E80, 0x2FDF), (0x3005, 0x3007), (0x3021, 0x3029), (0x3038, 0x303C),
    (0x3040, 0x30FF), (0x3130, 0x318F), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
    (0xA960, 0xA97F), (0xAC00, 0xD7FF), (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x20000, 0x323AF),
)


def is_cjk_char(ch: str) -> bool:
    """A Han, Kana or Hangul letter (punctuation in those blocks, e.g. 。 or ・, is not)."""
    cp = ord(ch)
    if not any(lo <= cp <= hi for lo, hi in CJK_LETTER_RANGES):
        return False
    return unicodedata.category(ch)[0] in "LN"


# lossless-claw's token estimator (src/estimate-tokens.ts): each of these code points costs 1.5 tokens
# (CJK ideographs incl. extensions A-F, CJK symbols and punctuation, kana, Hangul syllables, full-width
# forms); any other astral code point 2; everything else 0.25.
LOSSLESS_CLAW_ESTIMATE_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF), (0x2CEB0, 0x2EBEF), (0x3000, 0x303F), (0x3040, 0x30FF), (0xAC00, 0xD7AF),
    (0xFF00, 0xFFEF),
)
LOSSLESS_CLAW_ESTIMATE = re.compile(ranges_regex(LOSSLESS_CLAW_ESTIMATE_RANGES))

# lossless-claw's CJK query segments (summary-store.ts CJK_QUERY_SEGMENT_RE): CJK radicals to Unified
# Ideographs, Ext-A, compatibility ideographs, Hangul syllables, kana.  A query with any such character
# takes the CJK paths of lcm_grep full_text (LIKE on messages, trigram / LIKE OR on summaries).
LOSSLESS_CLAW_CJK_RANGES = ((0x2E80, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0xAC00, 0xD7AF),
                            (0x3040, 0x309F), (0x30A0, 0x30FF))
LOSSLESS_CLAW_CJK_SEGMENT = re.compile(ranges_regex(LOSSLESS_CLAW_CJK_RANGES) + "+")

# QMD's CJK class (src/store.ts CJK_CHAR_PATTERN): \p{Script=Han}, Hiragana, Katakana, Hangul (the Script
# property, not Script_Extensions: the prolonged sound mark ー U+30FC and 々-like Common characters such as
# 〆 U+3006 are not in it).  Ranges from Unicode 15.1 Scripts.txt; Python's re has no \p{Script=...}.
QMD_CJK_SCRIPT_RANGES = (
    # Han
    (0x2E80, 0x2E99), (0x2E9B, 0x2EF3), (0x2F00, 0x2FD5), (0x3005, 0x3005), (0x3007, 0x3007),
    (0x3021, 0x3029), (0x3038, 0x303B), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFA6D),
    (0xFA70, 0xFAD9), (0x16FE2, 0x16FE3), (0x16FF0, 0x16FF1), (0x20000, 0x2A6DF), (0x2A700, 0x2B739),
    (0x2B740, 0x2B81D), (0x2B820, 0x2CEA1), (0x2CEB0, 0x2EBE0), (0x2EBF0, 0x2EE5D), (0x2F800, 0x2FA1D),
    (0x30000, 0x3134A), (0x31350, 0x323AF),
    # Hiragana
    (0x3041, 0x3096), (0x309D, 0x309F), (0x1B001, 0x1B11F), (0x1B132, 0x1B132), (0x1B150, 0x1B152),
    (0x1F200, 0x1F200),
    # Katakana
    (0x30A1, 0x30FA), (0x30FD, 0x30FF), (0x31F0, 0x31FF), (0x32D0, 0x32FE), (0x3300, 0x3357),
    (0xFF66, 0xFF6F), (0xFF71, 0xFF9D), (0x1AFF0, 0x1AFF3), (0x1AFF5, 0x1AFFB), (0x1AFFD, 0x1AFFE),
    (0x1B000, 0x1B000), (0x1B120, 0x1B122), (0x1B155, 0x1B155), (0x1B164, 0x1B167),
    # Hangul
    (0x1100, 0x11FF), (0x302E, 0x302F), (0x3131, 0x318E), (0x3200, 0x321E), (0x3260, 0x327E),
    (0xA960, 0xA97C), (0xAC00, 0xD7A3), (0xD7B0, 0xD7C6), (0xD7CB, 0xD7FB), (0xFFA0, 0xFFBE),
    (0xFFC2, 0xFFC7), (0xFFCA, 0xFFCF), (0xFFD2, 0xFFD7), (0xFFDA, 0xFFDC),
)
QMD_CJK_CHAR = re.compile(ranges_regex(QMD_CJK_SCRIPT_RANGES))
QMD_CJK_RUN = re.compile(ranges_regex(QMD_CJK_SCRIPT_RANGES) + "+")
