"""A study's Document: what its analysis found, the one thing its renderer reads (issue 39).

The boundary between analysis and rendering, as ranx's `compare() -> Report` is: a kind's `analyse`
(harness.study_kinds) computes every figure, interval, comparison and family correction and returns a
Document; `harness.reporting.<kind>.render(document, out)` lays it out and computes nothing.  A redraw
(`--redraw`) is `Document.from_json` of what an earlier run wrote, the analysis its JSON lacks done by
the study layer, then the same render.

A Document is frozen: its kind (the study kind's name), its format (the version of the layout below),
its config (the study file as loaded, which a renderer reads for titles and labels; not written: a
document's JSON keeps the keys the committed reports have), and its body, the JSON object itself, read
through the Mapping interface (`document["cells"]`) and typed views: `environment`, `tables` and
`comparisons(key)`, the paired comparison rows as Comparison records.

How each kind of document is written is named here once (DOCUMENT_FORMS: indentation, separators, how a
value JSON cannot hold is written, rounding, a final newline), so `Document.to_json()` is byte for byte
what the committed reports hold.  Writing the file is reporting's (harness.reporting.documents).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterator

import numpy as np

FORMAT = 1
"""The version of the document layout: the keys each kind has written since the reports were committed."""


def json_value(obj: Any) -> Any:
    """A value JSON cannot hold as itself, as JSON holds it: numpy numbers as numbers, paths as text,
    dates as ISO dates."""
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (date, datetime)):  # a TOML date, e.g. [evaluation] now = 2026-03-08
        return obj.isoformat()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def number_or_text(obj: Any) -> Any:
    """A numpy number as a number, anything else JSON cannot hold as its text (the expansion study's form)."""
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    return str(obj)


def rounded(value: Any) -> Any:
    """Every float of a nested document to 6 significant digits (per-query scores and curves make a
    document large otherwise; no figure a report shows has more)."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


@dataclass(frozen=True)
class JsonForm:
    """How one kind of document is written."""

    indent: int | None = 1
    compact: bool = False  # separators without spaces (a document of per-query numbers)
    default: Callable[[Any], Any] | None = None  # the value of what JSON cannot hold
    rounded: bool = False  # floats to 6 significant digits
    newline: bool = False  # a final "\n"
    ascii: bool = False  # non-ASCII characters as \u escapes

    def text(self, doc: Any) -> str:
        body = rounded(doc) if self.rounded else doc
        text = json.dumps(body, ensure_ascii=self.ascii, indent=self.indent,
                          separators=(",", ":") if self.compact else None, default=self.default)
        return text + "\n" if self.newline else text


DOCUMENT_FORMS: dict[str, JsonForm] = {
    "results": JsonForm(default=json_value),  # one run's results.json (harness run, every study's cells)
    "benchmark": JsonForm(default=json_value),
    "benchmark-run": JsonForm(indent=None, compact=True, default=json_value),  # a benchmark run's results.json
    "abstention": JsonForm(indent=None, compact=True, default=json_value, rounded=True),
    "ablation": JsonForm(default=str),
    "eval": JsonForm(newline=True),  # harness eval --json: a run file's scores against qrels
    "matrix": JsonForm(default=str),
    "expansion": JsonForm(default=number_or_text),
    "language-pairs": JsonForm(),
    "lossless": JsonForm(default=str),
    "sweep": JsonForm(),
    "scale": JsonForm(newline=True),
    "conformance": JsonForm(newline=True),
    "openclaw-home": JsonForm(default=str, newline=True),  # also init.json of harness init --openclaw-home
    "openclaw-home-speed": JsonForm(ascii=True, newline=True),
    "judge": JsonForm(newline=True),  # harness judge: judge/judge.json
    "statistics": JsonForm(ascii=True, newline=True),  # the statistics' coverage check (studies/coverage.py)
    "gate-power": JsonForm(newline=True),  # the gate rules on the same queries (harness/gate/power.py)
    "drift": JsonForm(newline=True),  # the embedding across thread counts (studies/drift.py)
    "timings": JsonForm(ascii=True, newline=True),  # reports/timings/timings.json (harness.reporting.timings)
}


def document_text(form: str, doc: Any) -> str:
    """The JSON text of a document written in this form (DOCUMENT_FORMS)."""
    try:
        json_form = DOCUMENT_FORMS[form]
    except KeyError:
        raise ValueError(f"unknown document kind {form!r}; known: {', '.join(DOCUMENT_FORMS)}") from None
    return json_form.text(doc)


# The keys of a comparison row (harness.evaluation.comparison.Comparison.as_dict), in the order written;
# every other key of a row is a tag naming the row (its metric, run, ...), written before them.
COMPARISON_FIELDS = ("a", "b", "queries", "mean_a", "mean_b", "difference", "p_value", "p_holm", "p_floor",
                     "monte_carlo", "units", "unit", "method")


@dataclass(frozen=True)
class Comparison:
    """One paired comparison of a document: a against b on the queries both have, the paired interval of
    the difference, the sign-flip p and its family's Holm correction.  `tags` name the row (its metric,
    its run); a field an older document lacks is None."""

    a: str
    b: str
    queries: int | None = None
    mean_a: float | None = None
    mean_b: float | None = None
    difference: Mapping[str, Any] = field(default_factory=dict)  # estimate, ci95 (Interval.as_dict)
    p_value: float | None = None
    p_holm: float | None = None
    p_floor: float | None = None
    monte_carlo: bool | None = None
    units: int | None = None
    unit: str | None = None
    method: str | None = None
    tags: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> "Comparison":
        return cls(**{k: row[k] for k in COMPARISON_FIELDS if k in row},
                   tags={k: v for k, v in row.items() if k not in COMPARISON_FIELDS})

    @property
    def estimate(self) -> float:
        """The difference's point estimate (NaN when the two have no query in common)."""
        value = self.difference.get("estimate")
        return float("nan") if value is None else value

    def tag(self, name: str, default: Any = None) -> Any:
        return self.tags.get(name, default)


@dataclass(frozen=True)
class Document(Mapping):
    """A study's findings: kind, format, config (the study file as loaded, not written), and the JSON
    body, read as a Mapping.  Build it with `Document(kind, body, config)`; nothing changes it after."""

    kind: str
    body: Mapping[str, Any]
    config: Mapping[str, Any] = field(default_factory=dict)
    format: int = FORMAT
    form: str | None = None
    """the DOCUMENT_FORMS entry its JSON is written in (default: the kind's name)"""

    def __post_init__(self) -> None:
        object.__setattr__(self, "body", MappingProxyType(dict(self.body)))
        object.__setattr__(self, "config", MappingProxyType(dict(self.config or {})))

    # the body, read as a mapping: document["cells"], document.get("paired")
    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.body)

    def __len__(self) -> int:
        return len(self.body)

    __hash__ = object.__hash__  # a Mapping is unhashable; a Document is compared by identity

    @property
    def environment(self) -> Mapping[str, Any]:
        """The machine and versions the study ran with (SQLite, sqlite-vec, jieba, model, cores)."""
        return self.body.get("environment") or {}

    @property
    def tables(self) -> dict[str, Any]:
        """The body's tables: each key whose value is a list of rows or a mapping of named lists of rows."""
        def is_rows(value: Any) -> bool:
            return isinstance(value, list) and all(isinstance(row, Mapping) for row in value)

        return {key: value for key, value in self.body.items()
                if is_rows(value) or (isinstance(value, Mapping) and value and all(is_rows(v) for v in value.values()))}

    def comparisons(self, key: str, group: str | None = None) -> tuple[Comparison, ...]:
        """The comparison rows under `key` (a list of rows; `group` picks one list of a mapping of them)."""
        rows = self.body.get(key) or []
        if group is not None:
            rows = rows.get(group) or []
        return tuple(Comparison.from_dict(row) for row in rows)

    def with_body(self, **changes: Any) -> "Document":
        """A copy with these keys of the body set (the study layer's analysis added to a redrawn document)."""
        return Document(self.kind, {**self.body, **changes}, self.config, self.format, self.form)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.body)

    def to_json(self) -> str:
        """The JSON text, byte for byte as the kind has always written it."""
        return document_text(self.form or self.kind, dict(self.body))

    @classmethod
    def from_json(cls, text: str, kind: str | None = None, *, config: Mapping[str, Any] | None = None,
                  form: str | None = None) -> "Document":
        """A document read back from its JSON; `kind` from the JSON's `kind` key when it has one."""
        body = json.loads(text)
        if not isinstance(body, dict):
            raise ValueError("a study document is a JSON object")
        found = body.get("kind") if isinstance(body.get("kind"), str) else None
        if (kind or found) is None:
            raise ValueError("the document names no kind and none was given")
        return cls(kind or found, body, config or {}, form=form)
