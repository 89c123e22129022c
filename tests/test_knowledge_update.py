"""The knowledge-update track (issue 40): its data, its layout and the current-above-stale metrics."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import DataError
from harness.evaluation.knowledge_update import update_columns
from harness.inputs.layout import DATASETS

ROOT = Path(__file__).resolve().parents[1]


def test_update_columns():
    docs = {"a": frozenset({"new"}), "b": frozenset({"old"}), "c": frozenset({"new", "old"}), "x": frozenset()}
    assert update_columns(["a", "b"], ["new"], ["old"], docs, [1, 6]) == {
        "current_above_stale@1": 1.0, "stale_in_top@1": 0.0, "current_above_stale@6": 1.0, "stale_in_top@6": 1.0}
    assert update_columns(["b", "a"], ["new"], ["old"], docs, [6])["current_above_stale@6"] == 0.0
    assert update_columns(["x", "b", "a"], ["new"], ["old"], docs, [1])["current_above_stale@1"] == 0.0
    assert update_columns(["c"], ["new"], ["old"], docs, [6])["current_above_stale@6"] == 0.0  # a tie is not above
    assert update_columns(["x"], ["new"], ["old"], docs, [6]) == {"current_above_stale@6": 0.0, "stale_in_top@6": 0.0}
    assert update_columns(["a"], ["new"], [], docs, [6]) == {"current_above_stale@6": None, "stale_in_top@6": None}


def test_dataset_marks_stale_notes_and_renders_dated_logs():
    data = DATASETS.create("knowledge-update", {})
    queries = data.queries()
    notes = {n["id"]: n for n in data.notes()}
    updates = [q for q in queries if q.extra["type"] == "update"]
    assert updates and all(q.extra["stale"] for q in updates)
    for q in updates:  # the current note is later than the one it supersedes
        assert all(notes[c]["date"] > notes[s]["date"] for c in q.relevant for s in q.extra["stale"])
    assert {q.extra["lang"] for q in queries} == {"zh", "en"}
    assert all(not q.extra["stale"] for q in queries if q.extra["type"] == "stable")
    assert DATASETS.create("knowledge-update", {"lang": "en", "types": "update"}).queries() == \
        [q for q in updates if q.extra["lang"] == "en"]
    layout = data.render()
    try:
        assert all(p.startswith("memory/2026-") for p in layout.files)
        some = updates[0]
        (current,) = some.relevant
        path = f"memory/{notes[current]['date']}.md"
        lines = layout.read(path).split("\n")
        line = next(i for i, text in enumerate(lines, start=1) if notes[current]["text"] in text)
        assert current in layout.docs_overlapping(path, line, line)
    finally:
        layout.cleanup()


def test_bad_question_names_file_line_and_field(tmp_path):
    (tmp_path / "notes.jsonl").write_text('{"id": "n1", "date": "2026-01-01", "time": "09:00", "text": "x"}\n',
                                          encoding="utf-8")
    (tmp_path / "queries.jsonl").write_text('{"id": "q", "text": "t", "lang": "zh", "type": "update", '
                                            '"relevant": ["n1"], "stale": ["n9"]}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"queries.jsonl.*1.*stale"):
        DATASETS.create("knowledge-update", {"path": str(tmp_path)}).queries()
    (tmp_path / "notes.jsonl").write_text('{"id": "n1", "date": "2026-02-30", "time": "09:00", "text": "x"}\n',
                                          encoding="utf-8")
    with pytest.raises(DataError, match=r"notes.jsonl.*1.*date"):
        DATASETS.create("knowledge-update", {"path": str(tmp_path)}).notes()
