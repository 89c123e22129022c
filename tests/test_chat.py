"""The chat-completions stage against a chat server on loopback: replies, the completion cache keyed by
(messages, model, parameters), retries, key hygiene, and summaries that replay from the cache."""
import traceback

import pytest

from harness.errors import ConfigError
from harness.stages.chat import (
    CHATS,
    CachedChat,
    ChatError,
    CompletionCache,
    HTTPChatError,
    OpenAICompatibleChat,
    request_key,
)
from tests.chat_server import ChatServer

SECRET = "sk-test-0123456789abcdefSECRET"
FAST = {"max_retries": 2, "backoff_base": 0.01, "backoff_max": 0.02}
ASK = [{"role": "user", "content": "Summarise: the cat sat on the mat."}]


def test_a_reply_comes_back_and_the_request_has_the_openai_shape():
    with ChatServer() as server:
        chat = OpenAICompatibleChat(server.base_url, "m", temperature=0.0, seed=7, params={"top_p": 1.0})
        assert chat.complete(ASK).startswith("Summarise: the cat")
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"] == {"model": "m", "messages": ASK, "temperature": 0.0, "seed": 7, "top_p": 1.0}
    assert chat.model_id == f"openai-compatible:127.0.0.1:{server.httpd.server_address[1]}/m"


def test_the_cache_answers_a_repeated_request_and_keys_on_model_and_parameters(tmp_path):
    cache = CompletionCache(tmp_path / "completions.sqlite")
    with ChatServer() as server:
        cached = CachedChat(OpenAICompatibleChat(server.base_url, "m"), cache)
        first = cached.complete(ASK)
        assert cached.complete(ASK) == first and len(server.requests) == 1
        assert cached.stats == {"hits": 1, "computed": 1}
        warmer = CachedChat(OpenAICompatibleChat(server.base_url, "m", temperature=0.7), cache)
        warmer.complete(ASK)  # other parameters: another answer, asked of the server
        assert len(server.requests) == 2
    # the server is gone: a new process with the cache file still gets the answer
    offline = CachedChat(OpenAICompatibleChat(server.base_url, "m", **FAST), CompletionCache(tmp_path / "completions.sqlite"))
    assert offline.complete(ASK) == first and offline.stats == {"hits": 1, "computed": 0}
    assert request_key(ASK, "a", {"temperature": 0}) != request_key(ASK, "b", {"temperature": 0})
    assert request_key(ASK, "a", {"temperature": 0}) != request_key(ASK, "a", {"temperature": 0.5})


def test_transient_failures_are_retried_and_client_errors_are_not():
    with ChatServer([("status", 503, {}, {"error": {"message": "busy"}}), ("drop",)]) as server:
        chat = OpenAICompatibleChat(server.base_url, "m", **FAST)
        assert chat.complete(ASK) and chat.stats["retries"] == 2 and len(server.requests) == 3
    with ChatServer(then=("status", 400, {}, {"error": {"message": "bad model"}})) as server:
        chat = OpenAICompatibleChat(server.base_url, "m", **FAST)
        with pytest.raises(HTTPChatError, match=r"HTTP 400.*bad model.*not retried") as caught:
            chat.complete(ASK)
        assert caught.value.status == 400 and len(server.requests) == 1


def test_a_response_without_choices_is_a_clear_error():
    with ChatServer(then=("status", 200, {}, {"object": "chat.completion"})) as server:
        with pytest.raises(ChatError, match="no 'choices'"):
            OpenAICompatibleChat(server.base_url, "m", **FAST).complete(ASK)


def test_the_key_is_sent_but_never_shown_and_never_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_TEST_CHAT_KEY", SECRET)
    echo = ("status", 401, {}, {"error": {"message": f"Incorrect API key provided: {SECRET}"}})
    with ChatServer([echo]) as server:
        chat = OpenAICompatibleChat(server.base_url, "m", api_key_env="HARNESS_TEST_CHAT_KEY", **FAST)
        with pytest.raises(HTTPChatError) as caught:
            chat.complete(ASK)
        cache = CompletionCache(tmp_path / "c.sqlite")
        CachedChat(chat, cache).complete(ASK)
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"
    shown = [str(caught.value), repr(chat), chat.model_id, "".join(traceback.format_exception(caught.value))]
    assert all(SECRET not in text for text in shown) and "***" in str(caught.value)
    cache.conn.execute("PRAGMA wal_checkpoint(FULL)")
    assert SECRET.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


def test_keys_in_config_and_unset_key_variables_are_refused(monkeypatch):
    monkeypatch.delenv("HARNESS_TEST_CHAT_KEY", raising=False)
    with pytest.raises(ConfigError, match="api_key is never read from a config file"):
        CHATS.create("openai-compatible", base_url="https://api.example.com/v1", model="m", api_key=SECRET)
    with pytest.raises(ValueError, match="HARNESS_TEST_CHAT_KEY"):
        OpenAICompatibleChat("https://api.example.com/v1", "m", api_key_env="HARNESS_TEST_CHAT_KEY")
    with pytest.raises(ValueError, match=r"params must not set \['messages'\]"):
        OpenAICompatibleChat("https://api.example.com/v1", "m", params={"messages": []})
