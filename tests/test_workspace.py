"""Bring your own OpenClaw workspace: discovery (links, ../, absolute paths), openclaw.json (JSON5),
queries files (YAML / JSONL) with errors naming file, line and field, the `workspace` data set's
provenance, `init`, and one end-to-end run on datasets/example-workspace."""
import json
import os
import re
import shutil
import tomllib
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.config import load_experiment, resolve
from harness.errors import DataError
from harness.inputs.layout import DATASETS
from harness.inputs.openclaw_config import openclaw_snippet, read_openclaw_config
from harness.inputs.query_files import load_query_specs
from harness.inputs.workspace import WorkspaceDataset
from harness.inputs.workspace_files import discover_files, glob_regex
from harness.inputs.workspace_targets import occurrence_lines
from harness.inputs.workspace_init import init_workspace
from tests.conftest import ROOT

EXAMPLE = ROOT / "datasets" / "example-workspace"
OLD_SHAPE = ROOT / "tests" / "data" / "openclaw-2026.2.22.json5"  # the example's openclaw.json in 2026.2.22's shape


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture()
def ws(tmp_path) -> Path:
    """A small workspace: MEMORY.md, nested memory/, a notes/ folder, files that must not be indexed."""
    root = tmp_path / "ws"
    write(root / "MEMORY.md", "# 长期记忆\n\n- 咖啡只喝美式\n")
    write(root / "memory" / "2026-03-01.md", "# 2026-03-01\n\n- 09:00 HEARTBEAT_OK\n- 洗牙约在周四\n")
    write(root / "memory" / "projects" / "deep" / "plan.md", "# 计划\n迁移到 Astro\n")
    write(root / "memory" / "scratch.txt", "not markdown\n")
    write(root / "memory" / "UPPER.MD", "OpenClaw tests .md case-sensitively\n")
    write(root / "AGENTS.md", "# not a memory file\n")
    write(root / "notes" / "vps.md", "# VPS\nswapfile 2G\n")
    write(root / "notes" / "sub" / "deeper.md", "# deeper\n")
    write(root / "notes" / "todo.txt", "买猫砂\n")
    return root


def displays(discovery) -> list[str]:
    return [f.display for f in discovery.files]


# --- discovery ------------------------------------------------------------------------------------


def test_memory_files_and_nested_memory_dir(ws):
    d = discover_files(ws)
    assert displays(d) == ["MEMORY.md", "memory/2026-03-01.md", "memory/projects/deep/plan.md"]
    assert d.skipped == []


def test_lowercase_memory_md_alone_and_beside_upper(tmp_path):
    root = tmp_path / "w"
    write(root / "memory.md", "# lower\n")
    assert displays(discover_files(root)) == ["memory.md"]
    write(root / "MEMORY.md", "# upper\n")
    # on a case-sensitive disk these are two files and OpenClaw indexes both; on a case-insensitive
    # disk they are one file, kept once
    same = os.path.samefile(root / "memory.md", root / "MEMORY.md")
    assert displays(discover_files(root)) == (["MEMORY.md"] if same else ["MEMORY.md", "memory.md"])


def test_extra_paths_default_glob_explicit_pattern_and_single_file(ws):
    assert displays(discover_files(ws, ["notes"]))[-2:] == ["notes/sub/deeper.md", "notes/vps.md"]
    only_top = discover_files(ws, [{"path": "notes", "pattern": "*.md"}])
    assert [p for p in displays(only_top) if p.startswith("notes/")] == ["notes/vps.md"]
    txt = discover_files(ws, [{"path": "notes", "pattern": "**/*.txt"}])
    assert [p for p in displays(txt) if p.startswith("notes/")] == ["notes/todo.txt"]
    single = discover_files(ws, ["notes/vps.md", "notes/todo.txt"])
    assert "notes/vps.md" in displays(single) and "notes/todo.txt" not in displays(single)
    assert any("does not match the pattern" in s.reason for s in single.skipped)


def test_extra_path_overlapping_memory_is_indexed_once(ws):
    assert displays(discover_files(ws, ["memory", "."])) == displays(discover_files(ws, ["."]))
    assert displays(discover_files(ws, ["memory"])) == displays(discover_files(ws))
    everything = displays(discover_files(ws, ["."]))
    assert "AGENTS.md" in everything and everything.count("MEMORY.md") == 1


def test_missing_extra_path_is_skipped_and_listed(ws):
    d = discover_files(ws, ["no-such-folder"])
    assert displays(d) == displays(discover_files(ws))
    assert d.skipped[0].path == "no-such-folder" and "does not exist" in d.skipped[0].reason


def test_symlinked_files_and_folders_are_skipped(ws, tmp_path):
    outside = tmp_path / "outside"
    write(outside / "secret.md", "# 不该被索引\n")
    write(outside / "dir" / "a.md", "# a\n")
    (ws / "memory" / "linked.md").symlink_to(outside / "secret.md")
    (ws / "memory" / "linked-dir").symlink_to(outside / "dir", target_is_directory=True)
    (ws / "notes" / "linked-notes").symlink_to(outside / "dir", target_is_directory=True)
    (ws / "shortcut").symlink_to(ws / "notes", target_is_directory=True)
    d = discover_files(ws, ["notes", "shortcut", "shortcut/vps.md"])
    indexed = displays(d)
    assert not any("linked" in p or "secret" in p or p.startswith("shortcut") for p in indexed)
    reasons = {s.path: s.reason for s in d.skipped}
    assert reasons["memory/linked.md"] == "symbolic link"
    assert reasons["memory/linked-dir"] == "symbolic link"
    assert reasons["notes/linked-notes"] == "symbolic link"
    assert reasons["shortcut"] == "extraPaths[1]: symbolic link (shortcut)"
    assert reasons["shortcut/vps.md"] == "extraPaths[2]: symbolic link (shortcut)"  # a link on the way


def test_symlinked_memory_file_and_memory_dir_are_skipped(tmp_path):
    real = tmp_path / "real"
    write(real / "MEMORY.md", "# real\n")
    write(real / "memory" / "2026-03-01.md", "# day\n")
    root = tmp_path / "w"
    root.mkdir()
    (root / "MEMORY.md").symlink_to(real / "MEMORY.md")
    (root / "memory").symlink_to(real / "memory", target_is_directory=True)
    d = discover_files(root)
    assert d.files == []
    assert {s.path for s in d.skipped} == {"MEMORY.md", "memory"}


def test_relative_extra_path_climbing_out_is_refused(ws):
    for bad in ("../elsewhere", "notes/../../elsewhere", ".."):
        with pytest.raises(DataError) as err:
            discover_files(ws, [bad])
        assert err.value.field == "extraPaths[0]" and "climbs out of the workspace" in str(err.value)
    assert displays(discover_files(ws, ["notes/../notes"])) == displays(discover_files(ws, ["notes"]))


def test_absolute_extra_paths_get_extra_n_display_paths(ws, tmp_path):
    team = tmp_path / "team-docs"
    write(team / "handbook.md", "# 手册\n")
    write(team / "2026" / "retro.md", "# 复盘\n")
    single = write(tmp_path / "one-file.md", "# 单个文件\n")
    d = discover_files(ws, [str(team), str(single), str(ws / "notes")])
    indexed = displays(d)
    assert "extra1/handbook.md" in indexed and "extra1/2026/retro.md" in indexed
    assert "extra2/one-file.md" in indexed
    assert "notes/vps.md" in indexed  # absolute but inside the workspace: shown as the relative path
    assert not any(p.startswith("/") or ".." in p.split("/") for p in indexed)


def test_absolute_extra_path_that_is_a_link_is_skipped(ws, tmp_path):
    write(tmp_path / "team" / "a.md", "# a\n")
    (tmp_path / "team-link").symlink_to(tmp_path / "team", target_is_directory=True)
    d = discover_files(ws, [str(tmp_path / "team-link")])
    assert not any(p.startswith("extra") for p in displays(d))
    assert d.skipped[0].reason == "extraPaths[0]: symbolic link"


def test_bad_patterns_are_refused(ws):
    for pattern in ("../*.md", "/abs/*.md", ""):
        with pytest.raises(DataError) as err:
            discover_files(ws, [{"path": "notes", "pattern": pattern}])
        assert err.value.field == "extraPaths[0].pattern"


def test_workspace_must_be_a_folder(tmp_path):
    with pytest.raises(DataError, match="existing folder"):
        discover_files(tmp_path / "nope")


@pytest.mark.parametrize("pattern,path,expected", [
    ("**/*.md", "a.md", True), ("**/*.md", "x/y/a.md", True), ("**/*.md", "a.txt", False),
    ("**/*.md", "a.MD", False), ("*.md", "x/a.md", False), ("*.md", "a.md", True),
    ("2026-*/**/*.md", "2026-03/a.md", True), ("2026-*/**/*.md", "2025-03/a.md", False),
    ("docs/**", "docs/x/y.txt", True), ("?.md", "ab.md", False), ("[ab].md", "b.md", True),
    ("[!ab].md", "c.md", True), ("[!ab].md", "a.md", False),
])
def test_glob_patterns(pattern, path, expected):
    assert bool(glob_regex(pattern).fullmatch(path)) is expected


# --- openclaw.json --------------------------------------------------------------------------------


def test_example_config_parses_json5_with_comments_and_trailing_commas():
    # the example workspace's openclaw.json is in the shape of 2026.8.1 (memory.search), the release of the
    # preset init picks: nothing in it is a key that release lacks
    s = read_openclaw_config(EXAMPLE / "openclaw.json")
    assert s.get("min_score") == 0.3 and s.get("max_results") == 6 and s.get("tokenizer") == "unicode61"
    assert s.get("vector_weight") is None and s.get("candidate_multiplier") is None
    assert s.values["min_score"][0] == "memory.search.query.minScore"
    assert [e.path for e in s.extra_paths] == ["notes"]
    assert s.extra_paths[0].field == "memory.search.extraPaths[0]"
    assert s.release_notes("openclaw-2026.08") == []
    assert s.experiment_tables("openclaw-2026.08")["postprocess"][-1]["keyword_fallback"] == "fill"
    # the 2026.2.22 shape (agents.defaults.memorySearch, every query.hybrid key): the example as it was before
    old = read_openclaw_config(OLD_SHAPE)
    assert old.get("vector_weight") == 0.6 and old.get("text_weight") == 0.4
    assert old.get("min_score") == 0.3 and old.get("max_results") == 6 and old.get("tokenizer") == "unicode61"
    assert old.values["min_score"][0] == "agents.defaults.memorySearch.query.minScore"
    assert old.extra_paths[0].field == "agents.defaults.memorySearch.extraPaths[0]"
    tables = old.experiment_tables("openclaw-2026.02")
    assert tables["fusion"] == {"vector_weight": 0.6, "text_weight": 0.4}
    assert tables["search"] == {"max_results": 6, "candidate_multiplier": 4}
    assert tables["tokenizer"] == {"name": "unicode61"}
    assert tables["postprocess"] == [{"name": "min_score", "min_score": 0.3, "keyword_fallback": "none"}]
    assert any("not a key of OpenClaw 2026.8.1" in n for n in old.release_notes("openclaw-2026.08"))


def config(tmp_path, body: str) -> Path:
    return write(tmp_path / "openclaw.json", body)


@pytest.mark.parametrize("body,field,message", [
    ("{agents: {defaults: {memorySearch: {query: {hybrid: {vectorWeight: 1.5}}}}}}",
     "agents.defaults.memorySearch.query.hybrid.vectorWeight", "in [0, 1]"),
    ("{agents: {defaults: {memorySearch: {query: {hybrid: {textWeight: 'high'}}}}}}",
     "agents.defaults.memorySearch.query.hybrid.textWeight", "must be a number"),
    ("{agents: {defaults: {memorySearch: {query: {maxResults: 2.5}}}}}",
     "agents.defaults.memorySearch.query.maxResults", "whole number"),
    ("{agents: {defaults: {memorySearch: {query: {maxResults: 0}}}}}",
     "agents.defaults.memorySearch.query.maxResults", ">= 1"),
    ("{agents: {defaults: {memorySearch: {query: {minScore: -0.1}}}}}",
     "agents.defaults.memorySearch.query.minScore", "in [0, 1]"),
    ("{agents: {defaults: {memorySearch: {store: {fts: {tokenizer: 'jieba'}}}}}}",
     "agents.defaults.memorySearch.store.fts.tokenizer", "unicode61, trigram"),
    ("{agents: {defaults: {memorySearch: {extraPaths: 'notes'}}}}",
     "agents.defaults.memorySearch.extraPaths", "must be a list"),
    ("{agents: {defaults: {memorySearch: {extraPaths: [42]}}}}",
     "agents.defaults.memorySearch.extraPaths[0]", "path string"),
    ("{agents: {defaults: {memorySearch: {query: []}}}}",
     "agents.defaults.memorySearch.query", "must be an object"),
    ("{agents: {defaults: {memorySearch: {query: {hybrid: {temporalDecay: {halfLifeDays: 0.5}}}}}}}",
     "agents.defaults.memorySearch.query.hybrid.temporalDecay.halfLifeDays", "whole number"),
])
def test_invalid_config_values_name_the_field_path(tmp_path, body, field, message):
    with pytest.raises(DataError) as err:
        read_openclaw_config(config(tmp_path, body))
    assert err.value.field == field and message in str(err.value)
    assert err.value.path.endswith("openclaw.json")


def test_config_syntax_errors_name_the_line(tmp_path):
    path = config(tmp_path, "// comment\n{\n  agents: {\n    defaults: ,\n  },\n}\n")
    with pytest.raises(DataError) as err:
        read_openclaw_config(path)
    assert err.value.line == 4 and "invalid JSON5" in str(err.value)
    with pytest.raises(DataError, match="Duplicate key"):
        read_openclaw_config(config(tmp_path, "{agents: {}, agents: {}}"))
    with pytest.raises(DataError, match="no such file"):
        read_openclaw_config(tmp_path / "missing.json")


def test_relative_extra_path_outside_workspace_names_config_field(ws, tmp_path):
    path = config(tmp_path, '{agents: {defaults: {memorySearch: {extraPaths: ["notes", "../team-docs"]}}}}')
    s = read_openclaw_config(path)
    with pytest.raises(DataError) as err:
        discover_files(ws, s.extra_paths)
    assert err.value.path == str(path)
    assert err.value.field == "agents.defaults.memorySearch.extraPaths[1]"


def test_top_level_defaults_and_agent_layers(tmp_path):
    path = config(tmp_path, """{
      memorySearch: {query: {maxResults: 3, minScore: 0.2}, extraPaths: ["old"]},
      agents: {
        defaults: {memorySearch: {query: {maxResults: 8}, extraPaths: ["notes"],
                   remote: {apiKey: "sk-secret-value"}}},
        list: [{id: "main"}, {id: "ops", memorySearch: {query: {minScore: 0.5}, extraPaths: ["ops"]}}],
      },
    }""")
    s = read_openclaw_config(path)
    assert s.get("max_results") == 8 and s.get("min_score") == 0.2
    assert [e.path for e in s.extra_paths] == ["old", "notes"]
    assert any("agents.list[1].memorySearch" in n for n in s.notes)
    assert not any("sk-secret-value" in n for n in s.notes)  # never echo an API key
    ops = read_openclaw_config(path, agent="ops")
    assert ops.get("min_score") == 0.5 and ops.values["min_score"][0] == "agents.list[1].memorySearch.query.minScore"
    assert [e.path for e in ops.extra_paths] == ["old", "notes", "ops"]
    with pytest.raises(DataError, match="no agent with id 'nope'"):
        read_openclaw_config(path, agent="nope")


def test_settings_not_evaluated_are_listed(tmp_path):
    s = read_openclaw_config(config(tmp_path, """{agents: {defaults: {memorySearch: {
        provider: "openai", query: {hybrid: {enabled: false, mmr: {enabled: true, diversity: 2}}},
        maxResult: 5}}}}"""))
    joined = "\n".join(s.notes)
    assert "memorySearch.provider" in joined and "query.hybrid.enabled" in joined
    assert "query.hybrid.mmr.diversity" in joined and "query.hybrid.mmr.enabled" not in joined
    assert "memorySearch.maxResult" in joined and "unknown" in joined  # a typo is shown, not dropped
    assert set(s.values) == {"mmr_enabled"}


def test_values_openclaw_clamps_are_applied_as_it_applies_them_with_a_note(tmp_path):
    """OpenClaw's schema takes an overlap of any size and a candidateMultiplier above 20, and
    resolveMemorySearchConfig clamps them (overlap below tokens, the multiplier to 1-20): so does the
    harness, and it says so (issue 30)."""
    s = read_openclaw_config(config(tmp_path, "{agents: {defaults: {memorySearch: {chunking: {tokens: 100, "
                                              "overlap: 100}, query: {hybrid: {candidateMultiplier: 50}}}}}}"))
    assert s.get("chunk_overlap") == 99 and s.get("candidate_multiplier") == 20
    joined = "\n".join(s.notes)
    assert "chunking.overlap = 100 is applied as 99" in joined and "candidateMultiplier = 50 is applied as 20" in joined
    assert s.experiment_tables("openclaw-2026.02")["chunker"] == {"tokens": 100, "overlap": 99}


def test_mmr_and_temporal_decay_become_postprocess_stages(tmp_path):
    s = read_openclaw_config(config(tmp_path, """{agents: {defaults: {memorySearch: {query: {minScore: 0.3,
        hybrid: {mmr: {enabled: true, lambda: 0.5}, temporalDecay: {enabled: true, halfLifeDays: 14}}}}}}}"""))
    assert s.get("decay_half_life") == 14
    for days in (14.7, 0, 0.5):  # OpenClaw's schema: a whole number of days >= 1 (its config refuses the rest)
        with pytest.raises(DataError, match="halfLifeDays"):
            read_openclaw_config(config(tmp_path, "{agents: {defaults: {memorySearch: {query: {hybrid: "
                                                  "{temporalDecay: {halfLifeDays: %s}}}}}}}" % days))
    # OpenClaw's order: decay, (importance), MMR, then the minScore selection
    assert s.experiment_tables("openclaw-2026.02")["postprocess"] == [
        {"name": "temporal_decay", "half_life_days": 14.0}, {"name": "mmr", "tokens": "ascii", "lambda": 0.5},
        {"name": "min_score", "min_score": 0.3, "keyword_fallback": "none"}]
    assert [(st["name"], st.get("lambda", st.get("half_life_days"))) for st in
            s.experiment_tables("openclaw-2026.08")["postprocess"]] == [
        ("temporal_decay", 14.0), ("importance", None), ("mmr", 0.5), ("min_score", None)]
    off = read_openclaw_config(config(tmp_path, """{agents: {defaults: {memorySearch: {query: {
        hybrid: {mmr: {enabled: false}, temporalDecay: {enabled: false}}}}}}}"""))
    assert [st["name"] for st in off.experiment_tables("openclaw-2026.08")["postprocess"]] == ["importance", "min_score"]
    with pytest.raises(DataError, match="true or false"):
        read_openclaw_config(config(tmp_path, "{agents: {defaults: {memorySearch: {query: {hybrid: {mmr: "
                                              "{enabled: 'yes'}}}}}}}"))


weights = st.floats(0, 1, allow_nan=False).map(lambda x: round(x, 3))


@given(vw=weights, tw=weights, max_results=st.integers(1, 50), min_score=weights,
       multiplier=st.integers(1, 10), tokenizer=st.sampled_from(["unicode61", "trigram"]))
def test_openclaw_snippet_round_trips_through_read_openclaw_config(tmp_path_factory, vw, tw, max_results,
                                                                    min_score, multiplier, tokenizer):
    tables = {"fusion": {"vector_weight": vw, "text_weight": tw},
              "search": {"max_results": max_results, "candidate_multiplier": multiplier},
              "tokenizer": {"name": tokenizer},
              "postprocess": [{"name": "min_score", "min_score": min_score, "keyword_fallback": "fill"}]}
    snippet, cannot = openclaw_snippet(tables)
    assert cannot == []
    path = tmp_path_factory.mktemp("snippet") / "openclaw.json"
    path.write_text(snippet, encoding="utf-8")
    preset_stages = resolve({"preset": "openclaw-2026.08"}).as_written()["postprocess"]
    expected = {**tables, "postprocess": [st if st["name"] != "min_score" else {**st, "min_score": min_score}
                                          for st in preset_stages]}
    assert read_openclaw_config(path).experiment_tables("openclaw-2026.08") == expected


def test_openclaw_snippet_names_what_openclaw_json_cannot_express():
    snippet, cannot = openclaw_snippet({"fusion": {"name": "rrf"}, "tokenizer": {"name": "jieba"},
                                        "postprocess": [{"name": "cosine_rerank"}]}, agent="ops")
    assert "id: \"ops\"" in snippet and len(cannot) == 3
    assert any("rrf" in c for c in cannot) and any("jieba" in c for c in cannot)


# --- queries files --------------------------------------------------------------------------------


def test_yaml_queries_with_all_target_kinds(tmp_path):
    path = write(tmp_path / "q.yaml", """# comment
- id: a
  text: 护照材料
  path: memory/2026-03-04.md
  lines: [6, 10]
- id: b
  text: 洗牙
  contains: "周四"
- id: c
  kind: paraphrase
  text: blog
  path: ./memory/projects/blog-migration.md
- id: d
  kind: negative
  text: 特斯拉
""")
    specs = load_query_specs(path)
    assert [(s.id, s.kind, s.path, s.lines, s.contains) for s in specs] == [
        ("a", "suite", "memory/2026-03-04.md", (6, 10), None),
        ("b", "suite", None, None, "周四"),
        ("c", "paraphrase", "memory/projects/blog-migration.md", None, None),
        ("d", "negative", None, None, None),
    ]
    assert [s.line for s in specs] == [2, 6, 9, 13]


YAML_ERRORS = [
    ("- id: a\n  text: x\n  pathh: MEMORY.md\n", 3, "pathh", "unknown field"),
    ("- id: a\n  path: MEMORY.md\n", 1, "text", "missing"),
    ("- text: x\n  path: MEMORY.md\n", 1, "id", "missing"),
    ("- id: 7\n  text: x\n  path: MEMORY.md\n", 1, "id", "quote it"),
    ("- id: a\n  text: x\n  kind: hard\n  path: MEMORY.md\n", 3, "kind", "must be one of"),
    ("- id: a\n  text: x\n  path: MEMORY.md\n  lines: [5]\n", 4, "lines", "[start, end]"),
    ("- id: a\n  text: x\n  path: MEMORY.md\n  lines: [9, 2]\n", 4, "lines", "start <= end"),
    ("- id: a\n  text: x\n  lines: [1, 2]\n", 3, "lines", "need a path"),
    ("- id: a\n  text: x\n  path: MEMORY.md\n  lines: [1, 2]\n  contains: y\n", 4, "lines", "either lines or contains"),
    ("- id: a\n  text: x\n", 1, "path", "needs a target"),
    ("- id: a\n  text: x\n  kind: negative\n  contains: y\n", 4, "contains", "names no target"),
    ("- id: a\n  text: x\n  contains: ''\n", 3, "contains", "non-empty"),
    ("- id: a\n  text: x\n  path: MEMORY.md\n- id: a\n  text: y\n  path: MEMORY.md\n", 4, "id", "duplicate"),
    ("- id: a\n  text: x\n  text: y\n  path: MEMORY.md\n", 3, "text", "given twice"),
    ("- id: a\n  text: x\n  path: ../outside.md\n", 3, "path", "contains '..'"),
    ("- id: a\n  text: x\n  path: /etc/passwd.md\n", 3, "path", "is absolute"),
    ("- id: a\n  text: x\n  path: ~/notes/a.md\n", 3, "path", "is absolute"),
    ("- id: a\n  text: x\n  contains: y\n  path: memory/../../x.md\n", 4, "path", "contains '..'"),
    ("- id: a\n  text: [unclosed\n", 3, None, "invalid YAML"),
    ("- just a string\n", 1, None, "must be a mapping"),
    ("id: a\ntext: x\n", 1, None, "must be a list"),
]


@pytest.mark.parametrize("body,line,field,message", YAML_ERRORS)
def test_yaml_errors_name_file_line_and_field(tmp_path, body, line, field, message):
    path = write(tmp_path / "queries.yaml", body)
    with pytest.raises(DataError) as err:
        load_query_specs(path)
    assert (err.value.path, err.value.line, err.value.field) == (str(path), line, field)
    assert message in str(err.value)
    assert str(err.value).startswith(f"{path}:{line}:")


def test_jsonl_queries_and_errors(tmp_path):
    good = write(tmp_path / "q.jsonl", '{"id": "a", "text": "x", "path": "MEMORY.md"}\n\n'
                                       '{"id": "b", "text": "y", "contains": "z", "kind": "paraphrase"}\n')
    assert [(s.id, s.line) for s in load_query_specs(good)] == [("a", 1), ("b", 3)]
    bad = write(tmp_path / "bad.jsonl", '{"id": "a", "text": "x", "path": "MEMORY.md"}\n'
                                        '{"id": "b", "text": "y", "path": "/abs.md"}\n')
    with pytest.raises(DataError) as err:
        load_query_specs(bad)
    assert (err.value.line, err.value.field) == (2, "path")
    broken = write(tmp_path / "broken.jsonl", '{"id": "a", "text": "x", "path": "MEMORY.md"\n')
    with pytest.raises(DataError) as err:
        load_query_specs(broken)
    assert err.value.line == 1 and "invalid JSON" in str(err.value)


def test_empty_or_unknown_queries_files(tmp_path):
    with pytest.raises(DataError, match="no queries yet"):
        load_query_specs(write(tmp_path / "q.yaml", "# only comments\n"))
    with pytest.raises(DataError, match=r"\.yaml, \.yml or \.jsonl"):
        load_query_specs(write(tmp_path / "q.csv", "id,text\n"))


# --- the workspace data set: provenance of the three target kinds -------------------------------


def dataset(ws: Path, queries: str, *, name="q.yaml", config_path=None) -> WorkspaceDataset:
    return WorkspaceDataset(ws, write(ws.parent / name, queries), config_path)


def test_render_copies_files_and_writes_provenance_for_each_target_kind(ws, tmp_path):
    write(ws / "memory" / "2026-03-02.md",
          "# 2026-03-02\n\n- 护照 2026 年 6 月到期\n- 材料：身份证、\n旧护照\n- 无关\n")
    cfg = config(tmp_path, '{agents: {defaults: {memorySearch: {extraPaths: ["notes"]}}}}')
    ds = dataset(ws, """
- id: whole
  text: 迁移计划
  path: memory/projects/deep/plan.md
- id: range
  text: 护照
  path: memory/2026-03-02.md
  lines: [3, 5]
- id: sub
  text: 材料
  contains: "身份证、\\n旧护照"
- id: notes
  text: swap
  contains: swapfile
  path: notes/vps.md
- id: none
  kind: negative
  text: 特斯拉
""", config_path=cfg)
    queries = {q.id: q for q in ds.queries()}
    assert queries["whole"].relevant == {"memory/projects/deep/plan.md": 1}
    assert queries["range"].relevant == {"memory/2026-03-02.md#L3-L5": 1}
    assert queries["sub"].relevant == {"contains:sub": 1}
    assert queries["none"].relevant == {} and queries["none"].kind == "negative"
    assert queries["range"].extra["target"] == {"path": "memory/2026-03-02.md", "lines": [3, 5]}
    layout = ds.render(dest=tmp_path / "out")
    try:
        assert set(layout.files) == {"MEMORY.md", "memory/2026-03-01.md", "memory/2026-03-02.md",
                                     "memory/projects/deep/plan.md", "notes/sub/deeper.md", "notes/vps.md"}
        for display in layout.files:
            source = ws / display
            assert (layout.root / display).read_bytes() == source.read_bytes()
        spans = {(s.path, s.start, s.end, s.doc_id) for s in layout.spans}
        assert spans == {
            ("memory/projects/deep/plan.md", 1, 2, "memory/projects/deep/plan.md"),
            ("memory/2026-03-02.md", 3, 5, "memory/2026-03-02.md#L3-L5"),
            ("memory/2026-03-02.md", 4, 5, "contains:sub"),  # an occurrence spanning two lines covers both
            ("notes/vps.md", 2, 2, "contains:notes"),
        }
        assert layout.docs_overlapping("memory/2026-03-02.md", 5, 6) == {"memory/2026-03-02.md#L3-L5", "contains:sub"}
        assert layout.docs_overlapping("memory/2026-03-02.md", 1, 2) == set()
        provenance = json.loads((layout.root / "provenance.json").read_text(encoding="utf-8"))
        assert sorted(map(tuple, provenance["spans"])) == sorted(spans)
        assert provenance["description"]["dataset"] == "workspace"
    finally:
        layout.cleanup()


def test_contains_marks_every_occurrence(ws):
    ds = dataset(ws, "- id: hb\n  text: heartbeat\n  contains: '#'\n")
    spans = {(s.path, s.start) for s in ds.render().spans}
    assert ("MEMORY.md", 1) in spans and ("memory/2026-03-01.md", 1) in spans
    assert ("memory/projects/deep/plan.md", 1) in spans and len(spans) == 3


@pytest.mark.parametrize("body,line,field,message", [
    ("- id: a\n  text: x\n  path: AGENTS.md\n", 3, "path", "exists but is not indexed"),
    ("- id: a\n  text: x\n  path: memory/2026-03-1.md\n", 3, "path", "did you mean memory/2026-03-01.md"),
    ("- id: a\n  text: x\n  path: notes/vps.md\n", 3, "path", "not an indexed file"),  # no extraPaths
    ("- id: a\n  text: x\n  path: MEMORY.md\n  lines: [2, 9]\n", 4, "lines", "has 3 lines"),
    ("- id: a\n  text: x\n  contains: 不存在的短语\n", 3, "contains", "does not occur in any indexed file"),
    ("- id: a\n  text: x\n  contains: 美式\n  path: memory/2026-03-01.md\n", 3, "contains",
     "does not occur in memory/2026-03-01.md"),
])
def test_targets_are_checked_against_indexed_files(ws, body, line, field, message):
    ds = dataset(ws, body)
    with pytest.raises(DataError) as err:
        ds.queries()
    assert (err.value.line, err.value.field) == (line, field) and message in str(err.value)
    assert err.value.path == str(ws.parent / "q.yaml")


def test_skipped_link_named_in_queries_says_why(ws, tmp_path):
    write(tmp_path / "elsewhere.md", "# x\n")
    (ws / "memory" / "link.md").symlink_to(tmp_path / "elsewhere.md")
    with pytest.raises(DataError, match="it was skipped: symbolic link"):
        dataset(ws, "- id: a\n  text: x\n  path: memory/link.md\n").queries()


def test_registered_dataset_and_layout_options(ws):
    write(ws.parent / "q.yaml", "- id: a\n  text: x\n  path: MEMORY.md\n")
    ds = DATASETS.create("workspace", path=str(ws), queries=str(ws.parent / "q.yaml"))
    assert [q.id for q in ds.queries()] == ["a"]
    with pytest.raises(TypeError, match="no \\[layout\\] options"):
        ds.render(daily_logs=False)


@given(st.text(alphabet="ab\n", max_size=40), st.text(alphabet="ab\n", min_size=1, max_size=4))
def test_occurrence_lines_cover_exactly_the_lines_of_each_occurrence(text, needle):
    lines = text.split("\n")
    found = occurrence_lines(text, needle)
    assert len(found) == sum(1 for i in range(len(text)) if text.startswith(needle, i))
    for first, last in found:
        covered = "\n".join(lines[first - 1:last]) + ("\n" if last < len(lines) else "")  # with its line end
        assert needle in covered
        assert last - first == needle.count("\n") - (1 if needle.endswith("\n") else 0)


# --- init -----------------------------------------------------------------------------------------


def test_init_writes_an_experiment_that_load_experiment_accepts(tmp_path):
    result = init_workspace(EXAMPLE, tmp_path / "eval")
    assert result.config == EXAMPLE / "openclaw.json" and result.files == 11
    config = load_experiment(result.experiment).as_written()  # the configuration a results file records
    assert config["preset"] == "openclaw-2026.08"
    assert config["dataset"] == {"name": "workspace", "path": str(EXAMPLE), "queries": str(result.queries),
                                 "config": str(EXAMPLE / "openclaw.json"), "follow_config": True}
    assert config["fusion"]["vector_weight"] == 0.7 and config["fusion"]["text_weight"] == 0.3  # 2026.8.1's own
    assert config["fusion"]["bm25_to_score"] == "current"  # the rest of the preset's stage is kept
    assert config["search"]["max_results"] == 6
    assert config["postprocess"][-1] == {"name": "min_score", "min_score": 0.3, "keyword_fallback": "fill",
                                         "relaxed_floor": 0.0}
    assert [st["name"] for st in config["postprocess"]] == ["temporal_decay", "importance", "mmr", "min_score"]
    assert config["tokenizer"]["name"] == "unicode61"
    text = result.experiment.read_text(encoding="utf-8")
    # openclaw.json's values are read at every run, not copied into tables: the comments say what it sets now
    assert "#   memory.search.query.minScore = 0.3" in text and "[fusion]" not in text
    assert "not a key of" not in text and "What the release" not in text  # in the shape of the preset's release
    followed = {e["setting"] for e in config["openclaw_json"]["followed"]}
    assert {"min_score", "max_results", "tokenizer"} <= followed
    assert config["openclaw_json"]["overridden"] == []
    # the file is in the shape of the preset's release (2026.8.1): nothing to say about it
    assert config["openclaw_json"]["release_notes"] == []
    assert "memory.search.provider" in text  # listed as not evaluated
    hint = [line[2:] for line in text.splitlines() if line.startswith("# ") and " = " in line
            and line[2:].split(" = ")[0] in ("name", "base_url", "model", "api_key_env")]
    assert tomllib.loads("\n".join(hint)) == {"name": "openai-compatible", "base_url": "https://api.openai.com/v1",
                                              "model": "text-embedding-3-small", "api_key_env": "OPENAI_API_KEY"}
    with pytest.raises(FileExistsError):
        init_workspace(EXAMPLE, tmp_path / "eval")


def test_init_queries_template_examples_come_from_the_users_files(tmp_path):
    result = init_workspace(EXAMPLE, tmp_path / "eval")
    template = result.queries.read_text(encoding="utf-8")
    assert all(line.startswith("#") or not line.strip() for line in template.splitlines())
    with pytest.raises(DataError, match="no queries yet"):
        load_query_specs(result.queries)
    # uncommented as a user would, the three examples (and the negative one) are valid queries
    examples = template.split("harness run <experiment TOML>.")[1].split("# Indexed files")[0]
    uncommented = "\n".join(re.sub(r"^# ?", "", line) for line in examples.splitlines()
                            if re.match(r"^# ?(- |  )", line))
    result.queries.write_text(uncommented + "\n", encoding="utf-8")
    ds = DATASETS.create("workspace", **load_experiment(result.experiment).dataset.params)
    queries = ds.queries()
    assert [q.kind for q in queries] == ["suite", "suite", "suite", "negative"]
    kinds = [next(iter(q.relevant), "") for q in queries[:3]]
    assert kinds[0].startswith("memory/") and "#L" in kinds[1] and kinds[2] == "contains:q03"
    assert "notes/vps-ops.md" in template and "AGENTS.md" not in template


def test_init_without_config_uses_the_preset_and_can_reuse_a_queries_file(ws, tmp_path):
    queries = write(tmp_path / "mine.yaml", "- id: a\n  text: 咖啡\n  contains: 美式\n")
    result = init_workspace(ws, tmp_path / "eval", queries=queries, preset="openclaw-2026.02")
    assert result.config is None and result.queries == queries
    doc = tomllib.loads(result.experiment.read_text(encoding="utf-8"))
    assert "fusion" not in doc and "postprocess" not in doc and "config" not in doc["dataset"]
    assert load_experiment(result.experiment).postprocess[0].params["keyword_fallback"] == "none"
    bad = write(tmp_path / "bad.yaml", "- id: a\n  text: x\n  path: nope.md\n")
    with pytest.raises(DataError, match="not an indexed file"):
        init_workspace(ws, tmp_path / "eval2", queries=bad)
    assert not (tmp_path / "eval2" / "experiment.toml").exists()


def test_init_finds_openclaw_json_beside_the_workspace(tmp_path):
    home = tmp_path / ".openclaw"
    write(home / "workspace" / "MEMORY.md", "# m\n")
    write(home / "openclaw.json", "{agents: {defaults: {memorySearch: {query: {maxResults: 9}}}}}")
    result = init_workspace(home / "workspace", tmp_path / "eval")
    assert result.config == home / "openclaw.json"
    assert load_experiment(result.experiment).search.max_results == 9


def test_init_refuses_an_empty_workspace_and_unknown_preset(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no memory files"):
        init_workspace(tmp_path / "empty", tmp_path / "eval")
    write(tmp_path / "w" / "MEMORY.md", "# m\n")
    with pytest.raises(Exception, match="unknown preset"):
        init_workspace(tmp_path / "w", tmp_path / "eval", preset="nope")


# --- the example workspace, end to end ------------------------------------------------------------


def test_example_workspace_contents():
    d = discover_files(EXAMPLE, read_openclaw_config(EXAMPLE / "openclaw.json").extra_paths)
    indexed = displays(d)
    assert "AGENTS.md" not in indexed and "notes/todo.txt" not in indexed and "notes/vps-ops.md" in indexed
    assert sum(p.startswith("memory/2026-03-") for p in indexed) == 7
    queries = WorkspaceDataset(EXAMPLE, EXAMPLE / "queries.yaml", EXAMPLE / "openclaw.json").queries()
    assert 10 <= len(queries) <= 14 and sum(q.kind == "negative" for q in queries) == 2
    targets = [next(iter(q.relevant)) for q in queries if q.relevant]
    assert any("#L" in t for t in targets) and any(t.startswith("contains:") for t in targets)
    assert any(t.endswith(".md") for t in targets)
    assert not any(p.is_symlink() for p in EXAMPLE.rglob("*"))


def test_example_workspace_runs_end_to_end(tmp_path, tmp_cache):
    from harness.studies.experiment import run_experiment

    result = init_workspace(EXAMPLE, tmp_path / "eval", queries=EXAMPLE / "queries.yaml")
    config = load_experiment(result.experiment, embedder={"name": "hash"})
    run = run_experiment(config, cache=tmp_cache, progress=False)
    frame = run.per_query
    assert list(frame["query_id"]) == [f"q{i:02d}" for i in range(1, 15)]
    assert frame.set_index("query_id").loc["q13", "relevant"] == []
    assert frame.set_index("query_id").loc["q03", "relevant"] == ["contains:q03"]
    assert run.summary["suite"]["queries"] == 10 and run.summary["paraphrase"]["queries"] == 2
    assert run.summary["negative"]["queries"] == 2
    assert run.summary["index"]["files"] == 11
    # every returned hit is one of the indexed files, by display path
    indexed = set(discover_files(EXAMPLE, ["notes"]).displays)
    assert {h["path"] for hits in run.hits.values() for h in hits} <= indexed
    assert run.config["postprocess"][-1]["min_score"] == 0.3
    assert "now" in run.config["evaluation"]  # init dates the run, so temporal decay has its reference


def test_init_now_fixes_the_day_temporal_decay_ages_from(tmp_path):
    """The example's logs are dated 2026-03: evaluated as of their week they keep their scores; a year later
    OpenClaw's decay (half-life 30 days) leaves them a thousandth of it, so the run depends on the day."""
    from datetime import date

    from harness.pipeline import build_stages
    from harness.stages.embedders import EmbeddingCache, HashEmbedder
    from harness.stages.fusion import Hit
    from harness.stages.postprocess import SearchContext

    fixed = init_workspace(EXAMPLE, tmp_path / "fixed", queries=EXAMPLE / "queries.yaml", now=date(2026, 3, 8))
    config = load_experiment(fixed.experiment)
    assert str(config.evaluation.now) == "2026-03-08"
    stages = build_stages(config, cache=EmbeddingCache(":memory:"), embedder=HashEmbedder(), progress=False)
    decay = next(p for p in stages.postprocess if type(p).__name__ == "TemporalDecay")
    ctx = SearchContext("q", 6, 0.6, 0.4, chunk_path=lambda c: "memory/2026-03-07.md",
                        now=config.evaluation.now)
    assert decay([Hit("a", 0.8)], ctx)[0].score == pytest.approx(0.8 * 0.5 ** (1 / 30))
    # without `now`: the day after the newest daily log (memory/2026-03-07.md), which is before today
    dated = init_workspace(EXAMPLE, tmp_path / "dated", queries=EXAMPLE / "queries.yaml")
    assert str(load_experiment(dated.experiment).evaluation.now) == "2026-03-08" == str(dated.now)
    assert "memory/2026-03-07.md" in dated.now_reason and "2026-03-08" in dated.experiment.read_text(encoding="utf-8")


def test_the_evaluation_date_is_the_workspaces_own_unless_its_logs_are_current():
    from harness.inputs.workspace_init import workspace_date

    today = date(2026, 12, 3)
    logs = ["MEMORY.md", "memory/2026-03-01.md", "memory/trips/2026-03-09.md", "memory/2026-02-30.md", "notes/a.md"]
    assert workspace_date(logs, today)[0] == date(2026, 3, 10)  # nested dated files count; an impossible date not
    assert workspace_date(["memory/2026-12-03.md"], today)[0] == today  # written today: today, never tomorrow
    assert workspace_date(["memory/2027-01-01.md"], today)[0] == today  # a log dated ahead of the clock
    day, why = workspace_date(["MEMORY.md", "notes/2026-01-01.md"], today)  # not a daily log (not under memory/)
    assert day == today and "no dated daily log" in why


# --- the loop: edit openclaw.json or the queries, rerun, re-init ------------------------------------------


def test_editing_openclaw_json_is_followed_and_an_experiment_table_wins_and_is_named(tmp_path):
    work = tmp_path / "ws"
    shutil.copytree(EXAMPLE, work)
    result = init_workspace(work, tmp_path / "eval", queries=work / "queries.yaml")
    assert load_experiment(result.experiment).postprocess[-1].params["min_score"] == 0.3
    cfg = work / "openclaw.json"
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("minScore: 0.3", "minScore: 0.6"), encoding="utf-8")
    config = load_experiment(result.experiment).as_written()
    assert config["postprocess"][-1]["min_score"] == 0.6  # followed, without re-running init
    assert {"setting": "min_score", "field": "memory.search.query.minScore",
            "openclaw_json": 0.6} in config["openclaw_json"]["followed"]
    # a table of the experiment itself (or a --set) wins, and the record names both values
    with open(result.experiment, "a", encoding="utf-8") as fh:
        fh.write("\n[search]\nmax_results = 8\n")
    config = load_experiment(result.experiment, fusion={"vector_weight": 0.5}).as_written()
    assert config["search"]["max_results"] == 8 and config["fusion"]["vector_weight"] == 0.5
    overridden = {e["setting"]: (e["openclaw_json"], e["experiment"]) for e in config["openclaw_json"]["overridden"]}
    assert overridden == {"max_results": (6, 8)}  # openclaw.json sets no weight (2026.8.1 has none to set)
    from harness.inputs.workspace_config import layer_notes

    lines = layer_notes(config["openclaw_json"])
    assert any("[search] max_results = 8 wins over openclaw.json's memory.search.query.maxResults = 6"
               in line for line in lines)
    # follow_config = false (a hand-written experiment, a CI gate's): the experiment's tables alone, and what
    # openclaw.json says otherwise is reported, not followed
    text = result.experiment.read_text(encoding="utf-8").replace("follow_config = true", "follow_config = false")
    result.experiment.write_text(text, encoding="utf-8")
    config = load_experiment(result.experiment).as_written()
    assert config["postprocess"][-1]["min_score"] == 0.35 and not config["openclaw_json"]["follow"]
    assert {e["setting"] for e in config["openclaw_json"]["overridden"]} >= {"min_score"}
    assert any("does not follow openclaw.json" in line and "query.minScore = 0.6" in line
               for line in layer_notes(config["openclaw_json"]))


def test_init_force_never_replaces_an_edited_queries_file(tmp_path):
    """The user's questions and labels survive `init --force`: the fresh template goes beside them, and the
    replaced experiment.toml is kept as a backup."""
    out = tmp_path / "eval"
    first = init_workspace(EXAMPLE, out, now=date(2026, 3, 8))
    mine = (EXAMPLE / "queries.yaml").read_text(encoding="utf-8")
    first.queries.write_text(mine, encoding="utf-8")  # the user writes their questions
    with pytest.raises(FileExistsError):
        init_workspace(EXAMPLE, out, now=date(2026, 3, 9))
    again = init_workspace(EXAMPLE, out, force=True, now=date(2026, 3, 9))
    assert again.queries == first.queries and first.queries.read_text(encoding="utf-8") == mine
    template = out / "queries.template.yaml"
    assert template.read_text(encoding="utf-8").startswith("# Queries for the OpenClaw workspace")
    backup = out / "experiment.toml.bak"
    assert "now = \"2026-03-08\"" in backup.read_text(encoding="utf-8")
    assert "now = \"2026-03-09\"" in again.experiment.read_text(encoding="utf-8")
    assert any("never replaced" in line for line in again.kept) and any(".bak" in line for line in again.kept)
    assert len(WorkspaceDataset(EXAMPLE, again.queries, EXAMPLE / "openclaw.json").queries()) == 14
    third = init_workspace(EXAMPLE, out, force=True, now=date(2026, 3, 10))  # no backup is ever overwritten
    assert (out / "experiment.toml.bak2").exists() and backup.read_text(encoding="utf-8").count("2026-03-08")
    assert first.queries.read_text(encoding="utf-8") == mine and third.kept
    # an untouched template is simply the template: nothing to keep
    fresh = init_workspace(EXAMPLE, tmp_path / "fresh")
    assert init_workspace(EXAMPLE, tmp_path / "fresh", force=True).kept == []
    assert not (tmp_path / "fresh" / "queries.template.yaml").exists() and fresh.queries.exists()
