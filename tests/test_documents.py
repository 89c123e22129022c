"""The one writer of study documents (harness.reporting.documents): each kind keeps the bytes its own writer
wrote before there was one writer (committed reports are compared byte for byte when regenerated)."""
from __future__ import annotations

import dataclasses
import json
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from harness.reporting.documents import (
    DOCUMENT_FORMS,
    document_text,
    json_value,
    number_or_text,
    rounded,
    write_document,
)
from harness.studies.document import FORMAT, Document

# a document with what the studies put in theirs: non-ASCII text, long floats, numpy numbers, a path, a date
DOC = {"name": "記憶 tokenizers", "score": 0.123456789012, "count": np.int64(3), "mean": np.float64(0.5),
       "rows": [{"b": 1.0, "a": [1, 2.000001234567]}], "file": Path("reports/x.json"), "now": date(2026, 3, 8)}

# kind -> the json.dumps call of the writer it replaces (its module before issue 31), with a trailing newline or not
LEGACY = {
    "results": (dict(ensure_ascii=False, indent=1, default=json_value), ""),  # RunResult.write_json
    "benchmark": (dict(ensure_ascii=False, indent=1, separators=None, default=json_value), ""),  # _write_json
    "benchmark-run": (dict(ensure_ascii=False, indent=None, separators=(",", ":"), default=json_value), ""),
    "abstention": (dict(ensure_ascii=False, separators=(",", ":"), default=json_value), ""),  # of rounded(doc)
    "matrix": (dict(ensure_ascii=False, indent=1, default=str), ""),
    "ablation": (dict(ensure_ascii=False, indent=1, default=str), ""),
    "expansion": (dict(ensure_ascii=False, indent=1, default=number_or_text), ""),
    "language-pairs": (dict(ensure_ascii=False, indent=1), ""),
    "lossless": (dict(ensure_ascii=False, indent=1, default=str), ""),
    "sweep": (dict(ensure_ascii=False, indent=1), ""),
    "scale": (dict(ensure_ascii=False, indent=1), "\n"),
    "conformance": (dict(ensure_ascii=False, indent=1), "\n"),
    "openclaw-home": (dict(ensure_ascii=False, indent=1, default=str), "\n"),
    "openclaw-home-speed": (dict(indent=1), "\n"),
    "judge": (dict(ensure_ascii=False, indent=1), "\n"),
    "eval": (dict(ensure_ascii=False, indent=1), "\n"),
    "statistics": (dict(indent=1), "\n"),
    "timings": (dict(indent=1), "\n"),
    "gate-power": (dict(ensure_ascii=False, indent=1), "\n"),  # new kinds (issue 37): their own form
    "drift": (dict(ensure_ascii=False, indent=1), "\n"),
}


def _plain(doc):
    """DOC with only what JSON holds, for the kinds whose writers never saw numpy values, paths or dates."""
    return json.loads(json.dumps(doc, default=json_value))


@pytest.mark.parametrize("kind", sorted(LEGACY))
def test_each_kind_writes_the_bytes_its_own_writer_wrote(kind, tmp_path):
    options, end = LEGACY[kind]
    doc = DOC if "default" in options else _plain(DOC)
    expected = json.dumps(rounded(doc) if kind == "abstention" else doc, **options) + end
    path = write_document(tmp_path / "sub" / f"{kind}.json", kind, doc)
    assert path.read_bytes() == expected.encode("utf-8")
    assert document_text(kind, doc) == expected
    assert [p.name for p in path.parent.iterdir()] == [f"{kind}.json"]  # no temporary file left behind


def test_every_kind_has_its_legacy_form_checked():
    assert sorted(DOCUMENT_FORMS) == sorted(LEGACY)


def test_an_unknown_kind_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="unknown document kind 'matrx'"):
        write_document(tmp_path / "x.json", "matrx", {})
    assert not (tmp_path / "x.json").exists()


def test_what_json_cannot_hold_is_named():
    with pytest.raises(TypeError, match="not JSON serialisable: set"):
        document_text("results", {"x": {1, 2}})
    assert document_text("matrix", {"x": {1}}) == '{\n "x": "{1}"\n}'  # the matrix writes its text instead


def test_rounding_keeps_six_significant_digits_and_the_structure():
    assert rounded({"a": [0.123456789, 12345678.9, 3], "b": "0.123456789"}) == {"a": [0.123457, 12345700.0, 3],
                                                                                 "b": "0.123456789"}


# --- the Document: what a study's analysis hands its renderer ---------------------------------------------

# committed reports, each read back and written again by Document (kind -> its JSON under reports/)
COMMITTED = {"matrix": "reports/presets/presets.json", "benchmark": "reports/locomo/locomo.json",
             "abstention": "reports/abstention/abstention.json", "lossless": "reports/lossless-claw/lossless.json",
             "expansion": "reports/qmd-expansion/expansion.json", "language-pairs": "reports/locomo-zh/paired/paired.json",
             "ablation": "reports/ablation/ablation.json", "sweep": "reports/sweep/round4/sweep.json"}


@pytest.mark.parametrize("kind", sorted(COMMITTED))
def test_a_committed_document_is_read_and_written_back_byte_for_byte(kind):
    from tests.conftest import ROOT

    text = (ROOT / COMMITTED[kind]).read_text(encoding="utf-8")
    document = Document.from_json(text, kind)
    assert document.kind == kind and document.format == FORMAT
    assert document.to_json() == text


def test_comparison_rows_are_typed_with_their_tags():
    from tests.conftest import ROOT

    document = Document.from_json((ROOT / COMMITTED["matrix"]).read_text(encoding="utf-8"), "matrix")
    metric = next(m for m, rows in document["comparisons"].items() if rows)
    rows = document.comparisons("comparisons", metric)
    raw = document["comparisons"][metric]
    assert [(c.a, c.b, c.queries, c.p_holm, c.tag("run"), c.tag("metric")) for c in rows] == [
        (r["a"], r["b"], r["queries"], r["p_holm"], r["run"], r["metric"]) for r in raw]
    assert "comparisons" in document.tables and "cells" in document.tables


def test_a_document_is_frozen_and_changed_only_by_copy():
    document = Document("matrix", {"name": "m", "cells": []}, {"name": "m"})
    with pytest.raises(TypeError):
        document.body["name"] = "other"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        document.kind = "benchmark"  # type: ignore[misc]
    changed = document.with_body(confounds=[{"run": "r"}])
    assert "confounds" not in document and changed["confounds"] == [{"run": "r"}] and changed.config == {"name": "m"}


def test_a_document_without_a_kind_is_refused_and_its_own_kind_is_read():
    with pytest.raises(ValueError, match="names no kind"):
        Document.from_json('{"name": "x"}')
    assert Document.from_json('{"kind": "plugin-kind", "rows": []}').kind == "plugin-kind"
