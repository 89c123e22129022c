"""Stage matrices: each cell is a full run; the report shows what a value rescues against the first."""
import json

from harness.studies.matrix import rescued, run_matrix, write_matrix

SPEC = {
    "name": "mini",
    "values": [{"label": "unicode61", "tokenizer": {"name": "unicode61"}},
               {"label": "jieba", "tokenizer": {"name": "jieba"}}],
    "runs": [{"label": "r3", "experiment": "experiments/round3.toml"},
             {"label": "r3 vector", "experiment": "experiments/round3.toml",
              "overrides": {"fusion": {"name": "vector-only"}}, "vary": False}],
}


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
    assert (tmp_path / "mini.png").stat().st_size > 5_000
