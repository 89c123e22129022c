"""lossless-claw (Martian-Engineering/lossless-claw 0.15.3; SPEC.md section 7): session memory that
keeps every message in SQLite, builds a DAG of summaries as the context fills, and gives the agent
lcm_grep over the raw messages and the summaries.

Modules, each one upstream mechanism:
    estimate     the token estimator (CJK 1.5, astral 2, other 0.25 per code point)
    store        messages, summaries with their DAG links, FTS5 tables, the context items
    grep         lcm_grep: regex and full_text modes, sorts, the CJK LIKE and trigram paths, the tool text
    summarize    summary targets, the extractive stand-in, summaries from a chat model (cached)
    compaction   leaf formation, condensation fan-ins, the fresh tail, the triggers, the DAG's shape
    assemble     the context of a turn under a token budget

The driver that runs it on LoCoMo and writes reports/lossless-claw/ is harness.studies.lossless.
"""
from harness.stages.lossless.assemble import AssembledContext, assemble, summary_block
from harness.stages.lossless.compaction import Compactor, LosslessSettings, dag_shape
from harness.stages.lossless.estimate import estimate_tokens, truncate_to_tokens
from harness.stages.lossless.grep import (
    GrepHit,
    GrepResult,
    lcm_grep,
    tool_text,
    tool_tokens,
)
from harness.stages.lossless.store import LosslessStore, Message, Summary
from harness.stages.lossless.summarize import (
    ChatSummarizer,
    ExtractiveSummarizer,
    Summarizer,
    SummaryRequest,
    target_tokens,
)

__all__ = ["AssembledContext", "assemble", "summary_block", "Compactor", "LosslessSettings", "dag_shape",
           "estimate_tokens", "truncate_to_tokens", "GrepHit", "GrepResult", "lcm_grep", "tool_text",
           "tool_tokens", "LosslessStore", "Message", "Summary", "ChatSummarizer", "ExtractiveSummarizer",
           "Summarizer", "SummaryRequest", "target_tokens"]
