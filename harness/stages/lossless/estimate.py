"""lossless-claw's token estimator (src/estimate-tokens.ts, SPEC.md section 7): ceil of the sum over
code points of 1.5 for CJK / kana / Hangul / full-width, 2 for any other astral code point, 0.25 for
everything else.  It decides every size in the preset: message token_count, leaf chunks, summary
targets, the compaction trigger and the assembled context's budget."""
from __future__ import annotations

import math

from harness.stages.cjk import LOSSLESS_CLAW_ESTIMATE_RANGES


def code_point_tokens(cp: int) -> float:
    if any(lo <= cp <= hi for lo, hi in LOSSLESS_CLAW_ESTIMATE_RANGES):
        return 1.5
    if cp > 0xFFFF:
        return 2.0
    return 0.25


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text` (0.25 and 1.5 are exact in binary, so the sum has no rounding)."""
    if text.isascii():  # the common case, 0.25 a character
        return math.ceil(len(text) / 4)
    return math.ceil(sum(code_point_tokens(ord(ch)) for ch in text))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix whose estimate stays within `max_tokens` (truncateTextToEstimatedTokens)."""
    if max_tokens <= 0 or not text:
        return ""
    total, end = 0.0, 0
    for ch in text:
        nxt = total + code_point_tokens(ord(ch))
        if math.ceil(nxt) > max_tokens:
            break
        total, end = nxt, end + 1
    return text[:end]
