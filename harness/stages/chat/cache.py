"""The persistent completion cache: the reply to each request by sha256 of (messages, model id,
parameters) in SQLite, one transaction per completion, so an interrupted run keeps every answer it
had and a rerun (or another machine given the cache file) replays the same text."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import apsw

from harness.db import CacheFullError, cache_dir, open_cache_file, retry_busy
from harness.errors import HarnessError
from harness.stages.chat.base import ChatError, ChatModel, Message, check_messages


def default_completion_cache_path() -> Path:
    return cache_dir() / "completions.sqlite"


def request_key(messages: Sequence[Message], model_id: str, parameters: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of what decides the answer (never the key or the URL's path)."""
    canonical = json.dumps({"messages": list(messages), "model": model_id, "parameters": parameters},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class CompletionCache:
    """Replies by request key; each put is one transaction (the request is stored beside it, so a
    cache can be read back and audited)."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_completion_cache_path()
        # shared by concurrent runs, as the embedding cache; a broken file is moved aside, a read-only one read
        opened = open_cache_file(self.path, table="completions", columns=("key", "model", "request", "reply"),
                                 create="CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, model TEXT "
                                        "NOT NULL, request TEXT NOT NULL, reply TEXT NOT NULL) WITHOUT ROWID",
                                 what="completion cache")
        self.conn, self.readonly, self.notes = opened.conn, opened.readonly, opened.notes

    def get(self, key: str) -> str | None:
        row = retry_busy(lambda: self.conn.execute("SELECT reply FROM completions WHERE key = ?", (key,)).fetchone(),
                         "reading a reply", self.path)
        return row[0] if row else None

    def put(self, key: str, model: str, request: dict[str, Any], reply: str) -> None:
        row = (key, model, json.dumps(request, sort_keys=True, ensure_ascii=False), reply)

        def write() -> None:
            with self.conn:  # one transaction: a failed try leaves nothing behind, so it can be repeated
                self.conn.execute("INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?)", row)

        if self.readonly:
            return
        try:
            retry_busy(write, "storing a reply", self.path)
        except apsw.FullError:
            raise CacheFullError(f"{self.path.parent}: no space left on the device for the completion cache; "
                                 "free some space there and run again", self.path.parent) from None

    def count(self, model: str | None = None) -> int:
        if model is None:
            return self.conn.execute("SELECT count(*) FROM completions").fetchone()[0]
        return self.conn.execute("SELECT count(*) FROM completions WHERE model = ?", (model,)).fetchone()[0]


@dataclass
class CachedChat:
    """A chat model behind the completion cache: asks the server only for requests it has not seen."""

    inner: ChatModel
    cache: CompletionCache
    stats: dict[str, int] = field(default_factory=lambda: {"hits": 0, "computed": 0})

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.inner.parameters)

    def key(self, messages: Sequence[Message]) -> str:
        return request_key(check_messages(messages), self.model_id, self.parameters)

    def complete(self, messages: Sequence[Message]) -> str:
        messages = check_messages(messages)
        key = request_key(messages, self.model_id, self.parameters)
        cached = self.cache.get(key)
        if cached is not None:
            self.stats["hits"] += 1
            return cached
        try:
            reply = self.inner.complete(messages)
        except HarnessError:
            raise
        except Exception as exc:  # a plugin's own failure: still a one-line error naming the model
            raise ChatError(f"chat model {self.model_id} failed: {exc}") from exc
        self.cache.put(key, self.model_id, {"messages": messages, "parameters": self.parameters}, reply)
        self.stats["computed"] += 1
        return reply
