"""A study's notes quote no figure by hand: every measured figure in the notes of experiments/*.toml is an
expression over the study's document (harness.reporting.notes), so it is the figure of the report it
stands in, and the notes of each study the Makefile writes into reports/ render against that report."""
from __future__ import annotations

import json
import re
import tomllib

import pytest

from harness.reporting.docs import lint
from harness.reporting.notes import p_is, render_notes
from tests.conftest import ROOT

MAKE_OUT = re.compile(r"\$\(HARNESS\) (matrix|benchmark|abstention|lossless|expansion) (experiments/\S+\.toml) "
                      r"--out (reports/\S+)")
DOCUMENT = {"matrix": "{name}.json", "benchmark": "{name}.json", "abstention": "{name}.json",
            "lossless": "lossless.json", "expansion": "expansion.json"}


def study_files():
    return sorted(p for p in (ROOT / "experiments").rglob("*.toml") if "notes" in tomllib.loads(p.read_text("utf-8")))


@pytest.mark.parametrize("path", study_files(), ids=lambda p: p.name)
def test_notes_type_no_figure(path):
    notes = tomllib.loads(path.read_text(encoding="utf-8"))["notes"]
    assert lint(notes, path.relative_to(ROOT).as_posix()) == []


@pytest.mark.parametrize("kind,spec,out", MAKE_OUT.findall((ROOT / "Makefile").read_text(encoding="utf-8")),
                         ids=lambda x: str(x).split("/")[-1])
def test_notes_render_against_the_committed_report(kind, spec, out):
    study = tomllib.loads((ROOT / spec).read_text(encoding="utf-8"))
    document = ROOT / out / DOCUMENT[kind].format(name=study.get("name", ""))
    if not study.get("notes") or not document.exists():
        pytest.skip(f"{spec}: no notes, or {document.relative_to(ROOT)} is not committed")
    rendered = render_notes(study["notes"], json.loads(document.read_text(encoding="utf-8")))
    assert rendered.strip() and "{{" not in rendered


def test_a_typed_figure_is_caught_and_an_expression_renders():
    doc = {"runs": [{"slug": "a", "summary": {"suite": {"recall@5": 0.8491, "recall@5_ci95": [0.83, 0.866]}}}]}
    assert lint("recall 0.849 [0.830, 0.866]")
    text = 'recall {{ ci(run("a").summary.suite, "recall@5") }} at minScore {{ literal("0.35") }}'
    assert lint(text) == [] and render_notes(text, doc) == "recall 0.849 [0.830, 0.866] at minScore 0.35"
    with pytest.raises(ValueError, match="do not render"):
        render_notes('{{ run("missing").summary }}', doc)


def test_p_is_says_a_floor_as_a_bound():
    assert p_is("0.0323") == "p = 0.0323" and p_is("< 0.0001") == "p < 0.0001"
