"""The one ordering of ranked lists in the harness: score descending, then id ascending.

trec_eval breaks score ties by document id and ranx leaves them unordered (SPEC.md section 5), so every
list a stage returns and every run the evaluation reads is put in this order first: the same config and
data then give the same ranks on every machine.
"""
from __future__ import annotations

import re
from operator import itemgetter
from typing import Any, Callable, Iterable, TypeVar

T = TypeVar("T")

_score_of_pair = itemgetter(1)
_id_of_pair = itemgetter(0)


def by_score_then_id(items: Iterable[T], *, score: Callable[[T], float] = _score_of_pair,
                     ident: Callable[[T], Any] = _id_of_pair) -> list[T]:
    """Sorted best first by (score desc, id asc); by default `items` are (id, score) pairs."""
    return sorted(items, key=lambda item: (-score(item), ident(item)))


def top_k(items: Iterable[T], k: int, **keys: Any) -> list[T]:
    """The first k of by_score_then_id(items): a k-cut that never leaves a tie to the input order."""
    return by_score_then_id(items, **keys)[:k]


_DIGITS = re.compile(r"(\d+)")


def natural_key(ident: str) -> tuple[Any, ...]:
    """A sort key that reads runs of digits as numbers: LoCoMo's turn "D1:2" before "D1:10" (a plain string
    sort puts "D1:10" first).  Used where ids order tied documents (the id-order tie rule)."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(str(ident)))
