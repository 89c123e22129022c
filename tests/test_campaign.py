"""The generated bad-input campaign (issue 30) as a test: a few hundred malformed and hostile inputs of
every kind (experiment TOML, queries YAML/JSONL, openclaw.json, workspaces, TREC runs and qrels, results
and gate files, CLI options, the cache, keys in any field) through the real CLI, each in its own process.
None may end in exit 3, print a traceback, hang, accept a value outside its declared domain, refuse a
valid input, print an exit-2 error that names no file or option, or echo the canary key.

HARNESS_CAMPAIGN_SIZE=N runs N cases (`make reliability` runs 1,200 and writes reports/reliability/);
HARNESS_CAMPAIGN_SEED=S another seed.  A failing case is printed with the command that replays it
(`python -m tests.campaign --seed S --case I`, which keeps the case's folder).
"""
from __future__ import annotations

import pytest

from tests.campaign import cases
from tests.campaign.campaign import (
    DEFAULT_SEED,
    DEFAULT_SIZE,
    failure_report,
    run_campaign,
)


@pytest.mark.slow  # a few hundred CLI processes, each paying its start-up: minutes on 2 cores
def test_generated_bad_inputs_end_in_one_named_error_or_a_clean_run(campaign_size=None):
    import os

    size = int(os.environ.get("HARNESS_CAMPAIGN_SIZE", DEFAULT_SIZE))
    seed = int(os.environ.get("HARNESS_CAMPAIGN_SEED", DEFAULT_SEED))
    campaign = run_campaign(size, seed)
    summary = campaign.summary()
    print({k: summary[k] for k in ("cases", "seconds", "exit_codes", "failures", "fresh_process_twins")})
    assert not campaign.failures(), "\n" + failure_report(campaign)
    assert summary["cases"] + len(summary["skipped"]) == size and len(summary["skipped"]) < size // 20
    if size >= len(cases.family_order(seed)):  # every family ran, and the fresh processes agreed
        assert set(summary["by_family"]) == set(cases.FAMILIES)
    twins = summary["fresh_process_twins"]
    assert twins["cases"] >= size // 30 and twins["agree"] == twins["cases"]
