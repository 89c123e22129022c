"""The one writer of a study's JSON document: `write_document(path, kind, doc)`.

Every report kind keeps the exact bytes it has always had (reports are compared byte for byte, and the
committed ones must not change when they are regenerated), so each kind names its JSON form here, once:
indentation, compact separators, how a value JSON cannot hold is written (numpy numbers, paths, dates),
numbers rounded to 6 significant digits, a trailing newline.  What goes into a document (config,
environment, versions, core count) is the study's own: the writer adds nothing to it.

Writing is atomic (a temporary file and a rename: a crash never leaves half a document) and a full disk
is an error naming the folder and the space needed (harness.text_files.write_text_atomic).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Callable

import numpy as np

from harness.text_files import write_text_atomic


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
    "openclaw-home": JsonForm(default=str, newline=True),
    "openclaw-home-speed": JsonForm(ascii=True, newline=True),
    "judge": JsonForm(newline=True),  # harness judge: judge/judge.json
    "statistics": JsonForm(ascii=True, newline=True),  # the statistics' coverage check (studies/coverage.py)
    "gate-power": JsonForm(newline=True),  # the gate rules on the same queries (harness/gate/power.py)
    "drift": JsonForm(newline=True),  # the embedding across thread counts (studies/drift.py)
    "timings": JsonForm(ascii=True, newline=True),  # reports/timings/timings.json (harness.reporting.timings)
}


def document_text(kind: str, doc: Any) -> str:
    """The JSON text of a document of this kind, as write_document writes it."""
    try:
        form = DOCUMENT_FORMS[kind]
    except KeyError:
        raise ValueError(f"unknown document kind {kind!r}; known: {', '.join(DOCUMENT_FORMS)}") from None
    return form.text(doc)


def write_document(path: Path | str, kind: str, doc: Any) -> Path:
    """`doc` as JSON of its kind at `path` (the folder made if needed), atomically; returns the path."""
    path = Path(path)
    text = document_text(kind, doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, text)


def write_results(result: Any, path: Path | str) -> Path:
    """One run's results.json (harness.studies.experiment.RunResult.to_dict), as `harness run` writes it."""
    # atomic: a crash never leaves a half-written results file; a full disk is named with the size needed
    return write_document(path, "results", result.to_dict())
