"""`harness judge --import FILE` (harness.judging.grades): a grades file applied to a pool, and what a wrong
file says.  The pool here is made by hand (two queries, three chunks); the example installation's pool graded by
the command is in tests/test_openclaw_home.py."""
from __future__ import annotations

import pytest

from harness.errors import DataError
from harness.judging.grades import apply_grades, grader_name, load_grades
from harness.judging.pool import Pool, PoolItem, PoolQuery
from harness.judging.store import LabelStore


def pool() -> Pool:
    items = [PoolItem("MEMORY.md", 1, 4, "a"), PoolItem("memory/2026-01-12.md", 1, 6, "b"),
             PoolItem("memory/2026-01-12.md", 7, 9, "c")]
    queries = {"t1": PoolQuery("t1", "Atlas  kickoff Decision", "experiment.toml", "tuning", items),
               "t2": PoolQuery("t2", "张磊 借书", "experiment.toml", "tuning", items[:1]),
               "h1": PoolQuery("h1", "not in the file", "holdout.toml", "held-out", items[:2])}
    return Pool(["experiment.toml"], 10, [], queries)


def test_a_files_grade_applies_to_each_pooled_chunk_of_it_and_the_rest_get_zero(tmp_path):
    grades = tmp_path / "grades.yaml"
    grades.write_text('"atlas kickoff decision": {memory/2026-01-12.md: 3}\n"张磊 借书": {MEMORY.md: 2}\n'
                      '"never pooled": {MEMORY.md: 1}\n', encoding="utf-8")
    store = LabelStore(tmp_path / "labels.sqlite")
    counts = apply_grades(pool(), store, grades)
    assert counts == {"graded": 4, "queries": 2, "unlisted": 1, "unmatched": 1}
    got = {(g.query_id, g.path, g.start, g.end): (g.grade, g.judge) for g in store.grades()}
    judge = grader_name(grades)
    assert got == {("t1", "MEMORY.md", 1, 4): (0, judge), ("t1", "memory/2026-01-12.md", 1, 6): (3, judge),
                   ("t1", "memory/2026-01-12.md", 7, 9): (3, judge), ("t2", "MEMORY.md", 1, 4): (2, judge)}
    assert apply_grades(pool(), store, grades) == counts  # importing again changes nothing
    assert len(list(store.grades())) == 4


@pytest.mark.parametrize("text, line, words", [
    ('"q": {MEMORY.md: 4}\n', 1, "0, 1, 2 or 3"),
    ('"q": {MEMORY.md: 2}\n"r": {MEMORY.md: high}\n', 2, "0, 1, 2 or 3"),
    ('"q": [MEMORY.md]\n', 1, "{file: grade"),
    ("- q\n", 1, "a mapping"),
    ('"Q ": {MEMORY.md: 1}\n"q": {MEMORY.md: 2}\n', 2, "listed twice"),
    ('"q": {MEMORY.md: 1\n', None, "not valid YAML"),
])
def test_a_wrong_grades_file_is_one_error_naming_the_line(tmp_path, text, line, words):
    grades = tmp_path / "grades.yaml"
    grades.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=words) as err:
        load_grades(grades)
    assert str(err.value).startswith(str(grades) + (f":{line}:" if line else ""))
