"""Issue 26's workspace, end to end with the real e5 model: datasets/old-logs-workspace evaluated as of
2026-03-07 (its daily logs 50-61 days old).  `harness run` names temporal decay as the stage that loses the
daily-log queries, with the numbers; turning it off gives them back; `harness sweep` shows it, with the
snippet in the keys of OpenClaw 2026.8.1's openclaw.json and decay marked as a setting it cannot make."""
from __future__ import annotations

import re

import pytest

from harness.config import load_experiment
from harness.studies.sweep_analysis import sweep_document
from harness.studies.experiment import run_experiment
from harness.studies.sweep import run_sweep
from harness.studies.sweep_grid import default_grid, load_grid
from tests.conftest import ROOT

DAILY_LOG = re.compile(r"^memory/\d{4}-\d{2}-\d{2}\.md")


# one real e5 run of a 23-file workspace, shared by the module: a minute on 2 cores (`make test-fast` leaves it out)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def config():
    return load_experiment(ROOT / "experiments/old-logs-workspace.toml")


@pytest.fixture(scope="module")
def run(config):
    return run_experiment(config, progress=False)


def _target(row) -> str:
    return next(iter(row["relevant"]), "")


def test_run_names_temporal_decay_as_the_stage_that_lost_the_daily_log_queries(run, config):
    frame = run.per_query.set_index("query_id")
    assert run.summary["stages"]["costliest"]["stage"] == "temporal_decay"
    decayed = frame[frame["lost_at"] == "temporal_decay"]
    assert len(decayed) >= 2
    for qid, row in decayed.iterrows():
        steps = {s["stage"]: s for s in row["stage_ranks"]}
        assert steps["fusion"]["rank"] == 1  # first after the fusion ...
        assert steps["temporal_decay"]["rank"] is None or steps["temporal_decay"]["rank"] > 1  # ... not after decay
        factor = float(re.search(r"days old: x(\d\.\d\d)", steps["temporal_decay"]["detail"]).group(1))
        assert factor < 0.35, (qid, steps["temporal_decay"]["detail"])  # 50-61 days at a 30-day half-life
        target = _target(row)
        assert DAILY_LOG.match(target) or target.startswith("contains:"), (qid, target)
        assert "after temporal_decay" in row["why"] and "days old" in row["why"]
    # the replay is right about the cause: without that one stage, those queries find their answer
    no_decay = config.with_overrides({"postprocess": [p.as_written() for p in config.postprocess
                                                      if p.name != "temporal_decay"]})
    again = run_experiment(no_decay, progress=False).per_query.set_index("query_id")
    assert again.loc[decayed.index, "passed"].all()
    assert again["passed"].sum() > frame["passed"].sum()


def test_sweep_shows_decay_off_and_keeps_the_snippet_to_the_releases_keys(config):
    result = run_sweep(config, load_grid(default_grid(config)), progress=False)
    doc = sweep_document(result, config.as_written())
    link = doc["stage_link"]
    assert link["stage"] == "temporal_decay" and link["column"] == "half_life_days"
    off = next(v for v in link["values"] if v["value"] == 0)
    assert off["objective"] > result.default["objective"]
    assert any("query.hybrid.temporalDecay.enabled = false" in c for c in off["cannot"])  # 2026.8.1 builds it in
    chosen = result.recommended or result.best
    assert chosen["half_life_days"] == 0 or chosen["half_life_days"] > 30
    if doc["openclaw_snippet"] is not None:
        assert doc["openclaw_snippet"].lstrip().startswith("{\n  memory: {\n    search: {")
        assert "temporalDecay" not in doc["openclaw_snippet"] and "hybrid" not in doc["openclaw_snippet"]
    assert doc["release"]["release"] == "2026.8.1" and doc["release"]["block"] == "memory.search"


def test_example_workspace_names_decay_where_it_lost_a_daily_log(tmp_path):
    """As of 2026-03-08 its logs are 1-7 days old: decay loses only the queries whose answer was first
    until it scaled the log by x0.85-0.98; the others were lost before it, and the replay says where."""
    config = load_experiment(ROOT / "experiments/example-workspace.toml")
    frame = run_experiment(config, progress=False).per_query
    failed = frame[(frame["kind"] != "negative") & ~frame["passed"].astype(bool) & frame["lost_at"].notna()]
    assert len(failed) and set(failed["lost_at"]) <= {"retrieval", "legs", "fusion", "temporal_decay", "importance",
                                                       "mmr", "min_score", "cut"}
    for _, row in failed[failed["lost_at"] == "temporal_decay"].iterrows():
        assert DAILY_LOG.match(_target(row)) and "days old" in row["why"]
