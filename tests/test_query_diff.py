"""`harness diff`: moved queries from the per-query rows and hits alone, ordered by how much they moved,
with both runs' snippets side by side."""
import json

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import ConfigError
from harness.studies.query_diff import diff_files
from tests.conftest import ROOT
from tests.gate_docs import ablation, results, row, write

# the lancedb-pro preset against the study's, round 1 (where it loses a query the study's preset passes); their
# candidate pools differ (20 vs 24), which the comparison declares
ROUND1 = ROOT / "reports" / "round1" / "results.json"
LANCEDB1 = ROOT / "reports" / "lancedb-pro" / "round1" / "results.json"
POOL = ["candidate-pool"]


def test_round1_against_the_lancedb_pro_preset_lists_the_flipped_queries_with_snippets(tmp_path):
    d = diff_files(ROUND1, LANCEDB1, allow_confounds=POOL)
    assert d.compared == 34 and d.base_label == "openclaw-2026.02 / round1" and d.now_label == "lancedb-pro / round1"
    moved = {q.key: q for q in d.moved}
    # the suite queries whose pass flipped are exactly those whose rows disagree (the two presets differ in round 1)
    base_rows = json.loads(ROUND1.read_text(encoding="utf-8"))["queries"]
    now_rows = json.loads(LANCEDB1.read_text(encoding="utf-8"))["queries"]
    expected = {q for q, r in base_rows.items()
                if r["kind"] == "suite" and bool(r["passed"]) != bool(now_rows[q]["passed"])}
    flipped = {k for k, q in moved.items() if q.pass_flipped and q.kind == "suite"}
    assert expected and flipped == expected
    lost = sorted(k for k in flipped if base_rows[k]["passed"])
    assert lost, "the lancedb-pro preset loses some round-1 query the study's preset passes"
    q = moved[lost[0]]
    assert "passed -> failed" in q.changes
    # ordered by the change of reciprocal rank, largest first
    assert [m.moved for m in d.moved] == sorted((m.moved for m in d.moved), reverse=True)
    # the snippets are the returned chunks' text, relevant ones marked: a passing query's top-1 is relevant
    assert q.base.hits[0].relevant and q.base.hits[0].snippet

    md, html = tmp_path / "diff.md", tmp_path / "diff.html"
    out = CliRunner(env={"COLUMNS": "160"}).invoke(app, ["diff", str(ROUND1), str(LANCEDB1), "--allow-confound", "candidate-pool", "--limit", "5",
                                                         "--markdown", str(md), "--html", str(html)])
    assert out.exit_code == 0, out.output
    assert f"{len(d.moved)} of 34 queries moved" in out.output
    if len(d.moved) > 5:
        assert f"... and {len(d.moved) - 5} more (--limit)" in out.output
    text = md.read_text()
    assert all(f"| {k} |" in text for k in flipped)
    page = html.read_text()
    assert page.count('<article class="moved') == len(d.moved) and f'id="q-{lost[0]}"' in page
    assert "<code>harness diff</code>" in page and "<script" not in page


def test_ordering_and_what_counts_as_moved(tmp_path):
    base = results([row("A", rank=1), row("B", rank=2, margin=-0.1), row("C", rank=1), row("D", rank=3, margin=-0.1),
                    row("E", rank=1)])
    now = results([row("A", rank=2, margin=-0.1), row("B", rank=2, margin=-0.2), row("C", rank=None, margin=None),
                   row("D", rank=4, margin=-0.1), row("E", rank=1)])
    d = diff_files(write(tmp_path / "b.json", base), write(tmp_path / "n.json", now))
    assert [q.key for q in d.moved] == ["C", "A", "D"]  # 1.0, 0.5, 0.083; B and E did not move
    assert d.moved[0].changes == ["rank 1 -> not returned", "passed -> failed", "another record at top-1"]


def test_ablations_are_diffed_round_by_round_and_kinds_must_match(tmp_path):
    r = results([row("T1"), row("T2")])
    r2 = results([row("T1"), row("T2", rank=2, margin=-0.1)])
    base = write(tmp_path / "b.json", ablation({"3": r, "4": r}))
    now = write(tmp_path / "n.json", ablation({"3": r2, "4": r}))
    assert [q.key for q in diff_files(base, now).moved] == ["round3.T2"]
    with pytest.raises(ConfigError, match="cannot diff .* give two files of one kind"):
        diff_files(base, write(tmp_path / "r.json", r))
    scores = write(tmp_path / "e.json", {"mean": {"mrr@6": 1.0}, "per_query": {}, "measures": ["mrr@6"]})
    with pytest.raises(ConfigError, match=r"needs the returned hits\); this file is harness eval --json scores"):
        diff_files(scores, scores)


def test_older_results_without_runs_or_rank_columns_still_diff(tmp_path):
    base = results([row("T1"), row("T2")])
    now = results([row("T1"), row("T2", rank=3, margin=-0.1)])
    for doc in (base, now):  # what an old results.json lacks: the runs/qrels keys and the rank column
        for q in doc["queries"].values():
            q.pop("rank")
    d = diff_files(write(tmp_path / "b.json", base), write(tmp_path / "n.json", now))
    assert [(q.key, q.base.rank, q.now.rank) for q in d.moved] == [("T2", 1, 3)]
