"""--redact: mask what a user's memory text may hold that should not travel in a report or a screenshot.

    e-mail addresses         alice@example.com         -> <email>
    URLs                     https://host/path, www.x   -> <url>
    key-like strings         sk-..., ghp_..., AKIA..., long hex or base64-like runs of 24+ characters -> <key>
    numbers                  every digit                -> #  (12,000 EUR -> ##,### EUR; 2026-03-01 -> ####-##-##)
Applied to the user's own text where it enters a report or page (query texts, snippets, chunk texts), never to
the harness's figures.  Order matters: keys and URLs first (they contain digits), then e-mail, then digits.
"""
from __future__ import annotations

import re

from harness.text_files import looks_like_a_secret

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"'，。）)]+", re.IGNORECASE)
KEY = re.compile(r"\b(?:sk|pk|rk|ghp|gho|ghs|github_pat|xox[abpr]|AKIA|AIza)[-_A-Za-z0-9]{8,}"
                 r"|\b[A-Fa-f0-9]{24,}\b|\b(?=[A-Za-z0-9+/_-]*\d)(?=[A-Za-z0-9+/_-]*[A-Za-z])[A-Za-z0-9+/_-]{32,}={0,2}")
DIGIT = re.compile(r"\d")


def redact(text: str) -> str:
    if not text:
        return text
    text = KEY.sub("<key>", text)
    text = URL.sub("<url>", text)
    text = EMAIL.sub("<email>", text)
    return DIGIT.sub("#", text)


# keys by their providers' prefixes, each with its separator (so a word like "skipped_questions" is not one)
PREFIXED_KEY = re.compile(r"\b(?:(?:sk|pk|rk)-|gh[pos]_|github_pat_|xox[abpr]-)[-_A-Za-z0-9]{8,}"
                          r"|\bAKIA[0-9A-Z]{16}\b|\bAIza[-_0-9A-Za-z]{35}\b")
# a quoted token of a key's characters (no '.', '@', '/': names, metrics and paths stay shown), 24 or more of them
QUOTED = re.compile(r"'([A-Za-z0-9_+=-]{24,})'|\"([A-Za-z0-9_+=-]{24,})\"")


def mask_secrets(message: str) -> str:
    """An error message with what may be a credential taken out, whatever echoed it: a key with a known prefix
    (sk-, ghp_, AKIA ...) anywhere, and a quoted token of 24 or more of a key's characters that looks like one
    (letters and digits mixed: harness.text_files.looks_like_a_secret).  The layer every error line goes through on its way
    to the terminal (harness.cli.common.fail), beside the shown() each message's writer calls."""
    message = PREFIXED_KEY.sub(lambda m: f"<a key of {len(m[0])} characters, not shown>", message)

    def quoted(m: re.Match) -> str:
        value = m[1] if m[1] is not None else m[2]
        return f"<a string of {len(value)} characters, not shown>" if looks_like_a_secret(value) else m[0]

    return QUOTED.sub(quoted, message)


def maybe(text: str, on: bool) -> str:
    return redact(text) if on else text


TEXT_FIELDS = ("text", "snippet")


def redacted_result(result):
    """A run's result with its user text (query texts, hit snippets) masked, for the report writers; the figures
    and ids are untouched.  The result itself is not changed."""
    import copy
    import dataclasses

    frame = result.per_query.copy()
    if "text" in frame.columns:
        frame["text"] = frame["text"].map(lambda t: redact(t) if isinstance(t, str) else t)
    hits = {q: [{k: redact(v) if k in TEXT_FIELDS and isinstance(v, str) else v for k, v in h.items()} for h in hs]
            for q, hs in result.hits.items()}
    return dataclasses.replace(result, per_query=frame, hits=hits, notes=[redact(n) for n in result.notes],
                               dataset=copy.deepcopy(result.dataset))


def redacts(config: dict | None) -> bool:
    """Whether a run asked for its user text to be masked ([evaluation] redact, `--redact`)."""
    return bool(((config or {}).get("evaluation") or {}).get("redact"))


def for_output(result):
    """The one gate every output of a run goes through (its console table, report.md, the pages): the result
    with its user text masked when the run asked for it, else the result itself."""
    return redacted_result(result) if redacts(getattr(result, "config", None)) else result


def redact_results_doc(doc: dict) -> dict:
    """A results.json document with its user text masked (for the HTML page), when its run asked for it."""
    if not redacts(doc.get("config")):
        return doc
    import copy

    doc = copy.deepcopy(doc)
    for row in (doc.get("queries") or {}).values():
        if isinstance(row, dict) and isinstance(row.get("text"), str):
            row["text"] = redact(row["text"])
    for hits in (doc.get("hits") or {}).values():
        for h in hits if isinstance(hits, list) else []:
            for key in TEXT_FIELDS:
                if isinstance(h.get(key), str):
                    h[key] = redact(h[key])
    doc["notes"] = [redact(n) if isinstance(n, str) else n for n in doc.get("notes", [])]
    return doc
