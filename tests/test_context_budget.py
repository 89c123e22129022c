"""Context cost and recall at a token budget (evaluation/context_budget.py): snippets as each system
returns them, recall while results fit the budget, and the columns and intervals every run carries."""
import pytest

from harness.config import load_experiment
from harness.evaluation.context_budget import (
    budget_recall,
    qmd_snippet,
    recall_column,
    snippet,
    token_counter,
)
from harness.stages.lossless import estimate_tokens
from harness.studies.experiment import run_experiment


def test_openclaw_snippet_is_the_first_700_characters_and_covers_their_lines():
    text = "\n".join(f"line {i} " + "x" * 93 for i in range(20))  # 100 characters a line with its newline
    shown, first, last = snippet("openclaw", text, 11, "query")
    assert shown == text[:700] and first == 11 and last == 11 + 6  # the cut falls inside the 7th line
    assert snippet("chunk", text, 11, "q") == (text, 11, 30)
    assert snippet("lancedb-pro", text, 11, "q")[0] == text


def test_qmd_snippet_centres_on_the_line_with_most_query_terms():
    lines = ["# Title", "intro", "the redis cache ttl", "redis only", "after 1", "after 2", "after 3"]
    shown, first, last = qmd_snippet(lines, 10, "Redis TTL", file_lines=40)
    assert (first, last) == (11, 14)  # the best line (third) with one before and two after
    assert shown == "@@ -11,4 @@ (10 before, 26 after)\nintro\nthe redis cache ttl\nredis only\nafter 1"
    nothing, first, _ = qmd_snippet(lines, 1, "absent", file_lines=7)
    assert first == 1 and nothing.splitlines()[1:] == ["# Title", "intro", "the redis cache ttl"]
    long_line, _, _ = qmd_snippet(["x" * 800], 1, "x", file_lines=1)
    assert long_line.splitlines()[1] == "x" * 497 + "..."


def test_budget_recall_counts_whole_results_until_the_budget_is_spent():
    shown = [(300, {"a"}), (300, {"b"}), (100, {"c"}), (50, {"x"})]
    assert budget_recall(shown, {"a", "b", "c"}, 500) == pytest.approx(1 / 3)  # the second does not fit: stop
    assert budget_recall(shown, {"a", "b", "c"}, 700) == pytest.approx(1.0)
    assert budget_recall(shown, {"a", "b", "c"}, 299) == 0.0  # the top result alone is over the budget
    assert budget_recall(shown, {"b"}, 4000) == 1.0


def test_token_counters():
    assert token_counter("lossless-claw")("测试 abcd") == estimate_tokens("测试 abcd") == 5  # 1.5 + 1.5 + 5 x 0.25
    e5 = token_counter("e5")
    assert e5("") == 0 and 1 <= e5("hello world") <= 3 and e5("hello world " * 50) > 50


@pytest.fixture()
def offline_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))


@pytest.mark.parametrize("preset", ["openclaw-2026.02", "qmd"])
def test_every_run_carries_context_tokens_and_recall_at_budget_with_intervals(preset, offline_cache):
    config = load_experiment("experiments/round3.toml", preset=preset, embedder={"name": "hash"})
    result = run_experiment(config, progress=False)
    frame = result.per_query
    columns = ["context_tokens", "whole_memory_tokens", "context_share", *(recall_column(b) for b in (500, 1000, 2000, 4000))]
    assert all(c in frame.columns for c in columns)
    suite = frame[frame["in_suite"]]
    for _, row in suite.iterrows():  # more budget never covers less
        values = [row[recall_column(b)] for b in (500, 1000, 2000, 4000)]
        assert values == sorted(values) and 0 <= values[0] and values[-1] <= 1
    assert (frame["context_tokens"] <= frame["whole_memory_tokens"]).all()
    if preset == "openclaw-2026.02":  # results.json's snippets are OpenClaw's: count them again here
        count = token_counter("e5")
        for _, row in suite.iterrows():
            assert row["context_tokens"] == sum(count(h["snippet"]) for h in result.hits[row["query_id"]])
    style = "qmd" if preset == "qmd" else "openclaw"
    summary = result.summary
    assert summary["context"]["snippet"] == style and summary["context"]["estimator"] == "e5"
    block = summary["suite"]
    assert block["recall@1000tokens_ci95"][0] <= block["recall@1000tokens"] <= block["recall@1000tokens_ci95"][1]
    assert block["context_tokens_ci95"][0] <= block["context_tokens"] <= block["context_tokens_ci95"][1]
    assert 0 < block["token_reduction"] < 1 and "recall@1000tokens" in summary["paraphrase"]


def test_a_wrong_context_setting_names_the_file_and_key():
    from harness.errors import ConfigError

    with pytest.raises(ConfigError, match=r"round3.toml \[evaluation\].*snippet"):
        load_experiment("experiments/round3.toml", evaluation={"context": {"snippet": "whole"}})
