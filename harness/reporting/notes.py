"""A study's notes (the "Reading the numbers" of its report) rendered against the study's own document, so
that a figure they quote is the figure the report holds and cannot drift when the report is regenerated.

Notes are written in the study file (`notes = '''...'''` in experiments/*.toml) as plain Markdown; a
figure is an expression over `doc`, the document the report is drawn from (its JSON), with the helpers
the docs use (harness.reporting.figures):

    {% set r = run("openclaw-2026.08-turns") %}           a benchmark run by its slug (benchmark docs)
    recall_any@10 {{ ci(r.summary.suite, "recall_any@10") }}   0.307 [0.266, 0.344]
    {{ ci(cell(doc, "locomo", "jieba"), "recall_any@10") }}   a matrix cell's row (matrix docs)
    {{ literal("0.35") }}                                 a configuration value, not a measurement
    {{ p_is(p(row)) }}  {{ p_is(p(row, "p_holm"), "Holm p") }}   p = 0.0323, or p < 0.0001 at a test's floor

Notes without an expression render as written.  tests/test_notes.py renders every study file's notes
against its committed report and lints them for typed figures, as tests/test_docs.py does the docs.
"""
from __future__ import annotations

from typing import Any, Mapping

import jinja2
from harness.reporting import figures as docs


def p_is(text: Any, name: str = "p") -> str:
    """A p-value's text (p(row), pv(...)) as prose says it: "p = 0.0323", and "p < 0.0001" at the test's floor."""
    text = str(text)
    return f"{name} {text}" if text.startswith(("<", ">")) else f"{name} = {text}"


def render_notes(text: str | None, doc: Mapping[str, Any]) -> str:
    """The notes with every expression evaluated against `doc`; "" for no notes.  An expression that does
    not resolve (a run the document lacks) is an error naming the notes, not an empty string."""
    if not text:
        return ""
    if "{{" not in text and "{%" not in text:
        return text

    doc = dict(doc)  # a Document's body as a plain dict: `doc.values` in a note is its key, not Mapping.values
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True,
                             extensions=["jinja2.ext.do"])
    helpers = {"f": docs.f, "sf": docs.sf, "ci": docs.ci, "dci": docs.dci, "interval": docs.interval,
               "pct": docs.pct, "p": docs.p, "pv": docs.pv, "n": docs.n, "frac": docs.frac, "literal": docs.literal,
               "finite": docs.finite, "p_is": p_is}
    env.filters.update(helpers)
    env.globals.update(helpers, doc=doc, find=docs.find, select=docs.select, cell=docs.cell, values=docs.values,
                       run=lambda slug: docs.find(doc.get("runs", []), slug=slug))
    try:
        return env.from_string(text).render()
    except (jinja2.TemplateError, LookupError, TypeError, ValueError) as exc:
        raise ValueError(f"the study's notes do not render against its document: {exc}") from exc
