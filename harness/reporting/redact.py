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


def maybe(text: str, on: bool) -> str:
    return redact(text) if on else text
