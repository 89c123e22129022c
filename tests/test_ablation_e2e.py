"""End to end on the real embedder: the four rounds with the study's preset show the study's shape.

Asserted are the mechanisms the seed reports (noise, purity, keyword injection), not single figures.
Where our e5-small reproduction differs from the seed (T3 and T1 in round 3 are near-ties decided by
<0.001 cosine), the README and reports/ablation/ablation.md say so; those cells are not asserted.
"""
import re

import pytest

from harness.config import load_experiment
from harness.pipeline import build_stages
from harness.studies.experiment import run_experiment
from tests.conftest import ROOT

TELLO_FILE = "memory/rec6wBc33Xcxr.md"
EVOMAP_FILE = "memory/reczie7JbTmRs.md"
DAILY = re.compile(r"memory/\d{4}-\d\d-\d\d\.md")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rounds():
    results, embedder = {}, None
    for r in (1, 2, 3, 4):
        config = load_experiment(ROOT / f"experiments/round{r}.toml")
        stages = build_stages(config, embedder=embedder, progress=False)
        embedder = stages.embedder
        results[r] = run_experiment(config, stages=stages)
    return results


def row(results, r, qid):
    return results[r].per_query.set_index("query_id").loc[qid]


def test_t3_needs_the_injected_keywords(rounds):
    for r in (1, 2):
        assert not row(rounds, r, "T3")["passed"]
    for r in (1, 2, 3):  # no record body contains 美国手机号: the lexical leg finds nothing
        assert row(rounds, r, "T3")["lexical_candidates"] == 0
    t3 = row(rounds, 4, "T3")
    assert t3["passed"] and t3["text_score_nonzero"] and t3["top1_chunk"].startswith(TELLO_FILE)


def test_t6_found_in_a_daily_log_then_lost_then_its_own_record(rounds):
    r1 = row(rounds, 1, "T6")
    assert r1["passed"] and DAILY.match(r1["top1_chunk"])
    assert not row(rounds, 2, "T6")["passed"]
    for r in (3, 4):
        assert row(rounds, r, "T6")["passed"] and row(rounds, r, "T6")["top1_chunk"].startswith(EVOMAP_FILE)


def test_t4_mixed_chunk_until_the_record_has_its_own_file(rounds):
    for r in (1, 2):
        t4 = row(rounds, r, "T4")
        assert not (t4["top1_relevant"] and t4["top1_pure"])  # mixed or wrong
    for r in (3, 4):
        t4 = row(rounds, r, "T4")
        assert t4["top1_chunk"].startswith(TELLO_FILE) and t4["top1_pure"]
        assert t4["score"] > row(rounds, 1, "T4")["score"]


def test_round4_passes_the_whole_suite_and_reports_negatives(rounds):
    summary = rounds[4].summary
    assert summary["suite"]["queries"] == 12 and summary["suite"]["passed"] == 12
    assert summary["negative"]["queries"] >= 8  # reported beside the suite, whatever they return


def test_paraphrases_find_their_records_from_round_three(rounds):
    for r in (3, 4):
        para = rounds[r].per_query[rounds[r].per_query["kind"] == "paraphrase"]
        missed = para[~para["hit@6"]]["query_id"].tolist()
        assert len(missed) <= 1, missed  # measured: only P1 (没有背景的人怎么靠 AI 翻身) misses, see README
