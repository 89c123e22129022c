"""Issue 38's classes, one test each (every one fails on 45dd48a): numbers that are not finite or out of range
where a number is read (transcripts, openclaw.json, the index's meta and rows), zoned beside unzoned times, strings
Python cannot encode, ${VAR} and SecretRefs in openclaw.json, a loopback provider's inline key, init --force's own
header, the gate matching queries by id only, LongMemEval evidence outside the haystack, mined queries rewritten,
the quadratic citation pattern, a study of a million cells, --redact on the console table."""
from __future__ import annotations

import json
import re
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.bundled import REPOSITORY
from harness.cli import app
from harness.errors import DataError
from harness.inputs.openclaw_config import read_openclaw_config
from harness.inputs.openclaw_home import locate
from harness.inputs.openclaw_index import MemoryIndex
from harness.inputs.openclaw_sessions import (
    ReadStats,
    cited_paths,
    read_jsonl_session,
    read_sessions,
)
from harness.inputs.session_mining import mine

EXAMPLE = REPOSITORY / "datasets" / "example-openclaw-home"
runner = CliRunner()


def transcript(path: Path, entries: list[dict | str]) -> Path:
    head = {"type": "session", "version": 3, "id": path.stem, "timestamp": "2026-03-02T10:15:07.900Z"}
    lines = [json.dumps(head)] + [e if isinstance(e, str) else json.dumps(e, ensure_ascii=False) for e in entries]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def search(query: str, when: object = "2026-03-02T10:16:00Z", call_id: str = "c1", **args: object) -> dict:
    return {"type": "message", "timestamp": when, "message": {"role": "assistant", "content": [
        {"type": "toolCall", "id": call_id, "name": "memory_search", "arguments": {"query": query, **args}}]}}


def user(text: str = "hi", when: object = "2026-03-02T10:15:59Z") -> dict:
    return {"type": "message", "timestamp": when, "message": {"role": "user", "content": text}}


# --- transcripts ---------------------------------------------------------------------------------------------


def test_numbers_that_are_not_finite_or_out_of_range_in_a_transcript_are_read_as_missing(tmp_path):
    raw = ['{"type":"message","timestamp":1e999,"message":{"role":"user","content":"q"}}',
           '{"type":"message","timestamp":NaN,"message":{"role":"assistant","content":[{"type":"toolCall","id":"a",'
           '"name":"memory_search","arguments":{"query":"天气预报怎么样","maxResults":Infinity,"minScore":NaN}}]}}',
           '{"type":"message","timestamp":99999999999999999999,"message":{"role":"toolResult","toolCallId":"a",'
           '"content":[{"type":"text","text":"{\\"results\\":[{\\"path\\":\\"MEMORY.md\\",\\"startLine\\":1e400,'
           '\\"endLine\\":-Infinity,\\"score\\":NaN},{\\"path\\":\\"MEMORY.md\\",\\"startLine\\":1,\\"endLine\\":3}]}"}]}}',
           json.dumps(search("会议室在哪里", call_id="b", **{"maxResults": 1e300}) | {"timestamp": -1e308}),
           json.dumps({"type": "message", "message": {"role": "assistant", "content": [
               {"type": "toolCall", "id": "g", "name": "memory_get", "arguments": {"path": "MEMORY.md",
                                                                                   "from": 1e308, "lines": 2**70}}]}})]
    stats = ReadStats()
    session = read_jsonl_session(transcript(tmp_path / "s.jsonl", raw), stats)
    assert [c.query for c in session.searches] == ["天气预报怎么样", "会议室在哪里"]
    assert session.searches[0].max_results is None and session.searches[0].min_score is None
    assert [(r.start, r.end) for r in session.searches[0].results] == [(1, 3)]  # the row of no real lines is left
    assert session.gets[0].start is None and session.gets[0].lines is None
    mining = mine([session], stats)
    assert {q.text for q in mining.queries} == {"天气预报怎么样", "会议室在哪里"}


def test_times_with_and_without_a_zone_in_one_installation_are_mined(tmp_path):
    first = transcript(tmp_path / "a.jsonl", [user(when="2026-03-02T10:15:59"), search("项目的截止日期是哪天",
                                                                                        when="2026-03-02T10:16:00")])
    second = transcript(tmp_path / "b.jsonl", [user(), search("报销流程需要哪些材料", when="2026-03-03T09:00:00+08:00")])
    stats = ReadStats()
    mining = mine(read_sessions([first, second], None, stats), stats)
    assert len(mining.queries) == 2
    assert all(q.first.tzinfo is not None for q in mining.queries)


def test_a_lone_surrogate_in_a_transcript_is_a_skipped_line_and_the_queries_can_be_written(tmp_path):
    path = transcript(tmp_path / "s.jsonl", [user(), '{"type":"message","message":{"role":"assistant","content":['
                                             '{"type":"toolCall","id":"x","name":"memory_search","arguments":'
                                             '{"query":"bad \\ud800 text"}}]}}', search("正常的问题是什么")])
    stats = ReadStats()
    mining = mine(read_sessions([path], None, stats), stats)
    assert [q.text for q in mining.queries] == ["正常的问题是什么"]
    assert stats.bad_lines == 1 and "surrogate" in stats.bad_where[0]
    for q in mining.queries:
        q.text.encode("utf-8")


OLD_CITED = re.compile(r"((?:[\w.\-一-鿿]+/)*[\w.\-一-鿿]+\.md)(?:#L(\d+)(?:-L(\d+))?)?")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="am.d/ -#L1-2x中_", max_size=24))
def test_the_linear_citation_finder_finds_what_the_old_pattern_found(text):
    old = [(m[1], int(m[2]) if m[2] else None, int(m[3]) if m[3] else (int(m[2]) if m[2] else None))
           for m in OLD_CITED.finditer(text)]
    assert list(cited_paths(text)) == old


def test_a_long_unbroken_token_in_an_assistant_reply_is_read_in_linear_time(tmp_path):
    blob = "A" * 40_000  # the old pattern took about 40,000^2 / 2 steps here, over 10 s (minutes at 200 KB)
    reply = {"type": "message", "message": {"role": "assistant", "content": [
        {"type": "text", "text": f"see memory/2026-03-01.md#L2-L4 and {blob} and {'x/' * 20_000}"}]}}
    path = transcript(tmp_path / "s.jsonl", [user(), search("上周的会议记录"), reply])
    start = time.perf_counter()
    session = read_jsonl_session(path, ReadStats())
    assert time.perf_counter() - start < 2.0
    assert [(c.path, c.start, c.end) for c in session.citations] == [("memory/2026-03-01.md", 2, 4)]


# --- openclaw.json: ${VAR}, SecretRefs, numbers ---------------------------------------------------------------


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "openclaw.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_env_substitution_in_openclaw_json_is_resolved_as_openclaw_resolves_it(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBED_URL", "http://127.0.0.1:8750/v1")
    monkeypatch.setenv("EMBED_MODEL", "e5-small")
    path = config_file(tmp_path, '{agents: {defaults: {memorySearch: {model: "${EMBED_MODEL}", remote: {baseUrl: '
                                 '"${EMBED_URL}"}, extraPaths: ["notes/$${EMBED_MODEL}", "$lower/${lower}"]}}}}')
    settings = read_openclaw_config(path)
    assert settings.embedding == {"model": "e5-small", "base_url": "http://127.0.0.1:8750/v1"}
    assert [e.path for e in settings.extra_paths] == ["notes/${EMBED_MODEL}", "$lower/${lower}"]


def test_a_variable_missing_where_the_harness_reads_it_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.delenv("EMBED_URL", raising=False)
    monkeypatch.delenv("TELEGRAM_TOKEN", raising=False)
    path = config_file(tmp_path, '{channels: {telegram: {token: "${TELEGRAM_TOKEN}"}}, agents: {defaults: '
                                 '{memorySearch: {remote: {baseUrl: "${EMBED_URL}"}}}}}')
    with pytest.raises(DataError) as err:
        read_openclaw_config(path)
    assert "agents.defaults.memorySearch.remote.baseUrl" in str(err.value) and "EMBED_URL" in str(err.value)
    path.write_text('{channels: {telegram: {token: "${TELEGRAM_TOKEN}"}}}', encoding="utf-8")
    read_openclaw_config(path)  # a part the harness never reads: left alone


def test_a_secret_ref_where_a_plain_string_is_read_is_refused_and_never_pasted(tmp_path):
    path = config_file(tmp_path, json.dumps({"agents": {"defaults": {"memorySearch": {"remote": {
        "baseUrl": {"source": "env", "provider": "default", "id": "EMBED_URL"}}}}}}))
    with pytest.raises(DataError, match=r"remote\.baseUrl.*SecretRef"):
        read_openclaw_config(path)
    home = tmp_path / "home"
    home.mkdir()
    (home / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"workspace": {
        "source": "file", "provider": "vault", "id": "/ws"}}}}), encoding="utf-8")
    with pytest.raises(DataError, match=r"agents\.defaults\.workspace.*SecretRef"):
        locate(home)


def test_a_workspace_given_through_a_variable_is_the_folder_it_names(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("MY_WS", str(tmp_path / "elsewhere"))
    (home / "openclaw.json").write_text('{agents: {defaults: {workspace: "${MY_WS}"}}}', encoding="utf-8")
    assert locate(home).workspace == tmp_path / "elsewhere"


@pytest.mark.parametrize("text, field", [('{agents: {defaults: {workspace: 1e999}}}', "agents.defaults.workspace"),
                                         ('{agents: {list: [{id: "main", workspace: NaN}]}}', "agents.list[0].workspace"),
                                         ('{"x": ' + "[" * 5000 + "]" * 5000 + "}", None)])
def test_openclaw_json_as_an_installation_is_read_with_the_configs_bounds(tmp_path, text, field):
    """locate() read openclaw.json with its own unbounded JSON5 parse: a workspace that is a number was ignored for
    the default folder, and nesting past Python's recursion limit was an internal error."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "openclaw.json").write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as err:
        locate(home)
    assert (field or "nested") in str(err.value)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", "1e308", "12345678901234567890123"])
def test_numbers_in_openclaw_json_that_are_not_finite_or_out_of_range_are_one_line(tmp_path, value):
    """(a guard: read_openclaw_config refused these before issue 38; locate() and init now read through it)"""
    path = config_file(tmp_path, '{agents: {defaults: {memorySearch: {query: {maxResults: %s}, chunking: '
                                 '{tokens: 400}}}}}' % value)
    with pytest.raises(DataError, match=r"query\.maxResults"):
        read_openclaw_config(path)


# --- init --openclaw-home: the provider's key, --force -----------------------------------------------------------


def test_a_loopback_providers_inline_key_is_dropped_with_a_note_and_an_env_reference_is_followed(tmp_path):
    from harness.inputs.home_init import provider_table

    with MemoryIndex(EXAMPLE / "memory" / "main.sqlite") as index:
        config = json.loads((EXAMPLE / "openclaw.json").read_text(encoding="utf-8"))
        table, notes = provider_table(index, config, "main")
        assert "api_key_env" not in table
        assert any("loopback provider" in n and "never copies it" in n for n in notes)
        remote = config["agents"]["defaults"]["memorySearch"]["remote"]
        remote["baseUrl"] = "https://embeddings.example/v1"
        remote["apiKey"] = {"source": "env", "provider": "default", "id": "MY_EMBED_KEY"}
        table, notes = provider_table(index, config, "main")
        assert table["api_key_env"] == "MY_EMBED_KEY" and any("$MY_EMBED_KEY" in n for n in notes)
        remote["apiKey"] = {"source": "exec", "provider": "op", "id": "embed"}
        table, notes = provider_table(index, config, "main")
        assert table["api_key_env"] == "OPENAI_API_KEY" and any("exec SecretRef" in n for n in notes)


def test_init_force_replaces_its_own_files_and_still_keeps_explicit_labels(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    home = tmp_path / ".openclaw"
    shutil.copytree(EXAMPLE, home)
    out = tmp_path / "evals"
    args = ["init", "--openclaw-home", str(home), "--out", str(out), "--no-index-vectors"]
    assert runner.invoke(app, args).exit_code == 0
    again = runner.invoke(app, args + ["--force"])
    assert again.exit_code == 0, again.output
    queries = out / "queries.yaml"
    text = queries.read_text(encoding="utf-8")
    labelled = text.replace("grade: 1, by: implicit", "grade: 1, by: explicit", 1)  # a grade made in the page
    assert labelled != text
    queries.write_text(labelled, encoding="utf-8")
    refused = runner.invoke(app, args + ["--force"])
    assert refused.exit_code == 2 and "holds judgments made with `harness judge`" in refused.output
    assert queries.read_text(encoding="utf-8") == labelled


def test_mined_queries_keep_the_text_the_agent_sent_and_say_what_was_merged(tmp_path):
    from harness.inputs.home_init import queries_yaml

    path = transcript(tmp_path / "s.jsonl", [user(), search("“报销流程是什么？”", call_id="a"),
                                             search("报销流程是什么", call_id="b"), search("报销流程是什么", call_id="c")])
    stats = ReadStats()
    mining = mine(read_sessions([path], None, stats), stats)
    (q,) = mining.queries
    assert q.text == "报销流程是什么" and q.count == 3
    written = queries_yaml(mining.queries, "header")
    assert "1 other written form(s) merged" in written
    path = transcript(tmp_path / "t.jsonl", [user(), search("  What is the Wi-Fi password?  ", call_id="a")])
    mining = mine(read_sessions([path], None, ReadStats()), ReadStats())
    assert mining.queries[0].text == "  What is the Wi-Fi password?  "  # replayed as sent, not rewritten


# --- the index ------------------------------------------------------------------------------------------------


def index_copy(tmp_path: Path) -> Path:
    path = tmp_path / "main.sqlite"
    shutil.copy(EXAMPLE / "memory" / "main.sqlite", path)
    return path


@pytest.mark.parametrize("value", ["1e999", "NaN", "-Infinity", "-4", "2.5", "99999999999999999999"])
def test_index_meta_numbers_that_are_not_finite_or_out_of_range_are_one_line(tmp_path, value):
    path = index_copy(tmp_path)
    with sqlite3.connect(path) as conn:
        (raw,) = conn.execute("SELECT value FROM meta WHERE key = 'memory_index_meta_v1'").fetchone()
        conn.execute("UPDATE meta SET value = ? WHERE key = 'memory_index_meta_v1'",
                     (re.sub(r'"vectorDims":\s*\d+', f'"vectorDims": {value}', raw),))
    with pytest.raises(DataError, match="vectorDims"):
        MemoryIndex(path)


@pytest.mark.parametrize("column, value", [("start_line", "'x'"), ("end_line", "1e999"), ("start_line", "x'0102'"),
                                           ("path", "x'ff'"), ("text", "x'ff00'"), ("end_line", "-3")])
def test_index_rows_of_the_wrong_type_or_range_are_one_line(tmp_path, column, value):
    path = index_copy(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE chunks SET {column} = {value} WHERE rowid = (SELECT min(rowid) FROM chunks)")
    with MemoryIndex(path) as index:
        if column == "text":  # a BLOB of text is read as text (what was stored), never an internal error
            assert sum(1 for _ in index.chunks()) == index.count()
            return
        with pytest.raises(DataError, match=f"chunks.{column}"):
            list(index.chunks())


def test_a_vector_holding_nan_or_infinity_is_one_line_naming_the_chunk(tmp_path):
    path = index_copy(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE chunks SET embedding = '[0.1, NaN, 0.3]' WHERE rowid = (SELECT min(rowid) FROM chunks)")
    with MemoryIndex(path) as index, pytest.raises(DataError, match="not a finite number"):
        list(index.chunks(vectors=True))


# --- the gate ---------------------------------------------------------------------------------------------------


def gate(tmp_path: Path, edit) -> object:
    base = REPOSITORY / "reports" / "round2" / "results.json"
    doc = json.loads(base.read_text(encoding="utf-8"))
    edit(doc)
    current = tmp_path / "results.json"
    current.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return runner.invoke(app, ["gate", str(current), "--baseline", str(base)])


def test_the_gate_refuses_a_baseline_whose_question_text_was_edited(tmp_path):
    def edit(doc):
        first = next(iter(doc["queries"].values()))
        first["text"] = first["text"] + " (edited)"

    result = gate(tmp_path, edit)
    assert result.exit_code == 2 and "another question text" in result.output
    assert gate(tmp_path, lambda doc: None).exit_code == 0


def test_the_gate_refuses_a_baseline_of_another_data_set(tmp_path):
    def edit(doc):
        doc["dataset"]["dataset"] = "locomo"

    result = gate(tmp_path, edit)
    assert result.exit_code == 2 and "data set 'locomo'" in result.output

    def renamed(doc):
        doc["queries"] = {f"other-{k}": v for k, v in doc["queries"].items()}

    result = gate(tmp_path, renamed)
    assert result.exit_code == 2 and "no query id in common" in result.output


# --- LongMemEval ------------------------------------------------------------------------------------------------


def test_longmemeval_evidence_naming_no_haystack_session_is_refused_not_skipped(tmp_path):
    from harness.inputs.longmemeval import load_longmemeval

    question = {"question_id": "q1", "question_type": "single-session-user", "question": "Where?", "answer": "here",
                "question_date": "2023/05/30 (Tue) 23:40", "haystack_session_ids": ["s1"],
                "haystack_dates": ["2023/05/20 (Sat) 02:21"],
                "haystack_sessions": [[{"role": "user", "content": "I live here", "has_answer": True}]],
                "answer_session_ids": ["s1"]}
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([question]), encoding="utf-8")
    assert len(load_longmemeval(path)) == 1
    path.write_text(json.dumps([{**question, "answer_session_ids": ["answer_s9"]}]), encoding="utf-8")
    with pytest.raises(DataError, match=r"answer_session_ids\[0\]"):
        load_longmemeval(path)


# --- long work --------------------------------------------------------------------------------------------------


def matrix_file(tmp_path: Path, runs: int, values: int) -> Path:
    experiment = REPOSITORY / "experiments" / "round2.toml"
    lines = ['kind = "matrix"', 'name = "big"', 'description = "a large matrix"', ""]
    for r in range(runs):
        lines += ["[[runs]]", f'label = "r{r}"', f'experiment = "{experiment.as_posix()}"', ""]
    for v in range(values):
        lines += ["[[values]]", f'label = "v{v}"', f"search = {{ max_results = {v % 20 + 1} }}", ""]
    path = tmp_path / "big.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_a_study_of_a_million_cells_announces_itself_and_needs_yes(tmp_path):
    path = matrix_file(tmp_path, 1000, 1000)
    start = time.perf_counter()
    result = runner.invoke(app, ["study", str(path), "--dry-run"])
    assert time.perf_counter() - start < 60
    assert result.exit_code == 2, result.output
    assert "1,000,000 cells" in result.output and "--yes" in result.output
    assert re.search(r"resolving them alone takes about [\d.,]+ (s|minutes|hours|days) \(", result.output)  # one sampled cell


def test_past_a_lowered_bound_a_small_study_needs_yes_and_runs_with_it(tmp_path, monkeypatch):
    path = matrix_file(tmp_path, 1, 3)
    monkeypatch.setenv("HARNESS_CONFIRM_ABOVE", "2")
    refused = runner.invoke(app, ["study", str(path), "--dry-run"])
    assert refused.exit_code == 2 and "3 cells" in refused.output
    done = runner.invoke(app, ["study", str(path), "--dry-run", "--yes"])
    assert done.exit_code == 0, done.output
    assert "3 cells" in done.output and "r0 / v2" in done.output


# --- redaction ----------------------------------------------------------------------------------------------------


def test_redact_masks_a_key_like_query_in_the_run_console_table(tmp_path):
    key = "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Notes\n\nThe staging key lives in the vault.\n", encoding="utf-8")
    queries = tmp_path / "queries.yaml"
    queries.write_text(f'- id: q1\n  text: "where is {key}"\n  path: MEMORY.md\n', encoding="utf-8")
    experiment = tmp_path / "e.toml"
    experiment.write_text(f'name = "mine"\npreset = "openclaw-2026.08"\n[dataset]\nname = "workspace"\n'
                          f'path = "{workspace.as_posix()}"\nqueries = "{queries.as_posix()}"\n'
                          '[embedder]\nname = "hash"\n', encoding="utf-8")
    result = runner.invoke(app, ["run", str(experiment), "--out", str(tmp_path / "run"), "--redact"])
    assert result.exit_code == 0, result.output
    assert key not in result.output and "<key>" in result.output
    assert key not in (tmp_path / "run" / "report.md").read_text(encoding="utf-8")


# --- secrets planted in each input a user gives -------------------------------------------------------------------

KEY = "sk-proj-9Zt4Qw8Er2Ty6Ui1Op5As3Df7Gh0Jk"


def everything_written(folder: Path) -> str:
    return "".join(p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file())


def test_a_key_in_openclaw_json_or_a_transcript_never_reaches_an_output_of_init(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    home = tmp_path / ".openclaw"
    shutil.copytree(EXAMPLE, home)
    config = json.loads((home / "openclaw.json").read_text(encoding="utf-8"))
    block = config["agents"]["defaults"]["memorySearch"]
    block["remote"] = {"baseUrl": "https://embeddings.example/v1", "apiKey": KEY, "headers": {"X-Key": KEY}}
    block["query"] = {"maxResults": KEY}  # a key pasted into the wrong field: the error must not echo it
    (home / "openclaw.json").write_text(json.dumps(config), encoding="utf-8")
    out = tmp_path / "evals"
    refused = runner.invoke(app, ["init", "--openclaw-home", str(home), "--out", str(out)])
    assert refused.exit_code == 2 and "query.maxResults" in refused.output and KEY not in refused.output
    del block["query"]
    (home / "openclaw.json").write_text(json.dumps(config), encoding="utf-8")
    session = next((home / "agents" / "main" / "sessions").glob("*.jsonl"))
    with session.open("a", encoding="utf-8") as fh:  # a reply quoting the key, a search for it
        fh.write(json.dumps({"type": "message", "message": {"role": "user", "content": KEY}}) + "\n")
        fh.write(json.dumps(search(f"where did I put {KEY}", call_id="planted")) + "\n")
    done = runner.invoke(app, ["init", "--openclaw-home", str(home), "--out", str(out), "--redact"])
    assert done.exit_code == 0, done.output
    assert KEY not in done.output
    assert "never copies it" in done.output or "never copies it" in (out / "experiment.toml").read_text(encoding="utf-8")
    for name in ("experiment.toml", "holdout.toml", "init.md", "pool.toml"):
        if (out / name).exists():
            assert KEY not in (out / name).read_text(encoding="utf-8"), name


def test_a_key_in_an_experiment_queries_file_or_gate_input_is_never_echoed_in_an_error(tmp_path):
    experiment = tmp_path / "e.toml"
    experiment.write_text(f'name = "x"\npreset = "openclaw-2026.08"\n[dataset]\nname = "king78"\n'
                          f'[search]\nmax_results = "{KEY}"\n', encoding="utf-8")
    result = runner.invoke(app, ["run", str(experiment), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "max_results" in result.output and KEY not in result.output
    queries = tmp_path / "q.yaml"
    queries.write_text(f'- id: q1\n  text: hello\n  lines: "{KEY}"\n  path: MEMORY.md\n', encoding="utf-8")
    experiment.write_text(f'name = "x"\npreset = "openclaw-2026.08"\n[dataset]\nname = "workspace"\n'
                          f'path = "{(EXAMPLE / "workspace").as_posix()}"\nqueries = "{queries.as_posix()}"\n',
                          encoding="utf-8")
    result = runner.invoke(app, ["run", str(experiment), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "lines" in result.output and KEY not in result.output
    base = REPOSITORY / "reports" / "round2" / "results.json"
    result = runner.invoke(app, ["gate", str(base), "--baseline", str(base), "--rule", f"{KEY} >= 1"])
    assert result.exit_code == 2 and KEY not in result.output
