"""The context lossless-claw gives the model each turn (assembler.ts, SPEC.md section 7): the context
items in order, each summary as a user-role <summary> block (its id, kind, depth, descendant count,
time range, parents, content), each raw message as itself; the last `fresh_tail_count` items always
kept; older items kept newest first while they fit the budget left by the tail, the first one that
does not fit ending the walk (everything older is dropped too)."""
from __future__ import annotations

from dataclasses import dataclass

from harness.stages.lossless.estimate import estimate_tokens
from harness.stages.lossless.store import ContextItem, LosslessStore


def summary_block(store: LosslessStore, summary_id: str) -> str:
    s = store.summaries[summary_id]
    lines = [f'<summary id="{s.summary_id}" kind="{s.kind}" depth="{s.depth}" descendant_count="{s.descendant_count}" '
             f'earliest_at="{s.earliest_at}" latest_at="{s.latest_at}">']
    if s.kind == "condensed":
        lines += ["  <parents>", *[f'    <summary_ref id="{p}" />' for p in s.sources], "  </parents>"]
    lines += ["  <content>", s.content, "  </content>", "</summary>"]
    return "\n".join(lines)


def item_text(store: LosslessStore, item: ContextItem) -> str:
    kind, ident = item
    return store.messages[ident].content if kind == "message" else summary_block(store, str(ident))


@dataclass
class AssembledContext:
    items: list[ContextItem]
    tokens: int
    dropped: int  # evictable items left out for the budget

    def message_ids(self) -> set[int]:
        return {int(i) for k, i in self.items if k == "message"}

    def summary_ids(self) -> set[str]:
        return {str(i) for k, i in self.items if k == "summary"}


def assemble(store: LosslessStore, token_budget: int, fresh_tail_count: int) -> AssembledContext:
    resolved = [(item, estimate_tokens(item_text(store, item))) for item in store.context]
    tail_start = max(0, len(resolved) - fresh_tail_count)
    tail, evictable = resolved[tail_start:], resolved[:tail_start]
    tail_tokens = sum(t for _, t in tail)
    room = max(0, token_budget - tail_tokens)
    kept: list[tuple[ContextItem, int]] = []
    used = 0
    if sum(t for _, t in evictable) <= room:
        kept, used = evictable, sum(t for _, t in evictable)
    else:
        for item, tokens in reversed(evictable):
            if used + tokens > room:
                break
            kept.append((item, tokens))
            used += tokens
        kept.reverse()
    return AssembledContext([item for item, _ in kept + tail], used + tail_tokens, len(evictable) - len(kept))
