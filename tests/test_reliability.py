"""Every edge the bad-input campaign of issue 30 found, one test each: a user's mistake is one `error:` line
naming the file (and key, line or option), exit 2; a value outside its declared domain is refused, or
applied as OpenClaw applies it with a note; a valid input (a BOM) is read.

The generated campaign itself is tests/test_campaign.py; faults (kill -9, full disk, read-only and broken
caches) are tests/test_faults.py; the HTTP stages' whole-request timeout and cache key are in
tests/test_http_embedder.py.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.config import load_experiment
from harness.inputs.query_files import QuerySpec
from harness.inputs.workspace_files import discover_files
from harness.inputs.workspace_targets import resolve_targets
from harness.run_folders import published
from harness.text_files import MAX_DEPTH
from tests.test_newcomer_failures import FILES as MEMORY  # noqa: F401  (the workspace of those tests)
from tests.test_newcomer_failures import QUERIES, make_workspace

runner = CliRunner()
SECRET = "sk-reliability-Q9w8E7r6T5y4U3i2"


@pytest.fixture()
def ws(tmp_path):
    return make_workspace(tmp_path / "ws", MEMORY, QUERIES)


def experiment(tmp_path: Path, ws: Path, extra: str = "", *, head: str = 'preset = "openclaw-2026.08"',
               queries: str | None = None, name: str = "x.toml") -> Path:
    path = tmp_path / name
    path.write_text(f'{head}\n[dataset]\nname = "workspace"\npath = "{ws}"\nqueries = "{queries or ws / "queries.yaml"}"\n'
                    f'[embedder]\nname = "hash"\n[evaluation]\nreport_purity = false\nnow = 2026-03-08\n{extra}\n',
                    encoding="utf-8")
    return path


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def error_of(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, output
    return lines[0]


def refused(args: list, *words: str) -> str:
    code, out = run(*args)
    assert code == 2, out
    line = error_of(out)
    for word in words:
        assert word in line, line
    return line


# --- encodings, nesting, size ------------------------------------------------------------------------------

def test_utf8_with_a_bom_is_read_everywhere_a_user_writes_text(ws, tmp_path):
    exp = experiment(tmp_path, ws)
    exp.write_bytes(b"\xef\xbb\xbf" + exp.read_bytes())
    jsonl = ws / "queries.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + b'{"id": "q1", "text": "x", "path": "MEMORY.md"}\n')
    exp2 = experiment(tmp_path, ws, queries=str(jsonl), name="j.toml")
    exp2.write_bytes(b"\xef\xbb\xbf" + exp2.read_bytes())
    code, out = run("run", exp2, "--out", tmp_path / "out")
    assert code == 0, out
    results = tmp_path / "out" / "results.json"
    results.write_bytes(b"\xef\xbb\xbf" + results.read_bytes())
    for args in (["gate", results, "--baseline", results], ["export", results, "--out", tmp_path / "exp"],
                 ["report", results, "--out", tmp_path / "page.html"], ["diff", results, results]):
        code, out = run(*args)
        assert code == 0, (args, out)
    code, out = run("run", exp, "--out", tmp_path / "out2")
    assert code == 0, out


@pytest.mark.parametrize("encoding, says", [("utf-16", "UTF-16 (little-endian)"), ("utf-16-le", "without a BOM"),
                                            ("utf-32", "UTF-32")])
def test_utf16_and_utf32_are_named_with_what_to_do(ws, tmp_path, encoding, says):
    exp = experiment(tmp_path, ws)
    exp.write_bytes(exp.read_text(encoding="utf-8").encode(encoding))
    refused(["run", exp, "--out", tmp_path / "out"], str(exp), says, "save it as UTF-8")
    (ws / "queries.yaml").write_bytes(QUERIES.encode(encoding))
    refused(["run", experiment(tmp_path, ws, name="y.toml"), "--out", tmp_path / "out"], "queries.yaml", says)


def test_invalid_utf8_is_named_with_the_byte_and_line(ws, tmp_path):
    exp = experiment(tmp_path, ws)
    line = exp.read_bytes().count(b"\n") + 1
    exp.write_bytes(exp.read_bytes() + b"# caf\xe9\n")
    refused(["run", exp, "--out", tmp_path / "out"], f"{exp}:{line}:", "not UTF-8 at byte")


@pytest.mark.parametrize("where", ["toml", "jsonl", "openclaw.json", "gate file", "yaml"])
def test_nesting_deeper_than_any_real_config_is_refused_with_its_place(ws, tmp_path, where):
    deep = "[" * 5000 + "1" + "]" * 5000
    if where == "toml":
        exp = experiment(tmp_path, ws, f"[layout]\nx = {deep}")
        line = exp.read_text(encoding="utf-8").splitlines().index(f"x = {deep}") + 1
        refused(["run", exp, "--out", tmp_path / "out"], f"{exp}:{line}:", f"nested more than {MAX_DEPTH} levels")
    elif where == "jsonl":
        (ws / "q.jsonl").write_text('{"id": "q1", "text": "x", "path": "MEMORY.md", "note": ' + deep + "}\n",
                                    encoding="utf-8")
        refused(["run", experiment(tmp_path, ws, queries=str(ws / "q.jsonl")), "--out", tmp_path / "out"],
                "q.jsonl:1", "nested more than")
    elif where == "openclaw.json":
        (ws / "openclaw.json").write_text('{"x": ' + deep + "}", encoding="utf-8")
        refused(["init", ws, "--out", tmp_path / "ev"], "openclaw.json", "nested more than")
    elif where == "gate file":
        (tmp_path / "g.toml").write_text(f'[[rule]]\nmetric = "passed"\ndrop = 0\nx = {deep}\n', encoding="utf-8")
        refused(["gate", tmp_path / "g.toml", "--baseline", tmp_path / "g.toml", "--gate-file", tmp_path / "g.toml"],
                "nested more than")
    else:
        (ws / "queries.yaml").write_text(f"- id: q1\n  text: x\n  path: MEMORY.md\n  note: {deep}\n", encoding="utf-8")
        refused(["run", experiment(tmp_path, ws), "--out", tmp_path / "out"], "queries.yaml", "nested more than")


def test_a_lone_surrogate_and_a_key_given_twice_in_jsonl_are_refused(ws, tmp_path):
    (ws / "q.jsonl").write_text('{"id": "q1", "text": "bad \\ud800", "path": "MEMORY.md"}\n', encoding="utf-8")
    exp = experiment(tmp_path, ws, queries=str(ws / "q.jsonl"))
    refused(["run", exp, "--out", tmp_path / "out"], "q.jsonl", "lone surrogate", "text")
    (ws / "q.jsonl").write_text('{"id": "q1", "text": "x", "text": "y", "path": "MEMORY.md"}\n', encoding="utf-8")
    refused(["run", exp, "--out", tmp_path / "out"], "q.jsonl:1", "'text'", "given twice")


def test_yaml_aliases_are_refused_before_they_expand(ws, tmp_path):
    laughs = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    laughs += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    (ws / "queries.yaml").write_text("- id: q1\n  text: x\n  path: MEMORY.md\n  note:\n    " + "\n    ".join(laughs)
                                     + "\n", encoding="utf-8")
    refused(["run", experiment(tmp_path, ws), "--out", tmp_path / "out"], "queries.yaml", "alias")


@pytest.mark.slow  # a file at the size limit, timed
def test_a_large_openclaw_json_is_read_in_time_or_refused_by_size(ws, tmp_path):
    agents = [{"id": f"agent{i}", "name": "x" * 200} for i in range(50_000)]  # ~12 MB of plain JSON
    (ws / "openclaw.json").write_text(json.dumps({"agents": {"list": agents}}), encoding="utf-8")
    code, out = run("init", ws, "--out", tmp_path / "ev", "--now", "2026-03-08")
    assert code == 0, out  # plain JSON: read at C speed, whatever its size
    (ws / "openclaw.json").write_text("// JSON5\n" + json.dumps({"agents": {"list": agents}}), encoding="utf-8")
    refused(["init", ws, "--out", tmp_path / "ev2"], "openclaw.json", "not plain JSON", "JSON5")


# --- the structure of an experiment --------------------------------------------------------------------------

@pytest.mark.parametrize("body, words", [
    ("", ["names no preset and no stages"]),
    ("# only a comment\n", ["names no preset and no stages"]),
    ('preset = 1\n', ["preset: must be a string"]),
    ('preset = ""\n', ["preset: must not be empty"]),
    ('preset = "openclaw-2099.01"\n', ["preset: unknown preset 'openclaw-2099.01'"]),
    ('name = ""\npreset = "openclaw-2026.08"\n', ["name: must not be empty"]),
    ('name = 3\npreset = "openclaw-2026.08"\n', ["name: must be a string"]),
    ('preset = "openclaw-2026.08"\n[dataset]\npath = "ws"\n', ["[dataset]: needs a name"]),
    ('preset = "openclaw-2026.08"\n[[postprocess]]\nmin_score = 0.3\n', ["[[postprocess]] #1: needs a name"]),
    ('preset = "openclaw-2026.08"\n[fusion]\nname = "bogus"\n', ["[fusion] name: unknown fusion 'bogus'"]),
    ('preset = "openclaw-2026.08"\n[dataset]\nname = "worksapce"\n', ["[dataset] name: unknown dataset"]),
    ('preset = "openclaw-2026.08"\n[embedder]\nname = "hash"\n', ["[layout]", "daily_logs"]),  # king78, no layout
])
def test_a_malformed_experiment_is_one_line_naming_the_file_and_table(tmp_path, body, words):
    exp = tmp_path / "bad.toml"
    exp.write_text(body, encoding="utf-8")
    refused(["run", exp, "--out", tmp_path / "out"], "bad.toml", *words)


def test_union_members_are_one_clause_not_pydantics_internals(ws, tmp_path):
    exp = experiment(tmp_path, ws)
    exp.write_text(exp.read_text(encoding="utf-8").replace(f'path = "{ws}"', "path = 3"), encoding="utf-8")
    line = refused(["run", exp, "--out", tmp_path / "out"], "[dataset] path: Input should be a valid string or an "
                                                            "instance of Path (got 3)")
    assert "lax-or-strict" not in line and "function-after" not in line


# --- declared domains: the schema and the error say the same ----------------------------------------------

@pytest.mark.parametrize("table, key", [
    ('[[postprocess]]\nname = "mmr"\nlambda = 2.0', "lambda"),
    ('[[postprocess]]\nname = "mmr"\nlambda = -1.0', "lambda"),
    ('[chunker]\nname = "openclaw"\ntokens = 100\noverlap = 100', "overlap"),
    ('[chunker]\ntokens = 16\noverlap = 80', "overlap"),
    (["embedder.name=e5-small-q4", "embedder.threads=100000"], "threads"),
    ('[profile]\nthreads = 100000', "threads"),
    ('[[postprocess]]\nname = "min_score"\n[[postprocess]]\nname = "min_score"', "min_score"),
    (["evaluation.cutoffs=[]"], "cutoffs"),
    ('[fusion]\nvector_weight = -0.5', "vector_weight"),
    ('[fusion]\nvector_weight = 1.5', "vector_weight"),
    ('[fusion]\ntext_weight = 1e9', "text_weight"),
    ('[fusion]\nvector_weight = nan', "vector_weight"),
    ('[[postprocess]]\nname = "temporal_decay"\nhalf_life_days = -1.0', "half_life_days"),
    (['evaluation.now="2026-02-30"'], "now"),
    (['evaluation.now="not-a-date"'], "now"),
    ("[search]\nmax_results = 10000000", "max_results"),
])
def test_a_value_outside_its_declared_domain_is_refused_naming_the_key(ws, tmp_path, table, key):
    if isinstance(table, list):  # a key of a table the experiment already has: set on the command line
        exp = experiment(tmp_path, ws)
        args = ["run", exp, "--out", tmp_path / "out"] + [a for item in table for a in ("--set", item)]
    else:
        exp = experiment(tmp_path, ws, table)
        args = ["run", exp, "--out", tmp_path / "out"]
    refused(args, str(exp), key)


def test_the_schema_declares_the_domains_the_errors_state():
    from harness.catalog import experiment_schema

    schema = experiment_schema()["properties"]

    def prop(table: str, name: str, key: str) -> dict:
        node = schema[table].get("items", schema[table])
        branch = next(b["then"] for b in node["allOf"] if b["if"]["properties"]["name"]["const"] == name)
        return branch["properties"][key]

    assert prop("fusion", "weighted", "vector_weight").items() >= {"minimum": 0, "maximum": 1}.items()
    assert prop("postprocess", "mmr", "lambda").items() >= {"minimum": 0, "maximum": 1}.items()
    assert prop("embedder", "e5-small-q4", "threads")["anyOf"][0]["maximum"] == 256
    assert schema["evaluation"]["properties"]["cutoffs"]["anyOf"][0]["minItems"] == 1


def test_weights_openclaw_normalises_are_applied_with_a_note(ws, tmp_path):
    code, out = run("run", experiment(tmp_path, ws, "[fusion]\nvector_weight = 0.9\ntext_weight = 0.9"),
                    "--out", tmp_path / "out")
    assert code == 0 and "note: fusion weights vector_weight=0.9, text_weight=0.9 are applied as 0.5/0.5" in out


def test_openclaw_json_takes_what_openclaw_takes_and_refuses_what_its_schema_refuses(ws, tmp_path):
    oc = ws / "openclaw.json"
    oc.write_text('{agents: {defaults: {memorySearch: {query: {hybrid: {vectorWeight: 1.5}}}}}}', encoding="utf-8")
    refused(["init", ws, "--out", tmp_path / "ev"], "openclaw.json", "vectorWeight", "in [0, 1]")
    oc.write_text('{agents: {defaults: {memorySearch: {chunking: {tokens: 100, overlap: 400}, query: {hybrid: '
                  '{candidateMultiplier: 50}}}}, list: [{id: "main", memorySearch: {query: {maxResults: 3}}}, '
                  '{id: " Main ", memorySearch: {query: {maxResults: 9}}}]}}', encoding="utf-8")
    code, out = run("init", ws, "--out", tmp_path / "ev2", "--agent", "main", "--now", "2026-03-08",
                    "--preset", "openclaw-2026.02")
    assert code == 0, out
    assert "chunking.overlap = 400 is applied as 99" in out and "candidateMultiplier = 50 is applied as 20" in out
    assert "agents.list[0], agents.list[1] all have the id 'main': the first, agents.list[0], applies" in out


# --- secrets ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["memory.search.query.apiKey", "agents.defaults.memorySearch.remote.apiKey",
                                   "agents.defaults.memorySearch.headers.Authorization",
                                   "memory.search.query.maxResults", "memory.search.store.fts.tokenizer"])
def test_a_key_in_any_field_of_openclaw_json_is_never_echoed_or_written(ws, tmp_path, field):
    doc: dict = {}
    node = doc
    *parents, leaf = field.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = SECRET
    (ws / "openclaw.json").write_text(json.dumps(doc), encoding="utf-8")
    code, out = run("init", ws, "--out", tmp_path / "ev", "--now", "2026-03-08")
    assert SECRET not in out
    if code == 0:
        assert SECRET not in (tmp_path / "ev" / "experiment.toml").read_text(encoding="utf-8")
        code, out = run("run", tmp_path / "ev" / "experiment.toml", "--out", tmp_path / "out")
        assert SECRET not in out
        for path in (tmp_path / "out").rglob("*"):
            assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path


def test_a_key_as_a_stage_value_is_not_echoed(ws, tmp_path):
    line = refused(["run", experiment(tmp_path, ws, f'[fusion]\nvector_weight = "{SECRET}"'), "--out", tmp_path / "o"],
                   "vector_weight", "not shown")
    assert SECRET not in line


# --- outputs --------------------------------------------------------------------------------------------------

def test_output_paths_are_checked_before_any_work(ws, tmp_path):
    exp = experiment(tmp_path, ws)
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    (tmp_path / "adir").mkdir()
    refused(["run", exp, "--out", tmp_path / "afile"], "--out", "afile", "not a folder")
    refused(["run", exp, "--out", tmp_path / "afile" / "out"], "--out", "is a file, not a folder")
    refused(["run", exp, "--out", "/proc/harness-out"], "--out", "system folder")
    refused(["run", exp, "--out", tmp_path / ("o" * 300)], "--out", "longer than 255 bytes")
    code, out = run("run", exp, "--out", tmp_path / "out")
    results = tmp_path / "out" / "results.json"
    refused(["gate", results, "--baseline", results, "--junit", tmp_path / "adir"], "--junit", "is a folder")
    code, out = run("gate", results, "--baseline", results, "--markdown", tmp_path / "afile" / "g.md")
    assert code == 2 and "--markdown" in error_of(out) and "gate:" not in out  # no verdict before the refusal
    refused(["eval", "--run", tmp_path / "adir", "--qrels", tmp_path / "adir"], "adir", "is a folder")


def test_a_long_experiment_name_gets_a_default_folder_it_can_write(ws, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exp = experiment(tmp_path, ws, head=f'name = "{"n" * 300}"\npreset = "openclaw-2026.08"')
    code, out = run("run", exp)
    assert code == 0, out
    (folder,) = (tmp_path / "harness-results").iterdir()
    assert len(folder.name) < 100 and (folder / "results.json").exists()


def test_a_folder_is_published_complete_or_not_at_all(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(RuntimeError):
        with published(out, "results.json") as folder:
            (folder / "report.md").write_text("new", encoding="utf-8")
            raise RuntimeError("killed while writing")
    assert not out.exists() and not list(tmp_path.glob(".out.partial-*"))
    with published(out, "results.json") as folder:
        (folder / "report.md").write_text("one", encoding="utf-8")
        (folder / "results.json").write_text("{}", encoding="utf-8")
    (out / "mine.txt").write_text("the user's", encoding="utf-8")
    with pytest.raises(RuntimeError):
        with published(out, "results.json") as folder:
            (folder / "results.json").write_text('{"two": 1}', encoding="utf-8")
            raise RuntimeError
    assert (out / "results.json").read_text(encoding="utf-8") == "{}"  # the previous run stays whole
    with published(out, "results.json") as folder:
        (folder / "report.md").write_text("two", encoding="utf-8")
        (folder / "results.json").write_text('{"two": 1}', encoding="utf-8")
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt", "report.md", "results.json"]
    assert (out / "report.md").read_text(encoding="utf-8") == "two"


# --- export, gate, eval ----------------------------------------------------------------------------------

def test_export_writes_what_it_can_and_names_what_it_cannot(ws, tmp_path):
    (ws / "memory" / "a b.md").write_text("# a b\n\n- the spare key is under the blue pot\n", encoding="utf-8")
    (ws / "queries.yaml").write_text(QUERIES + "- id: q 3\n  text: where is the spare key\n  path: memory/a b.md\n",
                                     encoding="utf-8")
    code, out = run("run", experiment(tmp_path, ws), "--out", tmp_path / "out")
    assert code == 0, out
    code, out = run("export", tmp_path / "out" / "results.json", "--out", tmp_path / "exp")
    assert code == 0, out
    names = {p.name for p in (tmp_path / "exp").iterdir()}
    assert {"chunk-run.json", "chunk-qrels.json", "document-run.json", "document-qrels.json"} <= names
    assert "chunk.run" not in names and "not written:" in out and "'q 3'" in out and "chunk-run.json" in out


@pytest.mark.parametrize("change, words", [
    (lambda d: d["summary"]["suite"].__setitem__("mrr@6", math.nan), ["summary.suite.mrr@6", "not a finite number"]),
    (lambda d: d["summary"]["suite"].__setitem__("passed", "3"), ["summary.suite.passed", "must be a number"]),
    (lambda d: d["summary"].pop("suite"), ["summary.suite", "missing"]),
    (lambda d: d.__setitem__("queries", [1, 2]), ["queries", "object of query id"]),
])
def test_the_gate_refuses_a_file_it_cannot_judge_with_exit_2(ws, tmp_path, change, words):
    code, out = run("run", experiment(tmp_path, ws), "--out", tmp_path / "out")
    good = tmp_path / "out" / "results.json"
    doc = json.loads(good.read_text(encoding="utf-8"))
    change(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc, allow_nan=True), encoding="utf-8")
    refused(["gate", good, "--baseline", bad], "bad.json", *words)
    refused(["gate", bad, "--baseline", good], "bad.json", *words)


@pytest.mark.parametrize("rule", ["passed:drop=-1", "passed:drop=nan", "mrr@6:growth=-1", "mrr@6:growth=inf"])
def test_gate_rules_outside_their_domain_are_refused(ws, tmp_path, rule):
    run("run", experiment(tmp_path, ws), "--out", tmp_path / "out")
    results = tmp_path / "out" / "results.json"
    refused(["gate", results, "--baseline", results, "--rule", rule], "--rule", rule, "finite number >= 0")


def test_eval_bounds_grades_and_cutoffs_to_what_trec_eval_holds(tmp_path):
    (tmp_path / "r.run").write_text("q1 Q0 d 1 0.5 t\n", encoding="utf-8")
    (tmp_path / "q.qrels").write_text("q1 0 d 99999999999999999999\n", encoding="utf-8")
    refused(["eval", "--run", tmp_path / "r.run", "--qrels", tmp_path / "q.qrels"], "q.qrels:1", "grade")
    (tmp_path / "q.qrels").write_text("q1 0 d 1\n", encoding="utf-8")
    refused(["eval", "--run", tmp_path / "r.run", "--qrels", tmp_path / "q.qrels", "--metric",
             "recall@99999999999999999999"], "recall@99999999999999999999", "at most")


# --- workspaces -------------------------------------------------------------------------------------------

def test_a_symlinked_memory_folder_is_named_in_the_message(ws, tmp_path):
    real = tmp_path / "real-memory"
    (ws / "memory").rename(real)
    (ws / "memory").symlink_to(real)
    line = refused(["run", experiment(tmp_path, ws), "--out", tmp_path / "out"], "pg_restore")
    assert "memory (symbolic link)" in line
    (ws / "queries.yaml").write_text("- id: q1\n  text: x\n  path: memory/2026-03-01.md\n", encoding="utf-8")
    line = refused(["run", experiment(tmp_path, ws), "--out", tmp_path / "out"], "memory/2026-03-01.md")
    assert "under memory, which was skipped: symbolic link" in line and "exists but is not indexed" not in line


def test_init_with_a_preset_the_weights_mean_nothing_to_is_a_clear_error(ws, tmp_path):
    (ws / "openclaw.json").write_text('{agents: {defaults: {memorySearch: {query: {hybrid: {vectorWeight: 0.6}}}}}}',
                                      encoding="utf-8")
    refused(["init", ws, "--out", tmp_path / "ev", "--preset", "qmd"], "openclaw.json", "vectorWeight", "--preset")


def test_a_queries_file_of_negatives_only_is_reported(ws, tmp_path):
    (ws / "queries.yaml").write_text("- id: n1\n  text: the wifi password of the beach house\n  kind: negative\n",
                                     encoding="utf-8")
    code, out = run("run", experiment(tmp_path, ws), "--out", tmp_path / "out")
    assert code == 0 and "passed 0/0" in out, out


def test_extra_paths_that_hold_a_file_system_or_a_bad_pattern_are_named(ws, tmp_path):
    (ws / "openclaw.json").write_text('{agents: {defaults: {memorySearch: {extraPaths: ["/"]}}}}', encoding="utf-8")
    refused(["init", ws, "--out", tmp_path / "ev"], "openclaw.json", "extraPaths[0]", "200,000")
    (ws / "notes").mkdir()
    (ws / "openclaw.json").write_text('{agents: {defaults: {memorySearch: {extraPaths: [{path: "notes", pattern: '
                                      '"[z-a]"}]}}}}', encoding="utf-8")
    refused(["init", ws, "--out", tmp_path / "ev"], "openclaw.json", "extraPaths[0].pattern", "[z-a]")


# --- duplicated queries ----------------------------------------------------------------------------------------

def test_many_contains_queries_on_the_same_lines_share_one_document(ws, tmp_path):
    found = discover_files(ws)
    texts = {f.display: f.source.read_text(encoding="utf-8") for f in found.files}
    specs = [QuerySpec(f"q{i}", f"question {i % 7}", "suite", "q.yaml", i + 1, contains="pg_restore")
             for i in range(5000)]
    specs.append(QuerySpec("other", "x", "suite", "q.yaml", 5001, contains="Postgres backup"))  # the same line
    queries, spans = resolve_targets(specs, texts, found)
    assert {d for q in queries for d in q.relevant} == {"contains:q0"}  # one document, not 5,001
    assert len(spans) == 1


def test_duplicate_query_texts_are_searched_once_and_counted(ws, tmp_path):
    lines = [json.dumps({"id": f"q{i}", "text": f"restore the backup {i % 5}", "contains": "pg_restore"})
             for i in range(2000)]
    (ws / "q.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out = run("run", experiment(tmp_path, ws, queries=str(ws / "q.jsonl")), "--out", tmp_path / "out")
    assert code == 0, out
    assert "note: 1995 queries repeat the text of an earlier query: each text was embedded and searched once" in out
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert len(doc["queries"]) == 2000 and doc["summary"]["suite"]["queries"] == 2000
    cache = doc["timings"]["embedding_cache"]
    assert cache["hits"] + cache["computed"] == doc["summary"]["index"]["chunks"] + 5  # 5 texts embedded, not 2,000
    assert "the first 200 of 2,000 rows" in out


def test_committed_experiments_have_no_duplicate_query_texts():
    """Folding duplicates changes nothing for the committed reports: their queries do not repeat."""
    from harness.pipeline import dataset_parts, duplicate_texts, load_dataset
    from tests.conftest import ROOT

    for name in ("round4", "example-workspace", "old-logs-workspace"):
        config = load_experiment(ROOT / "experiments" / f"{name}.toml")
        for _, part in dataset_parts(load_dataset(config)):
            assert duplicate_texts(part.queries()) == 0, name
