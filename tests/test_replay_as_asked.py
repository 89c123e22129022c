"""Replay as asked ([evaluation] replay = "as-asked"): each question is searched at the time it was asked (its
`asked` field), temporal decay ageing dated memories as of then; the one-date figures are reported beside, and
a question that fails only because it is re-asked later is named.  Hash embedder: what is checked is the clock
each question is searched at, not retrieval quality."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import load_experiment
from harness.errors import DataError
from harness.inputs.query_files import load_query_specs

EXPERIMENT = """name = "replay"
preset = "openclaw-2026.09"
[dataset]
name = "workspace"
path = "{ws}"
queries = "{queries}"
[embedder]
name = "hash"
[evaluation]
replay = "{mode}"
now = 2026-06-01
"""

QUERIES = """- id: early
  text: 龙井 绿茶 早餐
  path: memory/2026-01-05.md
  asked: "2026-01-06T09:00:00+08:00"
- id: late
  text: 咖啡 拿铁 早餐
  path: memory/2026-05-30.md
  asked: "2026-05-31T09:00:00+08:00"
- id: undated
  text: 咖啡 拿铁 早餐
  path: memory/2026-05-30.md
"""


def workspace(tmp_path: Path, mode: str) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_text("# 关于我\n\n- 住在杭州。\n", encoding="utf-8")
    (ws / "memory" / "2026-01-05.md").write_text("# 2026-01-05\n\n- 早餐 喝 龙井 绿茶，不喝咖啡。\n", encoding="utf-8")
    (ws / "memory" / "2026-05-30.md").write_text("# 2026-05-30\n\n- 早餐 改喝 咖啡 拿铁。\n", encoding="utf-8")
    (tmp_path / "queries.yaml").write_text(QUERIES, encoding="utf-8")
    path = tmp_path / f"{mode}.toml"
    path.write_text(EXPERIMENT.format(ws=ws.as_posix(), queries=(tmp_path / "queries.yaml").as_posix(), mode=mode),
                    encoding="utf-8")
    return path


def test_each_question_is_searched_at_its_asked_time_and_the_one_date_figures_are_beside(tmp_path, tmp_cache):
    from harness.studies.experiment import run_experiment

    asked = run_experiment(load_experiment(workspace(tmp_path, "as-asked")), cache=tmp_cache, progress=False)
    one = run_experiment(load_experiment(workspace(tmp_path, "one-date")), cache=tmp_cache, progress=False)
    a = asked.per_query.set_index("query_id")
    o = one.per_query.set_index("query_id")
    top = {qid: asked.hits[qid][0] for qid in ("early", "late")}
    assert top["early"]["path"] == "memory/2026-01-05.md" and top["late"]["path"] == "memory/2026-05-30.md"
    # asked the day after it was written, the January note keeps (nearly) its whole score; re-asked on
    # 2026-06-01 (147 days on, half-life 30) it keeps a thirtieth of it and falls under minScore
    assert a.at["early", "passed"] and not o.at["early", "passed"]
    early_one = [h for h in one.hits["early"] if h["path"] == "memory/2026-01-05.md"]
    assert not early_one or early_one[0]["score"] < top["early"]["score"] / 20
    # the other questions are asked (or taken to be asked) near the one date: the same in both modes
    assert a.at["late", "passed"] == o.at["late", "passed"] and a.at["undated", "passed"] == o.at["undated", "passed"]
    replay = asked.summary["replay"]
    assert replay["mode"] == "as-asked" and replay["with_asked_time"] == 2 and replay["questions"] == 3
    assert replay["only_re_asked"] == ["early"] and replay["only_as_asked"] == []
    assert replay["passed_as_asked"] == replay["passed_one_date"] + 1
    assert bool(a.at["early", "passed_one_date"]) is False and a.at["early", "asked"] == "2026-01-06T09:00:00+08:00"
    # every file was written after both questions were asked (the test just wrote them): today's files, counted
    assert a.at["early", "files_changed_since_asked"] == 3 and replay["questions_with_changed_files"] == 2
    note = next(n for n in asked.notes if n.startswith("replay as asked"))
    assert "1 fail only because they are re-asked later: early" in note and "files as they are today" in note
    assert "replay" not in one.summary and "passed_one_date" not in one.per_query.columns


def test_a_bad_asked_time_is_one_line_naming_the_file_and_field(tmp_path):
    bad = tmp_path / "q.yaml"
    bad.write_text("- id: a\n  text: 早餐\n  path: MEMORY.md\n  asked: yesterday\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_query_specs(bad)
    assert "asked" in str(err.value) and "q.yaml" in str(err.value) and ":4" in str(err.value)
