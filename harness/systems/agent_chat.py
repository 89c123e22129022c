"""A scripted OpenAI-compatible chat server on loopback that plays an agent's model: it answers each
chat-completions request with the next step of the current turn's script, as tool calls or text, so that a
real OpenClaw agent loop (`openclaw agent --local`) runs offline and writes its own session transcripts.

    with ScriptedAgentChat() as chat:          # 127.0.0.1, an ephemeral port
        chat.base_url                          # "http://127.0.0.1:PORT/v1": models.providers.<id>.baseUrl
        chat.begin([Search("早餐吃什么"), Get(0), Reply("...", cite=0)])
        ...                                    # run one turn of the agent; every request takes the next step
        chat.requests                          # what the agent sent (messages, tools), for tests
        chat.turns                             # per begin(): what the script did (tool calls, the results
                                               # each step saw, the reply's citation), for checks

Steps of a turn, in order (one model request each):
    Search(query, max_results=None)   a memory_search tool call
    Get(k, lines=None)                a memory_get tool call on the k-th result of the last memory_search
                                      (its path, from its startLine, that many lines; default: its whole
                                      range); no such result: the step is skipped
    Reply(text, cite=None, usage=None) the final answer; `cite` = k appends "(source: PATH#Lx-Ly)" of the
                                      k-th result of the last search, as an agent citing its memory does;
                                      `usage` = n reports n prompt tokens for it (the usage of a long
                                      conversation, so that the release's auto-compaction threshold is
                                      crossed), else the fixed small usage of every answer
The agent's tools are read from each request: where memory_search is not offered directly but through
OpenClaw 2026.9's compact tool surface (`tool_call`), the call goes through `tool_call {id, args}`, as a
model using that surface does.  Streaming (SSE, what pi-ai's openai-completions client asks for) and plain
JSON answers are both served.  Nothing leaves the machine: the server listens on 127.0.0.1 only.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Sequence

HOST = "127.0.0.1"
MODEL_ID = "scripted-agent"


@dataclass(frozen=True)
class Search:
    query: str
    max_results: int | None = None


@dataclass(frozen=True)
class Get:
    result: int = 0
    lines: int | None = None


@dataclass(frozen=True)
class Reply:
    text: str
    cite: int | None = None
    usage: int | None = None  # prompt tokens reported for this answer (None: the fixed small usage)


Step = Search | Get | Reply


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def search_results(tool_text: str) -> list[dict[str, Any]] | None:
    """The results of a memory_search tool message (direct, or wrapped by 2026.9's tool_call), else None."""
    try:
        doc = json.loads(tool_text)
    except (json.JSONDecodeError, TypeError):
        return None
    if isinstance(doc, dict) and isinstance(doc.get("result"), dict):  # tool_call: {tool, result: {content}}
        inner = _text_of(doc["result"].get("content"))
        return search_results(inner) if inner else None
    if isinstance(doc, dict) and isinstance(doc.get("results"), list):
        return doc["results"]
    return None


def _unavailable(tool_text: str) -> bool:
    """A memory_search tool message that says the search did not run (timed out, unavailable, disabled)."""
    try:
        doc = json.loads(tool_text)
    except (json.JSONDecodeError, TypeError):
        return False
    if isinstance(doc, dict) and isinstance(doc.get("result"), dict):  # tool_call's wrapper
        inner = _text_of(doc["result"].get("content"))
        return _unavailable(inner) if inner else False
    return isinstance(doc, dict) and isinstance(doc.get("results"), list) and bool(
        doc.get("unavailable") or doc.get("timedOut") or doc.get("disabled"))


def _last_search_unavailable(messages: Sequence[dict[str, Any]]) -> bool:
    for m in reversed(messages):
        if m.get("role") == "tool":
            return _unavailable(_text_of(m.get("content")))
    return False


class ScriptedAgentChat:
    """The server (module docstring).  One turn at a time: begin() it before the agent runs."""

    def __init__(self, port: int = 0, *, retries: int = 0, retry_wait: float = 0.0) -> None:
        self._steps: list[Step] = []
        # a memory_search that answered unavailable (2026.9.6 times a search out after 30 s on a loaded machine,
        # then pauses the corpus for up to a minute) is made again after retry_wait seconds, up to `retries` times
        # a turn, as an agent retrying it does; each retry is recorded like any call
        self.retries, self.retry_wait = retries, retry_wait
        self._retries_left = retries
        self._last_search: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.unscripted = 0  # requests that came when the turn's script was used up (answered "ok")
        self.turns: list[list[dict[str, Any]]] = []  # per turn: {tool | reply, args, seen (the last search's results)}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # /v1/models
                self._json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    message = server._answer(body)
                    prompt = message.pop("prompt_tokens", None)  # Reply.usage: not part of the message
                try:
                    if body.get("stream"):
                        self._stream(body, message, prompt)
                    else:
                        self._json(200, {"id": "chatcmpl-scripted", "object": "chat.completion", "created": 0,
                                         "model": body.get("model", MODEL_ID), "usage": _usage(prompt),
                                         "choices": [{"index": 0, "message": message,
                                                      "finish_reason": _finish(message)}]})
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _json(self, code: int, doc: Any) -> None:
                raw = json.dumps(doc, ensure_ascii=False).encode("utf-8")
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _stream(self, body: dict[str, Any], message: dict[str, Any], prompt: int | None = None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                delta: dict[str, Any] = {"role": "assistant"}
                if message.get("tool_calls"):
                    delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
                else:
                    delta["content"] = message["content"]
                base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
                        "model": body.get("model", MODEL_ID)}
                for chunk in ({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                              {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": _finish(message)}],
                               "usage": _usage(prompt)}):
                    self.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode("utf-8"))
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer((HOST, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-agent-chat", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self._server.server_address[1]}/v1"

    def begin(self, steps: Sequence[Step]) -> None:
        """The script of the next turn (replaces what is left of the previous one)."""
        with self._lock:
            self._steps = list(steps)
            self.turns.append([])
            self._retries_left = self.retries
            self._last_search = None

    def _did(self, entry: dict[str, Any]) -> None:
        if self.turns:
            self.turns[-1].append(entry)

    @property
    def remaining(self) -> int:
        return len(self._steps)

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        tools = {t.get("function", {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        messages = body.get("messages") or []
        results = self._last_results(messages)
        if self._last_search is not None and self._retries_left > 0 and _last_search_unavailable(messages):
            self._retries_left -= 1
            time.sleep(self.retry_wait)
            self._did({"tool": "memory_search", "args": self._last_search, "seen": results, "retry": True})
            return _tool_call("memory_search", self._last_search, tools)
        while self._steps:
            step = self._steps.pop(0)
            if isinstance(step, Search):
                args: dict[str, Any] = {"query": step.query}
                if step.max_results is not None:
                    args["maxResults"] = step.max_results
                self._did({"tool": "memory_search", "args": args, "seen": results})
                self._last_search = args
                return _tool_call("memory_search", args, tools)
            if isinstance(step, Get):
                if results is None or step.result >= len(results):
                    continue  # nothing to open: the next step
                hit = results[step.result]
                span = int(hit["endLine"]) - int(hit["startLine"]) + 1
                args = {"path": hit["path"], "from": int(hit["startLine"]), "lines": step.lines or span}
                self._did({"tool": "memory_get", "args": args, "seen": results})
                self._last_search = None
                return _tool_call("memory_get", args, tools)
            text = step.text
            cited = None
            if step.cite is not None and results and step.cite < len(results):
                hit = results[step.cite]
                lines = f"#L{hit['startLine']}" + (f"-L{hit['endLine']}" if hit["endLine"] != hit["startLine"] else "")
                text += f" (source: {hit['path']}{lines})"
                cited = {"path": hit["path"], "startLine": int(hit["startLine"]), "endLine": int(hit["endLine"])}
            self._did({"reply": text, "cited": cited, "seen": results, **({"usage": step.usage} if step.usage else {})})
            self._last_search = None
            return {"role": "assistant", "content": text, **({"prompt_tokens": step.usage} if step.usage else {})}
        self.unscripted += 1
        return {"role": "assistant", "content": "ok"}

    @staticmethod
    def _last_results(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]] | None:
        for m in reversed(messages):
            if m.get("role") == "tool":
                found = search_results(_text_of(m.get("content")))
                if found is not None:
                    return found
        return None

    def __enter__(self) -> "ScriptedAgentChat":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


def steps_of(items: Sequence[dict[str, Any]]) -> list[Step]:
    """A scenario's steps ({search: Q, max_results?} | {get: K, lines?} | {reply: TEXT, cite?, usage?}) as Steps."""
    out: list[Step] = []
    for item in items:
        if "search" in item:
            out.append(Search(str(item["search"]), item.get("max_results")))
        elif "get" in item:
            out.append(Get(int(item["get"]), item.get("lines")))
        elif "reply" in item:
            out.append(Reply(str(item["reply"]), item.get("cite"), item.get("usage")))
        else:
            raise ValueError(f"unknown step {item!r}: one of search, get, reply")
    return out


def _tool_call(name: str, args: dict[str, Any], tools: set[str]) -> dict[str, Any]:
    if name not in tools and "tool_call" in tools:  # OpenClaw 2026.9's compact tool surface
        name, args = "tool_call", {"id": name, "args": args}
    call = {"id": f"call_{time.time_ns()}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _finish(message: dict[str, Any]) -> str:
    return "tool_calls" if message.get("tool_calls") else "stop"


def _usage(prompt: int | None = None) -> dict[str, int]:
    prompt = 10 if prompt is None else int(prompt)
    return {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}
