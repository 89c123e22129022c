"""Summaries for lossless-claw's DAG: the targets it asks for (summarize.ts resolveTargetTokens), an
LLM through the chat stage (cached), and an extractive stand-in that needs no model.

    summarize(text, aggressive, request) -> summary text          (the Summarizer protocol)

Targets (estimated tokens): a leaf max(192, min(2400, 0.35 x input)), 0.2 x input within [96, 1320]
when aggressive; a condensed node max(512, 2000).  Every summary ends with "Expand for details about:
<what was dropped>".  The extractive stand-in brackets the effect of summary quality: it keeps whole
sentences of the source (first and last, or the most term-dense), so what it drops is really gone."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal, Protocol

from harness.stages.chat.base import Message
from harness.stages.lossless.estimate import estimate_tokens

LEAF_TARGET_TOKENS = 2400
CONDENSED_TARGET_TOKENS = 2000
FOOTER = "Expand for details about: "
FOOTER_TERMS = 8
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_WORD = re.compile(r"[^\W_]{3,}")
_HEADER = re.compile(r"^\[[^\]\n]*\]$")
STOPWORDS = frozenset("""
the and for that this with you your are was were have has had not but they them their there what when where
which who whom why how can could would should will just about from into out over then than also very really
been being did does doing its it's i'm i've you're that's don't didn't gonna wanna yeah yes okay ok
all any some much more most such only own same too our ours she her hers him his himself herself
myself yourself one two get got going know think like well lot lots things thing something anything
""".split())


@dataclass(frozen=True)
class SummaryRequest:
    """What the compaction engine tells the summarizer besides the text."""

    target_tokens: int
    condensed: bool = False
    depth: int = 0  # of the node being written (a leaf is 0)
    previous_summary: str | None = None


class Summarizer(Protocol):
    @property
    def name(self) -> str: ...

    def summarize(self, text: str, aggressive: bool, request: SummaryRequest) -> str: ...


def target_tokens(input_tokens: int, aggressive: bool, condensed: bool,
                  leaf_target: int = LEAF_TARGET_TOKENS, condensed_target: int = CONDENSED_TARGET_TOKENS) -> int:
    if condensed:
        return max(512, condensed_target)
    leaf_target = max(192, leaf_target)
    if aggressive:
        cap = max(96, min(leaf_target, int(leaf_target * 0.55)))
        return max(96, min(cap, int(input_tokens * 0.2)))
    return max(192, min(leaf_target, int(input_tokens * 0.35)))


# --- the extractive stand-in ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Unit:
    block: int
    position: int
    header: str  # the block's [time] header line, "" if none
    text: str


def sentences(text: str) -> list[str]:
    """A text's sentences as the extractive stand-in cuts them (after . ! ? and their CJK forms)."""
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


def _units(text: str) -> list[_Unit]:
    """Sentences of the source, with the [time] header of the block (message or summary) they come from;
    earlier summaries' footers are not sentences to keep."""
    units: list[_Unit] = []
    for b, block in enumerate(re.split(r"\n\s*\n", text.strip())):
        lines = block.strip().splitlines()
        header = lines[0].strip() if lines and _HEADER.match(lines[0].strip()) else ""
        body = " ".join(ln.strip() for ln in (lines[1:] if header else lines)
                        if ln.strip() and not ln.strip().startswith(FOOTER))
        for sentence in sentences(body):
            units.append(_Unit(b, len(units), header, sentence))
    return units


def _words(text: str) -> list[str]:
    return [w for w in (m.lower() for m in _WORD.findall(text)) if w not in STOPWORDS]


def _render(units: list[_Unit]) -> str:
    lines: list[str] = []
    last_block = None
    for u in sorted(units, key=lambda u: u.position):
        if u.block == last_block:
            lines[-1] += " " + u.text
        else:
            lines.append(f"{u.header} {u.text}".strip())
            last_block = u.block
    return "\n".join(lines)


def footer(dropped: list[_Unit], source: str) -> str:
    """The terms most frequent in what was dropped (ties: first seen), or in the source if nothing was."""
    counts = Counter(_words(" ".join(u.text for u in dropped)) if dropped else _words(source))
    first = {w: i for i, w in reversed(list(enumerate(_words(source))))}
    terms = sorted(counts, key=lambda w: (-counts[w], first.get(w, 0)))[:FOOTER_TERMS]
    return FOOTER + (", ".join(terms) if terms else "nothing")


@dataclass(frozen=True)
class ExtractiveSummarizer:
    """An LLM-free summary: whole sentences of the source up to the target, in their original order,
    each block's [time] header kept, then the footer naming the most frequent terms of what was left
    out.  strategy "first-last" takes sentences alternately from the start and the end; "term-density"
    takes the sentences whose words are most frequent in the source (per word), best first."""

    strategy: Literal["first-last", "term-density"] = "term-density"

    @property
    def name(self) -> str:
        return f"extractive:{self.strategy}"

    def _order(self, units: list[_Unit]) -> list[_Unit]:
        if self.strategy == "first-last":
            out, lo, hi = [], 0, len(units) - 1
            while lo <= hi:
                out.append(units[lo])
                if lo != hi:
                    out.append(units[hi])
                lo, hi = lo + 1, hi - 1
            return out
        frequency = Counter(_words(" ".join(u.text for u in units)))

        def density(u: _Unit) -> float:
            words = _words(u.text)
            return sum(frequency[w] for w in words) / (len(words) + 2)  # +2: a one-word line is not dense

        return sorted(units, key=lambda u: (-density(u), u.position))

    def summarize(self, text: str, aggressive: bool, request: SummaryRequest) -> str:
        units = _units(text)
        # each sentence costs at most its own estimate with its block's header and a separator; the
        # footer's room is reserved up front and the result checked (and trimmed) at the end
        budget = request.target_tokens - estimate_tokens(footer(units, text)) - 2
        kept: list[_Unit] = []
        used = 0
        for unit in self._order(units):
            cost = estimate_tokens(f"{unit.header} {unit.text}") + 1
            if used + cost <= budget:
                kept.append(unit)
                used += cost
            elif self.strategy == "first-last":
                break  # the two ends meet: no skipping to a shorter sentence further in
        while True:
            chosen = set(id(u) for u in kept)
            dropped = [u for u in units if id(u) not in chosen]
            body = _render(kept)
            summary = (body + "\n" if body else "") + footer(dropped, text)
            if estimate_tokens(summary) <= request.target_tokens or not kept:
                return summary
            kept.pop()


# --- an LLM through the chat stage ---------------------------------------------------------------------

SYSTEM_PROMPT = ("You compress conversation history for an AI agent's context window. Reply with the summary "
                 "text only.")


def summary_prompt(text: str, aggressive: bool, request: SummaryRequest) -> str:
    """The harness's own wording of what lossless-claw asks of its summarizer (same targets, same footer)."""
    if request.condensed:
        task = (f"Merge these depth-{request.depth - 1} summaries of consecutive parts of one conversation into "
                "one memory node. Keep decisions, facts about people and events, open questions and a dated "
                "timeline; drop detail a later turn will not need.")
    else:
        task = ("Summarise this segment of a conversation for later turns of the same conversation. "
                + ("Keep only durable facts, decisions and open items." if aggressive else
                   "Keep facts, names, dates, decisions and open items; drop repetition and small talk."))
    parts = [task, "Plain text, no headings.",
             f'Finish with one line: "{FOOTER}<comma-separated list of what you left out or compressed>".',
             f"Length: about {request.target_tokens} tokens or fewer."]
    if request.previous_summary:
        parts.append(f"<previous_context>\n{request.previous_summary}\n</previous_context>")
    parts.append(f"<segment>\n{text}\n</segment>")
    return "\n\n".join(parts)


@dataclass
class ChatSummarizer:
    """Summaries from a chat model, always through the completion cache (CachedChat): the same source
    text, target and model give the same summary on every run, offline once cached."""

    chat: object  # a CachedChat (or any ChatModel)

    @property
    def name(self) -> str:
        return f"chat:{self.chat.model_id}"

    def messages(self, text: str, aggressive: bool, request: SummaryRequest) -> list[Message]:
        return [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": summary_prompt(text, aggressive, request)}]

    def summarize(self, text: str, aggressive: bool, request: SummaryRequest) -> str:
        return self.chat.complete(self.messages(text, aggressive, request)).strip()
