"""lossless-claw's store in SQLite (SPEC.md section 7): every message kept, the summaries of the DAG
with their links, and the context items the next turn assembles from.

    messages(message_id, conversation_id, seq, role, content, token_count, created_at)
    summaries(summary_id, conversation_id, kind leaf|condensed, depth, content, token_count,
              earliest_at, latest_at, descendant_count, created_at)
    summary_messages(summary_id, message_id, ordinal)      a leaf's source messages
    summary_parents(summary_id, parent_summary_id, ordinal) a condensed node's sources
    messages_fts, summaries_fts  FTS5 porter unicode61;  summaries_fts_cjk  FTS5 trigram (summaries only)

The context items (what is in the model's context, oldest first) live in Python, `context`: each a
("message", message_id) or ("summary", summary_id).  Times are ISO-8601 UTC strings, which sort as
they compare."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable, Literal, Sequence

import apsw

from harness.db import connect
from harness.stages.lossless.estimate import estimate_tokens

Role = Literal["system", "user", "assistant", "tool"]
ContextItem = tuple[Literal["message", "summary"], object]


def iso(when: datetime) -> str:
    """UTC, second precision, 'Z'-less ISO form (what SQLite's julianday() reads)."""
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc).replace(tzinfo=None)
    return when.strftime("%Y-%m-%dT%H:%M:%S")


@dataclass(frozen=True)
class Message:
    message_id: int
    seq: int
    role: str
    content: str
    token_count: int
    created_at: str
    ref: str | None = None  # the data set's own id of the message (LoCoMo: the dia_id), never searched


@dataclass(frozen=True)
class Summary:
    summary_id: str
    kind: Literal["leaf", "condensed"]
    depth: int
    content: str
    token_count: int
    earliest_at: str
    latest_at: str
    descendant_count: int
    sources: tuple[str | int, ...]  # leaf: message ids; condensed: parent summary ids (its inputs)
    level: str = "normal"  # normal | aggressive | fallback: how the summarizer's output was obtained


SCHEMA = """
CREATE TABLE messages (message_id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL, seq INTEGER NOT NULL,
  role TEXT NOT NULL, content TEXT NOT NULL, token_count INTEGER NOT NULL, created_at TEXT NOT NULL, ref TEXT);
CREATE TABLE summaries (summary_id TEXT PRIMARY KEY, conversation_id INTEGER NOT NULL, kind TEXT NOT NULL,
  depth INTEGER NOT NULL, content TEXT NOT NULL, token_count INTEGER NOT NULL, earliest_at TEXT, latest_at TEXT,
  descendant_count INTEGER NOT NULL, created_at TEXT NOT NULL, level TEXT NOT NULL);
CREATE TABLE summary_messages (summary_id TEXT NOT NULL, message_id INTEGER NOT NULL, ordinal INTEGER NOT NULL);
CREATE TABLE summary_parents (summary_id TEXT NOT NULL, parent_summary_id TEXT NOT NULL, ordinal INTEGER NOT NULL);
CREATE VIRTUAL TABLE messages_fts USING fts5(content, tokenize='porter unicode61');
CREATE VIRTUAL TABLE summaries_fts USING fts5(summary_id UNINDEXED, content, tokenize='porter unicode61');
CREATE VIRTUAL TABLE summaries_fts_cjk USING fts5(summary_id UNINDEXED, content, tokenize='trigram');
"""


@dataclass
class LosslessStore:
    """One conversation's store (conversation_id 1): an in-memory SQLite database unless `path` is given."""

    path: str = ":memory:"
    conversation_id: int = 1
    messages: dict[int, Message] = field(default_factory=dict)
    summaries: dict[str, Summary] = field(default_factory=dict)
    context: list[ContextItem] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.conn: apsw.Connection = connect(self.path, load_vec=False)
        self.conn.execute(SCHEMA)

    # -- messages --------------------------------------------------------------------------------------
    def add_message(self, role: str, content: str, created_at: datetime | str, ref: str | None = None) -> Message:
        """Append a message (and its context item); token_count is the estimator's."""
        seq = len(self.messages) + 1
        when = created_at if isinstance(created_at, str) else iso(created_at)
        msg = Message(seq, seq, role, content, estimate_tokens(content), when, ref)
        with self.conn:
            self.conn.execute("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                              (msg.message_id, self.conversation_id, seq, role, content, msg.token_count, when, ref))
            self.conn.execute("INSERT INTO messages_fts(rowid, content) VALUES (?, ?)", (msg.message_id, content))
        self.messages[msg.message_id] = msg
        self.context.append(("message", msg.message_id))
        return msg

    # -- summaries -------------------------------------------------------------------------------------
    def add_summary(self, kind: str, depth: int, content: str, sources: Sequence[int | str], level: str,
                    created_at: str) -> Summary:
        """Store a summary with its links.  The id is a digest of its content and its sources, so the
        same DAG gets the same ids on every replay (upstream hashes the content with Date.now())."""
        digest = hashlib.sha256((content + "\x00" + ",".join(map(str, sources))).encode("utf-8")).hexdigest()
        summary_id = "sum_" + digest[:16]
        if kind == "leaf":
            times = [self.messages[int(m)].created_at for m in sources]
            descendants = 0
        else:
            parents = [self.summaries[str(s)] for s in sources]
            times = [p.earliest_at for p in parents] + [p.latest_at for p in parents]
            descendants = sum(p.descendant_count + 1 for p in parents)
        summary = Summary(summary_id, kind, depth, content, estimate_tokens(content), min(times), max(times),
                          descendants, tuple(sources), level)
        with self.conn:
            self.conn.execute("INSERT INTO summaries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                              (summary_id, self.conversation_id, kind, depth, content, summary.token_count,
                               summary.earliest_at, summary.latest_at, descendants, created_at, level))
            table = "summary_messages" if kind == "leaf" else "summary_parents"
            self.conn.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)",
                                  [(summary_id, s, i) for i, s in enumerate(sources)])
            self.conn.execute("INSERT INTO summaries_fts(summary_id, content) VALUES (?, ?)", (summary_id, content))
            self.conn.execute("INSERT INTO summaries_fts_cjk(summary_id, content) VALUES (?, ?)",
                              (summary_id, content))
        self.summaries[summary_id] = summary
        return summary

    def replace_context(self, start: int, end: int, summary_id: str) -> None:
        """Context items start..end (inclusive positions) become the one summary item."""
        self.context[start:end + 1] = [("summary", summary_id)]

    # -- reading ---------------------------------------------------------------------------------------
    def item_tokens(self, item: ContextItem) -> int:
        kind, ident = item
        return self.messages[ident].token_count if kind == "message" else self.summaries[ident].token_count

    def context_tokens(self) -> int:
        """getContextTokenCount: stored token counts of the context's messages and summaries."""
        return sum(self.item_tokens(item) for item in self.context)

    def descendant_messages(self, summary_id: str) -> list[int]:
        """The raw messages under a summary (a leaf's sources, a condensed node's leaves' sources)."""
        summary = self.summaries[summary_id]
        if summary.kind == "leaf":
            return [int(m) for m in summary.sources]
        return [m for parent in summary.sources for m in self.descendant_messages(str(parent))]

    def export(self) -> dict[str, object]:
        """The DAG as plain data (summaries with their links, the context): what a replay must equal."""
        return {"summaries": [{"id": s.summary_id, "kind": s.kind, "depth": s.depth, "content": s.content,
                               "token_count": s.token_count, "earliest_at": s.earliest_at,
                               "latest_at": s.latest_at, "descendant_count": s.descendant_count,
                               "sources": list(s.sources), "level": s.level} for s in self.summaries.values()],
                "context": [list(item) for item in self.context]}

    def refs(self, message_ids: Iterable[int]) -> list[str]:
        return [self.messages[m].ref for m in message_ids if self.messages[m].ref is not None]
