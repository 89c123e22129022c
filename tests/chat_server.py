"""A small OpenAI-style chat-completions server on loopback, written for the tests: each request takes
the next scripted action, then `then` for ever after.  Actions: ("ok",) answers with `answer(messages)`,
("status", code, headers, body), ("drop",) closes without answering.  Requests are recorded."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


def reply(handler, code, headers, body):
    """Send a JSON (or raw text) answer with its length."""
    raw = (body if isinstance(body, str) else json.dumps(body)).encode("utf-8")
    handler.send_response(code)
    for name, value in {"Content-Type": "application/json", **headers}.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


def echo_answer(messages: list[dict]) -> str:
    """A deterministic stand-in for a model: the first 200 characters of the last message plus a footer,
    enough to tell requests apart and to be shorter than long inputs."""
    text = messages[-1]["content"]
    return " ".join(text.split())[:200] + "\nExpand for details about: test"


class ChatServer:
    def __init__(self, script=(), then=("ok",), answer: Callable[[list[dict]], str] = echo_answer):
        self.script, self.then, self.answer, self.requests = list(script), then, answer, []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    action = server.script.pop(0) if server.script else server.then
                try:
                    server.act(self, action, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    reply = staticmethod(reply)

    def act(self, handler, action, body):
        if action[0] == "drop":
            handler.close_connection = True
            return
        if action[0] == "status":
            self.reply(handler, action[1], action[2], action[3])
            return
        content = self.answer(body["messages"])
        self.reply(handler, 200, {}, {"id": "chatcmpl-test", "object": "chat.completion", "model": body["model"],
                                      "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant", "content": content}}]})

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
