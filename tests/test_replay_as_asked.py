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
    assert any(n.startswith("replay at one date: every question searched at now = 2026-06-01") and
               "though 2 carry the time they were asked" in n for n in one.notes)
    # the failure attribution names it apart: lost at the one date by the stage the one-date run says
    from harness.evaluation.stage_trace import costliest_text

    re_asked = asked.summary["stages"]["only_re_asked"]
    assert re_asked["ids"] == ["early"] and re_asked["by_stage"] == {o.at["early", "lost_at"]: 1}
    assert "1 more query fails only because it is re-asked at 2026-06-01" in costliest_text(asked.summary)
    assert "only_re_asked" not in one.summary["stages"]


def test_a_bad_asked_time_is_one_line_naming_the_file_and_field(tmp_path):
    bad = tmp_path / "q.yaml"
    bad.write_text("- id: a\n  text: 早餐\n  path: MEMORY.md\n  asked: yesterday\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_query_specs(bad)
    assert "asked" in str(err.value) and "q.yaml" in str(err.value) and ":4" in str(err.value)


# --- files as of then: the workspace's git history -------------------------------------------------------------

HISTORY_QUERIES = """- id: early
  text: 龙井 绿茶 早餐
  path: memory/topics.md
  asked: "2026-01-06T09:00:00+08:00"
- id: late
  text: 咖啡 拿铁 早餐
  path: memory/topics.md
  asked: "2026-05-31T09:00:00+08:00"
- id: before
  text: 杭州
  path: MEMORY.md
  asked: "2025-12-01T09:00:00+08:00"
"""


def git(ws: Path, *args: str, when: str | None = None) -> str:
    import os
    import subprocess

    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"}
    if when:
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    return subprocess.run(["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                          env=env, check=True, capture_output=True, text=True).stdout.strip()


def history_workspace(tmp_path: Path, name: str, *, repository: bool = True) -> tuple[Path, Path]:
    """A workspace whose memory/topics.md said 龙井 in January and says 咖啡 today, the 龙井 line having moved to a
    file written in May: as of January, the early question's answer is topics.md; today it is drinks.md."""
    ws = tmp_path / name
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# 关于我\n\n- 住在杭州。\n", encoding="utf-8")
    (ws / "memory" / "topics.md").write_text("# 饮品\n\n- 早餐 喝 龙井 绿茶，不喝咖啡。\n", encoding="utf-8")
    if repository:
        git(ws, "init", "-q")
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "-m", "january", when="2026-01-05T20:00:00+08:00")
    (ws / "memory" / "topics.md").write_text("# 饮品\n\n- 早餐 改喝 咖啡 拿铁。\n", encoding="utf-8")
    (ws / "memory" / "drinks.md").write_text("# 以前\n\n- 以前 早餐 喝 龙井 绿茶。\n", encoding="utf-8")
    if repository:
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "-m", "may", when="2026-05-30T20:00:00+08:00")
    queries = tmp_path / f"{name}.yaml"
    queries.write_text(HISTORY_QUERIES, encoding="utf-8")
    path = tmp_path / f"{name}.toml"
    path.write_text(EXPERIMENT.format(ws=ws.as_posix(), queries=queries.as_posix(), mode="as-asked"), encoding="utf-8")
    return ws, path


def test_a_git_workspace_is_searched_as_of_each_question_and_the_run_says_on_which_files(tmp_path, tmp_cache):
    from harness.studies.experiment import run_experiment

    ws, path = history_workspace(tmp_path, "git")
    january = git(ws, "rev-list", "-1", "HEAD~1")
    run = run_experiment(load_experiment(path), cache=tmp_cache, progress=False)
    rows = run.per_query.set_index("query_id")
    # asked in January: searched on January's commit, where topics.md holds 龙井 and drinks.md does not exist yet
    assert rows.at["early", "files_as_of"].startswith(january[:12])
    assert run.hits["early"][0]["path"] == "memory/topics.md" and "龙井" in run.hits["early"][0]["snippet"]
    assert all(h["path"] != "memory/drinks.md" for h in run.hits["early"]) and rows.at["early", "passed"]
    assert rows.at["early", "files_changed_since_asked"] == 2  # topics.md rewritten, drinks.md added since
    # asked after the last commit, nothing uncommitted: its files as of then are today's
    assert rows.at["late", "files_as_of"] == "as asked (unchanged since)"
    # asked before the first commit: history cannot say, today's files, and the reason is given
    assert rows.at["before", "files_as_of"] == "today"
    replay = run.summary["replay"]
    assert replay["files_as_of_then"] == 2 and replay["files_today"] == 1
    assert replay["only_re_asked"] == ["early"]  # re-asked today, on today's files, drinks.md answers it first
    assert replay["files_today_because"] == {"asked before the workspace's first commit": 1}
    assert replay["files"].startswith("as of each question where the workspace's git history allows it: 2 of 3")
    note = next(n for n in run.notes if n.startswith("replay as asked"))
    assert "1: asked before the workspace's first commit" in note
    # the runs the metrics come from hold the January search under its commit, apart from today's chunk ids
    assert all(c.startswith(f"@{january[:12]}/") for c in run.runs.chunk_run["early"])
    assert not any(c.startswith("@") for c in run.runs.chunk_run["late"])

    # the same workspace without its history: every question on today's files, where drinks.md now answers
    # the early question first, and the run says why
    _, plain = history_workspace(tmp_path, "plain", repository=False)
    today = run_experiment(load_experiment(plain), cache=tmp_cache, progress=False)
    t = today.per_query.set_index("query_id")
    assert set(t["files_as_of"]) == {"today"} and today.hits["early"][0]["path"] == "memory/drinks.md"
    assert not t.at["early", "passed"]
    assert today.summary["replay"]["files"] == "today's (the workspace is not in a git repository)"
    assert "files as they are today (the workspace is not in a git repository)" in \
        next(n for n in today.notes if n.startswith("replay as asked"))


def test_an_uncommitted_edit_made_after_a_question_sends_it_to_todays_files(tmp_path, tmp_cache):
    import os

    from harness.studies.experiment import run_experiment

    ws, path = history_workspace(tmp_path, "dirty")
    # edited now (after every question), not committed: what the late question saw is unknown
    (ws / "MEMORY.md").write_text("# 关于我\n\n- 住在杭州，喝咖啡。\n", encoding="utf-8")
    january = 1767614400  # 2026-01-05T12:00:00Z: an uncommitted file written before the early question
    (ws / "memory" / "old.md").write_text("# 旧\n\n- 一月 写的 笔记。\n", encoding="utf-8")
    os.utime(ws / "memory" / "old.md", (january, january))
    run = run_experiment(load_experiment(path), cache=tmp_cache, progress=False)
    rows = run.per_query.set_index("query_id")
    because = run.summary["replay"]["files_today_because"]
    assert rows.at["late", "files_as_of"] == "today" and rows.at["early", "files_as_of"] == "today"
    assert because == {"an indexed file has uncommitted changes made after it was asked": 2,
                       "asked before the workspace's first commit": 1}
    os.utime(ws / "MEMORY.md", (january, january))  # the same edit, made before the early question
    again = run_experiment(load_experiment(path), cache=tmp_cache, progress=False)
    rows = again.per_query.set_index("query_id")
    # the uncommitted files written by then are part of the files as of then: January's commit with today's
    # MEMORY.md and old.md differs from today in topics.md and drinks.md only; the late question's files are today's
    assert rows.at["early", "files_as_of"].startswith(git(ws, "rev-list", "-1", "HEAD~1")[:12])
    assert rows.at["early", "files_changed_since_asked"] == 2
    assert rows.at["late", "files_as_of"] == "as asked (unchanged since)"


def test_a_workspace_inside_another_repository_is_not_read_as_its_history(tmp_path):
    """A workspace kept inside a repository of other files (a project checkout, as the example home is): those
    commits say when other files were committed, so its questions are searched on today's files, said why."""
    from harness.inputs.workspace import WorkspaceDataset

    outer = tmp_path / "outer"
    outer.mkdir()
    ws, _ = history_workspace(outer, "ws", repository=False)
    git(outer, "init", "-q")
    git(outer, "add", "-A")
    git(outer, "commit", "-q", "-m", "everything", when="2025-06-01T00:00:00+00:00")
    data = WorkspaceDataset(path=ws, queries=outer / "ws.yaml")
    plan, parts = data.files_as_asked({q.id: q.extra["asked"] for q in data.queries()})
    assert parts == [] and plan.snapshots == []
    assert plan.today == {q: "the workspace is not a git repository of its own: it lies inside another one"
                          for q in ("early", "late", "before")}


def test_an_implicit_judgment_made_on_an_earlier_version_is_read_against_the_files_it_was_made_on(tmp_path, tmp_cache):
    """The agent read line 3 of memory/topics.md in January (its anchor: the text it saw); the line has been
    rewritten since.  On today's files the judgment is dropped (never applied to the new text) and the question
    is not evaluated; as asked, on January's commit, the judgment holds and the question is evaluated, named
    as evaluated as of then only (no one-date figure)."""
    from harness.inputs.anchors import anchor_of
    from harness.studies.experiment import run_experiment

    ws, _ = history_workspace(tmp_path, "judged")
    anchor = anchor_of("- 早餐 喝 龙井 绿茶，不喝咖啡。")
    queries = tmp_path / "judged-queries.yaml"
    queries.write_text(f"""- id: tea
  text: 龙井 绿茶 早餐
  asked: "2026-01-06T09:00:00+08:00"
  judged:
    - {{path: memory/topics.md, lines: [3, 3], grade: 1, by: implicit, anchor: "{anchor}"}}
- id: coffee
  text: 咖啡 拿铁 早餐
  asked: "2026-05-31T09:00:00+08:00"
  judged:
    - {{path: memory/topics.md, lines: [3, 3], grade: 1, by: implicit, anchor: "{anchor_of('- 早餐 改喝 咖啡 拿铁。')}"}}
""", encoding="utf-8")

    def run(mode: str):
        path = tmp_path / f"judged-{mode}.toml"
        path.write_text(EXPERIMENT.format(ws=ws.as_posix(), queries=queries.as_posix(), mode=mode).replace(
                            f'queries = "{queries.as_posix()}"', f'queries = "{queries.as_posix()}"\njudgments = "implicit"'),
                        encoding="utf-8")
        return run_experiment(load_experiment(path), cache=tmp_cache, progress=False)

    one = run("one-date")
    assert list(one.per_query["query_id"]) == ["coffee"]  # tea's judgment does not hold on today's text
    assert any("lines 3-3 is dropped: the file changed since it was judged" in n for n in one.dataset["notes"])
    asked = run("as-asked")
    rows = asked.per_query.set_index("query_id")
    assert list(rows.index) == ["coffee", "tea"]
    assert rows.at["tea", "files_as_of"].startswith(git(ws, "rev-list", "-1", "HEAD~1")[:12])
    assert rows.at["tea", "passed"] and rows.at["tea", "passed_one_date"] is None
    assert rows.at["tea", "asked"] == "2026-01-06T09:00:00+08:00"
    assert asked.hits["tea"][0]["path"] == "memory/topics.md" and "龙井" in asked.hits["tea"][0]["snippet"]
    replay = asked.summary["replay"]
    assert replay["only_as_of_then"] == ["tea"] and replay["only_re_asked"] == []
    assert replay["questions"] == 2 and replay["files_as_of_then"] == 2
    assert "1 evaluated on the files as of then only" in next(n for n in asked.notes if n.startswith("replay as asked"))
