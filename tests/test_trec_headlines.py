"""Three README headlines recomputed by a third party's code (ir_measures) from the committed TREC run and
qrels files (`make trec`), against the committed reports the README draws them from (issue 37)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ir_measures = pytest.importorskip("ir_measures")
from ir_measures import P, Success, nDCG  # noqa: E402

REPORTS = Path(__file__).resolve().parents[1] / "reports"


def _report(path: str) -> dict:
    return json.loads((REPORTS / path).read_text(encoding="utf-8"))


def _per_query(measure, folder: Path, level: str) -> dict[str, float]:
    qrels = list(ir_measures.read_trec_qrels(str(folder / f"{level}.qrels")))
    run = list(ir_measures.read_trec_run(str(folder / f"{level}.run")))
    scored = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
    return {q.query_id: scored.get(q.query_id, 0.0) for q in qrels} | scored  # a query nothing returned for: 0


def test_king78_ablation_passes_per_round():
    """README: suite passes per round of the preset.  A pass is a relevant top-1 chunk that cleared minScore
    (the run file holds only what was returned), so passes = the sum of P@1 at the chunk level."""
    rounds = _report("ablation/ablation.json")["rounds"]
    for r in ("1", "2", "3", "4"):
        passes = sum(_per_query(P @ 1, REPORTS / f"round{r}" / "trec", "chunk").values())
        suite = rounds[r]["summary"]["suite"]
        assert passes == suite["passed"], f"round {r}"
        assert len(_per_query(P @ 1, REPORTS / f"round{r}" / "trec", "chunk")) == suite["queries"]


def test_locomo_recall_any_at_10():
    """README: LoCoMo recall_any@10 per preset: a question counts when some evidence turn is in one of the
    first 10 chunks, i.e. Success@10 at the chunk level."""
    runs = [r for r in _report("locomo/locomo.json")["runs"] if r["label"] == "turns"]
    assert len(runs) == 4
    for run in runs:
        success = _per_query(Success @ 10, REPORTS / "locomo" / f"{run['preset']}-turns" / "trec", "chunk")
        assert len(success) == run["summary"]["suite"]["queries"]
        assert sum(success.values()) / len(success) == pytest.approx(run["summary"]["suite"]["recall_any@10"], abs=1e-9)


def test_t2ranking_ndcg_at_10_difference():
    """README: nDCG@10 of openclaw-2026.08 against 2026.02 on T2Ranking (document level, graded qrels)."""
    means = {}
    for preset in ("openclaw-2026.02", "openclaw-2026.08"):
        values = _per_query(nDCG @ 10, REPORTS / "t2ranking" / f"{preset}-passages" / "trec", "document")
        means[preset] = sum(values.values()) / len(values)
    paired = next(p for p in _report("t2ranking/t2ranking.json")["paired"] if p["metric"] == "ndcg@10"
                  and p["a"] == "openclaw-2026.08-passages" and p["b"] == "openclaw-2026.02-passages")
    assert means["openclaw-2026.08"] - means["openclaw-2026.02"] == pytest.approx(paired["difference"]["estimate"], abs=1e-9)
