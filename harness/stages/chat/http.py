"""`openai-compatible` chat: POST {base_url}/chat/completions in the OpenAI request shape (OpenAI,
DeepSeek, Qwen/DashScope compatible mode, vLLM, llama.cpp's server, Ollama's /v1), with the same
retries, redirect refusal and key hygiene as the embedder (stages/http_json.py).

Reproducibility: temperature defaults to 0 and every parameter sent is part of the cache key
(chat/cache.py), so a cached answer is served only for the request that produced it."""
from __future__ import annotations

from typing import Annotated, Any, Sequence

from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic_core import ArgsKwargs

from harness.registry import stage
from harness.stages.chat.base import CHATS, ChatError, Message, check_messages
from harness.stages.http_json import (
    JSONPoster,
    RequestFailure,
    check_base_url,
    env_key,
    host_of,
    refuse_key_in_config,
    require_key_variable,
)

USER_AGENT = "harness-chat/1 (python httpx)"
_RESERVED = frozenset({"model", "messages", "stream", "n"})


class HTTPChatError(RequestFailure, ChatError):
    """A chat request failed.  The message names the URL, never the API key."""


class MissingChatKeyError(ChatError, ValueError):
    """api_key_env names a variable that is not set: a configuration error (also a ValueError)."""


@CHATS.register("openai-compatible")
@stage(config=ConfigDict(hide_input_in_errors=True))  # a value given here may be a credential
class OpenAICompatibleChat:
    """Chat completions from an OpenAI-compatible HTTP server (POST {base_url}/chat/completions).

    One choice, no streaming; the reply is choices[0].message.content.  Failures: 408, 429, 5xx,
    connection errors and timeouts are retried (bounded by count and time, Retry-After honoured);
    other statuses fail at once; redirects are refused so the key never travels elsewhere."""

    base_url: str
    """the API root, e.g. https://api.openai.com/v1 (requests go to {base_url}/chat/completions)"""
    model: Annotated[str, Field(min_length=1)]
    """the model name sent with each request"""
    api_key_env: str | None = Field(None, min_length=1)
    """name of the environment variable holding the key; None: no Authorization header"""
    temperature: float = Field(0.0, ge=0, le=2, allow_inf_nan=False)
    """sampling temperature (0: the most reproducible a server offers)"""
    max_tokens: int | None = Field(None, ge=1)
    """upper bound on the reply's tokens (sent when set)"""
    seed: int | None = None
    """sent when set; servers that honour it make sampling repeatable"""
    params: dict[str, Any] | None = None
    """further JSON fields of each request, e.g. {top_p = 1.0}"""
    timeout: float = Field(120.0, gt=0, allow_inf_nan=False)
    """seconds a whole request may take (connecting, sending, and reading all of the answer)"""
    max_retries: int = Field(5, ge=0)
    """retries after the first attempt"""
    backoff_base: float = Field(0.5, ge=0, allow_inf_nan=False)
    """seconds before the first retry, doubled for each next one"""
    backoff_max: float = Field(20.0, ge=0, allow_inf_nan=False)
    """longest wait between two attempts (a Retry-After header is honoured instead)"""
    max_retry_time: float = Field(300.0, ge=0, allow_inf_nan=False)
    """no retry starts later than this many seconds after the first attempt"""

    @model_validator(mode="before")
    @classmethod
    def _no_key_in_config(cls, data: Any) -> Any:
        refuse_key_in_config(data.kwargs if isinstance(data, ArgsKwargs) else data)
        return data

    @field_validator("api_key_env")
    @classmethod
    def _key_is_set(cls, api_key_env: str | None) -> str | None:
        return require_key_variable(api_key_env, MissingChatKeyError)

    def __post_init__(self) -> None:
        check_base_url(self.base_url, self._redact)
        reserved = sorted(_RESERVED & (self.params or {}).keys())
        if reserved:
            raise ValueError(f"params must not set {reserved}: the stage sends model and messages itself, "
                             "one choice, no streaming")
        self.stats = {"requests": 0, "retries": 0, "completions": 0}
        self._poster = JSONPoster.for_stage(
            self, self.url, fail=self._failure, user_agent=USER_AGENT, stats=self.stats,
            missing_key=lambda message: MissingChatKeyError(f"chat 'openai-compatible': {message}"))

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @property
    def model_id(self) -> str:
        return f"openai-compatible:{host_of(self.base_url)}/{self.model}"

    @property
    def parameters(self) -> dict[str, Any]:
        out: dict[str, Any] = {**(self.params or {}), "temperature": self.temperature}
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        if self.seed is not None:
            out["seed"] = self.seed
        return out

    def _redact(self, text: str) -> str:
        key = env_key(self.api_key_env)
        return text.replace(key, "***") if key else text

    def _failure(self, message: str, status: int | None, attempts: int) -> HTTPChatError:
        return HTTPChatError(message, url=self.url, status=status, attempts=attempts)

    def close(self) -> None:
        self._poster.close()

    def complete(self, messages: Sequence[Message]) -> str:
        payload = {**self.parameters, "model": self.model, "messages": check_messages(messages)}
        doc = self._poster.post(payload)
        choices = doc.get("choices") if isinstance(doc, dict) else None
        if not isinstance(choices, list) or not choices:
            error = doc.get("error") if isinstance(doc, dict) else None
            raise self._poster.fail("response has no 'choices'" + (f": {error}" if error else ""))
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise self._poster.fail("choices[0].message.content is not a string")
        self.stats["completions"] += 1
        return content
