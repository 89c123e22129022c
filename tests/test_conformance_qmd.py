"""The qmd preset's lexical leg against the real QMD (harness.conformance.qmd): the comparison rules,
and, when QMD 2.8.3 is installed in the conformance cache (install.sh), a real run on king78 round 1."""
from __future__ import annotations

import pytest

from harness.conformance import qmd as conformance
from harness.conformance import spec_table
from harness.systems import real


def test_identical_means_same_order_up_to_exact_ties_and_scores_within_tolerance():
    real_hits = [("a.md", -2.0), ("b.md", -1.5), ("c.md", -1.5), ("d.md", -1.0)]
    swapped_tie = [("a.md", -2.0), ("c.md", -1.5), ("b.md", -1.5), ("d.md", -1.0)]
    assert conformance.compare_query(real_hits, swapped_tie, "x", "x")["identical"]
    moved = [("b.md", -1.5), ("a.md", -2.0), ("c.md", -1.5), ("d.md", -1.0)]
    assert conformance.compare_query(real_hits, moved, "x", "x")["difference"] == "same files, different order"
    off = conformance.compare_query(real_hits, [(p, s + 1e-3) for p, s in real_hits], "x", "x")
    assert not off["identical"] and off["difference"].startswith("bm25 differs")
    missing = conformance.compare_query(real_hits, real_hits[:3], '"q"', '"q"*')
    assert "only in QMD: ['d.md']" in missing["difference"] and "QMD MATCH" in missing["difference"]
    assert conformance.compare_query([], [], None, None)["identical"]


def test_spec_behaviour_rows_name_a_status_each():
    # the QMD and lancedb-pro rows live in the one SPEC behaviour table (spec_table.toml)
    rows = [r for r in spec_table.load() if not r.preset.startswith("openclaw-")]
    assert {r.status for r in rows} <= set(spec_table.STATUSES)
    assert {r.preset for r in rows} == {"qmd", "lancedb-pro", "lancedb-pro-autorecall"}


def test_the_workspace_files_qmd_takes(tmp_path):
    for rel in ("memory/a.md", "memory/.hidden/b.md", "node_modules/c.md", "notes.txt", "MEMORY.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\r\n", encoding="utf-8")
    assert [p for p, _ in conformance.workspace_documents(tmp_path)] == ["MEMORY.md", "memory/a.md"]
    assert conformance.workspace_documents(tmp_path)[0][1] == "x\r\n"  # no newline translation


def test_identical_rankings_with_the_real_qmd_on_round1(tmp_path):
    try:
        real.package_dir("qmd", conformance.QMD_VERSION, real.conformance_dir())
        if not real.bun_path().is_file():
            raise real.NotInstalled("bun")
    except real.NotInstalled as exc:
        pytest.skip(f"QMD {conformance.QMD_VERSION} is not in the conformance cache ({exc}); run install.sh")
    report = conformance.run_qmd_conformance(rounds=(1,), cmrc=False, work_dir=tmp_path)
    layout = report["layouts"]["round1"]
    assert layout["queries"] == 34 and layout["identical"] == 34 and layout["same_match"] == 34
    assert layout["max_score_diff"] is not None and layout["max_score_diff"] <= conformance.SCORE_TOLERANCE
