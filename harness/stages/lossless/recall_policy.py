"""How lcm_grep is called in the study: the question as a user would type it, or the 1-3 key terms an
agent would pass (lossless-claw's guidance: search history for distinctive terms with lcm_grep).

Key terms (deterministic): the question's content words - runs of letters, digits, ' and - that start
with a letter or digit, a trailing 's dropped, at least 3 characters, not a stop word - ordered by how
few of the conversation's messages contain them (document frequency, case-folded; ties: first in the
question), words that no message contains left out (an agent only searches for words it has seen); the
first k (k = 1, 2, 3), in the question's own spelling.

    regex      the k terms escaped and joined by | (any of them; case-sensitive, as the mode is)
    full_text  the k terms separated by spaces (every one must occur: FTS5's implicit AND)
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
QUESTION_STOPWORDS = frozenset("""
a an the and or but if of to in on at by for from with about into over after before during between through
what when where which who whom whose why how is are was were be been being do does did doing have has had
having can could would should will shall may might must this that these those there here it its they them
their he him his she her hers we us our you your i me my mine any some each every all both either neither
not no nor so than too very just also ever ever since still yet then once again more most less least many
much few other another such same own out up down off as like while until upon within without across
kind type sort way ways thing things time times did does something anything what's who's how's where's
""".split())


def words(text: str) -> list[str]:
    """Content-word candidates of a text, in order: `WORD` runs with a trailing 's removed."""
    out = []
    for w in WORD.findall(text):
        w = re.sub(r"'s$", "", w).strip("'-")
        if w:
            out.append(w)
    return out


def document_frequencies(messages: Iterable[str]) -> Counter:
    df: Counter = Counter()
    for text in messages:
        df.update({w.lower() for w in words(text)})
    return df


def key_terms(question: str, df: Counter, k: int) -> list[str]:
    """The question's k rarest content words present in the conversation (see the module doc)."""
    seen: dict[str, tuple[int, int, str]] = {}
    for position, w in enumerate(words(question)):
        low = w.lower()
        if len(low) < 3 or low in QUESTION_STOPWORDS or low in seen or df[low] == 0:
            continue
        seen[low] = (df[low], position, w)
    return [w for _, _, w in sorted(seen.values())[:k]]


def agent_pattern(terms: list[str], mode: str) -> str:
    if mode == "regex":
        return "|".join(re.escape(t) for t in terms)
    return " ".join(terms)
