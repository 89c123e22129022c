"""Stage matrices: each cell is a full run; the report shows what a value rescues against the first."""
import json

from harness.reporting.matrix import write_matrix
from harness.studies.matrix import rescued, run_matrix
from harness.studies.spec.models import MatrixStudy

SPEC = MatrixStudy.model_validate({
    "kind": "matrix", "name": "mini",
    "values": [{"label": "unicode61", "tokenizer": {"name": "unicode61"}},
               {"label": "jieba", "tokenizer": {"name": "jieba"}}],
    "runs": [{"label": "r3", "experiment": "experiments/round3.toml"},
             {"label": "r3 vector", "experiment": "experiments/round3.toml",
              "overrides": {"fusion": {"name": "vector-only"}}, "vary": False}],
})


def test_matrix_cells_rows_and_report(tmp_path):
    cells = run_matrix(SPEC, progress=False)
    assert [(r, v) for r, v, _ in cells] == [("r3", "unicode61"), ("r3", "jieba"), ("r3 vector", "—")]
    assert cells[1][2].config["tokenizer"]["name"] == "jieba"
    assert cells[2][2].config["fusion"]["name"] == "vector-only"
    frame = write_matrix(SPEC, cells, tmp_path, ["passed", "mrr@6", "text_score_nonzero_share"])
    u61, jieba = frame.iloc[0], frame.iloc[1]
    # jieba gives the lexical leg hits for Chinese queries that unicode61 cannot match
    assert jieba["text_score_nonzero_share"] > u61["text_score_nonzero_share"]
    table = rescued(frame, "unicode61")
    row = table[(table["run"] == "r3") & (table["value"] == "jieba")].iloc[0]
    expected = sorted(set(jieba["passed_ids"]) - set(u61["passed_ids"]))
    assert row["rescued"] == (" ".join(expected) or "—")
    assert "T1" in expected  # its record has 普通人逆袭 only inside a longer run: unicode61 cannot match it
    doc = json.loads((tmp_path / "mini.json").read_text(encoding="utf-8"))
    assert len(doc["cells"]) == 3 and doc["environment"]["sqlite_vec"]
    md = (tmp_path / "mini.md").read_text(encoding="utf-8")
    assert "## passed" in md and "rescued" in md
    # each figure with its interval, each value tested against the first (Holm over the table)
    assert "## mrr@6" in md and "[" in md.split("## mrr@6")[1].split("\n")[4]
    assert "Against `unicode61`" in md and doc["comparisons"]["mrr@6"][0]["a"] == "jieba"
    assert (tmp_path / "mini.png").stat().st_size > 5_000


def test_a_matrix_over_embedders_uses_each_cells_own_model(tmp_path):
    """A cell reuses an embedder only when its [embedder] table is identical: e5-small and the hash
    embedder give two sets of vectors and two sets of figures (before the fix, the second cell silently
    reused the first cell's model)."""
    spec = MatrixStudy.model_validate({
        "kind": "matrix", "name": "embedders",
        "values": [{"label": "e5-small", "embedder": {"name": "e5-small-q4"}},
                   {"label": "hash", "embedder": {"name": "hash"}},
                   {"label": "e5-small again", "embedder": {"name": "e5-small-q4"}}],
        "runs": [{"label": "r3", "experiment": "experiments/round3.toml"}]})
    cells = run_matrix(spec, progress=False)
    e5, hashed, again = (result for _, _, result in cells)
    assert e5.environment["embedding_model"] != hashed.environment["embedding_model"]
    assert hashed.environment["embedding_model"].startswith("hash")
    assert again.environment["embedding_model"] == e5.environment["embedding_model"]
    top = lambda result: [h[0]["vector_score"] for h in result.hits.values() if h]  # noqa: E731
    assert top(e5) != top(hashed)  # different vectors
    assert top(again) == top(e5)
    assert e5.summary["suite"]["mrr@6"] != hashed.summary["suite"]["mrr@6"]  # different figures
    frame = write_matrix(spec, cells, tmp_path, ["passed", "mrr@6"])
    assert frame["value"].tolist() == ["e5-small", "hash", "e5-small again"]
    doc = json.loads((tmp_path / "embedders.json").read_text(encoding="utf-8"))
    models = [c["config"]["embedder"]["name"] for c in doc["cells"]]
    assert models == ["e5-small-q4", "hash", "e5-small-q4"]
    # paired tests of each value against the first, Holm over the table
    rows = doc["comparisons"]["mrr@6"]
    assert [(r["a"], r["b"]) for r in rows] == [("hash", "e5-small"), ("e5-small again", "e5-small")]
    assert rows[1]["p_value"] == 1.0 and "Holm over 2" in rows[0]["method"]


def test_a_matrix_over_presets_gives_each_cell_its_preset():
    """experiments/presets.toml varies whole presets: each cell loads its own, whatever --preset says."""
    from harness.studies.matrix import load_matrix, matrix_configs
    from tests.conftest import ROOT

    spec = load_matrix(ROOT / "experiments/presets.toml")
    for preset in (None, "qmd"):
        cells = matrix_configs(spec, preset=preset)
        assert [c.preset for _, value, c in cells] == [value for _, value, _ in cells]
        assert "qmd-documents" in {c.fusion.name for _, _, c in cells}  # the qmd cell is QMD's


def test_configs_of_reads_every_kind_of_experiment_file():
    """`harness embed` / `cache-key` take any file of experiments/: the configurations are the ones the
    study runs (presets x runs), and --preset replaces the file's presets."""
    from pathlib import Path

    from harness.studies.plan import configs_of, plan
    from harness.studies.spec import kind_of_file, study_kind

    def presets(path, **kw):
        return [(c.preset, c.dataset.params.get("granularity")) for c in configs_of(path, **kw)]

    assert len(configs_of("experiments/round3.toml")) == 1
    assert len(configs_of("experiments/chunkers.toml")) == 7 * 3
    bench = presets("experiments/benchmark-locomo.toml")
    assert {p for p, _ in bench} == {"openclaw-2026.02", "openclaw-2026.08", "qmd", "lancedb-pro"}
    assert {g for _, g in bench} == {"turn", "session"} and len(bench) == 8
    assert presets("experiments/lossless-locomo.toml") == [(p, "turn") for p in ("openclaw-2026.08", "lancedb-pro", "qmd")]
    context = configs_of("experiments/context-budget.toml")
    assert len(context) == 5 * 4
    assert [c.preset for c in configs_of("experiments/context-budget.toml", preset="qmd")] == ["qmd"] * 4
    abstention = configs_of("experiments/abstention.toml")
    assert any(c.fusion.name == "rrf" for c in abstention)  # a run's overrides are applied
    assert {c.preset for c in configs_of("experiments/expansion.toml")} == {"qmd"}
    for path in sorted(Path("experiments").glob("*.toml")):  # nothing in experiments/ is refused
        if study_kind(kind_of_file(path)).takes_experiment:
            continue  # grids, not experiments
        # a kind with no cells embeds only what it says (scale: synthetic vectors, nothing)
        assert configs_of(path) or not plan(path).cells, path


def test_values_from_another_matrix_file(tmp_path):
    import pytest

    from harness.errors import ConfigError
    from harness.studies.matrix import load_matrix

    spec = load_matrix("experiments/tokenizers-locomo.toml")
    assert [v.label for v in spec.values] == [v.label for v in load_matrix("experiments/tokenizers.toml").values]
    bad = tmp_path / "m.toml"
    bad.write_text('kind = "matrix"\nname = "m"\nvalues_from = "experiments/nothing.toml"\n'
                   '[[runs]]\nlabel = "r"\nexperiment = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="values_from: no file experiments/nothing.toml"):
        load_matrix(bad)
