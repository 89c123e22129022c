"""lossless-claw's compaction (SPEC.md section 7, compaction.ts): leaves from the oldest raw messages,
condensed nodes from runs of same-depth summaries, the fresh tail never touched.

Leaf: the oldest contiguous raw messages outside the fresh tail, added until `leaf_chunk_tokens` would
be exceeded (at least one message, no minimum count) -> one summary of depth 0 that replaces them in
the context.  Condensation: the oldest contiguous run of summaries of one depth (again capped at
`leaf_chunk_tokens`) is condensed when it holds at least the fan-in (8 leaves at depth 0, 4 summaries
at depth >= 1, 2 under pressure) and at least max(condensed_target_tokens, 0.1 x leaf_chunk_tokens)
tokens.  Triggers after each message: the leaf trigger (raw tokens outside the tail >=
leaf_chunk_tokens -> one leaf pass), the threshold (context tokens > floor(context_threshold x
token_budget) -> a sweep: leaf passes, then condensation shallowest depth first, until under the
threshold or no progress), and overflow (context still > token_budget -> a forced sweep at fan-in 2).
A summary that is not shorter than its input is asked for again aggressively, then truncated to 2,048
characters with "[Truncated from N tokens]".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pydantic import Field

from harness.registry import stage
from harness.stages.lossless.estimate import estimate_tokens
from harness.stages.lossless.store import LosslessStore, Summary
from harness.stages.lossless.summarize import Summarizer, SummaryRequest, target_tokens

FALLBACK_MAX_CHARS = 512 * 4
CONDENSED_MIN_INPUT_RATIO = 0.1


@stage
class LosslessSettings:
    """lossless-claw's configuration (defaults of release 0.15.3)."""

    token_budget: int = Field(128_000, ge=1)
    """the model's context budget (the host's; 128,000 when it gives none)"""
    context_threshold: float = Field(0.75, gt=0, le=1, allow_inf_nan=False)
    """compaction runs when the context passes this share of token_budget"""
    fresh_tail_count: int = Field(64, ge=0)
    """the last raw messages never compacted and always assembled"""
    leaf_chunk_tokens: int = Field(20_000, ge=1)
    """most source tokens in one leaf (and in one condensation run)"""
    leaf_target_tokens: int = Field(2400, ge=1)
    """a leaf summary's target cap: max(192, min(this, 0.35 x input))"""
    condensed_target_tokens: int = Field(2000, ge=1)
    """a condensed summary's target, max(512, this); also the smallest run worth condensing"""
    leaf_min_fanout: int = Field(8, ge=1)
    """leaves needed for a depth-1 node"""
    condensed_min_fanout: int = Field(4, ge=1)
    """summaries of depth >= 1 needed for the next depth"""
    condensed_min_fanout_hard: int = Field(2, ge=1)
    """the fan-in under pressure (context over token_budget)"""


@dataclass
class Compactor:
    """Runs compaction on one conversation's store as messages arrive."""

    store: LosslessStore
    settings: LosslessSettings
    summarizer: Summarizer
    passes: dict[str, int] = field(default_factory=lambda: {"leaf": 0, "condensed": 0, "escalated": 0,
                                                               "fallback": 0})

    # -- sizes -----------------------------------------------------------------------------------------
    @property
    def threshold(self) -> int:
        return int(self.settings.context_threshold * self.settings.token_budget)

    def tail_start(self) -> int:
        """Position in the context of the first protected raw message (len(context) when none is)."""
        n = self.settings.fresh_tail_count
        raw = [i for i, (kind, _) in enumerate(self.store.context) if kind == "message"]
        if n <= 0 or not raw:
            return len(self.store.context)
        return raw[max(0, len(raw) - n)]

    def raw_tokens_outside_tail(self) -> int:
        end = self.tail_start()
        return sum(self.store.item_tokens(it) for it in self.store.context[:end] if it[0] == "message")

    def min_condensed_tokens(self) -> int:
        return max(self.settings.condensed_target_tokens,
                   int(self.settings.leaf_chunk_tokens * CONDENSED_MIN_INPUT_RATIO))

    # -- choosing what to compact ----------------------------------------------------------------------
    def oldest_leaf_chunk(self) -> list[int]:
        """Positions of the oldest contiguous raw messages outside the tail, up to leaf_chunk_tokens."""
        end, cap = self.tail_start(), self.settings.leaf_chunk_tokens
        chunk: list[int] = []
        tokens = 0
        for pos in range(end):
            kind, _ = self.store.context[pos]
            if kind != "message":
                if chunk:
                    break
                continue
            cost = self.store.item_tokens(self.store.context[pos])
            if chunk and tokens + cost > cap:
                break
            chunk.append(pos)
            tokens += cost
            if tokens >= cap:
                break
        return chunk

    def oldest_run_at_depth(self, depth: int) -> tuple[list[int], int]:
        """Positions and tokens of the oldest contiguous run of depth-`depth` summaries outside the tail."""
        end, cap = self.tail_start(), self.settings.leaf_chunk_tokens
        run: list[int] = []
        tokens = 0
        for pos in range(end):
            kind, ident = self.store.context[pos]
            if kind != "summary" or self.store.summaries[ident].depth != depth:
                if run:
                    break
                continue
            cost = self.store.summaries[ident].token_count
            if run and tokens + cost > cap:
                break
            run.append(pos)
            tokens += cost
            if tokens >= cap:
                break
        return run, tokens

    def condensation_candidate(self, hard: bool) -> tuple[int, list[int]] | None:
        end = self.tail_start()
        depths = sorted({self.store.summaries[i].depth for k, i in self.store.context[:end] if k == "summary"})
        for depth in depths:
            fanout = (self.settings.condensed_min_fanout_hard if hard else
                      self.settings.leaf_min_fanout if depth == 0 else self.settings.condensed_min_fanout)
            run, tokens = self.oldest_run_at_depth(depth)
            if len(run) >= fanout and tokens >= self.min_condensed_tokens():
                return depth, run
        return None

    # -- passes ----------------------------------------------------------------------------------------
    def summarize(self, source: str, request: SummaryRequest) -> tuple[str, str] | None:
        """(summary, level): normal, then aggressive if not shorter than the input, then truncation."""
        source = source.strip()
        if not source:
            return "[Truncated from 0 tokens]", "fallback"
        input_tokens = max(1, estimate_tokens(source))
        text, level = "", "normal"
        for aggressive in (False, True):
            s = self.settings
            target = target_tokens(input_tokens, aggressive, request.condensed, s.leaf_target_tokens,
                                   s.condensed_target_tokens)
            text = self.summarizer.summarize(source, aggressive, SummaryRequest(
                target, request.condensed, request.depth, request.previous_summary)).strip()
            if not text:
                return None
            level = "aggressive" if aggressive else "normal"
            if estimate_tokens(text) < input_tokens:
                return text, level
            self.passes["fallback" if aggressive else "escalated"] += 1
        return f"{source[:FALLBACK_MAX_CHARS]}\n[Truncated from {input_tokens} tokens]", "fallback"

    def _previous(self, start: int, depth: int | None, keep: int, look: int) -> str | None:
        items = [i for k, i in self.store.context[:start] if k == "summary"][-look:]
        texts = [self.store.summaries[i].content.strip() for i in items
                 if depth is None or self.store.summaries[i].depth == depth]
        texts = [t for t in texts if t][-keep:]
        return "\n\n".join(texts) if texts else None

    def leaf_pass(self, positions: list[int], previous: str | None = None) -> Summary | None:
        ids = [self.store.context[p][1] for p in positions]
        messages = [self.store.messages[i] for i in ids]
        source = "\n\n".join(f"[{stamp(m.created_at)}]\n{m.content}" for m in messages)
        out = self.summarize(source, SummaryRequest(0, False, 0, previous))
        if out is None:
            return None
        summary = self.store.add_summary("leaf", 0, out[0], ids, out[1], max(m.created_at for m in messages))
        self.store.replace_context(positions[0], positions[-1], summary.summary_id)
        self.passes["leaf"] += 1
        return summary

    def condensed_pass(self, depth: int, positions: list[int]) -> Summary | None:
        ids = [self.store.context[p][1] for p in positions]
        parents = [self.store.summaries[i] for i in ids]
        source = "\n\n".join(f"[{stamp(p.earliest_at)} - {stamp(p.latest_at)}]\n{p.content}" for p in parents)
        previous = self._previous(positions[0], depth, keep=2, look=4) if depth == 0 else None
        out = self.summarize(source, SummaryRequest(0, True, depth + 1, previous))
        if out is None:
            return None
        summary = self.store.add_summary("condensed", depth + 1, out[0], ids, out[1],
                                         max(p.latest_at for p in parents))
        self.store.replace_context(positions[0], positions[-1], summary.summary_id)
        self.passes["condensed"] += 1
        return summary

    # -- sweeps ----------------------------------------------------------------------------------------
    def compact_leaf(self) -> bool:
        """The soft trigger: one leaf pass over the oldest chunk (compactLeaf, no incremental depth)."""
        if self.store.context_tokens() <= self.threshold and \
                self.raw_tokens_outside_tail() < self.settings.leaf_chunk_tokens:
            return False
        chunk = self.oldest_leaf_chunk()
        if not chunk:
            return False
        return self.leaf_pass(chunk, self._previous(chunk[0], None, keep=2, look=2)) is not None

    def sweep(self, force: bool = False, hard: bool = False) -> bool:
        """compactFullSweep: leaf passes, then condensation, each while over the threshold and progressing."""
        threshold = self.threshold
        before_all = self.store.context_tokens()
        if not force and before_all <= threshold and \
                self.raw_tokens_outside_tail() < self.settings.leaf_chunk_tokens:
            return False
        acted, previous_tokens, previous_summary = False, before_all, None
        while chunk := self.oldest_leaf_chunk():
            before = self.store.context_tokens()
            summary = self.leaf_pass(chunk, previous_summary)
            if summary is None:
                break
            acted, previous_summary = True, summary.content
            after = self.store.context_tokens()
            if not force and after <= threshold:
                previous_tokens = after
                break
            if after >= before or after >= previous_tokens:
                break
            previous_tokens = after
        while force or previous_tokens > threshold:
            candidate = self.condensation_candidate(hard)
            if candidate is None:
                break
            before = self.store.context_tokens()
            if self.condensed_pass(*candidate) is None:
                break
            acted = True
            after = self.store.context_tokens()
            if not force and after <= threshold:
                break
            if after >= before or after >= previous_tokens:
                break
            previous_tokens = after
        return acted

    def after_turn(self) -> None:
        """What runs after each message: the leaf trigger, the threshold sweep, the overflow sweep."""
        if self.raw_tokens_outside_tail() >= self.settings.leaf_chunk_tokens:
            self.compact_leaf()
        if self.store.context_tokens() > self.threshold:
            self.sweep()
        if self.store.context_tokens() > self.settings.token_budget:
            self.sweep(force=True, hard=True)


def stamp(created_at: str) -> str:
    """`YYYY-MM-DD HH:mm UTC` (compaction.ts formatTimestamp, timezone UTC)."""
    when = datetime.fromisoformat(created_at)
    return f"{when:%Y-%m-%d %H:%M} UTC"


def dag_shape(store: LosslessStore) -> dict[str, object]:
    """Counts that describe the DAG: leaves, condensed nodes per depth, messages per leaf, what the
    context holds now."""
    leaves = [s for s in store.summaries.values() if s.kind == "leaf"]
    by_depth: dict[int, int] = {}
    for s in store.summaries.values():
        by_depth[s.depth] = by_depth.get(s.depth, 0) + 1
    per_leaf = [len(s.sources) for s in leaves]
    return {"messages": len(store.messages), "leaves": len(leaves),
            "summaries_by_depth": {str(d): n for d, n in sorted(by_depth.items())},
            "max_depth": max(by_depth, default=-1),
            "messages_per_leaf_mean": sum(per_leaf) / len(per_leaf) if per_leaf else None,
            "messages_per_leaf_min": min(per_leaf, default=None), "messages_per_leaf_max": max(per_leaf, default=None),
            "context_items": len(store.context),
            "context_summaries": sum(1 for k, _ in store.context if k == "summary"),
            "context_tokens": store.context_tokens(),
            "levels": {lvl: sum(1 for s in store.summaries.values() if s.level == lvl)
                       for lvl in ("normal", "aggressive", "fallback")}}
