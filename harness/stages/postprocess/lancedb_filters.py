"""memory-lancedb-pro's two text gates (SPEC.md section 4): the noise filter on results (src/noise-filter.ts)
and adaptive retrieval, "search or not" per message (src/adaptive-retrieval.ts).  The patterns are the
code's; JavaScript regex semantics are kept where they differ from Python's (\\b and case folding are
ASCII-only without the u flag, `.` stops at every line terminator, lengths are UTF-16 units)."""
from __future__ import annotations

import re
from typing import Optional

from pydantic import Field

from harness.registry import stage
from harness.stages.fusion import Hit
from harness.stages.postprocess.base import POSTPROCESSORS, SearchContext

_S = "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"  # JavaScript's \s
_DOT = "[^\n\r\u2028\u2029]"  # JavaScript's .
_FLAGS = re.IGNORECASE | re.ASCII  # /i without /u: \b, \w and case folding are ASCII


def _js(pattern: str, flags: int = _FLAGS) -> re.Pattern[str]:
    return re.compile(pattern.replace(r"\s", _S).replace(".+", _DOT + "+").replace(".*", _DOT + "*"), flags)


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


_S_CHARS = "\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000\ufeff"


def js_trim(text: str) -> str:
    return text.strip(_S_CHARS)


# --- noise filter (src/noise-filter.ts) ------------------------------------------------------------

DENIAL_PATTERNS = [_js(p) for p in (
    r"i don'?t have (any )?(information|data|memory|record)", r"i'?m not sure about", r"i don'?t recall",
    r"i don'?t remember", r"it looks like i don'?t", r"i wasn'?t able to find", r"no (relevant )?memories found",
    r"i don'?t have access to")]
META_QUESTION_PATTERNS = [_js(p) for p in (
    r"\bdo you (remember|recall|know about)\b", r"\bcan you (remember|recall)\b", r"\bdid i (tell|mention|say|share)\b",
    r"\bhave i (told|mentioned|said)\b", r"\bwhat did i (tell|say|mention)\b", r"如果你知道.+只回复",
    r"如果不知道.+只回复\s*none", r"只回复精确代号", r"只回复\s*none")]
BOILERPLATE_PATTERNS = [_js(p) for p in (
    r"^(hi|hello|hey|good morning|good evening|greetings)", r"^fresh session", r"^new session", r"^HEARTBEAT")]
DIAGNOSTIC_ARTIFACT_PATTERNS = [_js(p) for p in (
    r"\bquery\s*->\s*(none|no explicit solution|unknown|not found)\b",
    r"\buser asked for\b.*\b(none|no explicit solution|unknown|not found)\b", r"\bno explicit solution\b")]


# A literal each pattern needs (in the lowercased text: a necessary condition only) before it is worth running: the filter reads
# every hit's text, and 20 case-insensitive scans of a 600-character chunk cost ~0.4 ms.
_NEEDS = {
    "denials": ("have", "not sure about", "recall", "remember", "looks like", "able to find", "memories found",
                "access to"),
    "meta_questions": ("do you", "can you", "did i", "have i", "what did i", "只回复", "只回复", "只回复", "只回复"),
    "boilerplate": ("", "fresh session", "new session", "heartbeat"),
    "diagnostic": ("->", "user asked for", "no explicit solution"),
}
_RULES = {group: list(zip(_NEEDS[group], patterns)) for group, patterns in (
    ("denials", DENIAL_PATTERNS), ("meta_questions", META_QUESTION_PATTERNS), ("boilerplate", BOILERPLATE_PATTERNS),
    ("diagnostic", DIAGNOSTIC_ARTIFACT_PATTERNS))}


def is_noise(text: str, *, denials: bool = True, meta_questions: bool = True, boilerplate: bool = True) -> bool:
    """isNoise: shorter than 5 (UTF-16 units, trimmed), an agent denial, a meta-question about memory,
    session boilerplate (greetings, HEARTBEAT: at the start of the text, `^hi` also matching "history"
    as the code's pattern does), or an extractor artifact."""
    trimmed = js_trim(text)
    if utf16_length(trimmed) < 5:
        return True
    lowered = trimmed.lower()
    groups = (("denials", denials), ("meta_questions", meta_questions), ("boilerplate", boilerplate),
              ("diagnostic", True))
    return any(on and any(need in lowered and p.search(trimmed) for need, p in _RULES[group]) for group, on in groups)


@POSTPROCESSORS.register("noise_filter")
@stage
class NoiseFilter:
    """memory-lancedb-pro's noise filter (on by default in its retriever, after time decay): results whose
    text is noise are dropped (lancedb_filters.is_noise; here the text is the chunk's).  Order kept."""

    denials: bool = True
    """drop agent denials ("I don't recall ...")"""
    meta_questions: bool = True
    """drop meta-questions about memory ("do you remember ...", 只回复 none)"""
    boilerplate: bool = True
    """drop greetings and session boilerplate (text starting with hi/hello/HEARTBEAT ...)"""

    pass_threshold = 0.0  # filters, sets no score bar

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        chunk_text = ctx.need("chunk_text", "noise_filter")
        return [h for h in hits if not is_noise(chunk_text(h.id), denials=self.denials,
                                                meta_questions=self.meta_questions, boilerplate=self.boilerplate)]


# --- adaptive retrieval (src/adaptive-retrieval.ts) ---------------------------------------------------

SKIP_PATTERNS = [_js(p) for p in (
    r"^(hi|hello|hey|good\s*(morning|afternoon|evening|night)|greetings|yo|sup|howdy|what'?s up)\b", r"^/",
    r"^(run|build|test|ls|cd|git|npm|pip|docker|curl|cat|grep|find|make|sudo)\b",
    r"^(yes|no|yep|nope|ok|okay|sure|fine|thanks|thank you|thx|ty|got it|understood|cool|nice|great|good|perfect"
    r"|awesome|👍|👎|✅|❌)\s*[.!]?$",
    r"^(go ahead|continue|proceed|do it|start|begin|next|实施|實施|开始|開始|继续|繼續|好的|可以|行)\s*[.!]?$",
    r"HEARTBEAT", r"^(no[_-]?reply|noreply)\s*[.!]?$",
    r"^(heartbeat(_ok|_fail|_err|_error)?|heartbeat\s*(ok|fail|error)|health[_ -]?check|system[_ -]?check"
    r"|status[_ -]?check)\s*[.!]?$", r"^\[System", r"^(ping|pong|test|debug)\s*[.!?]?$")]
FORCE_RETRIEVE_PATTERNS = [_js(p) for p in (
    r"\b(remember|recall|forgot|memory|memories)\b", r"\b(last time|before|previously|earlier|yesterday|ago)\b",
    r"\b(my (name|email|phone|address|birthday|preference))\b", r"\b(what did (i|we)|did i (tell|say|mention))\b",
    r"(你记得|[你妳]記得|之前|上次|以前|还记得|還記得|提到过|提到過|说过|說過)")]
_CJK = re.compile("[\u4e00-\u9fff\u3040-\u309f\u30a0-\u30ff\uac00-\ud7af]")
# \p{Emoji} approximated: the digits, # and *, and the emoji blocks (Python's re has no \p{Emoji})
_EMOJI_ONLY = re.compile("^(?:[0-9#*\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u2199\u21a9\u21aa\u231a\u231b"
                         "\u2328\u23cf\u23e9-\u23f3\u23f8-\u23fa\u24c2\u25aa\u25ab\u25b6\u25c0\u25fb-\u25fe"
                         "\u2600-\u27bf\u2934\u2935\u2b05-\u2b07\u2b1b\u2b1c\u2b50\u2b55\u3030\u303d\u3297\u3299"
                         "\U0001f000-\U0001faff]|" + _S + ")+$")


def normalize_prompt(query: str) -> str:
    """normalizeQuery: strip OpenClaw's metadata headers, cron and timestamp prefixes, heartbeat wrappers."""
    s = js_trim(query)
    s = re.sub(r"^(Conversation info|Sender) \(untrusted metadata\):[\s\S]*?\n" + _S + r"*\n", "", s,
               flags=re.IGNORECASE | re.MULTILINE)
    s = re.sub(r"^\[cron:[^\]]+\]" + _S + "*", "", js_trim(s), flags=re.IGNORECASE)
    s = re.sub(r"^\[[A-Za-z]{3}" + _S + r"\d{4}-\d{2}-\d{2}" + _S + r"\d{2}:\d{2}" + _S + r"[^\]]+\]" + _S + "*", "",
               js_trim(s))
    s = re.sub(r"^\[(heartbeat|health[-_ ]?check|system[-_ ]?check)[^\]]*\]" + _S + "*", "", js_trim(s),
               flags=re.IGNORECASE)
    s = re.sub(r"^(heartbeat|health[-_ ]?check|system[-_ ]?check)" + _S + r"*[:\-]" + _S + "*", "", js_trim(s),
               flags=re.IGNORECASE)
    return js_trim(s)


def should_skip_retrieval(query: str, min_length: int | None = None) -> bool:
    """shouldSkipRetrieval: never skip a message with a memory keyword (remember, 之前, 上次, 说过 ...);
    skip one shorter than 5, a greeting, command, acknowledgement, emoji or HEARTBEAT; then skip one
    shorter than `min_length` (autoRecallMinLength) or, without it, than 6 with CJK / 15 without,
    unless it holds ? or ？.  Lengths in UTF-16 units."""
    trimmed = normalize_prompt(query)
    if any(p.search(trimmed) for p in FORCE_RETRIEVE_PATTERNS):
        return False
    length = utf16_length(trimmed)
    if length < 5:
        return True
    if any(p.search(trimmed) for p in SKIP_PATTERNS) or _EMOJI_ONLY.match(trimmed):
        return True
    question = "?" in trimmed or "？" in trimmed
    if min_length is not None and min_length > 0:
        return length < min_length and not question
    return length < (6 if _CJK.search(trimmed) else 15) and not question


@POSTPROCESSORS.register("adaptive_retrieval")
@stage
class AdaptiveRetrieval:
    """memory-lancedb-pro's adaptive retrieval: a query it would not search returns nothing
    (lancedb_filters.should_skip_retrieval).  In memory-lancedb-pro it gates auto-recall (the user's
    message before the agent starts); its memory_recall tool never skips.  Place it first."""

    min_length: Optional[int] = Field(None, ge=1)
    """the plugin's autoRecallMinLength (None: 6 characters with CJK, 15 without)"""

    pass_threshold = 0.0  # filters whole queries, sets no score bar

    def skips_query(self, query: str) -> bool:
        return should_skip_retrieval(query, self.min_length)

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]:
        return [] if self.skips_query(ctx.query) else list(hits)
