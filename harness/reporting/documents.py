"""The one writer of a study's JSON document: `write_document(path, kind, doc)`, and
`write_study_document(path, document)` for a harness.studies.document.Document.

Every report kind keeps the exact bytes it has always had (reports are compared byte for byte, and the
committed ones must not change when they are regenerated), so each kind names its JSON form once
(harness.studies.document.DOCUMENT_FORMS): indentation, compact separators, how a value JSON cannot hold is written (numpy numbers, paths, dates),
numbers rounded to 6 significant digits, a trailing newline.  What goes into a document (config,
environment, versions, core count) is the study's own: the writer adds nothing to it.

Writing is atomic (a temporary file and a rename: a crash never leaves half a document) and a full disk
is an error naming the folder and the space needed (harness.text_files.write_text_atomic).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.studies.document import (  # noqa: F401  (the forms are the Document's; re-exported for writers)
    DOCUMENT_FORMS,
    Document,
    JsonForm,
    document_text,
    json_value,
    number_or_text,
    rounded,
)
from harness.text_files import write_text_atomic


def write_document(path: Path | str, kind: str, doc: Any) -> Path:
    """`doc` as JSON of its kind at `path` (the folder made if needed), atomically; returns the path."""
    path = Path(path)
    text = document_text(kind, doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, text)


def write_study_document(path: Path | str, document: Document) -> Path:
    """A study's Document as its JSON (Document.to_json) at `path`, atomically; returns the path."""
    path = Path(path)
    text = document.to_json()
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, text)


def write_results(result: Any, path: Path | str) -> Path:
    """One run's results.json (harness.studies.experiment.RunResult.to_dict), as `harness run` writes it."""
    # atomic: a crash never leaves a half-written results file; a full disk is named with the size needed
    return write_document(path, "results", result.to_dict())
