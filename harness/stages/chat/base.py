"""The chat-model interface: a list of messages in the OpenAI shape -> the assistant's text.

Stages that need an LLM (lossless-claw's summaries, QMD's query expansion) take a ChatModel and
always call it through CachedChat (chat/cache.py), so a rerun with the same prompts, model and
parameters asks nothing of the server and a DAG of summaries replays identically."""
from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

from harness.errors import HarnessError
from harness.registry import Registry

CHATS = Registry("chat model", table="chat", group="harness.chat", builtins="harness.stages.chat")

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


class ChatError(HarnessError, RuntimeError):
    """A chat-completion call failed (after any retries); completions made before it stay cached."""


@runtime_checkable
class ChatModel(Protocol):
    """A chat-completions model."""

    @property
    def model_id(self) -> str:
        """Names the server and model (never a key): part of every cache key."""
        ...

    @property
    def parameters(self) -> dict[str, Any]:
        """The sampling parameters sent with every request (temperature, max_tokens, seed...): part of
        every cache key, since they change the answer."""
        ...

    def complete(self, messages: Sequence[Message]) -> str:
        """The assistant's reply to `messages`."""
        ...


def check_messages(messages: Sequence[Message]) -> list[Message]:
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise ValueError(f"messages[{i}] must be {{'role': str, 'content': str}}, got {m!r}")
        out.append({"role": m["role"], "content": m["content"]})
    if not out:
        raise ValueError("a chat request needs at least one message")
    return out
