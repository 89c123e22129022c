"""Chat models (an LLM behind the OpenAI chat-completions API) and the completion cache.

Summaries (lossless-claw, stages/lossless/) and LLM query expansion (QMD, stages/expansion/) ask a
ChatModel, always through CachedChat: replies are cached by sha256 of (messages, model id,
parameters) in SQLite ($HARNESS_CACHE_DIR/completions.sqlite), one transaction per reply.

Modules: base (CHATS, ChatModel, ChatError), http (openai-compatible), cache (CompletionCache,
CachedChat).
"""
from harness.stages.chat.base import (
           CHATS,
           ChatError,
           ChatModel,
           Message,
           check_messages,
)
from harness.stages.chat.cache import (
           CachedChat,
           CompletionCache,
           default_completion_cache_path,
           request_key,
)
from harness.stages.chat.http import (
           HTTPChatError,
           MissingChatKeyError,
           OpenAICompatibleChat,
)

__all__ = ["CHATS", "ChatError", "ChatModel", "Message", "check_messages", "CachedChat", "CompletionCache",
           "default_completion_cache_path", "request_key", "HTTPChatError", "MissingChatKeyError",
           "OpenAICompatibleChat"]
