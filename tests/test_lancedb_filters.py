"""memory-lancedb-pro's noise filter and adaptive retrieval (src/noise-filter.ts, src/adaptive-retrieval.ts),
and what they do to king78 in the pipeline."""
from __future__ import annotations

import json

import pytest

from harness.inputs.layout import project_path
from harness.stages.fusion import Hit
from harness.stages.postprocess import (
    POSTPROCESSORS,
    SearchContext,
    is_noise,
    should_skip_retrieval,
)


@pytest.mark.parametrize(("text", "noise"), [
    ("HEARTBEAT_OK", True), ("heartbeat: all quiet", True), ("hi", True), ("ok", True),  # short or boilerplate
    ("history of the project", True),  # the code's ^(hi|hello|...) has no \b: "history" is noise too
    ("Hello there, new task", True), ("Fresh session started", True),
    ("I don't recall any of that", True), ("No relevant memories found.", True),
    ("Do you remember my passport number?", True), ("如果你知道答案只回复代号", True), ("只回复 NONE", True),
    ("query -> not found", True),
    ("- 00:00 [HEARTBEAT] Gateway 启动", False),  # a daily-log line: HEARTBEAT is not at the start
    ("普通人借 AI 逆袭：县城会计转型", False), ("用户定下三层提炼规矩", False),
    ("这是记忆", True),  # 4 characters: under 5
    ("这是一条记忆", False),
])
def test_is_noise(text, noise):
    assert is_noise(text) is noise


def test_noise_options_switch_groups_off():
    assert not is_noise("I don't recall that at all", denials=False)
    assert not is_noise("HEARTBEAT tick at noon", boilerplate=False)
    assert is_noise("abc")  # length is never switched off


@pytest.mark.parametrize(("query", "skip"), [
    ("hi", True), ("hello", True), ("good morning", True), ("git status", True), ("/new session", True),
    ("ok", True), ("好的", True), ("👍👍", True), ("HEARTBEAT check", True), ("[System] restart", True),
    ("你记得吗", False), ("上次说的那个", False), ("Do you remember Tello?", False),  # memory words first
    ("普通人逆袭", True), ("多Agent工厂", False),  # CJK: 6 UTF-16 units needed
    ("Tello eSIM", True), ("Tello eSIM monthly fee", False),  # no CJK: 15
    ("eSIM 费用？", False), ("what is it?", False),  # a question mark lifts the length rule
    ("[cron:job1 nightly] run backup", True),  # the cron prefix is stripped, "run" is a command
])
def test_should_skip_retrieval(query, skip):
    assert should_skip_retrieval(query) is skip


def test_min_length_overrides_the_thresholds():
    assert should_skip_retrieval("普通人逆袭的", min_length=10) is True
    assert should_skip_retrieval("Tello eSIM", min_length=6) is False


def test_the_stages():
    hits = [Hit("a", 0.9), Hit("b", 0.8), Hit("c", 0.7)]
    texts = {"a": "HEARTBEAT ok tick", "b": "普通人借 AI 逆袭", "c": "hey, remember me"}
    ctx = SearchContext("多Agent工厂", 6, 0.7, 0.3, chunk_text=texts.get)
    assert [h.id for h in POSTPROCESSORS.create("noise_filter")(hits, ctx)] == ["b"]
    gate = POSTPROCESSORS.create("adaptive_retrieval")
    assert gate(hits, ctx) == hits and gate.skips_query("多Agent工厂") is False
    assert gate(hits, SearchContext("海外开户", 6, 0.7, 0.3)) == []


def test_on_king78_the_gate_skips_short_suite_queries_and_no_negative():
    queries = [json.loads(line) for line in open(project_path("datasets/king78/queries.jsonl"), encoding="utf-8")]
    skipped = {q["id"] for q in queries if should_skip_retrieval(q["text"])}
    assert skipped == {f"T{i}" for i in range(1, 12)} - {"T10"}  # all but 多Agent工厂 and VPS内存OOM
    assert not {q["id"] for q in queries if q["id"].startswith(("N", "P"))} & skipped
